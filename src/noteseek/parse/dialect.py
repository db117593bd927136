"""noteseek's Markdown dialect: CommonMark plus Obsidian wikilinks and a guarded frontmatter.

The parser and the web page's renderer both read notes through :func:`noteseek_dialect`, so a
``[[Note|label]]`` or a frontmatter block is seen by the page exactly as the index saw it.

* ``[[Note#Heading|shown]]`` and ``![[Note]]`` become ``wikilink`` inline tokens whose ``meta``
  holds ``target``, ``anchor``, ``display`` (None when absent), ``embed`` and ``pos`` (the offset
  in the inline content where the link starts).
* A frontmatter block (``front_matter`` token) opens only on a first line made of dashes alone.

The parser's own instance (:data:`PARSER_MD`) adds link positions and switches markdown-it's inline
pass off: :mod:`noteseek.parse.inline` tokenizes inline content on demand.
"""

from __future__ import annotations

import re
from collections.abc import Callable

from markdown_it import MarkdownIt
from markdown_it.rules_block import StateBlock
from markdown_it.rules_inline import StateInline
from markdown_it.rules_inline import image as _image_rule
from markdown_it.rules_inline import link as _link_rule
from mdit_py_plugins.front_matter import front_matter_plugin

__all__ = ["PARSER_MD", "PARSER_MD_BODY", "WIKILINK_RE", "noteseek_dialect", "split_wikilink"]

# Obsidian note names are file names, so real wikilinks are short. The bound keeps the scan
# for ``]]`` linear on pathological input such as a megabyte of ``[[``.
_MAX_WIKILINK_CHARS = 1024

WIKILINK_RE = re.compile(rf"(!?)\[\[([^\[\]\n]{{1,{_MAX_WIKILINK_CHARS}}})\]\]")
"""A wikilink found by pattern alone (group 1: ``!`` for an embed, group 2: the inside), for
text markdown-it does not tokenize: frontmatter values and oversized paragraphs."""

_FRONTMATTER_OPEN_RE = re.compile(r"-{3,}[ \t]*\Z")

_InlineRule = Callable[[StateInline, bool], bool]
_BlockRule = Callable[[StateBlock, int, int, bool], bool]


def noteseek_dialect(md: MarkdownIt) -> None:
    """Install noteseek's dialect (guarded frontmatter, wikilinks) into ``md``.

    A markdown-it plugin: ``MarkdownIt("commonmark").use(noteseek_dialect)``. It adds the
    frontmatter plugin itself, so ``md`` must not have it already.
    """
    md.use(front_matter_plugin)
    _guard_front_matter(md)
    md.inline.ruler.before("link", "wikilink", _wikilink_rule)


def split_wikilink(inner: str) -> tuple[str, str | None, str | None] | None:
    """``Note#Heading|shown`` -> (target, anchor, display); None when nothing is linked."""
    target_part, bar, display = inner.partition("|")
    # Inside a table the pipe must be escaped (``[[Note\\|shown]]``); the backslash is not
    # part of the note name.
    if bar and target_part.endswith("\\"):
        target_part = target_part[:-1]
    target, _, anchor = target_part.partition("#")
    target = target.strip()
    anchor = anchor.strip()
    if not target and not anchor:
        return None
    return target, anchor or None, display.strip() or None


def _wikilink_rule(state: StateInline, silent: bool) -> bool:
    src = state.src
    pos = state.pos
    if src.startswith("[[", pos):
        start = pos + 2
        embed = False
    elif src.startswith("![[", pos):
        start = pos + 3
        embed = True
    else:
        return False
    end = src.find("]]", start, min(state.posMax, start + _MAX_WIKILINK_CHARS))
    if end < 0:
        return False
    inner = src[start:end]
    if "\n" in inner or "[" in inner:
        return False
    parts = split_wikilink(inner)
    if parts is None:
        return False
    if not silent:
        target, anchor, display = parts
        token = state.push("wikilink", "", 0)
        token.content = inner
        token.meta = {
            "target": target,
            "anchor": anchor,
            "display": display,
            "embed": embed,
            "pos": pos,
        }
    state.pos = end + 2
    return True


def _guard_front_matter(md: MarkdownIt) -> None:
    """Only accept a first line made of dashes alone as a frontmatter opener.

    The plugin checks just the first three characters, so ``---foo`` or ``- ---`` (a list item)
    on line 1 would swallow the document up to the next ``---``.
    """
    for rule in md.block.ruler.__rules__:
        if rule.name == "front_matter":
            md.block.ruler.at("front_matter", _guarded(rule.fn), {"alt": list(rule.alt)})
            return


def _guarded(inner: _BlockRule) -> _BlockRule:
    def guarded(state: StateBlock, start_line: int, end_line: int, silent: bool) -> bool:
        if start_line != 0 or not _FRONTMATTER_OPEN_RE.match(state.src, 0, state.eMarks[0]):
            return False
        return inner(state, start_line, end_line, silent)

    return guarded


def _record_position(rule: _InlineRule) -> _InlineRule:
    """Wrap a built-in link/image rule so its token remembers where it started.

    Inline tokens carry no source positions; the offset is what turns a link into a line number.
    """

    def wrapped(state: StateInline, silent: bool) -> bool:
        start = state.pos
        first_new = len(state.tokens)
        if not rule(state, silent):
            return False
        if not silent:
            # A pending text token may be flushed first; the link's own token follows it.
            for token in state.tokens[first_new:]:
                if token.type in ("link_open", "image"):
                    token.meta["pos"] = start
                    break
        return True

    return wrapped


MAX_TABLE_COLUMNS = 256
"""Wider "tables" are read as paragraphs when indexing. markdown-it makes three tokens per
cell, so a row of 100,000 one-character cells is 300,000 tokens (over 100 MB) on one line,
which no window of lines can bound."""


def _narrow_tables(md: MarkdownIt) -> None:
    for rule in md.block.ruler.__rules__:
        if rule.name == "table":
            md.block.ruler.at("table", _narrow(rule.fn), {"alt": list(rule.alt)})
            return


def _narrow(inner: _BlockRule) -> _BlockRule:
    def narrow(state: StateBlock, start_line: int, end_line: int, silent: bool) -> bool:
        # The delimiter row (the header's next line) sets the column count; its pipes bound it.
        line = start_line + 1
        if line < end_line:
            delimiter = state.src[state.bMarks[line] : state.eMarks[line]]
            if delimiter.count("|") > MAX_TABLE_COLUMNS + 1:
                return False
        return inner(state, start_line, end_line, silent)

    return narrow


def _build_parser_md() -> MarkdownIt:
    md = MarkdownIt("commonmark").enable("table").use(noteseek_dialect)
    _narrow_tables(md)
    md.inline.ruler.at("link", _record_position(_link_rule))
    md.inline.ruler.at("image", _record_position(_image_rule))
    # Inline content is tokenized on demand, by noteseek.parse.inline.InlineScanner.
    md.disable("inline")
    return md


PARSER_MD = _build_parser_md()
"""The parser's instance: CommonMark + tables (at most :data:`MAX_TABLE_COLUMNS` wide) + the
dialect, links carrying their offsets, and the core ``inline`` rule disabled (see
:mod:`noteseek.parse.inline` for why)."""

PARSER_MD_BODY = _build_parser_md().disable("front_matter")
""":data:`PARSER_MD` without frontmatter, for text that does not start the document (the block
pass reads a long note in windows, see :mod:`noteseek.parse.windows`)."""
