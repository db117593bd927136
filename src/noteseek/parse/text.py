"""Plain-text parser, plus the normalisation helpers every parser shares.

A ``.txt`` file has no markup: its title is the file stem and its body is one section whose
blocks are the blank-line separated paragraphs.
"""

from __future__ import annotations

import re
from array import array
from collections.abc import Sequence
from pathlib import PurePosixPath
from typing import overload

from noteseek.types import Block, ParsedDocument, Section

__all__ = [
    "PARSER_NAME",
    "PARSER_VERSION",
    "SourceLines",
    "is_blank",
    "join_lines",
    "normalize_text",
    "paragraph_blocks",
    "parse_text",
    "split_lines",
    "title_from_path",
]

PARSER_NAME = "text"
PARSER_VERSION = "1"


def normalize_text(text: str) -> str:
    """Drop a leading byte-order mark and turn CRLF and lone CR line ends into LF."""
    if text.startswith("\ufeff"):
        text = text[1:]
    if "\r" in text:
        text = text.replace("\r\n", "\n").replace("\r", "\n")
    return text


def split_lines(text: str) -> list[str]:
    """The lines of normalised text, without line ends.

    Only ``\\n`` separates lines (``str.splitlines`` would also split on form feeds, U+2028 and
    others, which would disagree with the line numbers markdown-it reports). A final line end
    does not open an extra empty line, so ``"a\\n"`` has one line and ``""`` has none.
    """
    if not text:
        return []
    lines = text.split("\n")
    if text.endswith("\n"):
        lines.pop()
    return lines


class SourceLines(Sequence[str]):
    """The lines of normalised text, as :func:`split_lines` gives them, without holding them.

    A list of short lines costs about 60 bytes a line (a 4.8 MB list of ``- item N`` lines
    took 21 MB); this keeps the text and one packed offset per line, and slices a line out
    when it is asked for.
    """

    __slots__ = ("_count", "_starts", "_text")

    def __init__(self, text: str) -> None:
        self._text = text
        self._starts = array("q", [0])
        self._starts.extend(match.end() for match in re.finditer("\n", text))
        # As split_lines: a final line end does not open an extra empty line.
        self._count = 0 if not text else len(self._starts) - (1 if text.endswith("\n") else 0)

    def __len__(self) -> int:
        return self._count

    @overload
    def __getitem__(self, index: int) -> str: ...
    @overload
    def __getitem__(self, index: slice) -> list[str]: ...
    def __getitem__(self, index: int | slice) -> str | list[str]:
        if isinstance(index, slice):
            return [self[i] for i in range(*index.indices(self._count))]
        if index < 0:
            index += self._count
        if not 0 <= index < self._count:
            raise IndexError("line index out of range")
        return self.text(index, index + 1)

    def text(self, start: int, end: int) -> str:
        """Lines ``[start, end)`` joined by ``\\n``, as ``"\\n".join(lines[start:end])``."""
        if start >= end:
            return ""
        stop = self._starts[end] - 1 if end < len(self._starts) else len(self._text)
        return self._text[self._starts[start] : stop]


def join_lines(lines: Sequence[str], start: int, end: int) -> str:
    """``"\\n".join(lines[start:end])``, without a list of the lines when it can."""
    if isinstance(lines, SourceLines):
        return lines.text(start, end)
    return "\n".join(lines[start:end])


def is_blank(line: str) -> bool:
    """CommonMark's notion of a blank line: only spaces and tabs.

    Deliberately narrower than ``str.isspace``: a line holding only a form feed or a no-break
    space is content for markdown-it, so it must be content for the chunker too.
    """
    return not line.strip(" \t")


def title_from_path(path: str) -> str:
    """The file stem (``a/b/my-note.md`` -> ``my-note``), the fallback title of every parser."""
    pure = PurePosixPath(path)
    return pure.stem or pure.name or path


def paragraph_blocks(lines: Sequence[str], start: int, end: int) -> list[Block]:
    """Paragraph blocks for the 0-based line range ``[start, end)``, split on blank lines."""
    blocks: list[Block] = []
    first: int | None = None
    for index in range(start, end):
        if is_blank(lines[index]):
            if first is not None:
                blocks.append(_paragraph(lines, first, index))
                first = None
        elif first is None:
            first = index
    if first is not None:
        blocks.append(_paragraph(lines, first, end))
    return blocks


def _paragraph(lines: Sequence[str], start: int, end: int) -> Block:
    return Block("paragraph", start + 1, end, join_lines(lines, start, end))


def parse_text(text: str, path: str) -> ParsedDocument:
    """Parse a plain-text file: one section with heading path ``()``, one block per paragraph.

    A file without any non-blank line has no sections (and so gives no chunks).
    """
    text = normalize_text(text)
    lines = split_lines(text)
    blocks = paragraph_blocks(lines, 0, len(lines))
    sections: list[Section] = []
    if blocks:
        sections.append(Section((), 0, blocks[0].start_line, blocks[-1].end_line, blocks))
    return ParsedDocument(
        title=title_from_path(path),
        text=text,
        line_count=len(lines),
        sections=sections,
    )
