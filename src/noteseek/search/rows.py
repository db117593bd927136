"""The candidates' chunk rows, read from the store once per query and shared by every stage."""

from __future__ import annotations

from collections.abc import Iterable

from noteseek.store.base import Chunks
from noteseek.store.rows import ChunkRow


class CandidateRows:
    """Chunk rows by rowid, fetched on first need and kept for the rest of the query.

    When a stage that runs reads whole rows of every candidate (``full``: the re-ranker, the
    diversity filter), one lookup serves every stage and the hits. Otherwise the boosts need
    only each candidate's file id or date, which are read alone (a fraction of the cost of
    whole rows with their text), and the hits fetch only their own rows. A rowid the store no
    longer has (deleted since the lanes ran) is remembered as missing.
    """

    def __init__(self, store: Chunks, *, full: bool = False) -> None:
        self._store = store
        self.full = full
        self._rows: dict[int, ChunkRow] = {}
        self._asked: set[int] = set()
        self._files: dict[int, int] = {}
        self._dates: dict[int, float] = {}

    def get(self, rowids: Iterable[int]) -> dict[int, ChunkRow]:
        """The rows of ``rowids`` that exist, by rowid (a lookup only for rowids not seen yet)."""
        wanted = list(rowids)
        missing = [r for r in dict.fromkeys(wanted) if r not in self._asked]
        if missing:
            self._asked.update(missing)
            self._rows.update((row.rowid, row) for row in self._store.chunk_rows(missing))
        return {r: self._rows[r] for r in wanted if r in self._rows}

    def know_files(self, files: dict[int, int]) -> None:
        """File ids already looked up (by the keyword lane): not asked of the store again."""
        self._files.update(files)

    def file_ids(self, rowids: Iterable[int]) -> dict[int, int]:
        """Each candidate's file id, by rowid."""
        if self.full:
            return {r: row.file_id for r, row in self.get(rowids).items()}
        wanted = list(rowids)
        missing = [r for r in wanted if r not in self._files]
        if missing:
            self._files.update(self._store.chunk_files(missing))
        return {r: self._files[r] for r in wanted if r in self._files}

    def dates(self, rowids: Iterable[int]) -> dict[int, float]:
        """Each candidate's document date (``files.modified``), by rowid."""
        if self.full:
            return {r: float(row.modified) for r, row in self.get(rowids).items()}
        wanted = list(rowids)
        missing = [r for r in wanted if r not in self._dates]
        if missing:
            self._dates.update(self._store.chunk_modified(missing))
        return {r: self._dates[r] for r in wanted if r in self._dates}
