"""The chunks role in SQLite: chunk rows by rowid, chunk id or file, texts, and link rows."""

from __future__ import annotations

from collections.abc import Iterator, Sequence

from noteseek.store.base import ChunkRow, LinkRow
from noteseek.store.sqlite.core import SQLiteCore
from noteseek.store.sqlite.sql import (
    CHUNK_COLUMNS,
    CHUNK_FROM,
    HEADING_SEP,
    IN_BATCH,
    filter_sql,
    to_chunk_row,
)
from noteseek.types import Filters


class SQLiteChunks(SQLiteCore):
    """:class:`noteseek.store.base.Chunks` over the ``chunks`` and ``links`` tables."""

    def chunk_rows(self, rowids: Sequence[int]) -> list[ChunkRow]:
        if not rowids:
            return []
        marks = ",".join("?" * len(rowids))
        rows = self._q(f"SELECT {CHUNK_COLUMNS} FROM {CHUNK_FROM} WHERE c.id IN ({marks})", rowids)
        by_id = {r[0]: to_chunk_row(r) for r in rows}
        return [by_id[i] for i in rowids if i in by_id]

    def chunk_by_id(self, chunk_id: str) -> ChunkRow | None:
        rows = self._q(
            f"SELECT {CHUNK_COLUMNS} FROM {CHUNK_FROM} WHERE c.chunk_id = ?", (chunk_id,)
        )
        return to_chunk_row(rows[0]) if rows else None

    def file_chunks(self, file_id: int) -> list[ChunkRow]:
        rows = self._q(
            f"SELECT {CHUNK_COLUMNS} FROM {CHUNK_FROM} WHERE c.file_id = ? ORDER BY c.ordinal",
            (file_id,),
        )
        return [to_chunk_row(r) for r in rows]

    def file_chunk_rowids(self, file_id: int) -> list[int]:
        """A file's chunk rowids in document order."""
        rows = self._q("SELECT id FROM chunks WHERE file_id = ? ORDER BY ordinal", (file_id,))
        return [r[0] for r in rows]

    def chunk_files(self, rowids: Sequence[int]) -> dict[int, int]:
        """Chunk rowid -> file id."""
        if not rowids:
            return {}
        marks = ",".join("?" * len(rowids))
        rows = self._q(f"SELECT id, file_id FROM chunks WHERE id IN ({marks})", rowids)
        return {int(r[0]): int(r[1]) for r in rows}

    def chunk_modified(self, rowids: Sequence[int]) -> dict[int, float]:
        """Each chunk's document date (``files.modified``), by chunk rowid."""
        out: dict[int, float] = {}
        for start in range(0, len(rowids), IN_BATCH):
            part = list(rowids[start : start + IN_BATCH])
            marks = ",".join("?" * len(part))
            for r in self._q(
                f"SELECT c.id, f.modified FROM chunks c JOIN files f ON f.id = c.file_id "
                f"WHERE c.id IN ({marks})",
                part,
            ):
                out[int(r[0])] = float(r[1])
        return out

    def iter_chunk_texts(self, batch: int = 2000) -> Iterator[str]:
        """Every section's text, in batches (the whole index is never held at once)."""
        last = 0
        while True:
            rows = self._q(
                "SELECT id, text FROM chunks WHERE id > ? ORDER BY id LIMIT ?", (last, batch)
            )
            if not rows:
                return
            last = rows[-1][0]
            for row in rows:
                yield row[1]

    def link_rows(self) -> list[LinkRow]:
        """Every stored link: (source doc_id, target, kind, line, anchor, heading path there,
        display text, context)."""
        rows = self._q(
            "SELECT f.doc_id, l.target, l.kind, l.line, l.anchor, "
            "(SELECT c.heading_path FROM chunks c WHERE c.file_id = l.file_id "
            " AND c.start_line <= l.line ORDER BY c.start_line DESC LIMIT 1), l.display, "
            "l.context "
            "FROM links l JOIN files f ON f.id = l.file_id ORDER BY f.doc_id, l.line"
        )
        return [
            (
                r[0],
                r[1],
                r[2],
                int(r[3]),
                r[4],
                tuple(r[5].split(HEADING_SEP)) if r[5] else (),
                r[6],
                r[7],
            )
            for r in rows
        ]

    def filtered_chunk_ids(self, filters: Filters) -> list[int]:
        """Rowids of the chunks the filters let through (for filtering vector search)."""
        where, params = filter_sql(filters)
        rows = self._q(
            f"SELECT c.id FROM chunks c JOIN files f ON f.id = c.file_id WHERE 1 {where}",
            params,
        )
        return [r[0] for r in rows]
