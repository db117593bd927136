"""The portable role in SQLite: files read and written as stored, ids included.

``noteseek migrate`` copies an index between backends through this role
(``store/migrate.py``): a file's row, its chunks with their rowids and analyzed keyword fields
(read back from ``chunks_fts``), its links in the order of the file, its edges and keys.
:func:`copy_keeping_vectors` copies the file itself, with part of its vectors.
"""

from __future__ import annotations

import json
import sqlite3
from collections.abc import Callable, Iterable, Sequence
from pathlib import Path
from typing import Any

from noteseek.store.rows import EdgeRow, StoredFile
from noteseek.store.sqlite.catalog import file_values, insert_file_rows
from noteseek.store.sqlite.graph import COMMUNITIES_SET
from noteseek.store.sqlite.sql import HEADING_SEP, IN_BATCH
from noteseek.store.sqlite.vectors import SQLiteVectors
from noteseek.types import Chunk, FileRecord, IndexedChunk, Link, PreparedFile

INTERNAL_META = ("manifest", COMMUNITIES_SET)
"""Meta rows that are not :meth:`set_meta` values (the manifest; the graph's own flag)."""


WIPED = (
    "chunks_fts",
    "docs_fts",
    "chunks",
    "files",
    "problems",
    "runs",
    "roots",
    "meta",
    "vectors",
    "graph_edges",
    "graph_keys",
    "graph_nodes",
    "graph_dirty",
    "communities",
)
"""Every table, in an order the foreign keys allow (``wipe``)."""


class SQLiteTransfer(SQLiteVectors):
    """:class:`noteseek.store.base.Portable` over every table."""

    def file_ids(self) -> list[int]:
        return [int(r[0]) for r in self._q("SELECT id FROM files ORDER BY id")]

    def export_files(self, file_ids: Sequence[int]) -> list[StoredFile]:
        out: dict[int, StoredFile] = {}
        ids = list(file_ids)
        for start in range(0, len(ids), IN_BATCH):
            out.update(self._export(ids[start : start + IN_BATCH]))
        return [out[i] for i in ids if i in out]

    def _export(self, ids: list[int]) -> dict[int, StoredFile]:
        marks = ",".join("?" * len(ids))
        chunks: dict[int, list[tuple[int, IndexedChunk]]] = {i: [] for i in ids}
        for r in self._q(
            "SELECT c.file_id, c.id, c.chunk_id, c.ordinal, c.heading_path, c.start_line, "
            "c.end_line, c.text, c.content_hash, c.embed_key, x.title, x.aliases, x.headings, "
            "x.tags, x.body, x.code FROM chunks c JOIN chunks_fts x ON x.rowid = c.id "
            f"WHERE c.file_id IN ({marks}) ORDER BY c.file_id, c.ordinal",
            ids,
        ):
            heading = tuple(r[4].split(HEADING_SEP)) if r[4] else ()
            chunk = Chunk(r[2], r[3], heading, r[5], r[6], r[7], "", "", r[8])
            fields = (r[10], r[11], r[12], r[13], r[14], r[15])
            chunks[int(r[0])].append((int(r[1]), IndexedChunk(chunk, fields, r[9])))
        links: dict[int, list[Link]] = {i: [] for i in ids}
        for r in self._q(
            "SELECT file_id, target, kind, line, anchor, display, context FROM links "
            f"WHERE file_id IN ({marks}) ORDER BY file_id, rowid",
            ids,
        ):
            links[int(r[0])].append(Link(r[1], r[2], int(r[3]), r[4], r[5], r[6]))
        edges: dict[int, list[EdgeRow]] = {i: [] for i in ids}
        for r in self._q(
            "SELECT file_id, target, target_id, type, line, anchor, context FROM graph_edges "
            f"WHERE file_id IN ({marks}) ORDER BY file_id, ordinal",
            ids,
        ):
            edges[int(r[0])].append(EdgeRow(int(r[0]), r[1], r[2], r[3], int(r[4]), r[5], r[6]))
        keys: dict[int, list[str]] = {i: [] for i in ids}
        for file_id, key in self._q(
            f"SELECT file_id, key FROM graph_keys WHERE file_id IN ({marks}) ORDER BY file_id, key",
            ids,
        ):
            keys[int(file_id)].append(key)
        nodes = {
            int(f): str(n)
            for f, n in self._q(
                f"SELECT file_id, names FROM graph_nodes WHERE file_id IN ({marks})", ids
            )
        }
        dirty = {
            int(r[0])
            for r in self._q(f"SELECT file_id FROM graph_dirty WHERE file_id IN ({marks})", ids)
        }
        out: dict[int, StoredFile] = {}
        for r in self._q(
            "SELECT f.id, r.name, r.kind, f.path, f.doc_id, f.title, f.aliases, f.tags, "
            "f.frontmatter, f.mtime_ns, f.size, f.content_hash, f.modified, f.parser, "
            "f.warnings, f.indexed_at FROM files f JOIN roots r ON r.id = f.root_id "
            f"WHERE f.id IN ({marks})",
            ids,
        ):
            file_id = int(r[0])
            record = FileRecord(
                root=r[1],
                path=r[3],
                doc_id=r[4],
                title=r[5],
                mtime_ns=int(r[9]),
                size=int(r[10]),
                content_hash=r[11],
                modified=float(r[12]),
                aliases=json.loads(r[6]),
                tags=json.loads(r[7]),
                frontmatter=json.loads(r[8]),
                parser=r[13],
                warnings=json.loads(r[14]),
            )
            mine = chunks[file_id]
            prepared = PreparedFile(record, [c for _, c in mine], links[file_id])
            out[file_id] = StoredFile(
                file_id,
                r[2],
                float(r[15]),
                prepared,
                tuple(rowid for rowid, _ in mine),
                tuple(edges[file_id]),
                tuple(keys[file_id]),
                nodes.get(file_id),
                file_id not in dirty,
            )
        return out

    def import_files(self, files: Sequence[StoredFile]) -> None:
        conn = self._conn
        with self.transaction():
            roots = {name: int(i) for i, name in self._q("SELECT id, name FROM roots")}
            for item in files:
                self._import_file(conn, roots[item.prepared.record.root], item)
            conn.executemany(
                "DELETE FROM graph_dirty WHERE file_id = ?",
                [(f.file_id,) for f in files if f.taken],
            )

    def _import_file(self, conn: Any, root_id: int, item: StoredFile) -> None:
        file_id = item.file_id
        conn.execute(
            "INSERT INTO files(id, root_id, path, doc_id, title, aliases, tags, frontmatter, "
            "mtime_ns, size, content_hash, modified, parser, warnings, indexed_at) "
            "VALUES (?,?,?,?,?,?,?,?,?,?,?,?,?,?,?)",
            (file_id, root_id, *file_values(item.prepared.record, item.indexed_at)),
        )
        insert_file_rows(conn, file_id, item.prepared, item.rowids)
        conn.executemany(
            "INSERT INTO graph_edges(file_id, ordinal, target, target_id, type, line, anchor, "
            "context) VALUES (?,?,?,?,?,?,?,?)",
            [
                (file_id, i, e.target, e.target_id, e.type, e.line, e.anchor, e.context)
                for i, e in enumerate(item.edges)
            ],
        )
        conn.executemany(
            "INSERT OR IGNORE INTO graph_keys(key, file_id) VALUES (?, ?)",
            [(key, file_id) for key in item.keys],
        )
        if item.node is not None:
            conn.execute(
                "INSERT OR REPLACE INTO graph_nodes(file_id, names) VALUES (?, ?)",
                (file_id, item.node),
            )

    def meta_values(self) -> dict[str, str]:
        marks = ",".join("?" * len(INTERNAL_META))
        rows = self._q(f"SELECT key, value FROM meta WHERE key NOT IN ({marks})", INTERNAL_META)
        return {str(k): str(v) for k, v in rows}

    def vector_dimensions(self) -> dict[str, int]:
        rows = self._q("SELECT model, max(length(vector)) / 4 FROM vectors GROUP BY model")
        return {str(m): int(d) for m, d in rows}

    def wipe(self) -> None:
        with self.transaction():
            for table in WIPED:
                self._conn.execute(f"DELETE FROM {table}")


def copy_keeping_vectors(
    source: Path, target: Path, keep: Callable[[list[str]], Iterable[str]]
) -> None:
    """Copy the index file ``source`` to ``target`` (SQLite's online backup: consistent
    while another process writes), then keep the vectors of only the embedding keys that
    ``keep`` picks from all of them, sorted (an index part embedded, as while indexing)."""
    src = sqlite3.connect(source)
    dest = sqlite3.connect(target)
    try:
        src.backup(dest)
        keys = sorted(
            r[0]
            for r in dest.execute("SELECT DISTINCT embed_key FROM chunks WHERE embed_key != ''")
        )
        kept = list(keep(keys))
        with dest:
            dest.execute("CREATE TEMP TABLE keep(key TEXT PRIMARY KEY)")
            dest.executemany("INSERT INTO keep VALUES (?)", [(k,) for k in kept])
            dest.execute("DELETE FROM vectors WHERE key NOT IN (SELECT key FROM keep)")
    finally:
        src.close()
        dest.close()
