"""The portable role in Milvus: files read and written as stored, ids included.

``noteseek migrate`` copies an index between backends through this role
(``store/migrate.py``). An imported file is buffered as the same op a write is (``catalog.py``
applies it: the keyword statistics follow), with the file and chunk ids it had; its edges,
keys and node are one ``graph_write`` in the same transaction, which takes the file in.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from typing import Any

from noteseek.store.errors import WriteRejected
from noteseek.store.milvus import rows, schema
from noteseek.store.milvus.core import meta_row
from noteseek.store.milvus.graph import HASHED, MilvusGraph, _edge_row
from noteseek.store.milvus.vectors import MilvusVectors
from noteseek.store.rows import EdgeRow, StoredFile
from noteseek.types import Chunk, FileRecord, IndexedChunk, Link, PreparedFile

META_PREFIX = "m:"
"""How :meth:`MilvusCatalog.set_meta` values are kept in the ``meta`` collection."""


class MilvusTransfer(MilvusGraph, MilvusVectors):
    """:class:`noteseek.store.base.Portable` over every collection."""

    def file_ids(self) -> list[int]:
        return sorted(int(r["file_id"]) for r in self._scan(schema.FILES, "", ["file_id"]))

    def export_files(self, file_ids: Sequence[int]) -> list[StoredFile]:
        ids = list(file_ids)
        files = self._query_in(schema.FILES, "file_id", ids, [*rows.FILE_FIELDS, "kind"])
        chunk_fields = [*rows.CHUNK_FIELDS, "kw"]
        chunks: dict[int, list[dict[str, Any]]] = {i: [] for i in ids}
        for r in self._visible(self._query_in(schema.CHUNKS, "file_id", ids, chunk_fields)):
            chunks[int(r["file_id"])].append(r)
        edges: dict[int, list[EdgeRow]] = {}
        for r in self._query_in(schema.GRAPH_EDGES, "file_id", ids, ["file_id", "edges"]):
            fid = int(r["file_id"])
            edges[fid] = [_edge_row(fid, e) for e in r["edges"]]
        keys: dict[int, list[str]] = {i: [] for i in ids}
        for r in self._query_in(schema.GRAPH_KEYS, "file_id", ids, ["file_id", "key"]):
            keys[int(r["file_id"])].append(str(r["key"]))
        nodes = {
            int(r["file_id"]): str(r["names"]["n"])
            for r in self._query_in(schema.GRAPH_NODES, "file_id", ids, ["file_id", "names"])
        }
        dirty = {
            int(r["file_id"])
            for r in self._query_in(schema.GRAPH_DIRTY, "file_id", ids, ["file_id"])
        }
        out: dict[int, StoredFile] = {}
        for f in files:
            fid = int(f["file_id"])
            mine = sorted(chunks[fid], key=lambda r: int(r["ordinal"]))
            whole = sorted(k for k in keys[fid] if not k.startswith(HASHED))
            out[fid] = StoredFile(
                fid,
                str(f["kind"]),
                float(f["indexed_at"]),
                PreparedFile(_record(f), [_chunk(c) for c in mine], _links(f)),
                tuple(int(c["rowid"]) for c in mine),
                tuple(edges.get(fid, ())),
                tuple(whole),
                nodes.get(fid),
                fid not in dirty and len(whole) == len(keys[fid]),
            )
        return [out[i] for i in ids if i in out]

    def import_files(self, files: Sequence[StoredFile]) -> None:
        with self.transaction():
            roots = self._roots()
            stats = self._stats()
            avg_file, avg_chunk = rows.averages(stats, self.bm25)
            top = 0
            for item in files:
                prepared, fid = item.prepared, item.file_id
                kind = str(roots[prepared.record.root]["kind"])
                # The generation only has to differ from the file's later ones, which come
                # from the id counter (moved above every id written here).
                file = rows.file_row(prepared, item.indexed_at, fid, fid, kind, avg_file)
                chunks = rows.chunk_rows(prepared, file, 0, avg_chunk)
                for row, rowid in zip(chunks, item.rowids, strict=True):
                    row["rowid"] = rowid
                try:
                    for row in (file, *chunks):
                        rows.check(row)
                except WriteRejected as exc:
                    raise WriteRejected(f"{prepared.record.doc_id} {exc}") from None
                self._ops.append(("file", fid, file, chunks))
                top = max(top, fid, *item.rowids)
            self.write_graph(
                {f.file_id: f.edges for f in files},
                {f.file_id: f.keys for f in files},
                {f.file_id: f.node for f in files if f.node is not None},
                [f.file_id for f in files if f.taken],
            )
            if top >= int(self._meta("next_id") or 1):
                self._put_meta("next_id", str(top + 1))
                # The block this handle holds may lie under the copied ids: new ids come
                # from a block claimed above them (``next_id`` is its floor).
                self._ids = (0, 0)

    def meta_values(self) -> dict[str, str]:
        found = self._scan(schema.META, f'key like "{META_PREFIX}%"', ["key", "value"])
        return {str(r["key"])[len(META_PREFIX) :]: str(r["value"]) for r in found}

    def vector_dimensions(self) -> dict[str, int]:
        return {model: int(found["dim"]) for model, found in self._models().items()}

    def wipe(self) -> None:
        # Only this index's collections: another index's prefix may start with this one's.
        mine = re.compile(
            re.escape(self.prefix) + r"_(vec_[0-9a-f]{12}_\d+|" + "|".join(schema.TABLES) + ")"
        )
        with self._lock:
            for collection in self.client.list_collections():
                if mine.fullmatch(collection):
                    self.client.drop_collection(collection)
            self._loaded.clear()
            self._searching.clear()
            self._create_tables(set())
            self.client.upsert(self._tables[schema.META], [meta_row(schema.SAFE_KEYS, "1")])
            self._safe_keys = True
            self._ids = (0, 0)  # the claimed blocks went with the leases collection
            self._writes += 1


def _record(f: dict[str, Any]) -> FileRecord:
    info = f["info"]
    return FileRecord(
        root=str(f["root"]),
        path=str(f["path"]),
        doc_id=str(f["doc_id"]),
        title=str(f["title"]),
        mtime_ns=int(f["mtime_ns"]),
        size=int(f["size"]),
        content_hash=str(f["content_hash"]),
        modified=float(f["modified"]),
        aliases=list(info.get("aliases", [])),
        tags=list(info.get("tags", [])),
        frontmatter=dict(info.get("frontmatter", {})),
        parser=str(info.get("parser", "")),
        warnings=list(info.get("warnings", [])),
    )


def _chunk(c: dict[str, Any]) -> IndexedChunk:
    heading = str(c["heading"])
    chunk = Chunk(
        str(c["chunk_id"]),
        int(c["ordinal"]),
        tuple(heading.split(rows.HEADING_SEP)) if heading else (),
        int(c["start_line"]),
        int(c["end_line"]),
        str(c["text"]),
        "",
        "",
        str(c["content_hash"]),
    )
    kw = [str(v) for v in c["kw"]]
    fields = (kw[0], kw[1], kw[2], kw[3], kw[4], kw[5])
    return IndexedChunk(chunk, fields, str(c["embed_key"]))


def _links(f: dict[str, Any]) -> list[Link]:
    return [
        Link(str(target), kind, int(line), anchor, display, str(context))
        for target, kind, line, anchor, display, context in f["info"].get("links", [])
    ]
