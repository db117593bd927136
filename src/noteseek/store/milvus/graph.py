"""The graph role in Milvus: the resolved link graph and its communities, kept with the index.

Collections (``schema.py``): ``graph_edges`` (a linking file's edges in order, one row),
``graph_keys`` (one row per file and key its links looked up), ``graph_nodes`` (what the graph
knew of each file), ``graph_dirty`` (files written or deleted since) and ``communities``.
``graph/sync.py`` decides what goes in them.

The graph's writes are buffered ops like every other write, and the file writes of the same
transaction mark their files, as SQLite's triggers do (migration 5): a file written (not a
touched stat) or deleted is marked, ``clear`` marks every file, and a deleted file loses its
edges, keys and community. At commit a batch's ops are replayed in order over the committed
state into one :class:`GraphDelta`; its new marks are stored before the file rows flip (a
reader never trusts a graph that lacks a committed file), the rest after. Inside a
transaction, the writing thread reads the graph as its buffered ops leave it (a sync resets
the graph and plans from it in one transaction).
"""

from __future__ import annotations

import hashlib
import json
import threading
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from noteseek.store.milvus import schema
from noteseek.store.milvus.catalog import MilvusCatalog
from noteseek.store.milvus.core import IN_BATCH, Op, in_list
from noteseek.store.rows import EdgeRow, NamedFile

COMMUNITIES_SET = "communities_set"
"""Meta key present once communities were set (an empty set is still a set)."""
GRAPH_OPS = frozenset({"graph_write", "graph_reset", "communities"})
"""The buffered ops of this role (the catalog applies the rest)."""
EVERY_FILE = "file_id >= 0 or file_id < 0"
HASHED = "#sha256:"
SCAN_OVER = 4 * IN_BATCH
"""Reading more files than this by id, scan them all instead."""


def key_value(key: str) -> str:
    """A looked-up key as stored: itself, or a digest when it is too long for the key field
    or not encodable (a lookup hashes the same way, so it still finds it)."""
    try:
        size = len(key.encode("utf-8"))
    except UnicodeEncodeError:
        size = schema.KEY_MAX + 1
    if 0 < size <= schema.KEY_MAX and not key.startswith(HASHED):
        return key
    return HASHED + hashlib.sha256(key.encode("utf-8", "surrogatepass")).hexdigest()


def _edge_json(e: EdgeRow) -> list[Any]:
    return [e.target, e.target_id, e.type, e.line, e.anchor, e.context]


def _edge_row(file_id: int, item: list[Any]) -> EdgeRow:
    target, target_id, kind, line, anchor, context = item
    tid = None if target_id is None else int(target_id)
    return EdgeRow(file_id, str(target), tid, str(kind), int(line), anchor, str(context))


@dataclass
class GraphDelta:
    """What a run of buffered ops does to the committed graph (``MilvusGraph._replay``)."""

    written: dict[int, str] = field(default_factory=dict)
    """Files written by the ops (doc id), existing after them."""
    deleted: set[int] = field(default_factory=set)
    cleared: bool = False
    """Every committed file was deleted (``clear``)."""
    known: dict[int, bool] = field(default_factory=dict)
    """Whether a file id is committed (read once)."""
    marked: set[int] = field(default_factory=set)
    unmarked: set[int] = field(default_factory=set)
    wiped: bool = False
    """Every committed edge and key is gone (``clear``, ``reset_graph``)."""
    edges: dict[int, list[EdgeRow]] = field(default_factory=dict)
    """Files whose edges were replaced (empty: none)."""
    keys: dict[int, set[str]] = field(default_factory=dict)
    nodes_wiped: bool = False
    nodes: dict[int, str | None] = field(default_factory=dict)
    communities: dict[int, int] | None = None
    """The communities set by the ops (replacing the committed ones), if any."""
    uncommunity: set[int] = field(default_factory=set)
    """Files whose committed community went (deleted), when none were set."""

    def mark(self, file_id: int) -> None:
        self.marked.add(file_id)
        self.unmarked.discard(file_id)

    def unmark(self, file_id: int) -> None:
        self.unmarked.add(file_id)
        self.marked.discard(file_id)

    def drop_links(self, file_id: int) -> None:
        self.edges[file_id] = []
        self.keys[file_id] = set()


class MilvusGraph(MilvusCatalog):
    """:class:`noteseek.store.base.GraphStore` over the ``graph_*`` and ``communities``
    collections."""

    _graph_cache: tuple[int, GraphDelta] | None = None
    """The writing thread's buffered ops replayed so far (how many, and their delta)."""
    _dirty_seen: dict[int, int] = {}  # noqa: RUF012 - replaced, never changed in place
    """The marks last read (file id -> the commit that marked it): a sync takes a mark
    only as it read it, not one another writer made since (that file is synced next time)."""

    # -- reading ------------------------------------------------------------------------------

    def graph_dirty(self) -> list[int]:
        with self._lock:
            rows = self._scan(schema.GRAPH_DIRTY, "", ["file_id", "stamp"])
            self._dirty_seen = {int(r["file_id"]): int(r["stamp"]) for r in rows}
            found = set(self._dirty_seen)
            d = self._pending_graph()
            if d is not None:
                found = (found - d.unmarked) | d.marked
            return sorted(found)

    def named_files(self, exclude_kinds: Sequence[str] = ()) -> list[NamedFile]:
        expr = f"kind not in {in_list(exclude_kinds)}" if exclude_kinds else ""
        fields = ["file_id", "root", "path", "doc_id", "title", "aliases"]
        found = [
            NamedFile(
                int(r["file_id"]),
                str(r["root"]),
                str(r["path"]),
                str(r["doc_id"]),
                str(r["title"]),
                tuple(json.loads(r["aliases"] or "[]")),
            )
            for r in self._scan(schema.FILES, expr, fields)
        ]
        return sorted(found, key=lambda f: (f.root, f.path))

    def graph_nodes(self, file_ids: Sequence[int]) -> dict[int, str]:
        with self._lock:
            d = self._pending_graph()
            out: dict[int, str] = {}
            if d is None or not d.nodes_wiped:
                rows = self._query_in(schema.GRAPH_NODES, "file_id", file_ids, ["file_id", "names"])
                out = {int(r["file_id"]): str(r["names"]["n"]) for r in rows}
            if d is not None:
                wanted = set(file_ids)
                for file_id, names in d.nodes.items():
                    if file_id not in wanted:
                        continue
                    if names is None:
                        out.pop(file_id, None)
                    else:
                        out[file_id] = names
            return out

    def graph_sources(self, keys: Iterable[str]) -> set[int]:
        wanted = set(keys)
        with self._lock:
            d = self._pending_graph()
            values = sorted({key_value(k) for k in wanted})
            rows = self._query_in(schema.GRAPH_KEYS, "key", values, ["file_id"])
            out = {int(r["file_id"]) for r in rows}
            if d is not None:
                out = {f for f in out if not d.wiped and f not in d.keys}
                out |= {f for f, found in d.keys.items() if found & wanted}
            return out

    def graph_edges(self) -> list[EdgeRow]:
        with self._lock:
            d = self._pending_graph()
            by_file: dict[int, list[EdgeRow]] = {}
            if d is None or not d.wiped:
                for r in self._scan(schema.GRAPH_EDGES, "", ["file_id", "edges"]):
                    file_id = int(r["file_id"])
                    by_file[file_id] = [_edge_row(file_id, e) for e in r["edges"]]
            if d is not None:
                for file_id, edges in d.edges.items():
                    by_file[file_id] = edges
            doc_ids = self._doc_ids(by_file, d)
            ordered = [
                (doc_ids[f], e.line, i, e)
                for f, edges in by_file.items()
                if f in doc_ids
                for i, e in enumerate(edges)
            ]
            ordered.sort(key=lambda x: (x[0], x[1], x[2]))
            return [x[3] for x in ordered]

    def document_edges(self, file_id: int, doc_id: str) -> list[EdgeRow]:
        # Each file's edges are one row here: backlinks need every row read anyway.
        return [e for e in self.graph_edges() if e.file_id == file_id or e.target == doc_id]

    def _doc_ids(self, file_ids: Iterable[int], d: GraphDelta | None) -> dict[int, str]:
        """The doc id of each of ``file_ids`` that is indexed (as ``d`` leaves it)."""
        ids = list(file_ids)
        fields = ["file_id", "doc_id"]
        if len(ids) > SCAN_OVER:  # most files link: one scan reads fewer batches
            wanted = set(ids)
            rows = [r for r in self._scan(schema.FILES, "", fields) if r["file_id"] in wanted]
        else:
            rows = self._query_in(schema.FILES, "file_id", ids, fields)
        out = {int(r["file_id"]): str(r["doc_id"]) for r in rows}
        if d is not None:
            out = {} if d.cleared else {f: v for f, v in out.items() if f not in d.deleted}
            wanted = set(ids)
            out.update((f, v) for f, v in d.written.items() if f in wanted)
        return out

    def stored_communities(self) -> dict[int, int] | None:
        with self._lock:
            if self._meta(COMMUNITIES_SET) is None:
                return None
            d = self._pending_graph()
            if d is not None and d.communities is not None:
                return dict(d.communities)
            fields = ["file_id", "community"]
            rows = self._scan(schema.COMMUNITIES, "", fields)
            out = {int(r["file_id"]): int(r["community"]) for r in rows}
            if d is not None:
                out = {f: c for f, c in out.items() if f not in d.uncommunity}
            return out

    def community_sizes(self) -> tuple[int, int] | None:
        groups = self.stored_communities()  # Milvus counts no distinct values: read them
        return None if groups is None else (len(set(groups.values())), len(groups))

    # -- writing (buffered) -------------------------------------------------------------------

    def write_graph(
        self,
        edges: Mapping[int, Sequence[EdgeRow]],
        keys: Mapping[int, Iterable[str]],
        nodes: Mapping[int, str | None],
        taken: Sequence[int],
    ) -> None:
        with self.transaction():
            self._ops.append(
                (
                    "graph_write",
                    {int(f): list(e) for f, e in edges.items()},
                    {int(f): set(k) for f, k in keys.items()},
                    {int(f): n for f, n in nodes.items()},
                    [int(f) for f in taken],
                )
            )

    def reset_graph(self) -> None:
        with self.transaction():
            self._ops.append(("graph_reset",))

    def set_communities(self, by_file: Mapping[int, int]) -> None:
        with self.transaction():
            self._ops.append(("communities", {int(f): int(c) for f, c in by_file.items()}))
            self._put_meta(COMMUNITIES_SET, "1")

    # -- the buffered ops replayed ------------------------------------------------------------

    def _pending_graph(self) -> GraphDelta | None:
        """The writing thread's buffered ops as a delta (None outside its transaction)."""
        if not (self._depth > 0 and self._owner == threading.get_ident() and self._ops):
            return None
        done, delta = self._graph_cache or (0, GraphDelta())
        if done > len(self._ops):
            done, delta = 0, GraphDelta()
        self._replay(delta, self._ops[done:])
        self._graph_cache = (len(self._ops), delta)
        return delta

    def _rolled_back(self) -> None:
        super()._rolled_back()
        self._graph_cache = None

    def _replay(self, d: GraphDelta, ops: Sequence[Op]) -> None:
        """Apply ``ops`` to ``d`` in order (SQLite's triggers and cascades, in ops)."""
        for op in ops:
            kind = op[0]
            if kind == "file":
                file_id = int(op[1])
                if op[2] is None:
                    d.deleted.add(file_id)
                    d.written.pop(file_id, None)
                    d.drop_links(file_id)
                    if d.communities is not None:
                        d.communities.pop(file_id, None)
                    else:
                        d.uncommunity.add(file_id)
                else:
                    d.written[file_id] = str(op[2]["doc_id"])
                    d.deleted.discard(file_id)
                d.mark(file_id)
            elif kind == "clear":
                for file_id in self._files_now(d):
                    d.mark(file_id)
                d.cleared, d.wiped, d.communities = True, True, {}
                d.written, d.deleted, d.edges, d.keys = {}, set(), {}, {}
            elif kind == "graph_reset":
                d.wiped, d.nodes_wiped, d.edges, d.keys, d.nodes = True, True, {}, {}, {}
                for file_id in self._files_now(d):
                    d.mark(file_id)
            elif kind == "graph_write":
                _, edges, keys, nodes, taken = op
                live = self._live(d, set(edges) | set(keys))
                for file_id in set(edges) | set(keys):
                    d.drop_links(file_id)
                    if file_id in live:
                        d.edges[file_id] = list(edges.get(file_id, ()))
                        d.keys[file_id] = set(keys.get(file_id, ()))
                d.nodes.update(nodes)
                for file_id in taken:
                    d.unmark(file_id)
            elif kind == "communities":
                live = self._live(d, op[1])
                d.communities = {f: c for f, c in op[1].items() if f in live}
                d.uncommunity = set()

    def _live(self, d: GraphDelta, file_ids: Iterable[int]) -> set[int]:
        """Which of ``file_ids`` are indexed files after the ops replayed into ``d``."""
        ids = set(file_ids)
        unknown = [f for f in ids if f not in d.known]
        if unknown and not d.cleared:
            found = self._file_gens(unknown)
            d.known.update((f, f in found) for f in unknown)
        return {
            f
            for f in ids
            if f in d.written or (not d.cleared and f not in d.deleted and d.known.get(f, False))
        }

    def _files_now(self, d: GraphDelta) -> set[int]:
        """Every indexed file after the ops replayed into ``d``."""
        if d.cleared:
            return set(d.written)
        committed = {int(r["file_id"]) for r in self._scan(schema.FILES, "", ["file_id"])}
        return (committed - d.deleted) | set(d.written)

    # -- applying a committed batch -----------------------------------------------------------

    def _commit(self, ops: list[Op]) -> None:
        self._graph_cache = None
        super()._commit(ops)

    def _apply(self, ops: list[Op]) -> None:
        d = GraphDelta()
        self._replay(d, [op for op in ops if op[0] == "file" or op[0] in GRAPH_OPS])
        self._store_marks(d)
        super()._apply([op for op in ops if op[0] not in GRAPH_OPS])
        self._store_delta(d)

    def _clear_documents(self) -> None:
        d = GraphDelta()
        self._replay(d, [("clear",)])
        self._store_marks(d)
        super()._clear_documents()
        self._store_delta(d)

    def _store_marks(self, d: GraphDelta) -> None:
        """The files marked: stored before their file rows change."""
        place = schema.PLACEHOLDER
        rows = [{"file_id": f, "stamp": self._stamp, "_v": place} for f in sorted(d.marked)]
        self._upsert(schema.GRAPH_DIRTY, rows)

    def _store_delta(self, d: GraphDelta) -> None:
        """Everything else ``d`` changes: unmarked files, edges, keys, nodes, communities."""
        self._unmark(d.unmarked)
        place = schema.PLACEHOLDER
        if d.wiped:
            self.client.delete(self._tables[schema.GRAPH_EDGES], filter=EVERY_FILE)
            self.client.delete(self._tables[schema.GRAPH_KEYS], filter=EVERY_FILE)
        self._delete_ids(schema.GRAPH_EDGES, sorted(f for f, e in d.edges.items() if not e))
        self._upsert(
            schema.GRAPH_EDGES,
            [
                {"file_id": f, "edges": [_edge_json(x) for x in e], "_v": place}
                for f, e in sorted(d.edges.items())
                if e
            ],
        )
        if not d.wiped:
            replaced = sorted(d.keys)
            for start in range(0, len(replaced), IN_BATCH):
                part = in_list(replaced[start : start + IN_BATCH])
                self.client.delete(self._tables[schema.GRAPH_KEYS], filter=f"file_id in {part}")
        self._upsert(
            schema.GRAPH_KEYS,
            [
                {"pk": f"{f}:{value}", "key": value, "file_id": f, "_v": place}
                for f, found in sorted(d.keys.items())
                for value in sorted({key_value(k) for k in found})
            ],
        )
        self._store_nodes(d)
        self._store_communities(d)

    def _unmark(self, file_ids: set[int]) -> None:
        """Take the marks of ``file_ids``, except those made since they were read."""
        seen = self._dirty_seen
        rows = self._query_in(schema.GRAPH_DIRTY, "file_id", file_ids, ["file_id", "stamp"])
        remarked = {
            int(r["file_id"])
            for r in rows
            if seen.get(int(r["file_id"]), int(r["stamp"])) != int(r["stamp"])
        }
        self._delete_ids(schema.GRAPH_DIRTY, sorted(file_ids - remarked))

    def _store_nodes(self, d: GraphDelta) -> None:
        if d.nodes_wiped:
            self.client.delete(self._tables[schema.GRAPH_NODES], filter=EVERY_FILE)
        self._delete_ids(schema.GRAPH_NODES, sorted(f for f, n in d.nodes.items() if n is None))
        self._upsert(
            schema.GRAPH_NODES,
            [
                {"file_id": f, "names": {"n": n}, "_v": schema.PLACEHOLDER}
                for f, n in sorted(d.nodes.items())
                if n is not None
            ],
        )

    def _store_communities(self, d: GraphDelta) -> None:
        if d.communities is None:
            self._delete_ids(schema.COMMUNITIES, sorted(d.uncommunity))
            return
        self.client.delete(self._tables[schema.COMMUNITIES], filter=EVERY_FILE)
        self._upsert(
            schema.COMMUNITIES,
            [
                {"file_id": f, "community": c, "_v": schema.PLACEHOLDER}
                for f, c in sorted(d.communities.items())
            ],
        )
