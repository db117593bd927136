"""The candidates' chunk rows, read from the store once per query and shared by every stage."""

from __future__ import annotations

from collections.abc import Iterable

from noteseek.store.base import ChunkRow, Chunks


class CandidateRows:
    """Chunk rows by rowid, fetched on first need and kept for the rest of the query.

    Stages ask for the whole candidate list, so one store lookup serves the boosts, the
    re-ranker, diversity and the hits; when no stage needs rows, the hits fetch only theirs.
    A rowid the store no longer has (deleted since the lanes ran) is remembered as missing.
    """

    def __init__(self, store: Chunks) -> None:
        self._store = store
        self._rows: dict[int, ChunkRow] = {}
        self._asked: set[int] = set()

    def get(self, rowids: Iterable[int]) -> dict[int, ChunkRow]:
        """The rows of ``rowids`` that exist, by rowid (a lookup only for rowids not seen yet)."""
        wanted = list(rowids)
        missing = [r for r in dict.fromkeys(wanted) if r not in self._asked]
        if missing:
            self._asked.update(missing)
            self._rows.update((row.rowid, row) for row in self._store.chunk_rows(missing))
        return {r: self._rows[r] for r in wanted if r in self._rows}
