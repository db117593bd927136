"""Markdown parser: frontmatter, title, aliases, tags, links and the section/block outline.

One module-level markdown-it instance (:data:`~noteseek.parse.dialect.PARSER_MD`: CommonMark,
tables and noteseek's dialect) tokenizes the document, a bounded window of lines at a time
(:mod:`~noteseek.parse.windows`); the block token line maps give every block its exact source
lines. This module runs the parts in order:

* :mod:`~noteseek.parse.blocks` collects the top-level blocks and builds the sections;
* :mod:`~noteseek.parse.inline` finds links and tags in inline content on the way;
* :mod:`~noteseek.parse.frontmatter` loads the YAML and the aliases, tags and links it declares.
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from itertools import chain
from typing import Any

from noteseek.parse.blocks import build_blocks, build_sections, collect_blocks
from noteseek.parse.frontmatter import (
    frontmatter_aliases,
    frontmatter_links,
    frontmatter_tags,
    load_frontmatter,
)
from noteseek.parse.inline import InlineScanner
from noteseek.parse.text import (
    SourceLines,
    normalize_text,
    paragraph_blocks,
    split_lines,
    title_from_path,
)
from noteseek.parse.versions import MARKDOWN_NAME, MARKDOWN_VERSION
from noteseek.parse.windows import WINDOW_LINES, windows
from noteseek.types import ParsedDocument, Section

__all__ = ["PARSER_NAME", "PARSER_VERSION", "leading_heading", "parse_markdown"]

# The markdown-it version is part of ours: a tokenizer upgrade can move block boundaries, and
# the index manifest compares this string to decide whether a rebuild is needed.
PARSER_NAME = MARKDOWN_NAME
PARSER_VERSION = MARKDOWN_VERSION


def parse_markdown(text: str, path: str) -> ParsedDocument:
    """Parse a Markdown note. Never raises: on an internal failure the body is kept as text.

    ``path`` is the POSIX path relative to its root; its stem is the last-resort title.
    """
    text = normalize_text(text)
    try:
        return _parse(text, path)
    except Exception as exc:  # a tokenizer bug must not stop indexing the rest of the vault
        lines = split_lines(text)
        blocks = paragraph_blocks(lines, 0, len(lines))
        sections = (
            [Section((), 0, blocks[0].start_line, blocks[-1].end_line, blocks)] if blocks else []
        )
        return ParsedDocument(
            title=title_from_path(path),
            text=text,
            line_count=len(lines),
            sections=sections,
            warnings=[f"markdown: parse failed ({type(exc).__name__}: {exc}); indexed as text"],
        )


def _parse(text: str, path: str) -> ParsedDocument:
    lines = SourceLines(text)
    env: dict[str, Any] = {}
    if len(lines) > WINDOW_LINES and "]:" in text:
        # A link reference definition may come after a window that uses it: collect them all
        # first (markdown-it keeps them in ``env``), so links resolve as in one pass.
        for _ in windows(lines, env):
            pass
    scanner = InlineScanner(env)
    stream = windows(lines, env)
    first = next(stream, None)
    warnings: list[str] = []
    frontmatter: dict[str, Any] = {}
    body_start = 0
    fm_source = ""
    if first is not None and first.tokens and first.tokens[0].type == "front_matter":
        # Only ever the first token of the first window.
        token = first.tokens[0]
        body_start, fm_source = token.map[1] if token.map else 0, token.content
        frontmatter = load_frontmatter(fm_source, warnings)

    # Windows, blocks and sections stream into each other: only the sections are kept.
    raw = collect_blocks(chain([first] if first else [], stream), scanner, warnings)
    sections = build_sections(build_blocks(raw, lines, body_start))

    fm_title = frontmatter.get("title")
    doc = ParsedDocument(
        title="",
        text=text,
        line_count=len(lines),
        sections=sections,
        frontmatter=frontmatter,
        aliases=frontmatter_aliases(frontmatter),
        tags=_dedupe_tags([*frontmatter_tags(frontmatter), *scanner.tags]),
        links=[*frontmatter_links(frontmatter, fm_source), *scanner.links],
        warnings=[*warnings, *scanner.warnings],
        body_start_line=body_start + 1,
    )
    # The docs rule (noteseek.parse.conventions gives the other styles theirs): an H1 further
    # down is a section heading, not the title.
    if isinstance(fm_title, str) and fm_title.strip():
        doc.title = fm_title.strip()
    else:
        doc.title = leading_heading(doc) or title_from_path(path)
    return doc


def _dedupe_tags(tags: Iterable[str]) -> list[str]:
    """Each tag once, first spelling kept: Obsidian treats ``#Tag`` and ``#tag`` as one."""
    out: list[str] = []
    seen: set[str] = set()
    for tag in tags:
        key = tag.casefold()
        if key not in seen:
            seen.add(key)
            out.append(tag)
    return out


# A paragraph that holds only images or linked images (a README's badges).
_BADGES = re.compile(r"\s*(?:\[?!\[[^\]]*\]\([^)]*\)(?:\]\([^)]*\))?\s*)+")


def leading_heading(doc: ParsedDocument) -> str:
    """The text of the H1 that is ``doc``'s first content, or "" when it has none."""
    for section in doc.sections:
        for block in section.blocks:
            if block.kind == "html" or (block.kind == "paragraph" and _badges(block.text)):
                continue
            if block.kind == "heading" and block.level == 1 and section.heading_path:
                return section.heading_path[-1]
            return ""
    return ""


def _badges(text: str) -> bool:
    return _BADGES.fullmatch(text) is not None
