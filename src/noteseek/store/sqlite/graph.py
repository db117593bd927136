"""The graph role in SQLite: the resolved link graph and its communities, kept with the index.

Tables (migration 5): ``graph_edges`` (a file's edges in order), ``graph_keys`` (the keys its
links looked up), ``graph_nodes`` (what the graph knew of each file), ``graph_dirty`` (files
changed since, filled by triggers on ``files`` in the writing transaction) and
``communities``. ``graph/sync.py`` decides what goes in them.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Mapping, Sequence

from noteseek.store.rows import EdgeRow, NamedFile
from noteseek.store.sqlite.core import SQLiteCore
from noteseek.store.sqlite.sql import IN_BATCH

COMMUNITIES_SET = "communities_set"
"""Meta key present once communities were set (an empty set is still a set)."""


class SQLiteGraph(SQLiteCore):
    """:class:`noteseek.store.base.GraphStore` over the ``graph_*`` and ``communities``
    tables."""

    def graph_dirty(self) -> list[int]:
        return [int(r[0]) for r in self._q("SELECT file_id FROM graph_dirty ORDER BY file_id")]

    def named_files(self, exclude_kinds: Sequence[str] = ()) -> list[NamedFile]:
        marks = ",".join("?" * len(exclude_kinds))
        rows = self._q(
            "SELECT f.id, r.name, f.path, f.doc_id, f.title, f.aliases FROM files f "
            f"JOIN roots r ON r.id = f.root_id WHERE r.kind NOT IN ({marks}) "
            "ORDER BY r.name, f.path",
            tuple(exclude_kinds),
        )
        return [NamedFile(int(r[0]), r[1], r[2], r[3], r[4], tuple(json.loads(r[5]))) for r in rows]

    def graph_nodes(self, file_ids: Sequence[int]) -> dict[int, str]:
        out: dict[int, str] = {}
        ids = list(file_ids)
        for start in range(0, len(ids), IN_BATCH):
            part = ids[start : start + IN_BATCH]
            marks = ",".join("?" * len(part))
            for file_id, names in self._q(
                f"SELECT file_id, names FROM graph_nodes WHERE file_id IN ({marks})", part
            ):
                out[int(file_id)] = str(names)
        return out

    def graph_sources(self, keys: Iterable[str]) -> set[int]:
        out: set[int] = set()
        wanted = sorted(set(keys))
        for start in range(0, len(wanted), IN_BATCH):
            part = wanted[start : start + IN_BATCH]
            marks = ",".join("?" * len(part))
            rows = self._q(f"SELECT DISTINCT file_id FROM graph_keys WHERE key IN ({marks})", part)
            out.update(int(r[0]) for r in rows)
        return out

    def write_graph(
        self,
        edges: Mapping[int, Sequence[EdgeRow]],
        keys: Mapping[int, Iterable[str]],
        nodes: Mapping[int, str | None],
        taken: Sequence[int],
    ) -> None:
        conn = self._conn
        with self.transaction():
            sources = sorted(set(edges) | set(keys))
            conn.executemany("DELETE FROM graph_edges WHERE file_id = ?", [(f,) for f in sources])
            conn.executemany("DELETE FROM graph_keys WHERE file_id = ?", [(f,) for f in sources])
            live = self._existing(sources)
            conn.executemany(
                "INSERT INTO graph_edges(file_id, ordinal, target, target_id, type, line, "
                "anchor, context) VALUES (?,?,?,?,?,?,?,?)",
                [
                    (file_id, i, e.target, e.target_id, e.type, e.line, e.anchor, e.context)
                    for file_id in sorted(edges)
                    if file_id in live
                    for i, e in enumerate(edges[file_id])
                ],
            )
            conn.executemany(
                "INSERT OR IGNORE INTO graph_keys(key, file_id) VALUES (?, ?)",
                [
                    (key, file_id)
                    for file_id in sorted(keys)
                    if file_id in live
                    for key in sorted(set(keys[file_id]))
                ],
            )
            conn.executemany(
                "DELETE FROM graph_nodes WHERE file_id = ?",
                [(f,) for f, names in nodes.items() if names is None],
            )
            conn.executemany(
                "INSERT OR REPLACE INTO graph_nodes(file_id, names) VALUES (?, ?)",
                [(f, names) for f, names in sorted(nodes.items()) if names is not None],
            )
            conn.executemany("DELETE FROM graph_dirty WHERE file_id = ?", [(f,) for f in taken])

    def _existing(self, file_ids: Sequence[int]) -> set[int]:
        """Which of ``file_ids`` are indexed files."""
        out: set[int] = set()
        for start in range(0, len(file_ids), IN_BATCH):
            part = list(file_ids[start : start + IN_BATCH])
            marks = ",".join("?" * len(part))
            rows = self._conn.execute(f"SELECT id FROM files WHERE id IN ({marks})", part)
            out.update(int(r[0]) for r in rows)
        return out

    def reset_graph(self) -> None:
        with self.transaction():
            self._conn.execute("DELETE FROM graph_edges")
            self._conn.execute("DELETE FROM graph_keys")
            self._conn.execute("DELETE FROM graph_nodes")
            self._conn.execute("INSERT OR IGNORE INTO graph_dirty(file_id) SELECT id FROM files")

    def graph_edges(self) -> list[EdgeRow]:
        rows = self._q(
            "SELECT e.file_id, e.target, e.target_id, e.type, e.line, e.anchor, e.context "
            "FROM graph_edges e JOIN files f ON f.id = e.file_id "
            "ORDER BY f.doc_id, e.line, e.ordinal"
        )
        return [EdgeRow(int(r[0]), r[1], r[2], r[3], int(r[4]), r[5], r[6]) for r in rows]

    def document_edges(self, file_id: int, doc_id: str) -> list[EdgeRow]:
        rows = self._q(
            "SELECT e.file_id, e.target, e.target_id, e.type, e.line, e.anchor, e.context "
            "FROM graph_edges e JOIN files f ON f.id = e.file_id "
            "WHERE e.file_id = ? OR e.target = ? ORDER BY f.doc_id, e.line, e.ordinal",
            (file_id, doc_id),
        )
        return [EdgeRow(int(r[0]), r[1], r[2], r[3], int(r[4]), r[5], r[6]) for r in rows]

    def stored_communities(self) -> dict[int, int] | None:
        if not self._q("SELECT 1 FROM meta WHERE key = ?", (COMMUNITIES_SET,)):
            return None
        return {int(f): int(c) for f, c in self._q("SELECT file_id, community FROM communities")}

    def community_sizes(self) -> tuple[int, int] | None:
        if not self._q("SELECT 1 FROM meta WHERE key = ?", (COMMUNITIES_SET,)):
            return None
        groups, files = self._q("SELECT COUNT(DISTINCT community), COUNT(*) FROM communities")[0]
        return int(groups), int(files)

    def set_communities(self, by_file: Mapping[int, int]) -> None:
        with self.transaction():
            self._conn.execute("DELETE FROM communities")
            self._conn.executemany(
                "INSERT INTO communities(file_id, community) SELECT ?, ? "
                "WHERE EXISTS (SELECT 1 FROM files WHERE id = ?)",
                [(f, c, f) for f, c in sorted(by_file.items())],
            )
            self._conn.execute(
                "INSERT OR REPLACE INTO meta(key, value) VALUES (?, '1')", (COMMUNITIES_SET,)
            )
