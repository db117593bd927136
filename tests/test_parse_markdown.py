"""The Markdown parser, rule by rule: each test states one behaviour of ``parse_markdown``."""

from __future__ import annotations

import json

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from noteseek.parse import parse_markdown
from noteseek.types import Block, Link, ParsedDocument


def parse(text: str, path: str = "notes/note.md") -> ParsedDocument:
    return parse_markdown(text, path)


def blocks(doc: ParsedDocument) -> list[Block]:
    return [block for section in doc.sections for block in section.blocks]


def link_tuples(doc: ParsedDocument) -> list[tuple[str, str, str | None, str | None, int]]:
    return [(lk.kind, lk.target, lk.anchor, lk.display, lk.line) for lk in doc.links]


# ----------------------------------------------------------------------------------------------
# Normalisation


class TestNormalisation:
    def test_bom_is_stripped_and_crlf_becomes_lf(self) -> None:
        doc = parse("\ufeff# Title\r\n\r\nBody line\r\n")
        assert doc.text == "# Title\n\nBody line\n"
        assert doc.title == "Title"
        assert doc.line_count == 3

    def test_lone_cr_is_a_line_end(self) -> None:
        doc = parse("one\rtwo\r\rthree")
        assert doc.text == "one\ntwo\n\nthree"
        assert doc.line_count == 4

    def test_line_numbers_refer_to_the_normalised_text(self) -> None:
        doc = parse("\ufeffintro\r\n\r\n## Sub\r\nsee [[Target]]\r\n")
        sub = doc.sections[1]
        assert sub.heading_path == ("Sub",)
        assert (sub.start_line, sub.end_line) == (3, 4)
        assert doc.links == [Link("Target", "wikilink", 4)]

    @pytest.mark.parametrize(
        ("text", "count"),
        [("", 0), ("a", 1), ("a\n", 1), ("a\nb", 2), ("a\n\n", 2), ("\n", 1)],
    )
    def test_line_count_does_not_count_a_final_line_end_as_a_line(
        self, text: str, count: int
    ) -> None:
        assert parse(text).line_count == count


# ----------------------------------------------------------------------------------------------
# Frontmatter


class TestFrontmatter:
    def test_fields_are_kept_and_the_body_starts_after_the_closing_marker(self) -> None:
        doc = parse("---\ntitle: Hello\nrating: 4\ndraft: false\n---\nBody\n")
        assert doc.frontmatter == {"title": "Hello", "rating": 4, "draft": False}
        assert doc.body_start_line == 6
        assert doc.warnings == []

    def test_without_frontmatter_the_body_starts_on_line_1(self) -> None:
        doc = parse("Body\n")
        assert doc.frontmatter == {}
        assert doc.body_start_line == 1

    def test_values_are_made_json_serialisable(self) -> None:
        doc = parse(
            "---\n"
            "date: 2024-01-02\n"
            "updated: 2024-01-02T10:30:00Z\n"
            "nested: {when: 2023-05-06, list: [1, 2.5, null]}\n"
            "1: numeric key\n"
            "big: .inf\n"
            "---\n"
            "Body\n"
        )
        assert doc.frontmatter["date"] == "2024-01-02"
        assert doc.frontmatter["updated"].startswith("2024-01-02T10:30:00")
        assert doc.frontmatter["nested"] == {"when": "2023-05-06", "list": [1, 2.5, None]}
        assert doc.frontmatter["1"] == "numeric key"
        assert doc.frontmatter["big"] == "inf"
        json.dumps(doc.frontmatter, allow_nan=False)

    def test_malformed_yaml_gives_a_warning_with_its_line_and_the_body_is_still_indexed(
        self,
    ) -> None:
        doc = parse("---\ntitle: ok\nbad: a: b\nmore: 1\n---\n# Body heading\nBody text\n")
        assert doc.frontmatter == {}
        assert len(doc.warnings) == 1
        assert doc.warnings[0].startswith("frontmatter: invalid YAML at line 3: ")
        assert doc.body_start_line == 6
        assert doc.title == "Body heading"
        assert [b.kind for b in blocks(doc)] == ["heading", "paragraph"]

    def test_an_impossible_date_is_a_warning_not_a_crash(self) -> None:
        doc = parse("---\ndate: 2024-13-45\n---\nBody\n")
        assert doc.frontmatter == {}
        assert doc.warnings and doc.warnings[0].startswith("frontmatter: invalid YAML")

    def test_a_non_mapping_is_ignored_with_a_warning(self) -> None:
        doc = parse("---\n- a\n- b\n---\nBody\n")
        assert doc.frontmatter == {}
        assert doc.warnings == ["frontmatter: expected a mapping, got list; frontmatter ignored"]
        assert doc.body_start_line == 5

    def test_empty_frontmatter_is_an_empty_mapping(self) -> None:
        doc = parse("---\n---\nBody\n")
        assert doc.frontmatter == {}
        assert doc.warnings == []
        assert doc.body_start_line == 3

    def test_cyclic_or_exploding_yaml_is_cut_off_with_a_warning(self) -> None:
        cyclic = parse("---\na: &a [*a]\n---\nBody\n")
        assert cyclic.warnings and "too large" in cyclic.warnings[0]
        json.dumps(cyclic.frontmatter)
        levels = ["a: &a [1,1,1,1,1,1,1,1,1,1]"]
        for name, prev in zip("bcdefg", "abcdef", strict=True):
            levels.append(f"{name}: &{name} [" + ",".join([f"*{prev}"] * 10) + "]")
        bomb = parse("---\n" + "\n".join(levels) + "\n---\nBody\n")
        assert bomb.warnings and "too large" in bomb.warnings[0]
        assert len(json.dumps(bomb.frontmatter)) < 1_000_000

    def test_unclosed_opening_marker_is_not_frontmatter(self) -> None:
        doc = parse("---\ntitle: x\n\nBody\n")
        assert doc.frontmatter == {}
        assert doc.body_start_line == 1
        assert blocks(doc)[0].start_line == 1

    def test_only_a_line_of_dashes_opens_frontmatter(self) -> None:
        doc = parse("---foo\ntitle: x\n---\nBody\n")
        assert doc.frontmatter == {}
        assert doc.body_start_line == 1

    def test_frontmatter_lines_are_in_no_section(self) -> None:
        doc = parse("---\ntitle: T\n---\n\nIntro\n")
        assert [(s.start_line, s.end_line) for s in doc.sections] == [(5, 5)]
        assert all(b.start_line >= doc.body_start_line for b in blocks(doc))

    def test_frontmatter_only_document_has_no_sections(self) -> None:
        doc = parse("---\ntitle: T\n---\n")
        assert doc.sections == []
        assert doc.title == "T"


# ----------------------------------------------------------------------------------------------
# Title, aliases


class TestTitle:
    def test_frontmatter_title_wins_over_the_first_h1(self) -> None:
        assert parse("---\ntitle: From YAML\n---\n# From H1\n").title == "From YAML"

    def test_a_leading_h1_wins_over_the_file_stem(self) -> None:
        assert parse("# First *H1*\n\nIntro\n\n# Second\n").title == "First H1"

    def test_an_h1_further_down_is_a_section_not_the_title(self) -> None:
        # The zettelkasten case: "Locations" is a section of the note, not its name.
        doc = parse("Intro\n\n## Not this\n\n# Locations\n\n# Second\n", "SQL Injection.md")
        assert doc.title == "SQL Injection"

    def test_badges_and_html_before_the_h1_do_not_count(self) -> None:
        text = "<!-- omit in toc -->\n\n[![ci](https://x/b.svg)](https://x) ![v](v.svg)\n\n# Tool\n"
        assert parse(text, "README.md").title == "Tool"

    def test_setext_h1_counts(self) -> None:
        assert parse("Setext Title\n============\n").title == "Setext Title"

    def test_file_stem_is_the_fallback(self) -> None:
        assert parse("## Only H2\n", "a/b/my-note.md").title == "my-note"

    @pytest.mark.parametrize("value", ['""', "'  '", "42", "[a, b]", "null"])
    def test_a_blank_or_non_string_frontmatter_title_is_ignored(self, value: str) -> None:
        assert parse(f"---\ntitle: {value}\n---\n# Heading\n").title == "Heading"

    def test_a_heading_inside_a_fence_is_not_the_title(self) -> None:
        assert parse("```\n# not a title\n```\n", "x/stem.md").title == "stem"


class TestAliases:
    @pytest.mark.parametrize(
        ("yaml_text", "expected"),
        [
            ("aliases: [One, Two]", ["One", "Two"]),
            ("aliases: Single Name", ["Single Name"]),
            ("aliases: One, Two Words", ["One", "Two Words"]),
            ("alias: Only", ["Only"]),
            ("aliases: [A]\nalias: B", ["A", "B"]),
            ("aliases: [A, A, '']", ["A"]),
            ("aliases:", []),
        ],
    )
    def test_aliases_from_aliases_or_alias(self, yaml_text: str, expected: list[str]) -> None:
        assert parse(f"---\n{yaml_text}\n---\nBody\n").aliases == expected


# ----------------------------------------------------------------------------------------------
# Tags


class TestTags:
    def test_frontmatter_list(self) -> None:
        assert parse("---\ntags: [one, '#two', area/sub]\n---\n").tags == ["one", "two", "area/sub"]

    def test_frontmatter_string_split_on_commas_and_whitespace(self) -> None:
        assert parse("---\ntags: 'a, b c  #d'\n---\n").tags == ["a", "b", "c", "d"]

    def test_frontmatter_tag_key(self) -> None:
        assert parse("---\ntag: solo\n---\n").tags == ["solo"]

    def test_inline_and_nested_tags(self) -> None:
        assert parse("Working on #project and #area/sub-topic_2.\n").tags == [
            "project",
            "area/sub-topic_2",
        ]

    def test_tags_in_lists_quotes_tables_and_headings(self) -> None:
        text = "## Heading #h\n\n- item #li\n\n> quoted #q\n\n| a |\n|---|\n| #cell |\n"
        assert parse(text).tags == ["h", "li", "q", "cell"]

    def test_frontmatter_tags_come_first_then_inline_in_order_deduplicated(self) -> None:
        doc = parse("---\ntags: [Alpha]\n---\n#beta #alpha #Beta #gamma\n")
        assert doc.tags == ["Alpha", "beta", "gamma"]

    @pytest.mark.parametrize(
        "text",
        [
            "page#frag",
            "see https://example.com/page#section",
            "[link](other.md#anchor)",
            "issue #123",
            "range #1-2",
            "`#code`",
            "``#code with `tick` ``",
            "\\#escaped",
            "*#emphasised*",
            "<span>#in-html</span>",
            "# Title",
            "## #",
            "```\n#fenced\n```",
            "    #indented-code",
            "<div>\n#html-block\n</div>",
            "[[Note#heading]]",
        ],
    )
    def test_not_a_tag(self, text: str) -> None:
        assert parse(text + "\n").tags == []

    def test_a_tag_ends_at_a_character_outside_its_alphabet(self) -> None:
        assert parse("(#one) #two, #three. #four's\n").tags == ["two", "three", "four"]

    def test_unicode_letters_are_allowed(self) -> None:
        assert parse("#café #日本語\n").tags == ["café", "日本語"]


# ----------------------------------------------------------------------------------------------
# Headings, sections and blocks


class TestSections:
    def test_content_before_the_first_heading_has_an_empty_heading_path(self) -> None:
        doc = parse("Intro\n\n# A\ntext\n")
        assert [s.heading_path for s in doc.sections] == [(), ("A",)]
        assert doc.sections[0].level == 0

    def test_a_heading_pops_headings_of_the_same_or_deeper_level(self) -> None:
        doc = parse("# A\n## B\n### C\n## D\n#### E\n# F\n## G\n")
        assert [s.heading_path for s in doc.sections] == [
            ("A",),
            ("A", "B"),
            ("A", "B", "C"),
            ("A", "D"),
            ("A", "D", "E"),
            ("F",),
            ("F", "G"),
        ]
        assert [s.level for s in doc.sections] == [1, 2, 3, 2, 4, 1, 2]

    def test_heading_text_is_plain(self) -> None:
        doc = parse("# The *big* `idea` [link](x.md) [[Note|shown]] \\# done ##\n")
        assert doc.sections[0].heading_path == ("The big idea link shown # done",)

    def test_heading_block_comes_first_and_sections_span_their_blocks(self) -> None:
        doc = parse("# A\n\npara one\n\npara two\n\n# B\n")
        first = doc.sections[0]
        assert [(b.kind, b.start_line, b.end_line) for b in first.blocks] == [
            ("heading", 1, 1),
            ("paragraph", 3, 3),
            ("paragraph", 5, 5),
        ]
        assert (first.start_line, first.end_line) == (1, 5)
        assert first.blocks[0].level == 1

    def test_block_kinds(self) -> None:
        text = (
            "para\nstill para\n\n"
            "- item\n- item\n\n"
            "1. one\n2. two\n\n"
            "| a | b |\n|---|---|\n| 1 | 2 |\n\n"
            "> quote\n\n"
            "<div>\nhtml\n</div>\n\n"
            "```python\ncode\n```\n\n"
            "---\n"
        )
        assert [(b.kind, b.start_line, b.end_line) for b in blocks(parse(text))] == [
            ("paragraph", 1, 2),
            ("list", 4, 5),
            ("list", 7, 8),
            ("table", 10, 12),
            ("quote", 14, 14),
            ("html", 16, 18),
            ("code", 20, 22),
            ("other", 24, 24),
        ]

    def test_block_text_is_the_exact_source_lines(self) -> None:
        text = "- a\n\n  continued\n- b\n\n\nafter\n"
        lists = [b for b in blocks(parse(text)) if b.kind == "list"]
        assert lists[0].text == "- a\n\n  continued\n- b"
        assert (lists[0].start_line, lists[0].end_line) == (1, 4)

    def test_a_hash_line_inside_a_fence_is_not_a_heading(self) -> None:
        doc = parse("```bash\n# comment\n## another\n```\n")
        assert len(doc.sections) == 1
        assert doc.sections[0].heading_path == ()
        assert [b.kind for b in doc.sections[0].blocks] == ["code"]

    def test_fenced_code_language_is_the_first_word_of_the_info_string(self) -> None:
        doc = parse("```python title='x.py'\nprint()\n```\n\n~~~\nplain\n~~~\n")
        assert [(b.kind, b.language) for b in blocks(doc)] == [("code", "python"), ("code", None)]

    def test_indented_code_is_code_without_language(self) -> None:
        doc = parse("para\n\n    indented code\n    more\n\nafter\n")
        code = blocks(doc)[1]
        assert (code.kind, code.language, code.text) == (
            "code",
            None,
            "    indented code\n    more",
        )

    def test_an_unclosed_fence_runs_to_the_end(self) -> None:
        doc = parse("# H\n```\n# not heading\n\n")
        assert [(b.kind, b.start_line, b.end_line) for b in blocks(doc)] == [
            ("heading", 1, 1),
            ("code", 2, 3),
        ]

    def test_reference_definitions_are_kept_as_other_blocks(self) -> None:
        doc = parse("Text [x][r]\n\n[r]: target.md\n")
        assert [(b.kind, b.start_line) for b in blocks(doc)] == [("paragraph", 1), ("other", 3)]

    def test_headings_inside_containers_do_not_open_sections(self) -> None:
        doc = parse("> # quoted heading\n\n- # list heading\n")
        assert [s.heading_path for s in doc.sections] == [()]


# ----------------------------------------------------------------------------------------------
# Links


class TestWikilinks:
    @pytest.mark.parametrize(
        ("source", "expected"),
        [
            ("[[Note]]", ("wikilink", "Note", None, None, 1)),
            ("[[Note|Shown text]]", ("wikilink", "Note", None, "Shown text", 1)),
            ("[[Note#Some Heading]]", ("wikilink", "Note", "Some Heading", None, 1)),
            ("[[Note#^block-id]]", ("wikilink", "Note", "^block-id", None, 1)),
            ("[[#Local Heading]]", ("wikilink", "", "Local Heading", None, 1)),
            ("[[Note#H|shown]]", ("wikilink", "Note", "H", "shown", 1)),
            ("[[dir/Note.md]]", ("wikilink", "dir/Note.md", None, None, 1)),
            ("![[Note]]", ("embed", "Note", None, None, 1)),
            ("![[picture.png|300]]", ("embed", "picture.png", None, "300", 1)),
        ],
    )
    def test_forms(
        self, source: str, expected: tuple[str, str, str | None, str | None, int]
    ) -> None:
        assert link_tuples(parse(f"{source}\n")) == [expected]

    def test_line_numbers_are_1_based_file_lines(self) -> None:
        doc = parse("---\na: 1\n---\nfirst\nsecond [[A]]\nthird\n\n- item [[B]]\n")
        assert [(lk.target, lk.line) for lk in doc.links] == [("A", 5), ("B", 8)]

    def test_escaped_pipe_in_a_table(self) -> None:
        doc = parse("| a |\n|---|\n| [[Note\\|shown]] |\n")
        assert link_tuples(doc) == [("wikilink", "Note", None, "shown", 3)]

    def test_not_parsed_as_markdown_link_syntax(self) -> None:
        doc = parse("[[Note]](other.md)\n")
        assert link_tuples(doc) == [("wikilink", "Note", None, None, 1)]

    @pytest.mark.parametrize(
        "text",
        [
            "`[[in code span]]`",
            "```\n[[in fence]]\n```",
            "    [[in indented code]]",
            "[[unclosed",
            "[[]]",
            "[[ ]]",
            "[[#]]",
            "[[split\nacross lines]]",
            "<div>\n[[in html block]]\n</div>",
        ],
    )
    def test_not_a_wikilink(self, text: str) -> None:
        assert parse(text + "\n").links == []


class TestMarkdownLinks:
    def test_relative_link_with_anchor_and_percent_decoding(self) -> None:
        doc = parse("See [the file](../dir/my%20file.md#Some%20Part).\n")
        assert link_tuples(doc) == [("markdown", "../dir/my file.md", "Some Part", "the file", 1)]

    def test_local_link_display_is_plain_text(self) -> None:
        doc = parse("[**bold** `code`](other.md)\n")
        assert link_tuples(doc) == [("markdown", "other.md", None, "bold code", 1)]

    def test_reference_style_links_resolve(self) -> None:
        doc = parse("Read [this][ref].\n\n[ref]: notes/other.md\n")
        assert link_tuples(doc) == [("markdown", "notes/other.md", None, "this", 1)]

    def test_local_images_are_embeds(self) -> None:
        doc = parse("![A diagram](img/pic.png)\n")
        assert link_tuples(doc) == [("embed", "img/pic.png", None, "A diagram", 1)]

    def test_query_string_is_dropped(self) -> None:
        assert link_tuples(parse("[q](file.md?x=1#y)\n")) == [("markdown", "file.md", "y", "q", 1)]

    @pytest.mark.parametrize(
        "text",
        [
            "[web](https://example.com/a.md)",
            "[web](http://example.com)",
            "[mail](mailto:someone@example.com)",
            "[ftp](ftp://host/file.md)",
            "[proto-relative](//host/path.md)",
            "[anchor only](#section)",
            "![remote](https://example.com/pic.png)",
            "<https://example.com/autolink>",
            "`[in code](x.md)`",
            "```\n[in fence](x.md)\n```",
        ],
    )
    def test_skipped(self, text: str) -> None:
        assert parse(text + "\n").links == []

    def test_links_keep_document_order_and_lines(self) -> None:
        doc = parse("# [H](h.md)\n\n[[W]] then [m](m.md)\nand ![[E]]\n")
        assert [(lk.kind, lk.target, lk.line) for lk in doc.links] == [
            ("markdown", "h.md", 1),
            ("wikilink", "W", 3),
            ("markdown", "m.md", 3),
            ("embed", "E", 4),
        ]


# ----------------------------------------------------------------------------------------------
# Robustness


class TestRobustness:
    @pytest.mark.parametrize(
        "text",
        [
            "\x00" * 10,
            "[[" * 50_000,
            "![[" * 30_000 + "]]",
            "[" * 50_000,
            "[a](" * 30_000,
            "`" * 50_000,
            "x" * 1_000_000,
            ">" * 5_000 + " deep",
            "---\n" + "a: b\n" * 1_000,
            "```\n" * 1_000,
            "[[a]]" * 20_000,
        ],
        ids=lambda text: repr(text[:8]),
    )
    def test_pathological_inputs_parse(self, text: str) -> None:
        doc = parse(text)
        assert doc.line_count == len(doc.text.split("\n")) - doc.text.endswith("\n")

    def test_an_oversized_inline_run_is_scanned_by_pattern_with_a_warning(self) -> None:
        doc = parse("x " * 40_000 + "[[Far]] #tag [m](m.md)\n")
        assert [lk.target for lk in doc.links] == ["Far", "m.md"]
        assert doc.tags == ["tag"]
        assert any("found by pattern only" in w for w in doc.warnings)


MARKDOWN_PIECES = [
    "#",
    "# ",
    "## ",
    "#tag ",
    "```",
    "```python\n",
    "~~~",
    "    ",
    "\t",
    "[[",
    "]]",
    "![[",
    "|",
    "\\|",
    "[",
    "](",
    ")",
    "![",
    "`",
    "*",
    "_",
    "<div>",
    "</div>",
    "<",
    "&amp;",
    "&#35;",
    "\\",
    "---\n",
    "...\n",
    "---",
    "- ",
    "1. ",
    "> ",
    "| a | b |\n|---|---|\n",
    "[r]: x.md\n",
    "title: [\n",
    "\r\n",
    "\r",
    "\n",
    "\n\n",
    "\ufeff",
    "\x00",
    "\x0c",
    "\u2028",
    "é",
]

markdownish = st.lists(
    st.one_of(st.text(max_size=12), st.sampled_from(MARKDOWN_PIECES)), max_size=40
).map("".join)


@settings(max_examples=250, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(markdownish)
def test_parsing_never_raises_and_keeps_its_invariants(text: str) -> None:
    doc = parse_markdown(text, "dir/file.md")
    assert isinstance(doc, ParsedDocument)
    assert "\r" not in doc.text
    lines = doc.text.split("\n")
    if doc.text.endswith("\n"):
        lines.pop()
    assert doc.line_count == (len(lines) if doc.text else 0)
    assert 1 <= doc.body_start_line <= doc.line_count + 1
    previous_end = doc.body_start_line - 1
    for block in blocks(doc):
        assert previous_end < block.start_line <= block.end_line <= doc.line_count
        assert block.text == "\n".join(lines[block.start_line - 1 : block.end_line])
        previous_end = block.end_line
    for lk in doc.links:
        assert 1 <= lk.line <= doc.line_count
    json.dumps(doc.frontmatter)
    assert all(tag and not tag.startswith("#") for tag in doc.tags)


@settings(max_examples=100, deadline=None)
@given(st.text())
def test_parsing_arbitrary_unicode_never_raises(text: str) -> None:
    doc = parse_markdown(text, "x.md")
    assert doc.title


class TestFrontmatterLinks:
    def test_wikilinks_in_any_property_and_names_under_relation_keys(self) -> None:
        doc = parse(
            "---\naliases: ['[[Not a link]]']\nsource: '[[Paper#Results|the paper]]'\n"
            "see-also:\n  - Other note\n  - https://example.org\n  - '42'\n"
            "up: [[Parent]]\nnotes: plain words\n---\n# T\n\nSee [[Body link]].\n"
        )
        assert link_tuples(doc) == [
            ("property", "Paper", "Results", "source", 3),
            ("property", "Other note", None, "see-also", 4),
            ("property", "Parent", None, "up", 8),
            ("wikilink", "Body link", None, None, 13),
        ]

    def test_no_frontmatter_no_property_links(self) -> None:
        assert [lk.kind for lk in parse("# T\n\nrelated: [[X]]\n").links] == ["wikilink"]
