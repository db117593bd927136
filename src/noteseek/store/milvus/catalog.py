"""The catalog role in Milvus: meta values, roots, files, problems, runs and statistics.

A file's write buffers its file row and chunk rows (``rows.py``); the commit applies a batch
of them together (:meth:`MilvusCatalog._apply`): the chunk upserts in one call, the file rows
in one, the old chunks' deletion in one, and the keyword statistics (term document
frequencies over chunks and files, row and token counts) updated once for the whole batch.
"""

from __future__ import annotations

import json
import time
from collections import Counter
from collections.abc import Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from noteseek.sources.base import printable_path as _text
from noteseek.store.errors import WriteRejected
from noteseek.store.milvus import matching, rows, schema
from noteseek.store.milvus.core import MilvusCore, Op, in_list, lit, meta_row
from noteseek.store.milvus.leases import LeaseHeld
from noteseek.store.rows import FileRow, FileState, Problem
from noteseek.types import PreparedFile

RUNS_KEPT = 20


@dataclass
class PendingChunks:
    """The chunk ids of the files a transaction's buffered writes rewrote or deleted."""

    done: int = 0
    """How many buffered ops were read."""
    by_chunk: dict[str, int] = field(default_factory=dict)
    by_file: dict[int, list[str]] = field(default_factory=dict)
    """Each written ([] deleted) file's chunk ids: its committed ones no longer count."""
    cleared: bool = False
    """Every committed file was deleted (``clear``)."""

    def write(self, file_id: int, chunk_ids: list[str]) -> None:
        for chunk_id in self.by_file.get(file_id, []):
            if self.by_chunk.get(chunk_id) == file_id:
                del self.by_chunk[chunk_id]
        self.by_file[file_id] = chunk_ids
        for chunk_id in chunk_ids:
            self.by_chunk[chunk_id] = file_id


class MilvusCatalog(MilvusCore):
    """:class:`noteseek.store.base.Catalog` over the ``meta``, ``files`` and ``problems``
    collections."""

    _pending_chunks: PendingChunks | None = None

    # -- manifest and meta --------------------------------------------------------------------

    def manifest(self) -> dict[str, Any]:
        return dict(self._meta_json("manifest", {}))

    def set_manifest(self, manifest: Mapping[str, Any]) -> None:
        self._put_meta("manifest", json.dumps(manifest, sort_keys=True))

    def meta(self, key: str) -> str | None:
        return self._meta("m:" + key)

    def set_meta(self, key: str, value: str) -> None:
        self._put_meta("m:" + key, value)

    # -- roots --------------------------------------------------------------------------------

    def _roots(self) -> dict[str, dict[str, Any]]:
        """Root name -> its row (``root:NAME`` in meta: each root's writer writes its own)."""
        return {n: json.loads(v) for n, v in self._meta_prefix("root:").items()}

    def roots(self) -> dict[str, str]:
        return {n: str(r["path"]) for n, r in sorted(self._roots().items())}

    def root_kinds(self) -> dict[str, str]:
        return {n: str(r["kind"]) for n, r in sorted(self._roots().items())}

    def root_hosts(self) -> dict[str, str]:
        """Root name -> the machine that added it (writers on several machines share one
        index in Milvus: each indexes the roots it added, not another machine's folders)."""
        return {n: str(r.get("host", "")) for n, r in sorted(self._roots().items())}

    def ensure_root(self, name: str, path: str, kind: str = "files") -> int:
        self._require_root(name)
        with self.transaction():
            roots = self._roots()
            found = roots.get(name)
            if found and found["path"] == path and found["kind"] == kind:
                return int(found["id"])
            if found:
                # The root now points elsewhere (or another kind of source): its files go.
                for file_id in self._root_file_ids(name):
                    self._ops.append(("file", file_id, None, None))
                root_id = int(found["id"])
            else:
                root_id = self._new_ids(1)
            row = {"id": root_id, "path": path, "kind": kind, "host": self.leases.info["host"]}
            self._put_meta("root:" + name, json.dumps(row, sort_keys=True))
            return root_id

    def remove_root(self, name: str) -> None:
        self._require_root(name)
        with self.transaction():
            if name not in self._roots():
                raise KeyError(f"unknown root {name!r}")
            # File by file, as the indexer drops a deleted file: the commit takes its chunks'
            # terms out of the keyword statistics and marks it in the graph.
            for file_id in sorted(self._root_file_ids(name)):
                self.delete_file(file_id)
            self.clear_problems(name)
            self._put_meta("root:" + name, None)
            self._put_meta("stats:" + name, None)  # after the commit zeroes it: no row left

    def _root_file_ids(self, name: str) -> set[int]:
        ids = {
            int(r["file_id"]) for r in self._scan(schema.FILES, f"root == {lit(name)}", ["file_id"])
        }
        for op in self._ops:
            if op[0] == "file" and op[2] is not None and op[2]["root"] == name:
                ids.add(op[1])
        return ids

    # -- files --------------------------------------------------------------------------------

    def write_file(self, prepared: PreparedFile, indexed_at: float, file_id: int | None) -> int:
        """Buffer one file's rows (file row and chunks under a new generation)."""
        with self.transaction():
            self._require_root(prepared.record.root)
            root = self._roots().get(prepared.record.root)
            if root is None:
                raise KeyError(f"unknown root {prepared.record.root!r}")
            chunk_ids = [c.chunk.chunk_id for c in prepared.chunks]
            self._check_chunk_ids(chunk_ids, file_id)
            stats = self._stats()
            fid = file_id if file_id is not None else self._new_ids(1)
            first = self._new_ids(len(prepared.chunks) + 1)
            avg_file, avg_chunk = rows.averages(stats, self.bm25)
            file = rows.file_row(prepared, indexed_at, fid, first, str(root["kind"]), avg_file)
            chunks = rows.chunk_rows(prepared, file, first + 1, avg_chunk)
            for row in (file, *chunks):
                rows.check(row)
            self._ops.append(("file", fid, file, chunks))
            return fid

    def _pending(self) -> PendingChunks:
        """The chunk ids the buffered writes leave (read on from where it was last read)."""
        if self._pending_chunks is None or self._pending_chunks.done > len(self._ops):
            self._pending_chunks = PendingChunks()
        pending = self._pending_chunks
        for op in self._ops[pending.done :]:
            if op[0] == "file":
                pending.write(op[1], [c["chunk_id"] for c in op[3] or ()])
            elif op[0] == "clear":
                pending.by_chunk, pending.by_file, pending.cleared = {}, {}, True
        pending.done = len(self._ops)
        return pending

    def _rolled_back(self) -> None:
        self._pending_chunks = None

    def _commit(self, ops: list[Op]) -> None:
        self._pending_chunks = None
        super()._commit(ops)

    def _check_chunk_ids(self, chunk_ids: list[str], file_id: int | None) -> None:
        """Chunk ids are unique over the index (as the SQLite schema's constraint): taken by
        another file as the buffered writes leave it, or by a committed file they keep."""
        if len(set(chunk_ids)) != len(chunk_ids):
            raise WriteRejected("could not be stored: two chunks share one chunk id")
        pending = self._pending()
        clash = [c for c in chunk_ids if pending.by_chunk.get(c, file_id) != file_id]
        if not clash and not pending.cleared:
            stored = self._visible(
                self._query_in(schema.CHUNKS, "chunk_id", chunk_ids, ["chunk_id", "file_id", "gen"])
            )
            clash = [
                r["chunk_id"]
                for r in stored
                if int(r["file_id"]) != file_id and int(r["file_id"]) not in pending.by_file
            ]
        if clash:
            raise WriteRejected(f"could not be stored: chunk id {clash[0]!r} is taken")

    def update_file_stat(self, file_id: int, mtime_ns: int, size: int) -> None:
        with self.transaction():
            self._ops.append(("stat", file_id, mtime_ns, size))

    def delete_file(self, file_id: int) -> None:
        with self.transaction():
            self._ops.append(("file", file_id, None, None))

    def clear(self) -> None:
        """Drop every indexed document and problem; vectors, roots and meta stay. Refused
        while another writer holds a root's lease (its writes would be dropped)."""
        for holder in self.leases.holders("root"):
            if holder.token != self.leases.token:
                raise LeaseHeld(holder.resource, holder)
        with self.transaction():
            self._ops.append(("clear",))

    def file_states(self, root: str) -> dict[str, FileState]:
        found = self._scan(
            schema.FILES,
            f"root == {lit(root)}",
            ["file_id", "path", "mtime_ns", "size", "content_hash"],
        )
        return {
            str(r["path"]): FileState(
                int(r["file_id"]),
                str(r["path"]),
                int(r["mtime_ns"]),
                int(r["size"]),
                str(r["content_hash"]),
            )
            for r in found
        }

    def _file_rows(self, expr: str) -> list[FileRow]:
        roots = self.roots()
        found = [
            rows.to_file_row(r, roots.get(str(r["root"]), ""))
            for r in self._scan(schema.FILES, expr, rows.FILE_FIELDS)
        ]
        return sorted(found, key=lambda f: (f.root, f.path))

    def find_files(self, path: str, root: str | None = None) -> list[FileRow]:
        if root is not None:
            return self._file_rows(f"root == {lit(root)} and path == {lit(path)}")
        return self._file_rows(f"path == {lit(path)} or doc_id == {lit(path)}")

    def file_row(self, file_id: int) -> FileRow | None:
        found = self._file_rows(f"file_id == {int(file_id)}")
        return found[0] if found else None

    def iter_files(self, root: str | None = None) -> Iterator[FileRow]:
        return iter(self._file_rows(f"root == {lit(root)}" if root is not None else ""))

    def document_dates(self, exclude_kinds: Sequence[str] = ()) -> list[float]:
        expr = f"kind not in {in_list(exclude_kinds)}" if exclude_kinds else ""
        return [float(r["modified"]) for r in self._scan(schema.FILES, expr, ["modified"])]

    # -- problems and runs --------------------------------------------------------------------

    def set_problems(
        self,
        root: str,
        path: str,
        problems: Iterable[tuple[str, str]],
        mtime_ns: int = 0,
        size: int = 0,
    ) -> None:
        path = _text(path)
        items = [[sev, _text(reason)] for sev, reason in problems]
        with self.transaction():
            if root not in self._roots():
                raise KeyError(f"unknown root {root!r}")
            pk = f"{root}\x1f{path}"
            row = {
                "pk": pk,
                "root": root,
                "path": path,
                "items": items,
                "mtime_ns": mtime_ns,
                "size": size,
                "at": time.time(),
                "_v": schema.PLACEHOLDER,
            }
            self._ops.append(("problem", pk, row if items else None))

    def _problem_rows(self, expr: str) -> list[dict[str, Any]]:
        fields = ["root", "path", "items", "mtime_ns", "size", "at"]
        return sorted(
            self._scan(schema.PROBLEMS, expr, fields), key=lambda r: (r["root"], r["path"])
        )

    def skipped_states(self, root: str) -> dict[str, tuple[int, int]]:
        return {
            str(r["path"]): (int(r["mtime_ns"]), int(r["size"]))
            for r in self._problem_rows(f"root == {lit(root)}")
            if any(sev == "skipped" for sev, _ in r["items"])
        }

    def problem_paths(self, root: str) -> set[str]:
        return {str(r["path"]) for r in self._problem_rows(f"root == {lit(root)}")}

    def clear_problems(self, root: str, paths: Iterable[str] | None = None) -> None:
        with self.transaction():
            if root not in self._roots():
                raise KeyError(f"unknown root {root!r}")
            if paths is None:
                self._ops.append(("problems_root", root))
            else:
                for path in paths:
                    self._ops.append(("problem", f"{root}\x1f{_text(path)}", None))

    def problems(self) -> list[Problem]:
        return [
            Problem(str(r["root"]), str(r["path"]), sev, reason, float(r["at"]))
            for r in self._problem_rows("")
            for sev, reason in r["items"]
        ]

    def record_run(self, started: float, finished: float, summary: Mapping[str, Any]) -> None:
        """One row per run (``run:<finished>:<writer>``: writers never overwrite each
        other's); the oldest beyond :data:`RUNS_KEPT` go."""
        with self.transaction():
            runs = sorted(self._meta_prefix("run:"))
            run = {"started": started, "finished": finished, **summary}
            key = f"{finished:020.6f}:{self.leases.token}"
            self._put_meta("run:" + key, json.dumps(run, ensure_ascii=False))
            for old in runs[: max(0, len(runs) + 1 - RUNS_KEPT)]:
                self._put_meta("run:" + old, None)
        with self._lock:
            self._seal(1)  # Milvus Lite: what the run wrote is searched from sealed segments

    def last_run(self) -> dict[str, Any] | None:
        runs = self._meta_prefix("run:")
        return dict(json.loads(runs[max(runs)])) if runs else None

    def stats(self) -> dict[str, Any]:
        per_root = []
        for name, path in self.roots().items():
            expr = f"root == {lit(name)}"
            files = self._count(schema.FILES, expr)
            chunks = len(self._visible(list(self._scan(schema.CHUNKS, expr, ["file_id", "gen"]))))
            per_root.append({"name": name, "path": path, "files": files, "chunks": chunks})
        links = sum(int(r["nlinks"]) for r in self._scan(schema.FILES, "nlinks > 0", ["nlinks"]))
        return {
            "roots": per_root,
            "files": sum(r["files"] for r in per_root),
            "chunks": sum(r["chunks"] for r in per_root),
            "links": links,
            "index_bytes": self._bytes(),
        }

    def _bytes(self) -> int:
        """The Milvus Lite folder's size; for a server, the collections' row estimate."""
        if self.config.lite:
            base = Path(self.uri).expanduser()
            if base.is_dir():
                return sum(p.stat().st_size for p in base.rglob("*") if p.is_file())
            return base.stat().st_size if base.exists() else 0
        stats = self._stats()
        return 4 * (stats["ctokens"] + stats["dtokens"]) + 512 * stats["chunks"]

    # -- applying a committed batch -----------------------------------------------------------

    def _apply(self, ops: list[Op]) -> None:
        if not ops:
            return
        touched = list(dict.fromkeys(op[1] for op in ops if op[0] in ("file", "stat")))
        committed = {
            int(r["file_id"]): r for r in self._query_in(schema.FILES, "file_id", touched, ["*"])
        }
        current: dict[int, dict[str, Any] | None] = dict(committed)
        new_chunks: dict[int, list[dict[str, Any]]] = {}
        changed: set[int] = set()
        others: list[Op] = []
        for op in ops:
            if op[0] == "file":
                current[op[1]] = op[2]
                new_chunks[op[1]] = op[3] or []
                changed.add(op[1])
            elif op[0] == "stat":
                row = current.get(op[1])
                if row is not None:
                    current[op[1]] = {**row, "mtime_ns": op[2], "size": op[3]}
                    changed.add(op[1])
            else:
                others.append(op)
        rewritten = set(new_chunks)
        old = self._query_in(
            schema.CHUNKS, "file_id", rewritten, ["rowid", "file_id", "gen", "root", "kw", "ntok"]
        )
        self._update_statistics(committed, current, old, new_chunks)
        self._upsert(
            schema.CHUNKS,
            [c for fid, chunks in new_chunks.items() if current.get(fid) for c in chunks],
        )
        self._delete_ids(
            schema.FILES, [f for f in rewritten if current.get(f) is None and f in committed]
        )
        self._upsert(schema.FILES, [r for f in changed if (r := current.get(f)) is not None])
        self._delete_ids(schema.CHUNKS, [int(r["rowid"]) for r in old])
        self._apply_others(others)

    def _update_statistics(
        self,
        committed: dict[int, dict[str, Any]],
        current: dict[int, dict[str, Any] | None],
        old: list[dict[str, Any]],
        new_chunks: dict[int, list[dict[str, Any]]],
    ) -> None:
        """Term document frequencies and row and token counts, by the batch's difference,
        into the rows of each root written (only that root's lease holder writes them)."""
        cdf: dict[str, Counter[str]] = {}
        ddf: dict[str, Counter[str]] = {}
        stats: dict[str, dict[str, int]] = {}

        def count(row: dict[str, Any], sign: int, doc: bool) -> None:
            root = str(row["root"])
            if root not in stats:
                stats[root] = self._root_stats(root)
            target = (ddf if doc else cdf).setdefault(root, Counter())
            for term in matching.row_terms(matching.tokenize(row["kw"])):
                target[term] += sign
            stats[root]["docs" if doc else "chunks"] += sign
            stats[root]["dtokens" if doc else "ctokens"] += sign * int(row["ntok"])

        for chunk in old:
            before = committed.get(int(chunk["file_id"]))
            if before is not None and int(before["gen"]) == int(chunk["gen"]):
                count(chunk, -1, False)
        for fid, chunks in new_chunks.items():
            if fid in committed:
                count(committed[fid], -1, True)
            if current.get(fid) is not None:
                count(current[fid] or {}, 1, True)
                for chunk in chunks:
                    count(chunk, 1, False)
        for root in stats:
            self._add_terms(root, cdf.get(root, Counter()), ddf.get(root, Counter()))
        self._upsert(schema.META, [meta_row("stats:" + r, json.dumps(v)) for r, v in stats.items()])

    def _add_terms(self, root: str, cdf: Counter[str], ddf: Counter[str]) -> None:
        keys = [
            t
            for t in set(cdf) | set(ddf)
            if (cdf[t] or ddf[t]) and len(t.encode("utf-8", "replace")) <= schema.KEY_MAX
        ]
        pks = {t: f"{len(root)}:{root}:{t}" for t in keys}
        have = {
            str(r["term"]): (int(r["cdf"]), int(r["ddf"]))
            for r in self._query_in(
                schema.TERMS,
                "pk",
                [self._key(schema.TERMS, k) for k in pks.values()],
                ["term", "cdf", "ddf"],
            )
        }
        upserts, deletes = [], []
        for term in keys:
            c0, d0 = have.get(term, (0, 0))
            c, d = max(c0 + cdf[term], 0), max(d0 + ddf[term], 0)
            if c or d:
                row = {"pk": pks[term], "term": term, "root": root, "cdf": c, "ddf": d}
                upserts.append({**row, "_v": schema.PLACEHOLDER})
            elif term in have:
                deletes.append(pks[term])
        self._upsert(schema.TERMS, upserts)
        self._delete_ids(schema.TERMS, deletes)

    def _apply_others(self, ops: list[Op]) -> None:
        metas: dict[str, str | None] = {}
        for op in ops:
            if op[0] == "meta":
                metas[op[1]] = op[2]
            elif op[0] == "problem":
                if op[2] is None:
                    self._delete_ids(schema.PROBLEMS, [op[1]])
                else:
                    self._upsert(schema.PROBLEMS, [op[2]])
            elif op[0] == "problems_root":
                self.client.delete(self._tables[schema.PROBLEMS], filter=f"root == {lit(op[1])}")
            else:
                self._apply_vector_op(op)
        self._upsert(schema.META, [meta_row(k, v) for k, v in metas.items() if v is not None])
        self._delete_ids(schema.META, [k for k, v in metas.items() if v is None])

    def _apply_vector_op(self, op: Op) -> None:
        raise NotImplementedError(op[0])

    def _clear_documents(self) -> None:
        for table, expr in (
            (schema.CHUNKS, "rowid >= 0"),
            (schema.FILES, "file_id >= 0"),
            (schema.PROBLEMS, 'pk != ""'),
            (schema.TERMS, 'pk != ""'),
            (schema.META, 'key like "stats:%"'),
        ):
            self.client.delete(self._tables[table], filter=expr)
