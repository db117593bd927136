"""Logseq pages and journals: page properties, outlines, namespaced names and dates.

A Logseq page is an outline: ``- `` bullets nested by indentation (tabs), with ``key:: value``
properties. This parser reads it as Logseq shows it:

* **Page properties** (the first block, before the first bullet or as a first bullet made only
  of properties) are fields: ``title::`` is the title, ``alias::`` the aliases, ``tags::`` the
  tags, any other key a frontmatter-like field (``type:: [[Tool]]`` -> ``type: "Tool"``,
  searchable with ``--where``). Their lines are not in the indexed body text (as every
  property line, :func:`clean_prose`), but they stay in the first chunk's text, which the
  embedding model reads: a page is then found by meaning through its aliases and description
  too (measured: leaving them out of the chunk cost alias queries 0.09 MRR@10 in the semantic
  lane). Their page references are ``property`` links named by their key (``alias::`` and
  ``title::`` references name the page itself and are not links).
* **Title**: ``title::``, else a YAML frontmatter ``title``, else the page name from the file
  name: ``___`` (Logseq's ``:triple-lowbar`` file names) and ``%2F`` are the namespace
  separator ``/`` and other ``%XX`` escapes are decoded (``Whiteboard___Tool.md`` -> ``
  Whiteboard/Tool``), so ``[[Whiteboard/Tool]]`` resolves to it.
* **Journals** (``journals/2023_01_15.md``): the ``date`` field is the day (``2023-01-15``,
  which is also the note's date for ``--after``/``--before``), the title is Logseq's default
  ``Jan 15th, 2023``, and the ISO day is an alias.
* **Outline**: every top-level bullet with its children is one ``outline`` block, so a chunk
  never separates a child from its parent when they fit together (the chunker cuts a longer
  one between its children, then deeper). A heading (``# X`` or ``- # X``) starts a section.
* **Noise**: block properties (``id:: 64f...``, ``collapsed:: true``) and block references
  (``((uuid))``) are left out of the indexed text (:func:`clean_prose`); the source lines stay
  as they are in the file.

Links and tags are found by the Markdown parser on a copy of the text whose body lines lose
their indentation and bullet (Logseq's tab-indented bullets after a heading would otherwise
read as code, and a fence opened on a bullet would not close), so their line numbers are the
file's.
"""

from __future__ import annotations

import re
from collections.abc import Iterator, Sequence
from dataclasses import replace
from datetime import date
from pathlib import PurePosixPath
from typing import Any
from urllib.parse import unquote

from noteseek.parse.blocks import build_sections
from noteseek.parse.markdown import parse_markdown
from noteseek.parse.text import join_lines, normalize_text, title_from_path
from noteseek.parse.versions import LOGSEQ_VERSION
from noteseek.types import Block, Link, ParsedDocument

__all__ = [
    "LOGSEQ_VERSION",
    "clean_prose",
    "journal_day",
    "page_name",
    "parse_logseq",
]


_PROPERTY = re.compile(r"^[ \t]*(?:- )?([A-Za-z][\w-]*):: ?(.*)$")
_BULLET = re.compile(r"[-*+](?:[ \t]|$)")
# A line's indentation and bullet: what the Markdown parser is not shown (see the docstring).
_OUTLINE_MARK = re.compile(r"^[ \t]*(?:[-*+](?:[ \t]+|$))?")
_HEADING = re.compile(r"^(?:- )?(#{1,6})[ \t]+(.*?)[ \t]*$")
_FENCE = re.compile(r"[ \t]*(?:- )?(?:`{3,}|~{3,})")
_BLOCK_REF = re.compile(r"\(\([0-9a-fA-F]{8}-[0-9a-fA-F-]{27,}\)\)")
_REF = re.compile(r"\[\[([^\[\]]*)\]\]")
_LISTED = re.compile(r"\[\[[^\[\]]*\]\]|#\S+")
_JOURNAL = re.compile(r"(\d{4})[_.-](\d{2})[_.-](\d{2})")
_FM_FENCE = ("---", "...")


def parse_logseq(text: str, path: str) -> ParsedDocument:
    """Parse a Logseq page or journal (``path`` relative to the graph's folder)."""
    text = normalize_text(text)
    lines = text.split("\n")
    fm_end = _frontmatter_end(lines)
    view = "\n".join([*lines[:fm_end], *map(_view_line, lines[fm_end:])])
    base = parse_markdown(view, path)
    body = base.body_start_line - 1
    props, prop_lines = _page_properties(lines, body)

    frontmatter: dict[str, Any] = dict(base.frontmatter)
    aliases = list(base.aliases)
    tags: list[str] = []
    for key, value in props.items():
        values = _values(value, key in ("alias", "tags"))
        if key == "alias":
            aliases.extend(v for v in values if v not in aliases)
        elif key == "tags":
            tags.extend(v for v in values if v)
        if key != "title":
            frontmatter.setdefault(key, values[0] if len(values) == 1 else values)
    folded = {t.casefold() for t in tags}
    tags.extend(t for t in base.tags if t.casefold() not in folded)

    title = _strip_refs(props.get("title", "")).strip()
    fm_title = base.frontmatter.get("title")
    if not title and isinstance(fm_title, str) and fm_title.strip():
        title = fm_title.strip()
    day = journal_day(path)
    if day is not None:
        frontmatter.setdefault("date", day.isoformat())
        if day.isoformat() not in aliases:
            aliases.append(day.isoformat())
    if not title:
        title = _journal_title(day) if day is not None else page_name(path)
    if title.casefold() != page_name(path).casefold() and day is None:
        aliases.append(page_name(path))
    aliases = [a for a in aliases if a.casefold() != title.casefold()]

    links: list[Link] = []
    for link in base.links:
        prop = prop_lines.get(link.line)
        if _BLOCK_REF.fullmatch(link.target):
            continue  # a block reference used as a link target: not a page
        if prop is None:
            links.append(link)
        elif prop not in ("title", "alias"):
            links.append(replace(link, kind="property", display=prop))

    sections = build_sections(outline_blocks(lines, body))
    return ParsedDocument(
        title=title,
        text=text,
        line_count=len(lines),
        sections=sections,
        frontmatter=frontmatter,
        aliases=aliases,
        tags=tags,
        links=links,
        warnings=base.warnings,
        body_start_line=body + 1,
    )


def _view_line(line: str) -> str:
    """A body line as the Markdown parser sees it: no indentation, no bullet, and no HTML
    block start (a ``<div>`` in a bullet would run to the next blank line, which an outline
    has none of)."""
    line = _OUTLINE_MARK.sub("", line)
    return "\\" + line if line.startswith("<") else line


def page_name(path: str) -> str:
    """The page name Logseq shows for a file: ``___`` and ``%2F`` are ``/``, ``%XX`` decoded."""
    stem = title_from_path(path)
    return unquote(stem.replace("___", "/")).strip() or stem


def journal_day(path: str) -> date | None:
    """The day of a journal (``journals/2023_01_15.md``), or None for a page."""
    pure = PurePosixPath(path)
    if "journals" not in pure.parts[:-1]:
        return None
    match = _JOURNAL.fullmatch(pure.stem)
    if match is None:
        return None
    try:
        return date(int(match.group(1)), int(match.group(2)), int(match.group(3)))
    except ValueError:
        return None


def _journal_title(day: date) -> str:
    """Logseq's default journal title: ``Jan 15th, 2023``."""
    n = day.day
    suffix = "th" if 11 <= n % 100 <= 13 else {1: "st", 2: "nd", 3: "rd"}.get(n % 10, "th")
    return f"{day.strftime('%b')} {n}{suffix}, {day.year}"


def clean_prose(text: str) -> str:
    """Indexed text without property lines (``id:: ...``) and block references."""
    if "::" not in text and "((" not in text:
        return text
    kept = [line for line in text.split("\n") if not _PROPERTY.match(line)]
    return _BLOCK_REF.sub(" ", "\n".join(kept))


def _frontmatter_end(lines: Sequence[str]) -> int:
    if not lines or lines[0].rstrip() != "---":
        return 0
    for index in range(1, len(lines)):
        if lines[index].rstrip() in _FM_FENCE:
            return index + 1
    return 0


def _page_properties(lines: Sequence[str], start: int) -> tuple[dict[str, str], dict[int, str]]:
    """The first block's properties ({key: value}) and their 1-based lines ({line: key})."""
    index = start
    while index < len(lines) and not lines[index].strip():
        index += 1
    props: dict[str, str] = {}
    at: dict[int, str] = {}
    first = index
    while index < len(lines):
        line = lines[index]
        match = _PROPERTY.match(line)
        # Only the first line may carry the bullet of a properties-only first block.
        if match is None or (index > first and line.lstrip().startswith("- ")):
            break
        key = match.group(1).lower()
        props.setdefault(key, match.group(2).strip())
        at[index + 1] = key
        index += 1
    return props, at


def _strip_refs(value: str) -> str:
    return _REF.sub(lambda m: m.group(1), value)


def _values(value: str, listed: bool) -> list[str]:
    """A property's values, page references and ``#`` unwrapped: split at commas when the
    key holds a list (``alias``, ``tags``) or every part is a reference (``[[a]], #b``)."""
    parts = re.split(r",(?![^\[]*\]\])", value) if "," in value else [value]
    if len(parts) > 1 and not listed and not all(_LISTED.fullmatch(p.strip()) for p in parts):
        parts = [value]
    out = [_strip_refs(p).strip().lstrip("#").strip() for p in parts]
    return [p for p in out if p] or [""]


def outline_blocks(lines: Sequence[str], start: int) -> Iterator[tuple[Block, str]]:
    """The page's blocks from 0-based line ``start``: headings, top-level bullets with their
    children (``outline``), code fences and paragraphs, with their heading texts."""
    index = start
    total = len(lines)
    while index < total:
        line = lines[index]
        if not line.strip():
            index += 1
            continue
        heading = _HEADING.match(line)
        if heading and not line[0].isspace():
            level = len(heading.group(1))
            yield (
                Block("heading", index + 1, index + 1, line, level=level),
                _strip_refs(heading.group(2)).strip(),
            )
            index += 1
            continue
        if line[0].isspace() or _BULLET.match(line):
            if line[0].isspace():  # an indented run after a heading or a paragraph
                end = _item_end(lines, index, False)
            else:
                end = _item_end(lines, index + 1, _fence(line))
            yield Block("outline", index + 1, end, join_lines(lines, index, end)), ""
            index = end
            continue
        end = index + 1
        if _fence(line):
            while end < total and not _FENCE.match(lines[end]):
                end += 1
            end = min(end + 1, total)
            yield Block("code", index + 1, end, join_lines(lines, index, end)), ""
            index = end
            continue
        while end < total and lines[end].strip() and not _starts_block(lines[end]):
            end += 1
        yield Block("paragraph", index + 1, end, join_lines(lines, index, end)), ""
        index = end


def _fence(line: str) -> bool:
    return _FENCE.match(line) is not None


def _starts_block(line: str) -> bool:
    return line[0].isspace() or bool(_BULLET.match(line)) or bool(_HEADING.match(line))


def _item_end(lines: Sequence[str], index: int, in_fence: bool) -> int:
    """The exclusive end of the item whose continuation starts at ``index``: indented and
    blank lines (and anything inside a code fence) belong to it; trailing blanks do not."""
    last = index - 1
    while index < len(lines):
        line = lines[index]
        if line.strip():
            if not in_fence and not line[0].isspace():
                break
            if _fence(line):
                in_fence = not in_fence
            last = index
        index += 1
    return last + 1
