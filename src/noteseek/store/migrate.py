"""One index copied into another store, whatever the two backends (``noteseek migrate``).

Everything goes through the store protocols (``base.py``), so the same copy runs SQLite to
Milvus, Milvus to SQLite, or between two of either: the roots, the manifest and meta values
(the embedding model chosen ...), then the files in batches of :data:`BATCH` (each batch one
transaction in the target: the files with their ids, chunks with their rowids and analyzed
keyword fields, links, the kept graph's edges, keys and nodes, and the vectors of every model
for those chunks, as stored: nothing is parsed or embedded again), then the problems, the
communities and the last run. The keyword statistics are the target's own, kept by its writes
of the same rows, so keyword ranking is the same. Memory stays bounded by a batch: the source
is read a batch of files at a time.

:func:`counts` is what both sides are compared by afterwards.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from noteseek.store.base import Store

BATCH = 256
"""Files per batch (one read of the source, one transaction in the target)."""

Progress = Callable[[int, int, str], None]
"""(files done, files in all, the last file's doc id)."""


def counts(store: Store) -> dict[str, int]:
    """What an index holds, counted the same way for every backend: roots, files, chunks,
    chunks with a vector (of any model), links, kept graph edges, problems."""
    stats = store.stats()
    return {
        "roots": len(store.roots()),
        "files": int(stats["files"]),
        "chunks": int(stats["chunks"]),
        "vectors": sum(store.vector_progress(m)[0] for m in store.vector_models()),
        "links": int(stats["links"]),
        "edges": len(store.graph_edges()),
        "problems": len(store.problems()),
    }


def is_empty(store: Store) -> bool:
    """Whether ``store`` holds no roots, files or vectors (a migration may write into it)."""
    return not store.roots() and not store.file_ids() and not store.vector_models()


def copy_index(
    source: Store, target: Store, *, batch: int = BATCH, progress: Progress | None = None
) -> None:
    """Copy everything ``source`` holds into ``target`` (empty: see :func:`is_empty`).

    ``source`` is only read. Each batch is committed on its own: an interrupted copy leaves a
    target holding part of the files, which a new copy replaces.
    """
    kinds = source.root_kinds()
    for name, path in source.roots().items():
        target.ensure_root(name, path, kinds.get(name, "files"))
    with target.transaction():
        target.set_manifest(source.manifest())
        for key, value in sorted(source.meta_values().items()):
            target.set_meta(key, value)
    models = sorted(source.vector_models())
    ids = source.file_ids()
    for start in range(0, len(ids), batch):
        files = source.export_files(ids[start : start + batch])
        rowids = [r for f in files for r in f.rowids]
        with target.transaction():
            target.import_files(files)
            for model in models:
                vectors = {key: blob for _, key, blob in source.chunk_vectors(model, rowids)}
                target.put_vectors(model, sorted(vectors.items()))
        if progress is not None and files:
            progress(min(start + batch, len(ids)), len(ids), files[-1].prepared.record.doc_id)
    _copy_problems(source, target)
    communities = source.stored_communities()
    if communities is not None:
        target.set_communities(communities)
    last = source.last_run()
    if last is not None:
        summary: dict[str, Any] = dict(last)
        target.record_run(float(summary.pop("started")), float(summary.pop("finished")), summary)


def _copy_problems(source: Store, target: Store) -> None:
    by_path: dict[tuple[str, str], list[tuple[str, str]]] = {}
    for p in source.problems():
        by_path.setdefault((p.root, p.path), []).append((p.severity, p.reason))
    skipped = {root: source.skipped_states(root) for root in {r for r, _ in by_path}}
    with target.transaction():
        for (root, path), items in sorted(by_path.items()):
            mtime_ns, size = skipped[root].get(path, (0, 0))
            target.set_problems(root, path, items, mtime_ns, size)
