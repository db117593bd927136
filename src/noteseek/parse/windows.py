"""The block pass over bounded windows of lines, so parsing memory does not grow with a note.

markdown-it builds every block token of a document before returning them: about five tokens of
~370 bytes for each line of a long list or table, so a 4.8 MB list took 700 MB (and Python's
collector, walking millions of live tokens, made the time grow faster than the size). Here the
source is tokenized :data:`WINDOW_LINES` lines (about :data:`WINDOW_TOKENS` tokens) at a time
and each window's tokens are consumed and dropped before the next window is read.

Cutting the source must not change the parse. A window's top-level blocks are taken except the
last one, which may go on past the window's end; the next window starts where that block
started. CommonMark decides where a block ends from the lines up to the next block's first
line, so every block before the last one is exactly what a whole-document parse gives. When the
last block is the only one (a list, table or quote longer than a window), it is cut between two
of its own items (list items, table rows, the quote's children) and the next window continues
from there; a table continues under a copy of its header and delimiter rows. Both parts are then
one block again (:func:`~noteseek.parse.blocks.collect_blocks` joins them), so the result is the
whole-document parse. A block without such a cut (a paragraph, code block or HTML block, each a
few tokens however long) makes the window grow instead, doubling, so time stays linear. Only a
huge block whose items all sit deeper (one list item holding thousands of others) is cut at a
deeper child, which can parse the rest a little differently; it comes with a warning.
"""

from __future__ import annotations

import re
from collections.abc import Iterator, Sequence
from dataclasses import dataclass, field
from typing import Any

from markdown_it.token import Token

from noteseek.parse.dialect import PARSER_MD, PARSER_MD_BODY

__all__ = ["WINDOW_LINES", "Window", "windows"]

WINDOW_LINES = 2048
"""Most lines tokenized at once: about 10,000 tokens (~4 MB) for a list, five per line."""
WINDOW_TOKENS = 16_384
"""Tokens a window aims at: lines that make more (a table row, a token per cell and more)
make the next window shorter, down to :data:`_MIN_LINES`. A line makes at most ~45 tokens
outside tables (markdown-it nests at most 20 containers), and a table row at most three per
cell (:data:`~noteseek.parse.dialect.MAX_TABLE_COLUMNS`)."""
_MIN_LINES = 16

_MAX_GROWTH = 8
"""A block that cannot be cut exactly is read in windows up to this many times larger first."""

_FRONTMATTER_OPEN_RE = re.compile(r"-{3,}[ \t]*\Z")


@dataclass(slots=True)
class Window:
    """The tokens of whole blocks from one window, their line maps made absolute."""

    tokens: list[Token]
    continues: bool = False
    """The first block goes on with the last block of the previous window (it was cut)."""
    warnings: list[str] = field(default_factory=list)


def windows(lines: Sequence[str], env: dict[str, Any], size: int | None = None) -> Iterator[Window]:
    """Tokenize ``lines`` (the normalised source, split at ``\\n``) window by window.

    ``env`` collects what markdown-it keeps for the whole document (link reference
    definitions). Each window's tokens are yielded once and then dropped. ``size`` defaults
    to :data:`WINDOW_LINES`.
    """
    most = size or WINDOW_LINES
    size = most
    total = len(lines)
    start = 0
    grow = size
    continues = False
    header: list[str] = []
    """Rows repeated above a window that continues a table."""
    while start < total:
        end = min(total, start + grow)
        src = "\n".join([*header, *lines[start:end]]) + "\n"
        # A window after the first must not read a leading ``---`` as frontmatter.
        parser = PARSER_MD if start == 0 else PARSER_MD_BODY
        tokens = parser.parse(src, env)
        offset = start - len(header)
        tops = [i for i, t in enumerate(tokens) if t.level == 0 and t.nesting >= 0 and t.map]
        if end == total:
            yield Window(_absolute(tokens, offset, len(header)), continues)
            return
        if not tops:
            # Blank lines, or link reference definitions (which make no token) that may go on
            # in the next lines: read more.
            grow *= 2
            continue
        if start == 0 and _FRONTMATTER_OPEN_RE.match(lines[0]) and tokens[0].type != "front_matter":
            # The frontmatter may close further down: read more before deciding.
            grow *= 2
            continue
        last = tops[-1]
        last_start = tokens[last].map[0] + offset  # type: ignore[index]
        # Lines that make many tokens (table rows of many cells) get smaller windows.
        size = max(min(most, _MIN_LINES), min(most, WINDOW_TOKENS * (end - start) // len(tokens)))
        if last_start > start:
            # Every block before the last one is complete; the last is read again next time.
            yield Window(_absolute(tokens[:last], offset, len(header)), continues)
            start, grow, continues, header = last_start, size, False, []
            continue
        cut = _cut(tokens, last, len(header))
        if cut is None or (not cut[1] and grow < _MAX_GROWTH * size):
            # A paragraph, code or HTML block is a few tokens however long; a block that can
            # only be cut inexactly gets a few more lines to find an exact cut.
            grow *= 2
            continue
        at, exact = cut
        cut_line = tokens[at].map[0] + offset  # type: ignore[index]
        block = tokens[last]
        kept = _absolute(tokens[last:at], offset, len(header))
        assert block.map is not None
        block.map[1] = cut_line
        warnings = []
        if not exact:
            warnings.append(
                f"markdown: the block at line {block.map[0] + 1} is over {grow:,} lines and "
                "nested too deeply to cut exactly; it was parsed in parts"
            )
        yield Window(kept, continues, warnings)
        if block.type == "table_open" and exact:
            if not header:
                first = block.map[0]
                header = [lines[first], lines[first + 1]]
        else:
            header = []
        start, grow, continues = cut_line, size, exact


def _absolute(tokens: list[Token], offset: int, header: int) -> list[Token]:
    """``tokens`` with line maps moved by ``offset``; those of a repeated header dropped."""
    out = []
    for token in tokens:
        if token.map is not None:
            first, last = token.map
            if header and first < header:
                if token.type == "inline":
                    continue  # a header cell already read with the table's first part
                first = header
            token.map = [first + offset, max(first, last) + offset]
        out.append(token)
    return out


def _cut(tokens: list[Token], top: int, header: int) -> tuple[int, bool] | None:
    """Where to cut the block opened by ``tokens[top]``: a token index, and whether the rest
    parses as a continuation of the same block (exactly as a whole-document parse would)."""
    block = tokens[top]
    assert block.map is not None
    first = max(block.map[0], header)
    exact: int | None = None
    deeper: int | None = None
    parents: list[Token] = []
    for index in range(top + 1, len(tokens)):
        token = tokens[index]
        if token.nesting < 0:
            if parents:
                parents.pop()
            continue
        parent = parents[-1] if parents else block
        if token.nesting > 0:
            parents.append(token)
        if token.map is None or token.map[0] <= first:
            continue
        if _continues_block(block, parent, token):
            exact = index
        elif token.level >= 1 and token.type != "inline":
            deeper = index
    if exact is not None:
        return exact, True
    if deeper is not None:
        return deeper, False
    return None


def _continues_block(block: Token, parent: Token, token: Token) -> bool:
    """Whether text from ``token`` on, parsed alone, is the same kind of block as ``block``."""
    if block.type in ("bullet_list_open", "ordered_list_open"):
        # An item of this list (not of a list inside one of its items).
        return token.type == "list_item_open" and parent is block
    if block.type == "table_open":
        # A body row: the rest is parsed under a copy of the header and delimiter rows.
        return token.type == "tr_open" and parent.type == "tbody_open"
    if block.type == "blockquote_open":
        # A block directly inside the quote starts on a line with its own ``>``.
        return parent is block
    return False
