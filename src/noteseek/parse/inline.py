"""Links and tags in a note's inline content: wikilinks, Markdown links, ``#tags``, with lines.

Speed matters here (a vault is re-parsed on every full rebuild), and markdown-it's inline pass,
run on everything, costs as much again as the block pass. So the parser's instance has the core
``inline`` rule disabled and :class:`InlineScanner` tokenizes an inline token's content only when
it can hold something we extract: a link (``[[``, ``](``, a reference), a heading's markup, or a
``#`` next to characters that could hide it (code spans, escapes, entities, inline HTML).
Everything else is scanned with a regular expression or skipped.
"""

from __future__ import annotations

import re
from bisect import bisect_left
from typing import Any
from urllib.parse import unquote

from markdown_it.token import Token

from noteseek.parse.dialect import PARSER_MD, WIKILINK_RE, split_wikilink
from noteseek.types import Link, LinkKind

__all__ = ["SCHEME_RE", "TAG_WORD_RE", "InlineScanner", "clean_tag"]

# markdown-it's inline pass crawls through bracket soup (a paragraph of ``[[[[...`` costs about
# 17 µs per character, 0.5 s at this size); an inline run larger than this is scanned with
# plain regular expressions instead. Real paragraphs are far smaller.
_MAX_INLINE_CHARS = 32 * 1024

# Obsidian tag syntax: letters, digits, ``_``, ``-`` and ``/`` (nesting), after a line start or
# whitespace so ``page#frag`` and URL fragments do not count.
_TAG_RE = re.compile(r"(?<!\S)#([\w/-]+)")
TAG_WORD_RE = re.compile(r"[^\W\d]")
"""At least one letter or ``_``: ``#123`` and ``#1-2`` are issue numbers, not tags."""
SCHEME_RE = re.compile(r"[A-Za-z][A-Za-z0-9+.-]*:")
"""A URL scheme at the start (matched with ``match``): such a link points outside the vault."""
_HEADING_MARKUP_RE = re.compile(r"[*_`\[<\\&!]")
_TAG_HIDERS = ("`", "\\", "<", "&")
# Single-backtick spans only: anything cleverer backtracks badly on long runs of backticks.
_ROUGH_CODE_SPAN_RE = re.compile(r"`[^`]*`")
_ROUGH_LINK_RE = re.compile(r"(!?)\[([^\[\]\n]{0,1024})\]\([ \t]*<?([^\s()<>]+)")


def clean_tag(tag: str) -> str | None:
    """A tag without its edge slashes, or None when it is not one (no letter, e.g. ``#123``)."""
    tag = tag.strip("/")
    return tag if tag and TAG_WORD_RE.search(tag) else None


class _LineLocator:
    """Turns offsets in one inline token's content into file line numbers."""

    __slots__ = ("_content", "_first", "_last", "_newlines")

    def __init__(self, content: str, line_map: list[int] | None) -> None:
        self._content = content
        self._first = line_map[0] + 1 if line_map else 1
        self._last = max(self._first, line_map[1]) if line_map else self._first
        self._newlines: list[int] | None = None

    def line(self, pos: object) -> int:
        if not isinstance(pos, int) or self._first == self._last:
            return self._first
        if self._newlines is None:
            # Built once per token: counting from 0 for every link is quadratic in a paragraph
            # made of thousands of links.
            self._newlines = [m.start() for m in re.finditer("\n", self._content)]
        return min(self._first + bisect_left(self._newlines, pos), self._last)


class InlineScanner:
    """Collects links and tags from inline tokens, in document order.

    ``env`` is the one the block pass filled (its link reference definitions resolve
    ``[text][ref]`` links).
    """

    def __init__(self, env: dict[str, Any]) -> None:
        self.env = env
        self.links: list[Link] = []
        self.tags: list[str] = []
        self.warnings: list[str] = []

    def scan(self, token: Token, heading: bool) -> str:
        """Scan one inline token; return its plain text when it is a heading's content."""
        content = token.content
        # ``env`` fills as the block pass goes (link reference definitions), so look each time.
        needs_links = (
            "[[" in content
            or "](" in content
            or ("]" in content and bool(self.env.get("references")))
        )
        has_hash = "#" in content
        if heading:
            if not needs_links and not _HEADING_MARKUP_RE.search(content):
                if has_hash:
                    self._tags_in(content)
                return " ".join(content.split())
        elif not needs_links:
            if not has_hash:
                return ""
            if not any(ch in content for ch in _TAG_HIDERS):
                self._tags_in(content)
                return ""
            # else a code span, escape, entity or HTML tag could hide the ``#``: tokenize.
        locator = _LineLocator(content, token.map)
        if len(content) > _MAX_INLINE_CHARS:
            return self._rough_scan(content, locator)
        children: list[Token] = []
        PARSER_MD.inline.parse(content, PARSER_MD, self.env, children)
        return self._walk(children, locator, has_hash, heading)

    def _walk(self, children: list[Token], locator: _LineLocator, tags: bool, heading: bool) -> str:
        plain: list[str] = []
        tag_text: list[str] = []
        link_start: Token | None = None
        link_text: list[str] = []
        for child in children:
            kind = child.type
            if kind == "text":
                plain.append(child.content)
                tag_text.append(child.content)
                if link_start is not None:
                    link_text.append(child.content)
            elif kind == "softbreak" or kind == "hardbreak":
                plain.append(" ")
                tag_text.append("\n")
                if link_start is not None:
                    link_text.append(" ")
            elif kind == "code_inline" or kind == "text_special":
                plain.append(child.content)
                # Escapes and entities stay as written, so ``\#x`` is not a tag.
                tag_text.append("\x00" if kind == "code_inline" else child.markup)
                if link_start is not None:
                    link_text.append(child.content)
            elif kind == "link_open":
                link_start = child
                link_text = []
                tag_text.append("\x00")
            elif kind == "link_close":
                if link_start is not None:
                    href = link_start.attrGet("href")
                    if isinstance(href, str):
                        line = locator.line(link_start.meta.get("pos"))
                        self._markdown_link(href, False, line, "".join(link_text))
                link_start = None
                tag_text.append("\x00")
            elif kind == "image":
                src = child.attrGet("src")
                if isinstance(src, str):
                    line = locator.line(child.meta.get("pos"))
                    self._markdown_link(src, True, line, child.content)
                tag_text.append("\x00")
            elif kind == "wikilink":
                meta = child.meta
                shown = meta["display"] or child.content.partition("|")[0].strip()
                plain.append(shown)
                if link_start is not None:
                    link_text.append(shown)
                tag_text.append("\x00")
                self.links.append(
                    Link(
                        target=meta["target"],
                        kind="embed" if meta["embed"] else "wikilink",
                        line=locator.line(meta.get("pos")),
                        anchor=meta["anchor"],
                        display=meta["display"],
                    )
                )
            elif kind == "html_inline":
                tag_text.append("\x00")
            else:
                # Emphasis delimiters: keep the source characters so ``*#x*`` behaves as in
                # the untokenized fast path (no tag).
                tag_text.append(child.markup)
        if tags:
            self._tags_in("".join(tag_text))
        return " ".join("".join(plain).split()) if heading else ""

    def _rough_scan(self, content: str, locator: _LineLocator) -> str:
        """Pattern-only extraction for an inline run too large for markdown-it's inline pass."""
        self.warnings.append(
            f"markdown: text at line {locator.line(0)} is over {_MAX_INLINE_CHARS // 1024} KB;"
            " links and tags in it were found by pattern only"
        )
        # Blank out code spans (same length, so offsets still map to lines).
        text = _ROUGH_CODE_SPAN_RE.sub(lambda m: " " * len(m.group()), content)
        wikilinks: list[tuple[int, Link]] = []
        for match in WIKILINK_RE.finditer(text):
            parts = split_wikilink(match.group(2))
            if parts is not None:
                target, anchor, display = parts
                kind: LinkKind = "embed" if match.group(1) else "wikilink"
                line = locator.line(match.start())
                wikilinks.append((match.start(), Link(target, kind, line, anchor, display)))
        links = [(m.start(), m) for m in _ROUGH_LINK_RE.finditer(text)]
        # Keep document order across the two patterns, as the tokenized path does.
        merged: list[tuple[int, Link | re.Match[str]]] = [*wikilinks, *links]
        merged.sort(key=lambda item: item[0])
        for pos, found in merged:
            if isinstance(found, Link):
                self.links.append(found)
            else:
                embed = bool(found.group(1))
                self._markdown_link(found.group(3), embed, locator.line(pos), found.group(2))
        self._tags_in(text)
        return " ".join(content.split())

    def _markdown_link(self, href: str, embed: bool, line: int, display: str) -> None:
        href = href.strip()
        if not href or href.startswith(("#", "//")) or SCHEME_RE.match(href):
            return
        path, _, anchor = href.partition("#")
        target = unquote(path.partition("?")[0])
        if not target:
            return
        shown = " ".join(display.split())
        self.links.append(
            Link(
                target=target,
                kind="embed" if embed else "markdown",
                line=line,
                anchor=unquote(anchor) or None,
                display=shown or None,
            )
        )

    def _tags_in(self, text: str) -> None:
        for match in _TAG_RE.finditer(text):
            tag = clean_tag(match.group(1))
            if tag:
                self.tags.append(tag)
