"""The outline of a note: its top-level blocks with exact source lines, grouped into sections.

markdown-it's block tokens carry line maps; :func:`collect_blocks` reads them window by window
(:mod:`~noteseek.parse.windows`), handing inline content to the scanner on the way,
:func:`build_blocks` turns them into exact-line blocks with nothing left out, and
:func:`build_sections` groups those under their headings. The first two are generators, so
a long note's blocks are held once, in its sections.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator, Sequence

from noteseek.parse.inline import InlineScanner
from noteseek.parse.text import is_blank, join_lines, paragraph_blocks
from noteseek.parse.windows import Window
from noteseek.types import Block, BlockKind, Section

__all__ = ["RawBlock", "build_blocks", "build_sections", "collect_blocks"]

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

RawBlock = tuple[BlockKind, int, int, str | None, int, str]
"""kind, 0-based start line, 0-based exclusive end line, language, heading level, heading."""


def _fence_language(info: str) -> str | None:
    words = info.split(None, 1)
    return words[0] if words else None


def collect_blocks(
    windows: Iterable[Window], scanner: InlineScanner, warnings: list[str]
) -> Iterator[RawBlock]:
    """Top-level blocks from the windows' tokens, in order (the frontmatter is not one); the
    windows' warnings go to ``warnings``. A block cut between two windows is one block again.

    A generator, like :func:`build_blocks`: a long note's blocks are never all held twice.
    """
    pending: RawBlock | None = None
    for window in windows:
        warnings.extend(window.warnings)
        join = window.continues
        tokens = window.tokens
        count = len(tokens)
        index = 0
        while index < count:
            token = tokens[index]
            kind_name = token.type
            if kind_name == "inline":
                scanner.scan(token, heading=False)
            elif token.level == 0 and token.nesting >= 0 and token.map is not None:
                start, end = token.map
                block: RawBlock | None = None
                if kind_name == "heading_open":
                    heading = ""
                    if index + 1 < count and tokens[index + 1].type == "inline":
                        index += 1
                        heading = scanner.scan(tokens[index], heading=True)
                    block = ("heading", start, end, None, int(token.tag[1:] or 1), heading)
                elif kind_name == "fence":
                    block = ("code", start, end, _fence_language(token.info), 0, "")
                elif kind_name != "front_matter":
                    kind = _BLOCK_KINDS.get(kind_name, "other")
                    if join and pending is not None and pending[0] == kind:
                        block = (kind, pending[1], end, None, 0, "")
                        pending = None
                    else:
                        block = (kind, start, end, None, 0, "")
                join = False
                if block is not None:
                    if pending is not None:
                        yield pending
                    pending = block
            index += 1
    if pending is not None:
        yield pending


def build_blocks(
    raw: Iterable[RawBlock], lines: Sequence[str], body_start: int
) -> Iterator[tuple[Block, str]]:
    """Exact-line Blocks (with heading texts), trimmed of blank edges, gaps filled in.

    markdown-it emits no token for link reference definitions, so their lines would otherwise
    belong to no block (and no chunk); they become ``other`` blocks.
    """
    total = len(lines)
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
            yield from ((block, "") for block in _gap_blocks(lines, cursor, start))
        yield Block(kind, start + 1, end, join_lines(lines, start, end), language, level), heading
        cursor = end
    if cursor < total:
        yield from ((block, "") for block in _gap_blocks(lines, cursor, total))


def _gap_blocks(lines: Sequence[str], start: int, end: int) -> list[Block]:
    """The lines between tokens (link reference definitions, say) as ``other`` blocks."""
    blocks = paragraph_blocks(lines, start, end)
    for block in blocks:
        block.kind = "other"
    return blocks


def build_sections(blocks: Iterable[tuple[Block, str]]) -> list[Section]:
    """Blocks grouped under their heading path; blocks before the first heading form a section
    with an empty path."""
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
