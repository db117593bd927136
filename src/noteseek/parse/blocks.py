"""The outline of a note: its top-level blocks with exact source lines, grouped into sections.

markdown-it's block tokens carry line maps; :func:`collect_blocks` reads them (handing inline
content to the scanner on the way), :func:`build_blocks` turns them into exact-line blocks with
nothing left out, and :func:`build_sections` groups those under their headings.
"""

from __future__ import annotations

from markdown_it.token import Token

from noteseek.parse.inline import InlineScanner
from noteseek.parse.text import is_blank, paragraph_blocks
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
    tokens: list[Token], scanner: InlineScanner
) -> tuple[list[RawBlock], tuple[int, str] | None]:
    """Top-level blocks from the token stream, and the frontmatter (end line, YAML) if any."""
    blocks: list[RawBlock] = []
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


def build_blocks(raw: list[RawBlock], lines: list[str], body_start: int) -> list[tuple[Block, str]]:
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
    """The lines between tokens (link reference definitions, say) as ``other`` blocks."""
    blocks = paragraph_blocks(lines, start, end)
    for block in blocks:
        block.kind = "other"
    return blocks


def build_sections(blocks: list[tuple[Block, str]]) -> list[Section]:
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
