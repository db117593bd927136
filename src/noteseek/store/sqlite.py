"""The embedded store: one SQLite file in WAL mode with an FTS5 table of analyzed terms.

Keyword ranking is FTS5's BM25 with one weight per field (title, aliases, headings, tags, body,
code). Filters are SQL conditions in the same statement as the MATCH, so they apply before the
``LIMIT`` and never starve a filtered query of results.
"""

from __future__ import annotations

import contextlib
import json
import os
import re
import sqlite3
import threading
import time
from collections.abc import Iterable, Iterator, Mapping, Sequence
from contextlib import contextmanager
from functools import lru_cache
from pathlib import Path
from typing import Any

from pathspec import GitIgnoreSpec

from noteseek.store.base import (
    ChunkRow,
    FileRow,
    FileState,
    IndexCorrupt,
    MatchMode,
    Problem,
    WriteRejected,
)
from noteseek.store.migrations import MIGRATIONS, SCHEMA_VERSION
from noteseek.types import Clause, Filters, KeywordQuery, PreparedFile

HEADING_SEP = "\x1f"

_CHUNK_COLUMNS = """
    c.id, c.chunk_id, c.ordinal, c.heading_path, c.start_line, c.end_line, c.text,
    c.content_hash, f.id, r.name, f.path, f.doc_id, f.title, f.modified, c.embed_key
"""
_CHUNK_FROM = "chunks c JOIN files f ON f.id = c.file_id JOIN roots r ON r.id = f.root_id"
_FILE_COLUMNS = """
    f.id, r.name, r.path, f.path, f.doc_id, f.title, f.aliases, f.tags, f.frontmatter,
    f.mtime_ns, f.size, f.content_hash, f.modified, f.warnings, f.indexed_at
"""


class SQLiteStore:
    """A :class:`noteseek.store.base.Store` in one SQLite file.

    One connection per instance; calls are serialised by a lock so the instance may be shared
    between threads. Other processes can open the same file concurrently (WAL: readers never
    block the writer).
    """

    def __init__(self, path: Path | str, *, readonly: bool = False) -> None:
        self.path = str(path)
        self.readonly = readonly
        self.created = not Path(self.path).exists() or Path(self.path).stat().st_size == 0
        self._lock = threading.RLock()
        self._depth = 0
        self._writes = 0
        self._common_cache: dict[tuple[str, int], bool] = {}
        self._common_version = -1
        self._common_writes = -1
        self._chunk_estimate = 0
        try:
            self._conn = self._connect()
            self._migrate()
        except sqlite3.OperationalError:
            raise  # locked or busy: the file is fine, the caller reports the error
        except sqlite3.DatabaseError as exc:
            raise IndexCorrupt(f"{self.path}: {exc}") from exc

    # -- connection and schema -------------------------------------------------------------

    def _connect(self) -> sqlite3.Connection:
        if not self.readonly:
            Path(self.path).parent.mkdir(parents=True, exist_ok=True)
        uri = f"file:{self.path}{'?mode=ro' if self.readonly else ''}"
        conn = sqlite3.connect(uri, uri=True, isolation_level=None, check_same_thread=False)
        conn.execute("PRAGMA busy_timeout = 10000")
        if not self.readonly:
            conn.execute("PRAGMA journal_mode = WAL")
        conn.execute("PRAGMA synchronous = NORMAL")
        conn.execute("PRAGMA foreign_keys = ON")
        conn.execute("PRAGMA temp_store = MEMORY")
        conn.execute("PRAGMA cache_size = -65536")
        conn.execute("PRAGMA mmap_size = 268435456")
        conn.create_function("ns_path_match", 2, _path_match, deterministic=True)
        return conn

    def _migrate(self) -> None:
        version = self._conn.execute("PRAGMA user_version").fetchone()[0]
        if version > SCHEMA_VERSION:
            raise IndexCorrupt(
                f"index schema version {version} is newer than this noteseek ({SCHEMA_VERSION})"
            )
        if version == SCHEMA_VERSION:
            return
        if self.readonly:
            raise IndexCorrupt(f"index schema version {version} needs a migration")
        for target in range(version + 1, SCHEMA_VERSION + 1):
            with self.transaction():
                # Another process may have migrated meanwhile (several servers starting on
                # a new index at once): read the version again under the write lock.
                current = self._conn.execute("PRAGMA user_version").fetchone()[0]
                if current >= target:
                    continue
                for statement in _split_sql(MIGRATIONS[target - 1]):
                    self._conn.execute(statement)
                self._conn.execute(f"PRAGMA user_version = {target}")

    def close(self) -> None:
        with self._lock:
            try:
                if not self.readonly:
                    self._conn.execute("PRAGMA optimize")
            except sqlite3.Error:
                pass
            self._conn.close()

    @contextmanager
    def transaction(self) -> Iterator[None]:
        """A write transaction (nested calls join the outer one)."""
        with self._lock:
            if self._depth:
                # Nested: a savepoint, so a failed inner write leaves the outer batch intact.
                name = f"sp{self._depth}"
                self._conn.execute(f"SAVEPOINT {name}")
                self._depth += 1
                try:
                    yield
                except BaseException:
                    self._conn.execute(f"ROLLBACK TO {name}")
                    self._conn.execute(f"RELEASE {name}")
                    raise
                else:
                    self._conn.execute(f"RELEASE {name}")
                finally:
                    self._depth -= 1
                return
            self._conn.execute("BEGIN IMMEDIATE")
            self._depth = 1
            try:
                yield
            except BaseException:
                self._depth = 0
                self._conn.execute("ROLLBACK")
                raise
            else:
                self._depth = 0
                self._conn.execute("COMMIT")
                self._writes += 1

    def _q(self, sql: str, params: Sequence[Any] | Mapping[str, Any] = ()) -> list[Any]:
        with self._lock:
            return self._conn.execute(sql, params).fetchall()

    # -- manifest and roots ------------------------------------------------------------------

    def manifest(self) -> dict[str, Any]:
        row = self._q("SELECT value FROM meta WHERE key = 'manifest'")
        return dict(json.loads(row[0][0])) if row else {}

    def set_manifest(self, manifest: Mapping[str, Any]) -> None:
        with self.transaction():
            self._conn.execute(
                "INSERT OR REPLACE INTO meta(key, value) VALUES ('manifest', ?)",
                (json.dumps(manifest, sort_keys=True),),
            )

    def meta(self, key: str) -> str | None:
        row = self._q("SELECT value FROM meta WHERE key = ?", (key,))
        return str(row[0][0]) if row else None

    def set_meta(self, key: str, value: str) -> None:
        with self.transaction():
            self._conn.execute(
                "INSERT OR REPLACE INTO meta(key, value) VALUES (?, ?)", (key, value)
            )

    def change_token(self) -> tuple[int, int]:
        """Changes whenever this or another connection commits a write."""
        with self._lock:
            version = self._conn.execute("PRAGMA data_version").fetchone()[0]
            return int(version), self._writes

    def clear(self) -> None:
        """Drop every indexed document (a rebuild starts from here)."""
        with self.transaction():
            self._conn.execute("DELETE FROM chunks_fts")
            self._conn.execute("DELETE FROM docs_fts")
            self._conn.execute("DELETE FROM chunks")
            self._conn.execute("DELETE FROM files")
            self._conn.execute("DELETE FROM problems")
            # Vectors stay: keyed by text, they are reused when the same chunks come back.

    def ensure_root(self, name: str, path: str) -> int:
        with self.transaction():
            row = self._conn.execute(
                "SELECT id, path FROM roots WHERE name = ?", (name,)
            ).fetchone()
            if row:
                if row[1] != path:
                    # The root now points elsewhere: what was indexed under it is stale.
                    self._conn.execute("DELETE FROM files WHERE root_id = ?", (row[0],))
                    self._conn.execute("UPDATE roots SET path = ? WHERE id = ?", (path, row[0]))
                return int(row[0])
            cur = self._conn.execute("INSERT INTO roots(name, path) VALUES (?, ?)", (name, path))
            return int(cur.lastrowid or 0)

    def roots(self) -> dict[str, str]:
        return {name: path for name, path in self._q("SELECT name, path FROM roots ORDER BY name")}

    def remove_root(self, name: str) -> None:
        with self.transaction():
            ids = [r[0] for r in self._conn.execute("SELECT id FROM roots WHERE name = ?", (name,))]
            for rid in ids:
                self._conn.execute(
                    "DELETE FROM chunks WHERE file_id IN (SELECT id FROM files WHERE root_id = ?)",
                    (rid,),
                )
                self._conn.execute("DELETE FROM roots WHERE id = ?", (rid,))

    def _root_id(self, name: str) -> int:
        row = self._conn.execute("SELECT id FROM roots WHERE name = ?", (name,)).fetchone()
        if row is None:
            raise KeyError(f"unknown root {name!r}")
        return int(row[0])

    # -- writes ------------------------------------------------------------------------------

    def file_states(self, root: str) -> dict[str, FileState]:
        rows = self._q(
            "SELECT f.id, f.path, f.mtime_ns, f.size, f.content_hash FROM files f "
            "JOIN roots r ON r.id = f.root_id WHERE r.name = ?",
            (root,),
        )
        return {r[1]: FileState(r[0], r[1], r[2], r[3], r[4]) for r in rows}

    def write_file(self, prepared: PreparedFile, indexed_at: float, file_id: int | None) -> int:
        """Replace one file's rows (metadata, chunks, keyword fields, tags, links).

        ``file_id`` reuses an existing row (a changed or renamed file) so its identity stays.
        Call inside :meth:`transaction` so a reader never sees half a file.
        """
        try:
            return self._write_file(prepared, indexed_at, file_id)
        except sqlite3.IntegrityError as exc:
            raise WriteRejected(f"could not be stored: {exc}") from exc

    def _write_file(self, prepared: PreparedFile, indexed_at: float, file_id: int | None) -> int:
        rec = prepared.record
        conn = self._conn
        with self.transaction():
            root_id = self._root_id(rec.root)
            values = (
                root_id,
                rec.path,
                rec.doc_id,
                rec.title,
                json.dumps(rec.aliases, ensure_ascii=False),
                json.dumps(rec.tags, ensure_ascii=False),
                json.dumps(rec.frontmatter, ensure_ascii=False, default=str),
                rec.mtime_ns,
                rec.size,
                rec.content_hash,
                rec.modified,
                rec.parser,
                json.dumps(rec.warnings, ensure_ascii=False),
                indexed_at,
            )
            if file_id is not None:
                conn.execute("DELETE FROM chunks WHERE file_id = ?", (file_id,))
                conn.execute("DELETE FROM tags WHERE file_id = ?", (file_id,))
                conn.execute("DELETE FROM links WHERE file_id = ?", (file_id,))
                conn.execute(
                    "UPDATE files SET root_id=?, path=?, doc_id=?, title=?, aliases=?, tags=?, "
                    "frontmatter=?, mtime_ns=?, size=?, content_hash=?, modified=?, parser=?, "
                    "warnings=?, indexed_at=? WHERE id = ?",
                    (*values, file_id),
                )
            else:
                cur = conn.execute(
                    "INSERT INTO files(root_id, path, doc_id, title, aliases, tags, frontmatter, "
                    "mtime_ns, size, content_hash, modified, parser, warnings, indexed_at) "
                    "VALUES (?,?,?,?,?,?,?,?,?,?,?,?,?,?)",
                    values,
                )
                file_id = int(cur.lastrowid or 0)
            for item in prepared.chunks:
                ch = item.chunk
                cur = conn.execute(
                    "INSERT INTO chunks(chunk_id, file_id, ordinal, heading_path, start_line, "
                    "end_line, text, content_hash, embed_key) VALUES (?,?,?,?,?,?,?,?,?)",
                    (
                        ch.chunk_id,
                        file_id,
                        ch.ordinal,
                        HEADING_SEP.join(ch.heading_path),
                        ch.start_line,
                        ch.end_line,
                        ch.text,
                        ch.content_hash,
                        item.embed_key,
                    ),
                )
                conn.execute(
                    "INSERT INTO chunks_fts(rowid, title, aliases, headings, tags, body, code) "
                    "VALUES (?,?,?,?,?,?,?)",
                    (cur.lastrowid, *item.fields),
                )
            conn.execute("DELETE FROM docs_fts WHERE rowid = ?", (file_id,))
            conn.execute(
                "INSERT INTO docs_fts(rowid, title, aliases, headings, tags, body, code) "
                "VALUES (?,?,?,?,?,?,?)",
                (file_id, *document_row(prepared)),
            )
            tags = {t.casefold() for t in rec.tags}
            conn.executemany(
                "INSERT OR IGNORE INTO tags(file_id, tag) VALUES (?, ?)",
                [(file_id, t) for t in sorted(tags)],
            )
            conn.executemany(
                "INSERT INTO links(file_id, target, kind, anchor, display, line) "
                "VALUES (?,?,?,?,?,?)",
                [(file_id, k.target, k.kind, k.anchor, k.display, k.line) for k in prepared.links],
            )
        return file_id

    def update_file_stat(self, file_id: int, mtime_ns: int, size: int) -> None:
        with self.transaction():
            self._conn.execute(
                "UPDATE files SET mtime_ns = ?, size = ? WHERE id = ?", (mtime_ns, size, file_id)
            )

    def delete_file(self, file_id: int) -> None:
        with self.transaction():
            # Chunks first, so the trigger removes their keyword rows.
            self._conn.execute("DELETE FROM chunks WHERE file_id = ?", (file_id,))
            self._conn.execute("DELETE FROM files WHERE id = ?", (file_id,))

    def set_problems(
        self,
        root: str,
        path: str,
        problems: Iterable[tuple[str, str]],
        mtime_ns: int = 0,
        size: int = 0,
    ) -> None:
        """Replace the problems recorded for one file with ``(severity, reason)`` pairs.

        The file's stat is kept so that an unchanged skipped file is not read again.
        """
        with self.transaction():
            root_id = self._root_id(root)
            self._conn.execute(
                "DELETE FROM problems WHERE root_id = ? AND path = ?", (root_id, path)
            )
            now = time.time()
            self._conn.executemany(
                "INSERT OR REPLACE INTO problems(root_id, path, severity, reason, mtime_ns, "
                "size, at) VALUES (?,?,?,?,?,?,?)",
                [(root_id, path, sev, reason, mtime_ns, size, now) for sev, reason in problems],
            )

    def skipped_states(self, root: str) -> dict[str, tuple[int, int]]:
        """Stat of files that were skipped (not indexed) last time, by path."""
        rows = self._q(
            "SELECT p.path, p.mtime_ns, p.size FROM problems p JOIN roots r ON r.id = p.root_id "
            "WHERE r.name = ? AND p.severity = 'skipped'",
            (root,),
        )
        return {r[0]: (r[1], r[2]) for r in rows}

    def clear_problems(self, root: str, paths: Iterable[str] | None = None) -> None:
        with self.transaction():
            root_id = self._root_id(root)
            if paths is None:
                self._conn.execute("DELETE FROM problems WHERE root_id = ?", (root_id,))
            else:
                self._conn.executemany(
                    "DELETE FROM problems WHERE root_id = ? AND path = ?",
                    [(root_id, p) for p in paths],
                )

    def problem_paths(self, root: str) -> set[str]:
        rows = self._q(
            "SELECT DISTINCT p.path FROM problems p JOIN roots r ON r.id = p.root_id "
            "WHERE r.name = ?",
            (root,),
        )
        return {r[0] for r in rows}

    def record_run(self, started: float, finished: float, summary: Mapping[str, Any]) -> None:
        with self.transaction():
            self._conn.execute(
                "INSERT INTO runs(started, finished, summary) VALUES (?,?,?)",
                (started, finished, json.dumps(summary, ensure_ascii=False)),
            )
            # Keep a short history only.
            self._conn.execute(
                "DELETE FROM runs WHERE id NOT IN (SELECT id FROM runs ORDER BY id DESC LIMIT 20)"
            )

    # -- vectors -------------------------------------------------------------------------------

    def pending_embeddings(self, model: str) -> list[tuple[str, int]]:
        """(embedding key, a chunk rowid with that key) lacking a vector, shortest first."""
        rows = self._q(
            "SELECT c.embed_key, min(c.id), length(c.text) AS n FROM chunks c "
            "WHERE c.embed_key != '' AND NOT EXISTS (SELECT 1 FROM vectors v "
            "WHERE v.model = ? AND v.key = c.embed_key) GROUP BY c.embed_key ORDER BY n",
            (model,),
        )
        return [(r[0], int(r[1])) for r in rows]

    def put_vectors(self, model: str, items: Iterable[tuple[str, bytes]]) -> None:
        with self.transaction():
            self._conn.executemany(
                "INSERT OR REPLACE INTO vectors(model, key, vector) VALUES (?, ?, ?)",
                [(model, key, blob) for key, blob in items],
            )

    def vector_progress(self, model: str) -> tuple[int, int]:
        """(chunks that have a vector of ``model``, all chunks)."""
        row = self._q(
            "SELECT count(*), count(v.key) FROM chunks c LEFT JOIN vectors v "
            "ON v.model = ? AND v.key = c.embed_key",
            (model,),
        )[0]
        return int(row[1]), int(row[0])

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
        rows = self._q(
            "SELECT c.id, c.embed_key FROM chunks c JOIN vectors v ON v.model = ? "
            "AND v.key = c.embed_key ORDER BY c.id",
            (model,),
        )
        return [(int(r[0]), r[1]) for r in rows]

    def chunk_vectors(self, model: str, rowids: Sequence[int]) -> list[tuple[int, str, bytes]]:
        """(chunk rowid, embedding key, vector blob) for the given chunks that have one."""
        out: list[tuple[int, str, bytes]] = []
        for start in range(0, len(rowids), 900):
            part = rowids[start : start + 900]
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
        return [
            (int(r[0]), r[1], r[2])
            for r in self._q(
                "SELECT c.id, c.embed_key, v.vector FROM chunks c JOIN vectors v ON v.model = ? "
                "AND v.key = c.embed_key ORDER BY c.id",
                (model,),
            )
        ]

    def filtered_chunk_ids(self, filters: Filters) -> list[int]:
        """Rowids of the chunks the filters let through (for filtering vector search)."""
        where, params = _filter_sql(filters)
        rows = self._q(
            f"SELECT c.id FROM chunks c JOIN files f ON f.id = c.file_id WHERE 1 {where}",
            params,
        )
        return [r[0] for r in rows]

    # -- keyword search ----------------------------------------------------------------------

    def keyword_search(
        self,
        query: KeywordQuery,
        mode: MatchMode,
        filters: Filters,
        limit: int,
        weights: Sequence[float],
    ) -> list[tuple[int, float]]:
        """Top ``limit`` (chunk rowid, BM25 score) pairs, best first, filters applied inside."""
        expr = fts_expression(query, mode)
        if expr is None:
            return []
        where, params = _filter_sql(filters)
        if where:
            sql = (
                "SELECT c.id, -bm25(chunks_fts, ?, ?, ?, ?, ?, ?) AS score "
                "FROM chunks_fts JOIN chunks c ON c.id = chunks_fts.rowid "
                "JOIN files f ON f.id = c.file_id "
                f"WHERE chunks_fts MATCH ? {where} ORDER BY score DESC LIMIT ?"
            )
        else:
            # No filter: no join, so rows that will not make the top k cost no lookups.
            sql = (
                "SELECT rowid, -bm25(chunks_fts, ?, ?, ?, ?, ?, ?) AS score FROM chunks_fts "
                "WHERE chunks_fts MATCH ? ORDER BY score DESC LIMIT ?"
            )
        rows = self._q(sql, (*weights, expr, *params, limit))
        return [(int(r[0]), float(r[1])) for r in rows]

    def document_scores(
        self, query: KeywordQuery, filters: Filters, limit: int, weights: Sequence[float]
    ) -> dict[int, float]:
        """BM25 of whole documents (file id -> score) for the query's any-word match."""
        expr = fts_expression(query, "any")
        if expr is None:
            return {}
        where, params = _filter_sql(filters)
        sql = (
            "SELECT docs_fts.rowid, -bm25(docs_fts, ?, ?, ?, ?, ?, ?) AS score FROM docs_fts "
            + ("JOIN files f ON f.id = docs_fts.rowid " if where else "")
            + f"WHERE docs_fts MATCH ? {where} ORDER BY score DESC LIMIT ?"
        )
        rows = self._q(sql, (*weights, expr, *params, limit))
        return {int(r[0]): float(r[1]) for r in rows}

    def chunk_files(self, rowids: Sequence[int]) -> dict[int, int]:
        """Chunk rowid -> file id."""
        if not rowids:
            return {}
        marks = ",".join("?" * len(rowids))
        rows = self._q(f"SELECT id, file_id FROM chunks WHERE id IN ({marks})", rowids)
        return {int(r[0]): int(r[1]) for r in rows}

    def matching_rowids(self, query: KeywordQuery, rowids: Sequence[int]) -> set[int]:
        """Which of ``rowids`` match any clause of ``query`` (exclusions for vector results)."""
        expr = fts_expression(query, "any")
        if expr is None or not rowids:
            return set()
        marks = ",".join("?" * len(rowids))
        rows = self._q(
            f"SELECT rowid FROM chunks_fts WHERE chunks_fts MATCH ? AND rowid IN ({marks})",
            (expr, *rowids),
        )
        return {int(r[0]) for r in rows}

    def is_common(self, clause: Clause, threshold_fraction: float, floor: int) -> bool:
        """Whether a clause matches at least ``max(floor, fraction x chunks)`` chunks.

        Counting stops at the threshold, so the check costs at most that many row visits; the
        answer is cached until the index changes (``PRAGMA data_version`` or our own writes).
        """
        with self._lock:
            version = self._conn.execute("PRAGMA data_version").fetchone()[0]
            if version != self._common_version or self._writes != self._common_writes:
                self._common_cache.clear()
                self._common_version, self._common_writes = version, self._writes
                # Once per index change; max(id) would drift upwards as chunks are rewritten.
                row = self._conn.execute("SELECT count(*) FROM chunks").fetchone()
                self._chunk_estimate = int(row[0] or 0)
            limit = max(floor, int(self._chunk_estimate * threshold_fraction))
            if self._chunk_estimate < limit:
                return False
            expr = _clause_expr(clause)
            key = (expr, limit)
            cached = self._common_cache.get(key)
            if cached is None:
                n = self._conn.execute(
                    "SELECT count(*) FROM (SELECT 1 FROM chunks_fts WHERE chunks_fts MATCH ? "
                    "LIMIT ?)",
                    (expr, limit),
                ).fetchone()[0]
                cached = n >= limit
                self._common_cache[key] = cached
            return cached

    def field_scores(
        self, query: KeywordQuery, mode: MatchMode, rowids: Sequence[int], weights: Sequence[float]
    ) -> dict[int, list[float]]:
        """BM25 of each field alone (the others weighted 0) for the given chunks: --explain."""
        expr = fts_expression(query, mode)
        if expr is None or not rowids:
            return {}
        n = len(weights)
        cols = []
        params: list[Any] = []
        for i in range(n):
            cols.append(f"-bm25(chunks_fts, {', '.join('?' * n)})")
            params.extend(w if j == i else 0.0 for j, w in enumerate(weights))
        marks = ",".join("?" * len(rowids))
        sql = (
            f"SELECT rowid, {', '.join(cols)} FROM chunks_fts "
            f"WHERE chunks_fts MATCH ? AND rowid IN ({marks})"
        )
        rows = self._q(sql, (*params, expr, *rowids))
        return {int(r[0]): [float(x) for x in r[1:]] for r in rows}

    # -- reads -------------------------------------------------------------------------------

    def chunk_rows(self, rowids: Sequence[int]) -> list[ChunkRow]:
        if not rowids:
            return []
        marks = ",".join("?" * len(rowids))
        rows = self._q(
            f"SELECT {_CHUNK_COLUMNS} FROM {_CHUNK_FROM} WHERE c.id IN ({marks})", rowids
        )
        by_id = {r[0]: _chunk_row(r) for r in rows}
        return [by_id[i] for i in rowids if i in by_id]

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

    def chunk_modified(self, rowids: Sequence[int]) -> dict[int, float]:
        """Each chunk's document date (``files.modified``), by chunk rowid."""
        out: dict[int, float] = {}
        for start in range(0, len(rowids), 900):
            part = list(rowids[start : start + 900])
            marks = ",".join("?" * len(part))
            for r in self._q(
                f"SELECT c.id, f.modified FROM chunks c JOIN files f ON f.id = c.file_id "
                f"WHERE c.id IN ({marks})",
                part,
            ):
                out[int(r[0])] = float(r[1])
        return out

    def document_dates(self) -> list[float]:
        """Every document's date (``files.modified``)."""
        return [float(r[0]) for r in self._q("SELECT modified FROM files")]

    def chunk_by_id(self, chunk_id: str) -> ChunkRow | None:
        rows = self._q(
            f"SELECT {_CHUNK_COLUMNS} FROM {_CHUNK_FROM} WHERE c.chunk_id = ?", (chunk_id,)
        )
        return _chunk_row(rows[0]) if rows else None

    def file_chunks(self, file_id: int) -> list[ChunkRow]:
        rows = self._q(
            f"SELECT {_CHUNK_COLUMNS} FROM {_CHUNK_FROM} WHERE c.file_id = ? ORDER BY c.ordinal",
            (file_id,),
        )
        return [_chunk_row(r) for r in rows]

    def file_chunk_rowids(self, file_id: int) -> list[int]:
        """A file's chunk rowids in document order."""
        rows = self._q("SELECT id FROM chunks WHERE file_id = ? ORDER BY ordinal", (file_id,))
        return [r[0] for r in rows]

    def find_files(self, path: str, root: str | None = None) -> list[FileRow]:
        """Files whose root-relative path, or ``root/path`` doc id, is ``path``."""
        sql = f"SELECT {_FILE_COLUMNS} FROM files f JOIN roots r ON r.id = f.root_id WHERE "
        if root is not None:
            rows = self._q(sql + "r.name = ? AND f.path = ?", (root, path))
        else:
            rows = self._q(sql + "f.path = ? OR f.doc_id = ? ORDER BY r.name", (path, path))
        return [_file_row(r) for r in rows]

    def file_row(self, file_id: int) -> FileRow | None:
        rows = self._q(
            f"SELECT {_FILE_COLUMNS} FROM files f JOIN roots r ON r.id = f.root_id WHERE f.id = ?",
            (file_id,),
        )
        return _file_row(rows[0]) if rows else None

    def link_rows(
        self,
    ) -> list[tuple[str, str, str, int, str | None, tuple[str, ...], str | None]]:
        """Every stored link: (source doc_id, target, kind, line, anchor, heading path there,
        display text)."""
        rows = self._q(
            "SELECT f.doc_id, l.target, l.kind, l.line, l.anchor, "
            "(SELECT c.heading_path FROM chunks c WHERE c.file_id = l.file_id "
            " AND c.start_line <= l.line ORDER BY c.start_line DESC LIMIT 1), l.display "
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
            )
            for r in rows
        ]

    def iter_files(self) -> Iterator[FileRow]:
        rows = self._q(
            f"SELECT {_FILE_COLUMNS} FROM files f JOIN roots r ON r.id = f.root_id "
            "ORDER BY r.name, f.path"
        )
        return (_file_row(r) for r in rows)

    def problems(self) -> list[Problem]:
        rows = self._q(
            "SELECT r.name, p.path, p.severity, p.reason, p.at FROM problems p "
            "JOIN roots r ON r.id = p.root_id ORDER BY r.name, p.path"
        )
        return [Problem(r[0], r[1], r[2], r[3], r[4]) for r in rows]

    def stats(self) -> dict[str, Any]:
        per_root = self._q(
            "SELECT r.name, r.path, "
            "(SELECT count(*) FROM files f WHERE f.root_id = r.id), "
            "(SELECT count(*) FROM chunks c JOIN files f ON f.id = c.file_id "
            " WHERE f.root_id = r.id) FROM roots r ORDER BY r.name"
        )
        size = 0
        for suffix in ("", "-wal", "-shm"):
            with contextlib.suppress(OSError):
                size += os.path.getsize(self.path + suffix)
        return {
            "roots": [
                {"name": r[0], "path": r[1], "files": r[2], "chunks": r[3]} for r in per_root
            ],
            "files": sum(r[2] for r in per_root),
            "chunks": sum(r[3] for r in per_root),
            "links": self._q("SELECT count(*) FROM links")[0][0],
            "index_bytes": size,
        }

    def last_run(self) -> dict[str, Any] | None:
        rows = self._q("SELECT started, finished, summary FROM runs ORDER BY id DESC LIMIT 1")
        if not rows:
            return None
        return {"started": rows[0][0], "finished": rows[0][1], **json.loads(rows[0][2])}


# -- helpers ---------------------------------------------------------------------------------


def document_row(prepared: PreparedFile) -> tuple[str, str, str, str, str, str]:
    """A file's document-level keyword fields, from its chunks' analyzed fields.

    Title, aliases and tags are the same in every chunk; headings are each distinct heading
    path once; body and code are every chunk's, so term frequencies are the document's.
    """
    chunks = prepared.chunks
    if not chunks:
        return ("", "", "", "", "", "")
    first = chunks[0].fields
    headings = list(dict.fromkeys(c.fields[2] for c in chunks if c.fields[2]))
    return (
        first[0],
        first[1],
        " ".join(headings),
        first[3],
        " ".join(c.fields[4] for c in chunks if c.fields[4]),
        " ".join(c.fields[5] for c in chunks if c.fields[5]),
    )


def fts_expression(query: KeywordQuery, mode: MatchMode) -> str | None:
    """The FTS5 MATCH string for an analyzed query, every term quoted (no syntax injection).

    ``all``: every clause must match. ``any``: quoted phrases must match, at least one of the
    other clauses must. Excluded clauses are subtracted with ``NOT``.
    """
    required = [_clause_expr(c) for c in query.clauses if c.required or mode == "all"]
    optional = [_clause_expr(c) for c in query.clauses if not (c.required or mode == "all")]
    parts = [p for p in required if p]
    opt = [p for p in optional if p]
    if opt:
        parts.append(opt[0] if len(opt) == 1 else "(" + " OR ".join(opt) + ")")
    if not parts:
        return None
    expr = " AND ".join(parts)
    if query.fields:
        expr = "{" + " ".join(query.fields) + "} : (" + expr + ")"
    excluded = [e for e in (_clause_expr(c) for c in query.excluded) if e]
    if excluded:
        expr = f"({expr}) NOT ({' OR '.join(excluded)})"
    return expr


def _clause_expr(clause: Clause) -> str:
    alts = []
    for alt in clause.alternatives:
        if not alt:
            continue
        phrase = '"' + " ".join(t.replace('"', '""') for t in alt) + '"'
        alts.append(phrase + ("*" if clause.prefix else ""))
    if not alts:
        return ""
    return alts[0] if len(alts) == 1 else "(" + " OR ".join(alts) + ")"


def _filter_sql(filters: Filters) -> tuple[str, list[Any]]:
    conds: list[str] = []
    params: list[Any] = []
    if filters.paths:
        conds.append("ns_path_match(?, f.path)")
        params.append("\n".join(filters.paths))
    if filters.exclude_paths:
        conds.append("NOT ns_path_match(?, f.path)")
        params.append("\n".join(filters.exclude_paths))
    if filters.roots:
        conds.append(
            "f.root_id IN (SELECT id FROM roots WHERE name IN "
            f"({','.join('?' * len(filters.roots))}))"
        )
        params.extend(filters.roots)
    for tag in filters.tags:
        folded = tag.lstrip("#").casefold()
        conds.append(
            "EXISTS (SELECT 1 FROM tags t WHERE t.file_id = f.id AND "
            "(t.tag = ? OR substr(t.tag, 1, ?) = ?))"
        )
        params.extend([folded, len(folded) + 1, folded + "/"])
    if filters.after is not None:
        conds.append("f.modified >= ?")
        params.append(filters.after)
    if filters.before is not None:
        conds.append("f.modified < ?")
        params.append(filters.before)
    for key, op, value in filters.where:
        path = '$."' + key.replace('"', '\\"') + '"'
        exists = (
            "EXISTS (SELECT 1 FROM json_each(f.frontmatter, ?) j WHERE "
            "lower(CASE j.type WHEN 'true' THEN 'true' WHEN 'false' THEN 'false' "
            "ELSE CAST(j.value AS TEXT) END) = lower(?))"
        )
        conds.append(exists if op == "=" else f"NOT {exists}")
        params.extend([path, value])
    return ("AND " + " AND ".join(conds) if conds else ""), params


@lru_cache(maxsize=64)
def _spec(patterns: str) -> GitIgnoreSpec:
    return GitIgnoreSpec.from_lines(patterns.split("\n"))


def _path_match(patterns: str, path: str) -> bool:
    return _spec(patterns).match_file(path)


def _chunk_row(r: Sequence[Any]) -> ChunkRow:
    heading = tuple(r[3].split(HEADING_SEP)) if r[3] else ()
    return ChunkRow(
        r[0],
        r[1],
        r[2],
        heading,
        r[4],
        r[5],
        r[6],
        r[7],
        r[8],
        r[9],
        r[10],
        r[11],
        r[12],
        r[13],
        r[14],
    )


def _file_row(r: Sequence[Any]) -> FileRow:
    return FileRow(
        r[0],
        r[1],
        r[2],
        r[3],
        r[4],
        r[5],
        json.loads(r[6]),
        json.loads(r[7]),
        json.loads(r[8]),
        r[9],
        r[10],
        r[11],
        r[12],
        json.loads(r[13]),
        r[14],
    )


def _split_sql(script: str) -> list[str]:
    """Statements of a migration script (triggers keep their inner semicolons)."""
    statements: list[str] = []
    buf: list[str] = []
    in_trigger = False
    for line in script.splitlines():
        if not line.strip():
            continue
        buf.append(line)
        if re.match(r"\s*CREATE TRIGGER", line, re.I):
            in_trigger = True
        if in_trigger:
            if re.match(r"\s*END;\s*$", line, re.I):
                statements.append("\n".join(buf))
                buf, in_trigger = [], False
        elif line.rstrip().endswith(";"):
            statements.append("\n".join(buf))
            buf = []
    if buf and "".join(buf).strip():
        statements.append("\n".join(buf))
    return statements
