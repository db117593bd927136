"""Which parser handles which file, and the plain-text parser."""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from noteseek.parse import (
    FunctionParser,
    Parser,
    ParserRegistry,
    default_registry,
    get_parser,
    parse_markdown,
    parse_text,
)
from noteseek.types import ParsedDocument

# ----------------------------------------------------------------------------------------------
# Registry


class TestDefaultRegistry:
    @pytest.mark.parametrize(
        ("path", "name"),
        [
            ("note.md", "markdown"),
            ("dir/sub/Note.MD", "markdown"),
            ("readme.markdown", "markdown"),
            ("README.Markdown", "markdown"),
            ("notes.txt", "text"),
            ("LOG.TXT", "text"),
        ],
    )
    def test_known_file_types(self, path: str, name: str) -> None:
        parser = default_registry().parser_for(path)
        assert parser is not None
        assert parser.name == name

    @pytest.mark.parametrize(
        "path", ["image.png", "note.md.bak", "md", "dir.md/file", "notes.mdx", "archive.txt.gz"]
    )
    def test_unknown_file_types_have_no_parser(self, path: str) -> None:
        assert default_registry().parser_for(path) is None

    def test_patterns_in_matching_order(self) -> None:
        assert default_registry().patterns() == ["*.md", "*.markdown", "*.txt"]

    def test_versions_name_every_parser(self) -> None:
        versions = default_registry().versions()
        assert set(versions) == {"markdown", "text"}
        assert all(isinstance(v, str) and v for v in versions.values())

    def test_each_call_returns_an_independent_registry(self) -> None:
        first = default_registry()
        first.register("*.org", FunctionParser("org", "1", parse_text))
        assert default_registry().parser_for("x.org") is None

    def test_get_parser_uses_the_defaults(self) -> None:
        parser = get_parser("a/b.md")
        assert parser is not None and parser.name == "markdown"
        assert get_parser("a/b.pdf") is None

    def test_parsers_are_callable_and_satisfy_the_protocol(self) -> None:
        parser = get_parser("x.md")
        assert isinstance(parser, Parser)
        doc = parser("# Hi\n", "x.md")
        assert isinstance(doc, ParsedDocument)
        assert doc.title == "Hi"


class TestRegistration:
    def test_first_matching_pattern_wins(self) -> None:
        registry = ParserRegistry()
        special = FunctionParser("special", "1", parse_text)
        registry.register("special-*.md", special)
        registry.register("*.md", FunctionParser("markdown", "1", parse_markdown))
        assert registry.parser_for("notes/special-one.md") is special
        other = registry.parser_for("notes/other.md")
        assert other is not None and other.name == "markdown"

    def test_matching_ignores_case_of_pattern_and_name(self) -> None:
        registry = ParserRegistry()
        registry.register("*.Org", FunctionParser("org", "1", parse_text))
        assert registry.parser_for("x.ORG") is not None
        assert registry.parser_for("x.org") is not None

    def test_patterns_match_the_file_name_not_the_directories(self) -> None:
        registry = ParserRegistry()
        registry.register("notes*", FunctionParser("n", "1", parse_text))
        assert registry.parser_for("notes/file.md") is None
        assert registry.parser_for("other/notes.md") is not None

    def test_registering_a_pattern_again_replaces_it_in_place(self) -> None:
        registry = default_registry()
        custom = FunctionParser("custom-md", "7", parse_text)
        registry.register("*.MD", custom)
        assert registry.patterns() == ["*.MD", "*.markdown", "*.txt"]
        assert registry.parser_for("x.md") is custom
        assert registry.versions()["custom-md"] == "7"

    @pytest.mark.parametrize("glob", ["", "dir/*.md"])
    def test_invalid_patterns_are_rejected(self, glob: str) -> None:
        with pytest.raises(ValueError):
            ParserRegistry().register(glob, FunctionParser("x", "1", parse_text))

    def test_an_empty_registry_matches_nothing(self) -> None:
        assert ParserRegistry().parser_for("x.md") is None
        assert ParserRegistry().patterns() == []


# ----------------------------------------------------------------------------------------------
# Plain text


class TestTextParser:
    def test_title_is_the_file_stem_and_markup_is_not_interpreted(self) -> None:
        doc = parse_text("# Not a heading #not-a-tag [[not a link]]\n", "logs/2024 day.txt")
        assert doc.title == "2024 day"
        assert doc.tags == [] and doc.links == [] and doc.frontmatter == {}
        assert [s.heading_path for s in doc.sections] == [()]

    def test_paragraphs_split_on_blank_lines(self) -> None:
        doc = parse_text("first\nstill first\n\n  \nsecond\n\n\nthird", "a.txt")
        assert len(doc.sections) == 1
        section = doc.sections[0]
        assert [(b.kind, b.start_line, b.end_line, b.text) for b in section.blocks] == [
            ("paragraph", 1, 2, "first\nstill first"),
            ("paragraph", 5, 5, "second"),
            ("paragraph", 8, 8, "third"),
        ]
        assert (section.level, section.start_line, section.end_line) == (0, 1, 8)

    def test_normalisation_matches_markdown(self) -> None:
        doc = parse_text("\ufeffone\r\ntwo\rthree\r\n", "a.txt")
        assert doc.text == "one\ntwo\nthree\n"
        assert doc.line_count == 3
        assert doc.body_start_line == 1

    def test_frontmatter_looking_lines_are_plain_text(self) -> None:
        doc = parse_text("---\ntitle: x\n---\n", "a.txt")
        assert doc.frontmatter == {}
        assert doc.title == "a"
        assert doc.sections[0].blocks[0].text == "---\ntitle: x\n---"

    @pytest.mark.parametrize("text", ["", "\n\n", "  \t \n"])
    def test_blank_text_has_no_sections(self, text: str) -> None:
        assert parse_text(text, "a.txt").sections == []


@settings(max_examples=100, deadline=None)
@given(st.text())
def test_text_parser_covers_every_non_blank_line(text: str) -> None:
    doc = parse_text(text, "x.txt")
    lines = doc.text.split("\n")
    covered = {
        line
        for section in doc.sections
        for block in section.blocks
        for line in range(block.start_line, block.end_line + 1)
    }
    for number in range(1, doc.line_count + 1):
        if lines[number - 1].strip(" \t"):
            assert number in covered
