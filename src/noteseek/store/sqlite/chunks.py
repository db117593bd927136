"""The chunks role in SQLite: chunk rows by rowid, chunk id or file, texts, and link rows."""

from __future__ import annotations

from bisect import bisect_right
from collections.abc import Iterator, Sequence

from noteseek.store.rows import ChunkRow, LinkRow
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
        found = self._posted_files(rowids)
        missing = [r for r in rowids if r not in found] if found else list(rowids)
        if missing:
            marks = ",".join("?" * len(missing))
            rows = self._q(f"SELECT id, file_id FROM chunks WHERE id IN ({marks})", missing)
            found.update((int(r[0]), int(r[1])) for r in rows)
        return found

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

    def link_rows(
        self, max_per_document: int = 0, file_ids: Sequence[int] | None = None
    ) -> list[LinkRow]:
        """Every stored link (of ``file_ids``, when given): (source doc_id, target, kind,
        line, anchor, heading path there, display text, context); with
        ``max_per_document``, only each document's first ones.

        The heading path is found by merging each file's links with its chunks by line; a
        subquery per link scanned every chunk of the file (100,000 links in a 1 MB note: 22 s).
        """
        if file_ids is None:
            return self._link_rows(max_per_document, "", ())
        out: list[LinkRow] = []
        ids = sorted(set(file_ids))
        for start in range(0, len(ids), IN_BATCH):
            part = ids[start : start + IN_BATCH]
            out += self._link_rows(max_per_document, ",".join("?" * len(part)), part)
        out.sort(key=lambda r: r[0])  # by doc_id (stable: each file's links stay in order)
        return out

    def _link_rows(
        self, max_per_document: int, marks: str, file_ids: Sequence[int]
    ) -> list[LinkRow]:
        """:meth:`link_rows` of every file, or of ``file_ids`` (``marks``: their ``?``s)."""
        # Links are stored in the order of the file, so a file's first ones are its lowest
        # rowids: the index on file_id yields them without reading (or sorting) the rest.
        where = f"WHERE f.id IN ({marks})" if marks else ""
        links = self._q(
            "SELECT f.doc_id, l.file_id, l.target, l.kind, l.line, l.anchor, l.display, "
            "l.context FROM files f JOIN links l ON l.rowid IN (SELECT rowid FROM links "
            f"WHERE file_id = f.id ORDER BY rowid LIMIT ?) {where} "
            "ORDER BY f.doc_id, l.line, l.rowid",
            (max_per_document if max_per_document > 0 else -1, *file_ids),
        )
        chunk_files = f"IN ({marks})" if marks else "IN (SELECT DISTINCT file_id FROM links)"
        starts: dict[int, list[int]] = {}
        headings: dict[int, list[str]] = {}
        for file_id, start, heading in self._q(
            "SELECT file_id, start_line, heading_path FROM chunks "
            f"WHERE file_id {chunk_files} ORDER BY file_id, start_line",
            file_ids,
        ):
            starts.setdefault(file_id, []).append(start)
            headings.setdefault(file_id, []).append(heading)
        out: list[LinkRow] = []
        for doc_id, file_id, target, kind, line, anchor, display, context in links:
            # The last chunk starting at or before the link's line holds it.
            at = bisect_right(starts.get(file_id, []), line) - 1
            heading = headings[file_id][at] if at >= 0 else ""
            path = tuple(heading.split(HEADING_SEP)) if heading else ()
            out.append((doc_id, target, kind, int(line), anchor, path, display, context))
        return out

    def filtered_chunk_ids(self, filters: Filters) -> list[int]:
        """Rowids of the chunks the filters let through (for filtering vector search)."""
        where, params = filter_sql(filters)
        rows = self._q(
            f"SELECT c.id FROM chunks c JOIN files f ON f.id = c.file_id WHERE 1 {where}",
            params,
        )
        return [r[0] for r in rows]
