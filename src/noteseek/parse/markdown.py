"""Markdown parser: frontmatter, title, aliases, tags, links and the section/block outline.

One module-level markdown-it instance (CommonMark + tables + front matter, plus a wikilink
inline rule) tokenizes the document; the block token line maps give every block its exact
source lines.

Speed matters here (a vault is re-parsed on every full rebuild), and markdown-it's inline
pass, run on everything, costs as much again as the block pass. So the core ``inline`` rule is
disabled and an inline token's content is tokenized only when it can hold something we
extract: a link (``[[``, ``](``, a reference), a heading's markup, or a ``#`` next to
characters that could hide it (code spans, escapes, entities, inline HTML). Everything else is
scanned with a regular expression or skipped.
"""

from __future__ import annotations

import datetime as dt
import math
import re
from bisect import bisect_left
from collections.abc import Callable, Iterable, Iterator
from typing import Any
from urllib.parse import unquote

import markdown_it
import yaml
from markdown_it import MarkdownIt
from markdown_it.rules_block import StateBlock
from markdown_it.rules_inline import StateInline
from markdown_it.rules_inline import image as _image_rule
from markdown_it.rules_inline import link as _link_rule
from markdown_it.token import Token
from mdit_py_plugins.front_matter import front_matter_plugin

from noteseek.parse.text import (
    is_blank,
    normalize_text,
    paragraph_blocks,
    split_lines,
    title_from_path,
)
from noteseek.types import Block, BlockKind, Link, LinkKind, ParsedDocument, Section

__all__ = ["PARSER_NAME", "PARSER_VERSION", "parse_markdown"]

PARSER_NAME = "markdown"
# The markdown-it version is part of ours: a tokenizer upgrade can move block boundaries, and
# the index manifest compares this string to decide whether a rebuild is needed.
PARSER_VERSION = f"2+markdown-it-py.{markdown_it.__version__}"

_YAML_LOADER: type[yaml.CSafeLoader] | type[yaml.SafeLoader]
try:
    _YAML_LOADER = yaml.CSafeLoader
except AttributeError:  # PyYAML built without libyaml
    _YAML_LOADER = yaml.SafeLoader

# Obsidian note names are file names, so real wikilinks are short. The bound keeps the scan
# for ``]]`` linear on pathological input such as a megabyte of ``[[``.
_MAX_WIKILINK_CHARS = 1024
# Alias expansion can make a small YAML document describe an exponentially large tree
# ("billion laughs"), and YAML anchors can build cycles; converting to JSON must stop somewhere.
_MAX_FRONTMATTER_NODES = 20_000
_MAX_FRONTMATTER_DEPTH = 64

# markdown-it's inline pass crawls through bracket soup (a paragraph of ``[[[[...`` costs about
# 17 µs per character, 0.5 s at this size); an inline run larger than this is scanned with
# plain regular expressions instead. Real paragraphs are far smaller.
_MAX_INLINE_CHARS = 32 * 1024

_FRONTMATTER_OPEN_RE = re.compile(r"-{3,}[ \t]*\Z")
# Obsidian tag syntax: letters, digits, ``_``, ``-`` and ``/`` (nesting), after a line start or
# whitespace so ``page#frag`` and URL fragments do not count.
_TAG_RE = re.compile(r"(?<!\S)#([\w/-]+)")
# At least one letter or ``_``: ``#123`` and ``#1-2`` are issue numbers, not tags.
_TAG_WORD_RE = re.compile(r"[^\W\d]")
_SCHEME_RE = re.compile(r"[A-Za-z][A-Za-z0-9+.-]*:")
_HEADING_MARKUP_RE = re.compile(r"[*_`\[<\\&!]")
_TAG_HIDERS = ("`", "\\", "<", "&")
# Single-backtick spans only: anything cleverer backtracks badly on long runs of backticks.
_ROUGH_CODE_SPAN_RE = re.compile(r"`[^`]*`")
_ROUGH_WIKILINK_RE = re.compile(rf"(!?)\[\[([^\[\]\n]{{1,{_MAX_WIKILINK_CHARS}}})\]\]")
_ROUGH_LINK_RE = re.compile(r"(!?)\[([^\[\]\n]{0,1024})\]\([ \t]*<?([^\s()<>]+)")

_BLOCK_KINDS: dict[str, BlockKind] = {
    "heading_open": "heading",
    "paragraph_open": "paragraph",
    "fence": "code",
    "code_block": "code",
    "bullet_list_open": "list",
    "ordered_list_open": "list",
    "table_open": "table",
    "blockquote_open": "quote",
    "html_block": "html",
}

_RawBlock = tuple[BlockKind, int, int, str | None, int, str]
"""kind, 0-based start line, 0-based exclusive end line, language, heading level, heading."""


# --------------------------------------------------------------------------------------------
# markdown-it setup


def _split_wikilink(inner: str) -> tuple[str, str | None, str | None] | None:
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
    parts = _split_wikilink(inner)
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


_InlineRule = Callable[[StateInline, bool], bool]


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


_BlockRule = Callable[[StateBlock, int, int, bool], bool]


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


def _build_markdown_it() -> MarkdownIt:
    md = MarkdownIt("commonmark").enable("table").use(front_matter_plugin)
    _guard_front_matter(md)
    md.inline.ruler.before("link", "wikilink", _wikilink_rule)
    md.inline.ruler.at("link", _record_position(_link_rule))
    md.inline.ruler.at("image", _record_position(_image_rule))
    # Inline content is tokenized on demand in _InlineScanner.
    md.disable("inline")
    return md


_MD = _build_markdown_it()


# --------------------------------------------------------------------------------------------
# Frontmatter


class _JsonBudget:
    """Converts YAML values to JSON-safe ones, stopping on huge or cyclic structures."""

    def __init__(self) -> None:
        self.nodes = 0
        self.truncated = False

    def value(self, value: Any, depth: int = 0) -> Any:
        self.nodes += 1
        if self.nodes > _MAX_FRONTMATTER_NODES or depth > _MAX_FRONTMATTER_DEPTH:
            self.truncated = True
            return None
        if value is None or isinstance(value, bool | str):
            return value
        if isinstance(value, int):
            return _safe_int(value)
        if isinstance(value, float):
            # NaN and infinities are not JSON.
            return value if math.isfinite(value) else str(value)
        if isinstance(value, dt.date | dt.datetime | dt.time):
            return value.isoformat()
        if isinstance(value, dict):
            return {self.key(k): self.value(v, depth + 1) for k, v in value.items()}
        if isinstance(value, list | tuple):
            return [self.value(v, depth + 1) for v in value]
        if isinstance(value, set | frozenset):
            return [self.value(v, depth + 1) for v in sorted(value, key=str)]
        if isinstance(value, bytes):  # !!binary
            return value.decode("utf-8", "replace")
        return str(value)

    def key(self, key: Any) -> str:
        if isinstance(key, str):
            return key
        if isinstance(key, bool):
            return "true" if key else "false"
        if key is None:
            return "null"
        converted = self.value(key, _MAX_FRONTMATTER_DEPTH)
        return converted if isinstance(converted, str) else str(converted)


def _safe_int(value: int) -> int | str:
    # Hex/octal YAML ints are not bound by Python's int->str digit limit on the way in, but
    # json.dumps would fail on the way out.
    return value if value.bit_length() <= 4000 else hex(value)


def _load_frontmatter(source: str, warnings: list[str]) -> dict[str, Any]:
    try:
        data = yaml.load(source, Loader=_YAML_LOADER)
    except yaml.MarkedYAMLError as exc:
        mark = exc.problem_mark or exc.context_mark
        problem = exc.problem or exc.context or "parse error"
        if mark is not None:
            # The YAML text starts on line 2 of the file, after the opening ``---``.
            warnings.append(f"frontmatter: invalid YAML at line {mark.line + 2}: {problem}")
        else:
            warnings.append(f"frontmatter: invalid YAML: {problem}")
        return {}
    except Exception as exc:  # e.g. ValueError for a date like 2024-13-45, RecursionError
        warnings.append(f"frontmatter: invalid YAML: {type(exc).__name__}: {exc}")
        return {}
    if data is None:
        return {}
    if not isinstance(data, dict):
        warnings.append(
            f"frontmatter: expected a mapping, got {type(data).__name__}; frontmatter ignored"
        )
        return {}
    budget = _JsonBudget()
    converted: dict[str, Any] = budget.value(data)
    if budget.truncated:
        warnings.append("frontmatter: too large or too deeply nested; some values dropped")
    return converted


def _frontmatter_strings(value: Any) -> list[str]:
    items = value if isinstance(value, list) else [value]
    return [
        str(item) for item in items if item is not None and not isinstance(item, bool | dict | list)
    ]


def _aliases(frontmatter: dict[str, Any]) -> list[str]:
    out: list[str] = []
    seen: set[str] = set()
    for key in ("aliases", "alias"):
        for item in _frontmatter_strings(frontmatter.get(key)):
            for alias in item.split(","):
                alias = alias.strip()
                if alias and alias not in seen:
                    seen.add(alias)
                    out.append(alias)
    return out


def _frontmatter_tags(frontmatter: dict[str, Any]) -> list[str]:
    out: list[str] = []
    for key in ("tags", "tag"):
        for item in _frontmatter_strings(frontmatter.get(key)):
            for word in re.split(r"[,\s]+", item):
                tag = _clean_tag(word.lstrip("#"))
                if tag:
                    out.append(tag)
    return out


def _clean_tag(tag: str) -> str | None:
    tag = tag.strip("/")
    return tag if tag and _TAG_WORD_RE.search(tag) else None


def frontmatter_links(frontmatter: dict[str, Any], source: str) -> list[Link]:
    """Links written as frontmatter properties (kind ``property``, ``display`` = the key).

    * Any string value holding wikilinks (``related: "[[Note]]"``, as Obsidian properties
      write them) links to each of them, under every key but aliases, tags and title.
    * Under a relation key (``related``, ``see_also``, ``up``, ``parent``, ``implements``,
      ``tests``... see ``RELATION_KEYS``) a plain note name counts too (``related: [a, b]``),
      and so does YAML's reading of an unquoted ``up: [[Note]]`` (a list inside a list).
    The line is the key's line in the file.
    """
    out: list[Link] = []
    key_lines = _frontmatter_key_lines(source)
    for key, value in frontmatter.items():
        folded = " ".join(key.lower().replace("_", " ").replace("-", " ").split())
        if folded in _NOT_RELATION_KEYS:
            continue
        relation = folded in RELATION_KEYS
        line = key_lines.get(key, 1)
        for text, nested in _property_strings(value):
            found = [m.group(2) for m in _ROUGH_WIKILINK_RE.finditer(text)]
            if found:
                for inner in found:
                    parts = _split_wikilink(inner)
                    if parts is not None and parts[0]:
                        out.append(Link(parts[0], "property", line, parts[1], key))
            elif (relation or nested) and _looks_like_note_name(text):
                target, _, anchor = text.strip().partition("#")
                out.append(Link(target.strip(), "property", line, anchor.strip() or None, key))
    return out


RELATION_KEYS = frozenset(
    {
        "related",
        "related notes",
        "see also",
        "seealso",
        "links",
        "up",
        "down",
        "parent",
        "parents",
        "child",
        "children",
        "next",
        "prev",
        "previous",
        "source",
        "sources",
        "implements",
        "implementation",
        "tests",
        "tested by",
    }
)
"""Frontmatter keys (folded: lower case, ``_`` and ``-`` as spaces) whose plain values are
note names."""
_NOT_RELATION_KEYS = frozenset({"aliases", "alias", "tags", "tag", "title", "cssclasses"})
_FRONTMATTER_KEY_RE = re.compile(r"^(['\"]?)([^\s:#'\"][^:]*?)\1\s*:")


def _frontmatter_key_lines(source: str) -> dict[str, int]:
    """Top-level key -> its line in the file (the YAML starts on line 2)."""
    lines: dict[str, int] = {}
    for number, text in enumerate(source.split("\n"), start=2):
        m = _FRONTMATTER_KEY_RE.match(text)
        if m:
            lines.setdefault(m.group(2).strip(), number)
    return lines


def _property_strings(value: Any, depth: int = 0) -> Iterator[tuple[str, bool]]:
    """The strings inside a property value, each with whether it sat in a list in a list."""
    if isinstance(value, str):
        yield value, False
    elif isinstance(value, list) and depth < 3:
        for item in value:
            if isinstance(item, list) and len(item) == 1 and isinstance(item[0], str):
                yield item[0], True  # up: [[Note]] unquoted is [["Note"]] to YAML
            else:
                yield from _property_strings(item, depth + 1)
    elif isinstance(value, dict) and depth < 3:
        for item in value.values():
            yield from _property_strings(item, depth + 1)


def _looks_like_note_name(text: str) -> bool:
    text = text.strip()
    return (
        0 < len(text) <= 200
        and "\n" not in text
        and not _SCHEME_RE.match(text)
        and _TAG_WORD_RE.search(text) is not None
    )


# --------------------------------------------------------------------------------------------
# Inline content


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


class _InlineScanner:
    """Collects links and tags from inline tokens, in document order."""

    def __init__(self, env: dict[str, Any]) -> None:
        self.env = env
        self.has_references = bool(env.get("references"))
        self.links: list[Link] = []
        self.tags: list[str] = []
        self.warnings: list[str] = []

    def scan(self, token: Token, heading: bool) -> str:
        """Scan one inline token; return its plain text when it is a heading's content."""
        content = token.content
        needs_links = "[[" in content or "](" in content or (self.has_references and "]" in content)
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
        _MD.inline.parse(content, _MD, self.env, children)
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
        for match in _ROUGH_WIKILINK_RE.finditer(text):
            parts = _split_wikilink(match.group(2))
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
        if not href or href.startswith(("#", "//")) or _SCHEME_RE.match(href):
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
            tag = _clean_tag(match.group(1))
            if tag:
                self.tags.append(tag)


def _dedupe_tags(tags: Iterable[str]) -> list[str]:
    out: list[str] = []
    seen: set[str] = set()
    for tag in tags:
        key = tag.casefold()
        if key not in seen:
            seen.add(key)
            out.append(tag)
    return out


# --------------------------------------------------------------------------------------------
# Blocks and sections


def _fence_language(info: str) -> str | None:
    words = info.split(None, 1)
    return words[0] if words else None


def _collect_blocks(
    tokens: list[Token], scanner: _InlineScanner
) -> tuple[list[_RawBlock], tuple[int, str] | None]:
    """Top-level blocks from the token stream, and the frontmatter (end line, YAML) if any."""
    blocks: list[_RawBlock] = []
    frontmatter: tuple[int, str] | None = None
    count = len(tokens)
    index = 0
    while index < count:
        token = tokens[index]
        kind_name = token.type
        if kind_name == "inline":
            scanner.scan(token, heading=False)
        elif token.level == 0 and token.nesting >= 0 and token.map is not None:
            start, end = token.map
            if kind_name == "front_matter":
                frontmatter = (end, token.content)
            elif kind_name == "heading_open":
                heading = ""
                if index + 1 < count and tokens[index + 1].type == "inline":
                    index += 1
                    heading = scanner.scan(tokens[index], heading=True)
                blocks.append(("heading", start, end, None, int(token.tag[1:] or 1), heading))
            elif kind_name == "fence":
                language = _fence_language(token.info)
                blocks.append(("code", start, end, language, 0, ""))
            else:
                blocks.append((_BLOCK_KINDS.get(kind_name, "other"), start, end, None, 0, ""))
        index += 1
    return blocks, frontmatter


def _build_blocks(
    raw: list[_RawBlock], lines: list[str], body_start: int
) -> list[tuple[Block, str]]:
    """Exact-line Blocks (with heading texts), trimmed of blank edges, gaps filled in.

    markdown-it emits no token for link reference definitions, so their lines would otherwise
    belong to no block (and no chunk); they become ``other`` blocks.
    """
    total = len(lines)
    out: list[tuple[Block, str]] = []
    cursor = body_start
    for kind, start, end, language, level, heading in raw:
        start = max(start, cursor)
        end = min(end, total)
        while end > start + 1 and is_blank(lines[end - 1]):
            end -= 1
        while start < end - 1 and is_blank(lines[start]):
            start += 1
        if start >= end:
            continue
        if start > cursor:
            out.extend((block, "") for block in _gap_blocks(lines, cursor, start))
        block = Block(kind, start + 1, end, "\n".join(lines[start:end]), language, level)
        out.append((block, heading))
        cursor = end
    if cursor < total:
        out.extend((block, "") for block in _gap_blocks(lines, cursor, total))
    return out


def _gap_blocks(lines: list[str], start: int, end: int) -> list[Block]:
    blocks = paragraph_blocks(lines, start, end)
    for block in blocks:
        block.kind = "other"
    return blocks


def _build_sections(blocks: list[tuple[Block, str]]) -> list[Section]:
    sections: list[Section] = []
    stack: list[tuple[int, str]] = []
    current: Section | None = None
    for block, heading in blocks:
        if block.kind == "heading":
            # A heading closes every open heading of the same or a deeper level.
            while stack and stack[-1][0] >= block.level:
                stack.pop()
            stack.append((block.level, heading))
            current = Section(
                tuple(text for _, text in stack),
                block.level,
                block.start_line,
                block.end_line,
                [block],
            )
            sections.append(current)
            continue
        if current is None:
            current = Section((), 0, block.start_line, block.end_line)
            sections.append(current)
        current.blocks.append(block)
        current.end_line = block.end_line
    return sections


# --------------------------------------------------------------------------------------------
# Entry point


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
    lines = split_lines(text)
    env: dict[str, Any] = {}
    tokens = _MD.parse(text, env)
    scanner = _InlineScanner(env)
    raw_blocks, frontmatter_block = _collect_blocks(tokens, scanner)

    warnings: list[str] = []
    frontmatter: dict[str, Any] = {}
    body_start = 0
    fm_source = ""
    if frontmatter_block is not None:
        body_start, fm_source = frontmatter_block
        frontmatter = _load_frontmatter(fm_source, warnings)

    sections = _build_sections(_build_blocks(raw_blocks, lines, body_start))

    title = ""
    fm_title = frontmatter.get("title")
    if isinstance(fm_title, str) and fm_title.strip():
        title = fm_title.strip()
    else:
        for kind, _, _, _, level, heading in raw_blocks:
            if kind == "heading" and level == 1 and heading:
                title = heading
                break
    if not title:
        title = title_from_path(path)

    return ParsedDocument(
        title=title,
        text=text,
        line_count=len(lines),
        sections=sections,
        frontmatter=frontmatter,
        aliases=_aliases(frontmatter),
        tags=_dedupe_tags([*_frontmatter_tags(frontmatter), *scanner.tags]),
        links=[*frontmatter_links(frontmatter, fm_source), *scanner.links],
        warnings=[*warnings, *scanner.warnings],
        body_start_line=body_start + 1,
    )
