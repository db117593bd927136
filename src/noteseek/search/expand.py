"""Parent expansion: grow a result to its whole section, then its neighbours, within a budget.

An agent reading a 900-character chunk often needs the rest of its section (the list that the
chunk cut, the code block after the paragraph). Expansion adds the chunks of the same heading
path first, alternating after and before the result, then the neighbouring chunks of other
sections, while the total stays within the character budget. The text is the chunks' own
source text joined in file order, and the line range covers what was added.

Over one answer (:class:`Expansions`) no chunk is given twice: an expansion stops at chunks an
earlier result holds, and a result whose chunk an earlier result's expansion already holds
refers to that result (``expanded_in``) and is given what continues it instead: the chunks
next to the held run of chunks around it (after it first), within the budget, or nothing when
there are none. Four hits in one section thus cost the section once, not four times.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass

from noteseek.store.rows import ChunkRow


def expand(
    row: ChunkRow,
    chunks: Sequence[ChunkRow],
    budget: int,
    taken: Callable[[int], bool] = lambda _j: False,
) -> tuple[str, int, int]:
    """(text, start line, end line) of ``row`` grown within ``budget`` characters, never over
    a chunk (by its position in ``chunks``) for which ``taken`` is true."""
    text, start, end, _, _ = _grow(row, chunks, budget, taken)
    return text, start, end


def _grow(
    row: ChunkRow, chunks: Sequence[ChunkRow], budget: int, taken: Callable[[int], bool]
) -> tuple[str, int, int, int, int]:
    index = next((i for i, c in enumerate(chunks) if c.rowid == row.rowid), None)
    if index is None:
        return row.text, row.start_line, row.end_line, -1, -1
    if budget <= len(row.text):
        return row.text, row.start_line, row.end_line, index, index
    lo = hi = index
    size = len(row.text)
    for same_section in (True, False):
        grew = True
        while grew:
            grew = False
            for step in (1, -1):  # after first: a section is read downwards
                j = hi + 1 if step == 1 else lo - 1
                if not 0 <= j < len(chunks) or taken(j):
                    continue
                other = chunks[j]
                if same_section and other.heading_path != row.heading_path:
                    continue
                if size + len(other.text) + 1 > budget:
                    continue
                size += len(other.text) + 1
                if step == 1:
                    hi = j
                else:
                    lo = j
                grew = True
    picked = chunks[lo : hi + 1]
    text = "\n".join(c.text.rstrip("\n") for c in picked)
    return text, picked[0].start_line, picked[-1].end_line, lo, hi


@dataclass(frozen=True)
class Continued:
    """A result whose chunk an earlier result's text holds: that result's rank, and the text
    next to it that this result is given instead (with its line range)."""

    owner: int
    text: str
    start_line: int
    end_line: int


class Expansions:
    """The expansions of one answer's results, so that none repeats another's text."""

    def __init__(self, budget: int, chunks_of: Callable[[int], Sequence[ChunkRow]]) -> None:
        self.budget = budget
        self._chunks_of = chunks_of
        self._chunks: dict[int, Sequence[ChunkRow]] = {}
        self._owner: dict[tuple[int, int], int] = {}
        """(file id, chunk position) -> the rank of the result whose text holds the chunk."""

    def expand(
        self, row: ChunkRow, rank: int, budget: int | None = None
    ) -> tuple[str, int, int] | Continued | int:
        """The grown (text, start line, end line) of the result at ``rank``; when an earlier
        result's text holds its chunk, what continues that text (:class:`Continued`), or just
        that result's rank when nothing is left around it. ``budget``: this result's own, when
        not the answer's (results of several kinds)."""
        limit = self.budget if budget is None else budget
        file_id = row.file_id
        if file_id not in self._chunks:
            self._chunks[file_id] = self._chunks_of(file_id)
        chunks = self._chunks[file_id]
        index = next((i for i, c in enumerate(chunks) if c.rowid == row.rowid), None)

        def taken(j: int) -> bool:
            return (file_id, j) in self._owner

        if index is not None and taken(index):
            owner = self._owner[(file_id, index)]
            lo = hi = index
            while lo > 0 and taken(lo - 1):
                lo -= 1
            while hi + 1 < len(chunks) and taken(hi + 1):
                hi += 1
            seed = next((j for j in (hi + 1, lo - 1) if 0 <= j < len(chunks)), None)
            if seed is None:
                return owner
            text, start, end, lo, hi = _grow(chunks[seed], chunks, limit, taken)
            self._take(file_id, lo, hi, rank)
            return Continued(owner, text, start, end)
        text, start, end, lo, hi = _grow(row, chunks, limit, taken)
        self._take(file_id, lo, hi, rank)
        return text, start, end

    def _take(self, file_id: int, lo: int, hi: int, rank: int) -> None:
        for j in range(lo, hi + 1) if lo >= 0 else ():
            self._owner[(file_id, j)] = rank
