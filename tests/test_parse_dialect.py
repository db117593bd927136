"""noteseek's public Markdown dialect: any MarkdownIt given it reads notes as the parser does."""

from __future__ import annotations

from typing import Any

import pytest
from markdown_it import MarkdownIt
from markdown_it.token import Token

from noteseek.parse import parse_markdown
from noteseek.parse.dialect import noteseek_dialect


def _md() -> MarkdownIt:
    return MarkdownIt("commonmark").use(noteseek_dialect)


def _inline_tokens(tokens: list[Token]) -> list[Token]:
    return [child for token in tokens for child in token.children or []]


def test_wikilinks_tokenize_as_the_parser_reads_them() -> None:
    text = "See [[Note#Part|shown]], ![[Picture.png]] and [[#Local]].\n"
    wikilinks = [t for t in _inline_tokens(_md().parse(text)) if t.type == "wikilink"]
    seen = [
        (t.meta["target"], t.meta["anchor"], t.meta["display"], t.meta["embed"]) for t in wikilinks
    ]
    assert seen == [
        ("Note", "Part", "shown", False),
        ("Picture.png", None, None, True),
        ("", "Local", None, False),
    ]
    parsed = [
        (link.target, link.anchor, link.display, link.kind == "embed")
        for link in parse_markdown(text, "n.md").links
    ]
    assert parsed == seen


def test_a_wikilink_renders_through_the_callers_rule() -> None:
    md = _md()

    def render(_self: Any, tokens: list[Token], idx: int, *_args: Any) -> str:
        meta = tokens[idx].meta
        return f'<a data-target="{meta["target"]}">{meta["display"] or meta["target"]}</a>'

    md.add_render_rule("wikilink", render)
    html = md.render("Go to [[Home|the start]] or [[Other]].\n")
    assert html == (
        '<p>Go to <a data-target="Home">the start</a> or <a data-target="Other">Other</a>.</p>\n'
    )


@pytest.mark.parametrize(
    ("text", "is_frontmatter"),
    [
        ("---\ntitle: T\n---\nbody\n", True),
        ("---  \ntitle: T\n---\nbody\n", True),
        ("---foo\ntitle: T\n---\nbody\n", False),
        ("- ---\ntitle: T\n---\nbody\n", False),
        ("body\n---\ntitle: T\n---\n", False),
    ],
)
def test_frontmatter_is_guarded_as_the_parser_guards_it(text: str, is_frontmatter: bool) -> None:
    tokens = _md().parse(text)
    found = [t for t in tokens if t.type == "front_matter"]
    assert bool(found) is is_frontmatter
    doc = parse_markdown(text, "n.md")
    assert (doc.frontmatter == {"title": "T"}) is is_frontmatter
    if found:
        assert found[0].map is not None
        assert doc.body_start_line == found[0].map[1] + 1
    else:
        assert doc.body_start_line == 1
