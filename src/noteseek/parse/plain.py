"""Markdown as a person reads it: the plain text of a section, for snippets and agent text.

Snippets and the text an agent reads are the words of a note, not its markup. ``plain_text``
keeps what a rendered note shows and removes what only the source has:

- wikilinks become their display text: ``[[Folder/Note|Alias]]`` -> ``Alias``,
  ``[[Folder/Note]]`` -> ``Note``, ``[[Note#Part]]`` -> ``Note > Part``; embeds likewise;
- Markdown links and images become their text (``[text](url)`` -> ``text``);
- heading markers (``#``, ``##``, setext underlines), list bullets, task boxes, quote
  markers, table rules and emphasis markers (``**``, ``__``, ``*``, ``_``, ``~~``, ``==``)
  go; inline code keeps its text without the backticks;
- code fences go but the code inside stays, untouched;
- HTML tags and comments go;
- Logseq ``key:: value`` property lines and ``((block-uuid))`` references go, and so do
  org-mode block markers (``#+BEGIN_QUOTE``, ``#+END_NOTE``);
- backslash escapes show the character (``snake\\_case`` -> ``snake_case``).

With ``properties``, property lines are kept as ``key: value`` (for a section made of
properties only, whose plain text would otherwise be empty).

``reading_text`` is what the embedding model reads of a chunk: its Markdown without link
addresses, and without its code when the chunk has prose of its own (:data:`PROSE_WORDS`). A
link's address or a block of parameter metadata costs the model as much as words do and says
little of what the section is about; the rest of the markup stays, because removing it helped
one documentation set and hurt another (docs/evaluation.md, "What the embedding model reads").

It works line by line with regular expressions (no parser: a snippet of 220 characters is
made for every result, and the text of a chunk can start inside any construct), so it is
a rendering for reading, never a source for offsets into the file.
"""

from __future__ import annotations

import functools
import re
from collections.abc import Iterator
from typing import Literal

_FENCE_RE = re.compile(r"^\s*(```+|~~~+)")
_HEADING_RE = re.compile(r"^\s{0,3}#{1,6}(?:\s+|$)")
_CLOSING_HASHES_RE = re.compile(r"\s+#+\s*$")
_RULE_RE = re.compile(r"^\s{0,3}(?:[-=*_]\s*){3,}$")
_TABLE_RULE_RE = re.compile(r"^(?=.*\|)\s*\|?\s*:?-+:?\s*(?:\|\s*:?-+:?\s*)*\|?\s*$")
_PROPERTY_RE = re.compile(r"^\s*(?:[-*+]\s+)?[A-Za-z0-9_][\w.-]*::(?:\s.*)?$")
_QUOTE_RE = re.compile(r"^\s*(?:>\s?)+")
_BULLET_RE = re.compile(r"^(\s*)(?:[-*+]|\d{1,9}[.)])\s+(?:\[[ xX-]\]\s+)?")
_EMPTY_BULLET_RE = re.compile(r"^\s*[-*+]\s*$")
_ORG_BLOCK_RE = re.compile(r"^\s*(?:[-*+]\s+)?#\+(?:BEGIN|END)_\w*.*$", re.IGNORECASE)
_PROPERTY_PARTS_RE = re.compile(r"^\s*(?:[-*+]\s+)?([A-Za-z0-9_][\w.-]*)::\s*(.*)$")
_ESCAPE_RE = re.compile(r"\\([\\`*_{}\[\]()#+\-.!|~<>=])")

_CODE_SPAN_RE = re.compile(r"(`+)(.+?)\1")
_WIKILINK_RE = re.compile(r"!?\[\[([^\[\]\n]+?)\]\]")
_IMAGE_RE = re.compile(r"!\[([^\]\n]*)\]\(([^)\n]*)\)")
_LINK_RE = re.compile(r"\[([^\]\n]+)\](?:\(([^)\n]*)\)|\[[^\]\n]*\])")
_AUTOLINK_RE = re.compile(r"<((?:https?|mailto|ftp):[^>\s]+)>")
_COMMENT_RE = re.compile(r"<!--.*?(?:-->|$)")
_TAG_RE = re.compile(r"</?[A-Za-z][A-Za-z0-9-]*(?:\s[^<>]*)?/?>")
_BLOCK_REF_RE = re.compile(r"\(\([0-9a-fA-F-]{8,}\)\)")
_EMPHASIS_RES = (  # each with the text it needs to find anything
    ("**", re.compile(r"\*\*(?=\S)(.+?)(?<=\S)\*\*")),
    ("__", re.compile(r"(?<!\w)__(?=\S)(.+?)(?<=\S)__(?!\w)")),
    ("~~", re.compile(r"~~(?=\S)(.+?)(?<=\S)~~")),
    ("==", re.compile(r"==(?=\S)(.+?)(?<=\S)==")),
    ("*", re.compile(r"(?<![\w*])\*(?=[^\s*])(.+?)(?<=[^\s*])\*(?![\w*])")),
    ("_", re.compile(r"(?<!\w)_(?=[^\s_])(.+?)(?<=[^\s_])_(?!\w)")),
)
_CODE_MARK = "\x00"
_ESCAPED_MARK = "\x01"


KEPT_TEXTS = 1024
"""Sections whose plain text is kept for the next search that shows them (a server answers
the same popular sections over and over: their snippets were 7 % of its Python time under 20
clients, ``bench/serve_mixed_load.py``). At most a few MB: sections are a few KB."""


def plain_text(text: str, *, properties: bool = False, urls: frozenset[str] = frozenset()) -> str:
    """``text`` (Markdown) as plain text, line for line where a line stays; ``properties``:
    property lines as ``key: value`` instead of left out; ``urls``: Markdown links and images
    to these addresses keep them after their text (``text (url)``), for a snippet whose match
    is in an address."""
    return _plain_text(text, properties, urls)


PROSE_WORDS = 20
"""A chunk with at least this many words outside its fenced code blocks is read without its
code; with fewer, its code is read too (a section that is mostly an example is about that
example)."""


def reading_text(text: str) -> str:
    """What the embedding model reads of a chunk's Markdown ``text``: the Markdown as written,
    without link and image addresses (their text stays), and without the code of fenced blocks
    when the rest has :data:`PROSE_WORDS` words of plain text."""
    if "```" in text or "~~~" in text:
        # One walk of the lines, and no use of the snippets' cache (a corpus embedded must
        # not evict their plain texts).
        outside = [line for line, kind in _lines(text) if kind == "text"]
        words = sum(len((_plain_line(line) or "").split()) for line in outside)
        if words >= PROSE_WORDS:
            text = "\n".join(outside)
    if "[" in text:
        text = _IMAGE_RE.sub(r"\1", text)
        text = _LINK_RE.sub(r"\1", text)
    if "<" in text:
        text = _AUTOLINK_RE.sub(r"\1", text)
    return text


def link_addresses(text: str) -> list[str]:
    """The addresses of the Markdown links and images in ``text``, in order."""
    return [m.group(2).strip() for m in _LINK_RE.finditer(text) if m.group(2)]


@functools.lru_cache(maxsize=KEPT_TEXTS)
def _plain_text(text: str, properties: bool, urls: frozenset[str] = frozenset()) -> str:
    out: list[str] = []
    for line, kind in _lines(text):
        if kind == "code":
            out.append(line)
        elif kind == "text":
            kept = _plain_line(line, properties, urls)
            if kept is not None:
                out.append(kept)
    return "\n".join(out)


def _lines(text: str) -> Iterator[tuple[str, Literal["text", "fence", "code"]]]:
    """Each line of ``text`` with what it is: a fence of a code block, a line inside one (an
    unclosed block runs to the end), or text."""
    fence: str | None = None
    for line in text.split("\n"):
        opening = _FENCE_RE.match(line) if "```" in line or "~~~" in line else None
        if fence is not None:
            if opening and opening.group(1)[0] == fence[0] and len(opening.group(1)) >= len(fence):
                fence = None
                yield line, "fence"
            else:
                yield line, "code"
        elif opening:
            fence = opening.group(1)
            yield line, "fence"
        else:
            yield line, "text"


def display_text(target: str) -> str:
    """What a wikilink shows: its alias, else its note's name (and the part it points to)."""
    if "|" in target:
        alias = target.split("|", 1)[1].strip()
        if alias:
            return alias
        target = target.split("|", 1)[0]
    note, _, part = target.partition("#")
    note = note.strip().rsplit("/", 1)[-1]
    if note.lower().endswith(".md"):
        note = note[:-3]
    part = part.lstrip("^").strip()
    if note and part:
        return f"{note} > {part}"
    return note or part


_BLOCK_START = frozenset("#>-*+|:=_")
"""Characters a line-level construct (heading, quote, bullet, rule, table rule, property,
org block) starts with; digits too (ordered lists, properties)."""


def _plain_line(
    line: str, properties: bool = False, urls: frozenset[str] = frozenset()
) -> str | None:
    """The line as plain text, or None when nothing of it is shown."""
    first = line[:1]
    if first.isspace():
        first = line.lstrip()[:1]
    if not first or (first not in _BLOCK_START and not first.isdigit() and "::" not in line):
        return _inline(line, urls)  # prose: no line-level construct can match
    return _line_constructs(line, properties, urls)


def _line_constructs(line: str, properties: bool, urls: frozenset[str] = frozenset()) -> str | None:
    """:func:`_plain_line` with every line-level rule tried."""
    if _PROPERTY_RE.match(line):
        parts = _PROPERTY_PARTS_RE.match(line)
        if not properties or parts is None:
            return None
        return f"{parts.group(1)}: {_inline(parts.group(2), urls)}"
    if _TABLE_RULE_RE.match(line) or _RULE_RE.match(line) or _ORG_BLOCK_RE.match(line):
        return None
    if _EMPTY_BULLET_RE.match(line):
        return ""
    line = _QUOTE_RE.sub("", line)
    heading = _HEADING_RE.match(line)
    if heading:
        line = _CLOSING_HASHES_RE.sub("", line[heading.end() :])
    else:
        line = _BULLET_RE.sub(r"\1", line)
        if _PROPERTY_RE.match(line):
            return None
        if line.lstrip().startswith("#") and _HEADING_RE.match(line.lstrip()):
            # A Logseq bullet holding a heading: "- ## Part".
            line = line.lstrip()
            line = line[_HEADING_RE.match(line).end() :]  # type: ignore[union-attr]
    return _inline(line, urls)


_MARKUP = frozenset("`\\<[(!*_~=|")
"""Characters some inline rule starts with: a line without any is its own plain text."""


def _inline(line: str, urls: frozenset[str] = frozenset()) -> str:
    """Inline markup removed; code spans keep their text exactly; a link to one of ``urls``
    keeps its address after its text."""
    if _MARKUP.isdisjoint(line):
        return line
    spans: list[str] = []

    def keep(match: re.Match[str]) -> str:
        spans.append(match.group(2).strip(" ") or match.group(2))
        return f"{_CODE_MARK}{len(spans) - 1}{_CODE_MARK}"

    if "`" in line:
        line = _CODE_SPAN_RE.sub(keep, line)
    escaped: list[str] = []

    def hide(match: re.Match[str]) -> str:
        escaped.append(match.group(1))
        return f"{_ESCAPED_MARK}{len(escaped) - 1}{_ESCAPED_MARK}"

    if "\\" in line:
        line = _ESCAPE_RE.sub(hide, line)
    if "<" in line:
        line = _COMMENT_RE.sub("", line)
    if "((" in line:
        line = _BLOCK_REF_RE.sub("", line)
    if "[" in line:
        line = _WIKILINK_RE.sub(lambda m: display_text(m.group(1)), line)
        shown = functools.partial(_link_text, urls)
        line = _IMAGE_RE.sub(shown, line)
        line = _LINK_RE.sub(shown, line)
    if "<" in line:
        line = _AUTOLINK_RE.sub(r"\1", line)
        line = _TAG_RE.sub("", line)
    for marker, pattern in _EMPHASIS_RES:
        if marker in line:
            line = pattern.sub(r"\1", line)
    if line.lstrip().startswith("|") or line.rstrip().endswith("|"):
        line = " ".join(cell.strip() for cell in line.strip().strip("|").split("|"))
    if escaped:
        line = re.sub(
            f"{_ESCAPED_MARK}(\\d+){_ESCAPED_MARK}", lambda m: escaped[int(m.group(1))], line
        )
    if spans:
        line = re.sub(f"{_CODE_MARK}(\\d+){_CODE_MARK}", lambda m: spans[int(m.group(1))], line)
    return line


def _link_text(urls: frozenset[str], match: re.Match[str]) -> str:
    """A link's text, and its address when it is one of ``urls``."""
    url = (match.group(2) or "").strip()
    return f"{match.group(1)} ({url})" if url and url in urls else match.group(1)
