"""The vector store role in SQLite: float32 BLOBs keyed by (model, embedding key).

A vector is shared by every chunk whose embedding input has that key, so identical sections
are embedded once and a re-indexed file keeps its vectors. Search runs in process over these
rows (:class:`noteseek.store.ann.InMemoryVectorIndex`), which this backend hands out.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Sequence
from pathlib import Path
from typing import TYPE_CHECKING

from noteseek.store.base import VectorDType
from noteseek.store.sqlite.core import SQLiteCore
from noteseek.store.sqlite.sql import IN_BATCH

if TYPE_CHECKING:  # the vector index (numpy) loads with the first vector search
    from noteseek.store.ann import InMemoryVectorIndex


class SQLiteVectors(SQLiteCore):
    """:class:`noteseek.store.base.VectorStore` over the ``vectors`` table."""

    def put_vectors(self, model: str, items: Iterable[tuple[str, bytes]]) -> None:
        with self.transaction():
            self._conn.executemany(
                "INSERT OR REPLACE INTO vectors(model, key, vector) VALUES (?, ?, ?)",
                [(model, key, blob) for key, blob in items],
            )

    def pending_embeddings(self, model: str) -> list[tuple[str, int]]:
        """(embedding key, a chunk rowid with that key) lacking a vector, shortest first."""
        rows = self._q(
            "SELECT c.embed_key, min(c.id), length(c.text) AS n FROM chunks c "
            "WHERE c.embed_key != '' AND NOT EXISTS (SELECT 1 FROM vectors v "
            "WHERE v.model = ? AND v.key = c.embed_key) GROUP BY c.embed_key ORDER BY n",
            (model,),
        )
        return [(r[0], int(r[1])) for r in rows]

    def vector_progress(self, model: str) -> tuple[int, int]:
        """(chunks that have a vector of ``model``, chunks that want one: those with an
        embedding key; a chunk without one, such as a commit's hunk when ``git.embed_diffs``
        is off, is never embedded)."""
        # Two counts, each over an index: the left join walked every chunk row, text and all
        # (0.77 s at 165k chunks, against 0.12 s for the join and 2 ms for the total).
        done = self._q(
            "SELECT count(*) FROM vectors v JOIN chunks c ON c.embed_key = v.key WHERE v.model = ?",
            (model,),
        )[0][0]
        # The keyless chunks by a seek on that index, taken from the total's count.
        wanted = self._q(
            "SELECT (SELECT count(*) FROM chunks) - (SELECT count(*) FROM chunks "
            "WHERE embed_key = '')"
        )[0][0]
        return int(done), int(wanted)

    def vector_models(self) -> dict[str, int]:
        return {r[0]: int(r[1]) for r in self._q("SELECT model, count(*) FROM vectors GROUP BY 1")}

    def drop_vectors(self, keep_model: str | None = None) -> int:
        """Delete the vectors of every model but ``keep_model``; returns how many."""
        with self.transaction():
            cur = self._conn.execute("DELETE FROM vectors WHERE model IS NOT ?", (keep_model,))
            return int(cur.rowcount)

    def prune_vectors(self, model: str) -> int:
        """Delete vectors no chunk uses any more; returns how many."""
        with self.transaction():
            cur = self._conn.execute(
                "DELETE FROM vectors WHERE model = ? AND key NOT IN (SELECT embed_key FROM chunks)",
                (model,),
            )
            return int(cur.rowcount)

    def vector_chunk_keys(self, model: str) -> list[tuple[int, str]]:
        """(rowid, embedding key) of chunks that have a vector of ``model``, by rowid.

        The key matters as well as the rowid: SQLite may give a rewritten chunk the rowid of
        the one it replaced, and then only the key says that its vector changed.
        """
        # No ORDER BY: with it SQLite walks the chunk rows in id order, text and all (2.9 s at
        # 165k chunks, the whole of a new process's first semantic query); without, it joins
        # the vectors' keys to the covering index on chunks(embed_key) (0.2 s).
        rows = self._q(
            "SELECT c.id, c.embed_key FROM vectors v JOIN chunks c ON c.embed_key = v.key "
            "WHERE v.model = ?",
            (model,),
        )
        return sorted((int(r[0]), r[1]) for r in rows)

    def chunk_vectors(self, model: str, rowids: Sequence[int]) -> list[tuple[int, str, bytes]]:
        """(chunk rowid, embedding key, vector blob) for the given chunks that have one."""
        out: list[tuple[int, str, bytes]] = []
        for start in range(0, len(rowids), IN_BATCH):
            part = rowids[start : start + IN_BATCH]
            marks = ",".join("?" * len(part))
            # CROSS JOIN keeps chunks as the outer loop: from about 100 ids on, SQLite's planner
            # otherwise scans every vector of the model (blobs included) and looks up chunks
            # from there, which took 19 s per 900 ids at 107k vectors instead of 0.15 s.
            out.extend(
                (int(r[0]), r[1], r[2])
                for r in self._q(
                    "SELECT c.id, c.embed_key, v.vector FROM chunks c CROSS JOIN vectors v "
                    f"ON v.model = ? AND v.key = c.embed_key WHERE c.id IN ({marks})",
                    (model, *part),
                )
            )
        return out

    def all_chunk_vectors(self, model: str) -> list[tuple[int, str, bytes]]:
        # Keys first, as in vector_chunk_keys (3.4 s at 165k chunks in rowid order, 0.5 s
        # this way), so the rows come grouped by key: chunks sharing a key share one bytes
        # object (253 MB of blobs at 165k chunks, 103 MB shared).
        out: list[tuple[int, str, bytes]] = []
        last_key, last_blob = None, b""
        with self._lock:
            for rowid, key, blob in self._conn.execute(
                "SELECT c.id, c.embed_key, v.vector FROM vectors v "
                "JOIN chunks c ON c.embed_key = v.key WHERE v.model = ?",
                (model,),
            ):
                if key == last_key:
                    blob = last_blob
                else:
                    last_key, last_blob = key, blob
                out.append((int(rowid), key, blob))
        out.sort(key=lambda r: r[0])
        return out

    def vector_index(
        self,
        model: str,
        dimension: int,
        *,
        dtype: VectorDType = "float32",
        hnsw_threshold: int = 0,
        may_save: Callable[[], bool] | None = None,
    ) -> InMemoryVectorIndex:
        """An in-process index over ``model``'s vectors; its background updates read through
        their own read-only connection. It maps the state saved in the index folder when that
        matches the store, and saves it there when ``may_save`` says so (store/ann_saved.py)."""
        path, cls = self.path, type(self)
        from noteseek.store.ann import InMemoryVectorIndex

        return InMemoryVectorIndex(
            self,
            model,
            dimension,
            open_reader=lambda: cls(path, readonly=True),
            dtype=dtype,
            hnsw_threshold=hnsw_threshold,
            folder=Path(path).parent,
            may_save=may_save or (lambda: False),
        )
