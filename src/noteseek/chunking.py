"""Heading-aware chunking: turn a parsed document into the pieces that are indexed.

Every section becomes one or more chunks. Small sections stay whole; a long section is cut at
block boundaries, packing consecutive blocks up to ``max_chars``; a single block that is longer
than ``max_chars`` on its own is cut at sentence boundaries, then line boundaries, then word or
hard character boundaries. Code blocks and tables are only ever cut at line boundaries (then
characters), and only when they alone exceed the limit.

A chunk is always one contiguous range of the source text, so ``text`` is exactly what is in
the file between its start and end, and non-blank lines are never dropped: every non-blank line
of the body lies inside some chunk.
"""

from __future__ import annotations

import hashlib
import re
from array import array
from bisect import bisect_right
from collections.abc import Callable, Iterable, Iterator, Sequence
from dataclasses import dataclass
from functools import partial
from itertools import chain, pairwise
from pathlib import PurePosixPath

from noteseek.types import Block, Chunk, ParsedDocument, Section

__all__ = ["CHUNKER_VERSION", "DEFAULT_MAX_CHARS", "chunk_document", "text_key"]

DEFAULT_MAX_CHARS = 900
"""Largest chunk, in characters.

Sized for a 256-token embedding model (all-MiniLM-L6-v2 and similar): 256 minus the ``[CLS]``
and ``[SEP]`` tokens leaves about 254 WordPiece tokens. Mixed Markdown prose and code tokenizes
at roughly 3.5-4 characters per token (code, paths and punctuation sit at the low end), so
254 tokens hold about 890-1,000 characters; 900 keeps nearly every chunk inside the window
without truncation while leaving chunks large enough to carry a whole idea for keyword search.
"""

CHUNKER_VERSION = "1"
"""Part of the index manifest: bump when the same document would be chunked differently."""

# Characters trimmed from piece edges. Only ASCII layout whitespace: a line holding a form feed
# or a no-break space is content for the parser, so it must stay inside a chunk.
_TRIM = " \t\n"
# A sentence ends at terminal punctuation (optionally followed by closing quotes or brackets)
# that is followed by whitespace.
_SENTENCE_END_RE = re.compile(r"[.!?…。！？][\"'”’)\]]*(?=\s)")
_FENCE_OPEN_RE = re.compile(r" {0,3}(`{3,}|~{3,})")


@dataclass(slots=True)
class _BlockSpan:
    """A block and its character range ``[start, end)`` in the document text."""

    block: Block
    start: int
    end: int


@dataclass(slots=True)
class _Piece:
    """A range ``[start, end)`` of the document text inside one block."""

    start: int
    end: int
    block: _BlockSpan


@dataclass(slots=True)
class _Unit:
    """What the packer places: one whole block, or the pieces of a block that was too long."""

    pieces: Iterable[_Piece]
    whole: bool


def chunk_document(
    doc: ParsedDocument,
    doc_id: str,
    max_chars: int = DEFAULT_MAX_CHARS,
    clean: Callable[[str], str] | None = None,
    merge_below: int = 0,
    keep_apart: Callable[[tuple[str, ...]], bool] | None = None,
) -> list[Chunk]:
    """Split ``doc`` into heading-aware chunks of at most ``max_chars`` characters each.

    The default, 900, is sized for a 256-token embedding model (see :data:`DEFAULT_MAX_CHARS`).
    Chunk ids depend only on ``doc_id``, the heading path and the chunk's position among the
    chunks with that heading path, so editing one section leaves the ids of other sections
    alone. Empty and frontmatter-only documents give no chunks. ``clean`` removes what is
    syntax, not text, from a chunk's prose (Logseq's properties and block references).
    ``merge_below`` > 0 merges sections shorter than that many characters with their
    neighbours (see :func:`_merge_small`), except sections whose heading path ``keep_apart``
    holds (headings that type the links under them: the links' heading must stay theirs).
    """
    if max_chars < 1:
        raise ValueError(f"max_chars must be at least 1, got {max_chars}")
    text = doc.text
    # Offsets of line starts, packed: a list of ints costs 36 bytes a line.
    line_starts = array("q", [0])
    line_starts.extend(match.end() for match in re.finditer("\n", text))
    chunks: list[Chunk] = []
    per_path: dict[tuple[str, ...], int] = {}
    groups = _groups(doc, line_starts, max_chars)
    merged = (
        _merge_small(groups, max_chars, merge_below, keep_apart or (lambda _path: False))
        if merge_below > 0
        else ((path, pieces, ()) for path, pieces, _ in groups)
    )
    for path, pieces, subheadings in merged:
        start, end = pieces[0].start, pieces[-1].end
        chunk_text = text[start:end]
        n = per_path.get(path, 0)
        per_path[path] = n + 1
        prose, code = _prose_and_code(text, pieces)
        if clean is not None:
            prose = clean(prose)
        chunks.append(
            Chunk(
                chunk_id=_chunk_id(doc_id, path, n),
                ordinal=len(chunks),
                heading_path=path,
                start_line=bisect_right(line_starts, start),
                end_line=bisect_right(line_starts, end - 1),
                text=chunk_text,
                prose=prose,
                code=code,
                content_hash=hashlib.blake2b(_utf8(chunk_text), digest_size=16).hexdigest(),
                subheadings=subheadings,
            )
        )
    return chunks


_Group = tuple[tuple[str, ...], list[_Piece], tuple[str, ...]]
"""A chunk to be: its heading path, its pieces, and the headings of merged sections below
that path."""


def _merge_small(
    groups: Iterable[tuple[tuple[str, ...], list[_Piece], bool]],
    max_chars: int,
    below: int,
    apart: Callable[[tuple[str, ...]], bool],
) -> Iterator[_Group]:
    """Join runs of neighbouring sections when one of them is shorter than ``below`` chars.

    Only sections that fit in one chunk are joined, and only while the run stays within
    ``max_chars`` (measured, like every chunk, from its first to its last character, so the
    chunk is still one contiguous range of lines). A section joins the run when the run so far
    or the section is small, and when they sit under the same parent: the run's common heading
    path is at most one level above the shallower of them (siblings, or a section and its
    parent's next sibling; never cousins under two different parents). The merged chunk takes
    the common heading path; the headings below it are kept as ``subheadings``.
    """
    run: list[tuple[tuple[str, ...], list[_Piece]]] = []
    common: tuple[str, ...] = ()
    shallowest = 0

    def flush() -> Iterator[_Group]:
        if len(run) == 1:
            yield run[0][0], run[0][1], ()
        elif run:
            below_common = (name for path, _ in run for name in path[len(common) :])
            pieces = [piece for _, member in run for piece in member]
            yield common, pieces, tuple(dict.fromkeys(below_common))

    for path, pieces, whole in groups:
        whole = whole and not apart(path)  # kept apart: a chunk of its own, as a long one
        if run and whole:
            start = run[0][1][0].start
            size, joined = pieces[-1].end - pieces[0].start, pieces[-1].end - start
            shared = _common_prefix(common, path)
            if (
                joined <= max_chars
                and (size < below or run[-1][1][-1].end - start < below)
                and len(shared) >= min(shallowest, len(path)) - 1
            ):
                run.append((path, pieces))
                common, shallowest = shared, min(shallowest, len(path))
                continue
        yield from flush()
        run = [(path, pieces)] if whole else []
        common, shallowest = path, len(path)
        if not whole:
            yield path, pieces, ()
    yield from flush()


def _common_prefix(a: tuple[str, ...], b: tuple[str, ...]) -> tuple[str, ...]:
    n = 0
    while n < min(len(a), len(b)) and a[n] == b[n]:
        n += 1
    return a[:n]


def _groups(
    doc: ParsedDocument, line_starts: Sequence[int], max_chars: int
) -> Iterator[tuple[tuple[str, ...], list[_Piece], bool]]:
    """The pieces of each chunk with its heading path, in order, and whether the chunk holds
    its whole section (the section fits in one chunk).

    A generator fed by generators: a section of many blocks, or one block of many lines, is
    never held as one object per block or line, only as the chunks it packs into.
    """
    text = doc.text
    line_count = min(doc.line_count, len(line_starts))

    def span(block: Block) -> _BlockSpan | None:
        if not 1 <= block.start_line <= block.end_line <= line_count:
            return None
        start = line_starts[block.start_line - 1]
        end = line_starts[block.end_line] - 1 if block.end_line < len(line_starts) else len(text)
        return _BlockSpan(block, start, end)

    carried: list[_Piece] = []
    carried_path: tuple[str, ...] = ()
    sections = doc.sections
    for index, section in enumerate(sections):
        spans = (s for s in map(span, section.blocks) if s is not None)
        first = next(spans, None)
        if first is None:
            continue
        has_content = any(b.kind != "heading" and span(b) is not None for b in section.blocks)
        if not has_content and _followed_by_subsection(sections, index):
            # A heading with nothing under it but a sub-heading is not worth a chunk of its
            # own; its line joins the sub-heading's first chunk so it stays covered.
            for s in chain([first], spans):
                carried.extend(_split_block(text, s, max_chars))
            carried_path = section.heading_path
            continue
        units = chain(
            (_Unit([piece], True) for piece in carried),
            _units(text, chain([first], spans), max_chars),
        )
        carried = []
        packed = _pack(units, max_chars)
        group = next(packed, None)
        if group is None:
            continue
        following = next(packed, None)
        yield section.heading_path, group, following is None
        if following is not None:
            yield section.heading_path, following, False
            for group in packed:
                yield section.heading_path, group, False
    if carried:
        for group in _pack([_Unit(carried, False)], max_chars):
            yield carried_path, group, False


def embedding_input(title: str, path: str, heading_path: tuple[str, ...], text: str) -> str:
    """What the embedding model reads for a chunk: its context line, then its text.

    The context is the heading path, led by the document title when the title says more than
    the file name (frontmatter or H1). A title taken from the file name is left out, so a
    renamed file keeps the same input, and therefore its cached vectors.
    """
    context = list(heading_path)
    if title and title != PurePosixPath(path).stem and (not context or context[0] != title):
        context.insert(0, title)
    head = " > ".join(context)
    return f"{head}\n\n{text}" if head else text


def embedding_key(value: str) -> str:
    """The cache key of an embedding input (with the model id, it identifies a vector)."""
    return hashlib.blake2b(_utf8(value), digest_size=16).hexdigest()


def text_key(text: str) -> str:
    """A chunk's text with its whitespace collapsed: chunks whose keys are equal hold the
    same words (boilerplate repeated across files) and may share one vector."""
    return " ".join(text.split())


def _utf8(value: str) -> bytes:
    # Lone surrogates cannot come from decoded files, but must not make hashing raise.
    return value.encode("utf-8", "surrogatepass")


def _chunk_id(doc_id: str, heading_path: tuple[str, ...], n: int) -> str:
    # The depth and an unambiguous separator keep ("",) apart from () and ("A > B",) apart
    # from ("A", "B"): heading text may be empty or contain " > ".
    key = f"{doc_id}\x1f{len(heading_path)}\x1f{chr(30).join(heading_path)}\x1f{n}"
    return hashlib.blake2b(_utf8(key), digest_size=8).hexdigest()


def _followed_by_subsection(sections: list[Section], index: int) -> bool:
    return (
        sections[index].level > 0
        and index + 1 < len(sections)
        and sections[index + 1].level > sections[index].level
    )


def _units(text: str, spans: Iterable[_BlockSpan], max_chars: int) -> Iterator[_Unit]:
    for s in spans:
        if s.end - s.start <= max_chars:
            yield _Unit([_Piece(s.start, s.end, s)], True)
        else:
            pieces = _split_block(text, s, max_chars)
            first = next(pieces, None)
            if first is not None:
                yield _Unit(chain([first], pieces), False)


def _pack(units: Iterable[_Unit], max_chars: int) -> Iterator[list[_Piece]]:
    """Greedily fill chunks with consecutive pieces, never exceeding ``max_chars``.

    A whole block that does not fit in the current chunk starts the next one. A block that had
    to be split starts a fresh chunk too, except after a chunk holding only headings, so a
    section's heading stays with the start of its text. Consecutive pieces of one block in a
    chunk are kept as one piece (the text between them is the block's own).
    """
    current: list[_Piece] = []
    for unit in units:
        if not unit.whole and current and any(p.block.block.kind != "heading" for p in current):
            yield current
            current = []
        for piece in unit.pieces:
            if current and piece.end - current[0].start <= max_chars:
                last = current[-1]
                if last.block is piece.block:
                    current[-1] = _Piece(last.start, piece.end, last.block)
                else:
                    current.append(piece)
            else:
                if current:
                    yield current
                current = [piece]
    if current:
        yield current


# ------------------------------------------------------------------------------------------
# Splitting one block


_Cutter = Callable[[str, int, int], Iterator[int]]
"""Yields cut positions strictly inside ``[start, end)``, in order."""


_KEEP_WHOLE_RE = re.compile(
    r"!?\[\[[^\]\n]*\]\]"  # wikilink, embed
    r"|!?\[[^\]\n]*\](?:\([^)\n]*\)|\[[^\]\n]*\])"  # Markdown link or image, inline or by reference
    r"|<(?:[a-zA-Z][a-zA-Z0-9+.-]*:|/?[a-zA-Z])[^<>\n]*>"  # autolink, HTML tag
    r"|(`+)[^\n]*?(?<!`)\1(?!`)"  # inline code
    r"|\b[a-zA-Z][a-zA-Z0-9+.-]*://[^\s<>()\[\]]+"  # a bare URL
)
"""What a chunk boundary never falls inside (unless one alone is longer than a chunk): a
chunk that starts in the middle of ``[text](https://...)`` reads as a raw URL and its words
match nothing."""
_ITEM_LINE_RE = re.compile(r"^[ \t]*(?:[-*+]|\d{1,9}[.)])[ \t][^\n]*", re.MULTILINE)
"""A list item's first line: kept whole when another cut will do (it names the item)."""


@dataclass(frozen=True, slots=True)
class _Whole:
    """The spans of a block a cut must not split: ``hard`` (links, code, URLs, tags) unless
    one alone is longer than a chunk, ``soft`` (list items' first lines) unless no other cut
    keeps a chunk within its size."""

    hard: list[tuple[int, int]]
    soft: list[tuple[int, int]]

    def splits(self, pos: int) -> bool:
        return _splits(self.hard, pos) or _splits(self.soft, pos)


_NOTHING_WHOLE = _Whole([], [])


def _kept_whole(text: str, start: int, end: int, *, items: bool = True) -> _Whole:
    def spans(pattern: re.Pattern[str]) -> list[tuple[int, int]]:
        return [m.span() for m in pattern.finditer(text, start, end) if m.end() - m.start() > 1]

    return _Whole(spans(_KEEP_WHOLE_RE), spans(_ITEM_LINE_RE) if items else [])


def _splits(spans: Sequence[tuple[int, int]], pos: int) -> bool:
    """Whether cutting at ``pos`` falls strictly inside one of ``spans`` (sorted, disjoint)."""
    i = bisect_right(spans, (pos, 1 << 62)) - 1 if spans else -1
    return i >= 0 and spans[i][0] < pos < spans[i][1]


def _split_block(text: str, s: _BlockSpan, max_chars: int) -> Iterator[_Piece]:
    levels: tuple[_Cutter, ...]
    if s.block.kind in ("code", "table", "html"):
        # Cutting a code block or a table at a "sentence" inside a line produces fragments
        # nobody can read; lines are their natural unit.
        levels = (_line_cuts,)
    elif s.block.kind == "outline":
        # An outline item is cut between its children first, each child with its own, down
        # to OUTLINE_LEVELS levels (a deeper staircase of bullets is cut as text).
        levels = (*(_outline_cuts,) * OUTLINE_LEVELS, _sentence_cuts, _line_cuts)
    else:
        levels = (_sentence_cuts, _line_cuts)
    if s.block.kind in ("code", "table"):
        whole = _NOTHING_WHOLE  # literal text: lines are its units
    else:
        whole = _kept_whole(text, s.start, s.end, items=s.block.kind != "html")
    pieces = _split_range(text, s.start, s.end, max_chars, levels, whole)
    return (_Piece(a, b, s) for a, b in pieces)


def _split_range(
    text: str,
    start: int,
    end: int,
    max_chars: int,
    levels: tuple[_Cutter, ...],
    whole: _Whole,
) -> Iterator[tuple[int, int]]:
    """Cut ``[start, end)`` into trimmed ranges of at most ``max_chars``, coarsest cuts first,
    never inside a span of ``whole``."""
    start, end = _trim(text, start, end)
    if start >= end:
        return
    if end - start <= max_chars:
        yield start, end
        return
    for depth, cutter in enumerate(levels):
        cuts = (c for c in cutter(text, start, end) if not whole.splits(c))
        first = next(cuts, None)
        if first is not None:
            finer = levels[depth + 1 :]
            for a, b in pairwise(chain([start, first], cuts, [end])):
                yield from _split_range(text, a, b, max_chars, finer, whole)
            return
    yield from _hard_split(text, start, end, max_chars, whole)


def _sentence_cuts(text: str, start: int, end: int) -> Iterator[int]:
    for match in _SENTENCE_END_RE.finditer(text, start, end):
        if start < match.end() < end:
            yield match.end()


OUTLINE_LEVELS = 8
"""Outline levels an oversized outline item is cut at, before sentences and lines."""
_BULLET_RE = re.compile(r"[ \t]*[-*+](?:[ \t]|$)")
_FENCE_RE = re.compile(r"[ \t]*(?:- )?(?:`{3,}|~{3,})")


def _outline_cuts(text: str, start: int, end: int) -> Iterator[int]:
    """The starts of the shallowest bullets after the first line of ``[start, end)`` (outside
    code fences): an outline item's children, each with its own children."""
    found: list[tuple[int, int]] = []
    in_fence = False
    pos = text.find("\n", start, end)
    while 0 <= pos < end:
        line_start = pos + 1
        line_end = text.find("\n", line_start, end)
        line = text[line_start : line_end if line_end >= 0 else end]
        if _FENCE_RE.match(line):
            in_fence = not in_fence
        elif not in_fence and _BULLET_RE.match(line):
            indent = len(line) - len(line.lstrip(" \t"))
            found.append((line[:indent].count("\t") * 3 + indent, line_start))
        pos = line_end
    if found:
        shallowest = min(width for width, _ in found)
        yield from (at for width, at in found if width == shallowest)


def _line_cuts(text: str, start: int, end: int) -> Iterator[int]:
    pos = text.find("\n", start, end)
    while pos >= 0:
        if pos > start:
            yield pos
        pos = text.find("\n", pos + 1, end)


def _hard_split(
    text: str, start: int, end: int, max_chars: int, whole: _Whole = _NOTHING_WHOLE
) -> list[tuple[int, int]]:
    """Last resort: cut at the last whitespace in the window outside the spans of ``whole``
    (then outside its hard spans only), else at the last whitespace, or mid-word."""
    out: list[tuple[int, int]] = []
    pos = start
    while pos < end:
        pos, stop = _trim(text, pos, end)
        if pos >= stop:
            break
        if stop - pos <= max_chars:
            out.append((pos, stop))
            break
        limit = pos + max_chars
        half = pos + max_chars // 2
        cut = -1
        # Outside every span in the window's second half, then anywhere in it; then outside
        # the hard spans only; then at any space.
        for low, splits in (
            (half, whole.splits),
            (pos, whole.splits),
            (pos, partial(_splits, whole.hard)),
        ):
            cut = _last_space(text, low, limit, splits)
            if cut > pos:
                break
        if cut <= pos:
            cut = max(text.rfind(" ", pos, limit), text.rfind("\t", pos, limit))
        if cut <= pos:
            cut = limit
        a, b = _trim(text, pos, cut)
        if a < b:
            out.append((a, b))
        pos = cut
    return out


def _last_space(text: str, low: int, high: int, splits: Callable[[int], bool]) -> int:
    """The last space or tab in ``(low, high)`` where ``splits`` allows a cut; -1 if none."""
    cut = high
    while True:
        cut = max(text.rfind(" ", low + 1, cut), text.rfind("\t", low + 1, cut))
        if cut < 0 or not splits(cut):
            return cut


def _trim(text: str, start: int, end: int) -> tuple[int, int]:
    while start < end and text[start] in _TRIM:
        start += 1
    while end > start and text[end - 1] in _TRIM:
        end -= 1
    return start, end


# ------------------------------------------------------------------------------------------
# Chunk fields


def _prose_and_code(text: str, pieces: list[_Piece]) -> tuple[str, str]:
    prose: list[str] = []
    code: list[str] = []
    index = 0
    while index < len(pieces):
        span = pieces[index].block
        run_end = index
        while run_end + 1 < len(pieces) and pieces[run_end + 1].block is span:
            run_end += 1
        start, end = pieces[index].start, pieces[run_end].end
        kind = span.block.kind
        if kind == "code":
            code.append(_code_text(text, span, start, end))
        elif kind != "heading":
            prose.append(text[start:end])
        index = run_end + 1
    return "\n\n".join(p for p in prose if p), "\n".join(c for c in code if c)


def _code_text(text: str, span: _BlockSpan, start: int, end: int) -> str:
    """The code in ``[start, end)`` of a code block: fence lines dropped, indentation removed."""
    segment = text[start:end]
    block_text = text[span.start : span.end]
    fence = _FENCE_OPEN_RE.match(block_text)
    if fence is None:
        # Indented code: the four columns of indentation are syntax, not code.
        return "\n".join(_dedent_code_line(line) for line in segment.split("\n"))
    first_newline = block_text.find("\n")
    if first_newline < 0:
        return ""  # an opening fence alone
    last_start = span.start + block_text.rfind("\n") + 1
    marker = fence.group(1)
    closing = re.fullmatch(
        r" {0,3}" + re.escape(marker[0]) + "{" + str(len(marker)) + r",}[ \t]*",
        text[last_start : span.end],
    )
    if closing and end > last_start:
        cut = segment.rfind("\n")
        segment = segment[:cut] if cut >= 0 else ""
    if start < span.start + first_newline:
        cut = segment.find("\n")
        segment = segment[cut + 1 :] if cut >= 0 else ""
    return segment


def _dedent_code_line(line: str) -> str:
    if line.startswith("\t"):
        return line[1:]
    spaces = len(line) - len(line.lstrip(" "))
    return line[min(spaces, 4) :]
