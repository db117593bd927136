"""Parent expansion: grow a result to its whole section, then its neighbours, within a budget.

An agent reading a 900-character chunk often needs the rest of its section (the list that the
chunk cut, the code block after the paragraph). Expansion adds the chunks of the same heading
path first, alternating after and before the result, then the neighbouring chunks of other
sections, while the total stays within the character budget. The text is the chunks' own
source text joined in file order, and the line range covers what was added.

Over one answer (:class:`Expansions`) no chunk is given twice: a result whose chunk an earlier
result's expansion already holds is not expanded again but refers to that result, and an
expansion stops at chunks an earlier result holds. Four hits in one section thus cost the
section once, not four times.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence

from noteseek.store.base import ChunkRow


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


class Expansions:
    """The expansions of one answer's results, so that none repeats another's text."""

    def __init__(self, budget: int, chunks_of: Callable[[int], Sequence[ChunkRow]]) -> None:
        self.budget = budget
        self._chunks_of = chunks_of
        self._chunks: dict[int, Sequence[ChunkRow]] = {}
        self._owner: dict[tuple[int, int], int] = {}
        """(file id, chunk position) -> the rank of the result whose text holds the chunk."""

    def expand(self, row: ChunkRow, rank: int) -> tuple[str, int, int] | int:
        """The grown (text, start line, end line) of the result at ``rank``, or the rank of
        the earlier result whose expanded text already holds its chunk."""
        file_id = row.file_id
        if file_id not in self._chunks:
            self._chunks[file_id] = self._chunks_of(file_id)
        chunks = self._chunks[file_id]
        index = next((i for i, c in enumerate(chunks) if c.rowid == row.rowid), None)
        if index is not None and (file_id, index) in self._owner:
            return self._owner[(file_id, index)]
        text, start, end, lo, hi = _grow(
            row, chunks, self.budget, lambda j: (file_id, j) in self._owner
        )
        for j in range(lo, hi + 1) if lo >= 0 else ():
            self._owner[(file_id, j)] = rank
        return text, start, end
