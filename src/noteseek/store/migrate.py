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

:func:`counts` is what both sides are compared by afterwards. :func:`target` turns what the
user gave as ``--to`` into the backend it names, by one rule:

* ``http://...`` or ``https://...``: a Milvus Server or Zilliz Cloud (``milvus.token`` and
  ``milvus.db_name`` apply; the collection prefix is ``milvus.collection`` unless given);
* ``milvus:PATH``, or any path ending in ``.db``: a Milvus Lite file;
* ``sqlite:FOLDER``, or any other path: the embedded SQLite index in that index folder.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

from noteseek.config import Settings
from noteseek.store.backend import INDEX_FILE, Backend
from noteseek.store.base import Store
from noteseek.store.factory import embedded_backend, milvus_backend

BATCH = 256
"""Files per batch (one read of the source, one transaction in the target)."""

Progress = Callable[[int, int, str], None]
"""(files done, files in all, the last file's doc id)."""

SCHEMES = ("http://", "https://")


class MigrateError(ValueError):
    """The migration cannot be done as asked (a bad target, a non-empty one, the source)."""


def target(text: str, settings: Settings, collection: str | None = None) -> Backend:
    """The backend ``--to`` names (see the module's rule); ``collection`` is the Milvus
    collection prefix (default ``milvus.collection``). Raises :class:`MigrateError` saying
    what to give instead."""
    given = text.strip()
    if not given:
        raise MigrateError("--to is empty: give a Milvus URI, a Milvus Lite .db file or a folder")
    low = given.lower()
    if low.startswith("sqlite:"):
        return _sqlite(given[len("sqlite:") :], given, collection)
    if low.startswith("milvus:"):
        path = given[len("milvus:") :]
        if not path.endswith(".db"):
            raise MigrateError(f"--to {given}: a Milvus Lite file's name ends in .db")
        return _milvus(str(_absolute(path)), settings, collection)
    if "://" in given:
        if not low.startswith(SCHEMES):
            from noteseek.store.milvus.errors import redact

            raise MigrateError(
                f"--to {redact(given)}: a Milvus Server URI starts with http:// or https://"
            )
        return _milvus(given, settings, collection)
    if given.endswith(".db"):
        return _milvus(str(_absolute(given)), settings, collection)
    return _sqlite(given, given, collection)


def _sqlite(path: str, given: str, collection: str | None) -> Backend:
    if not path.strip():
        raise MigrateError(f"--to {given}: give the index folder after sqlite:")
    if collection is not None:
        raise MigrateError("--collection names a Milvus collection prefix; the target is SQLite")
    folder = _absolute(path)
    if folder.name.endswith(".db") or folder.is_file():
        raise MigrateError(
            f"--to {given}: sqlite: takes the index folder (the one that holds {INDEX_FILE}), "
            "not a file"
        )
    return embedded_backend(folder)


def _milvus(uri: str, settings: Settings, collection: str | None) -> Backend:
    from noteseek.config.milvus import MilvusSettings

    prefix = None
    if collection is not None:
        try:
            prefix = MilvusSettings(collection=collection).collection
        except ValueError as exc:
            raise MigrateError(f"--collection {collection!r}: {_first_error(exc)}") from None
    return milvus_backend(settings, uri, prefix)


def _first_error(exc: ValueError) -> str:
    errors = getattr(exc, "errors", None)
    if callable(errors):
        found = errors()
        if found:
            return str(found[0].get("msg", exc))
    return str(exc)


def _absolute(path: str) -> Path:
    return Path(path).expanduser().resolve()


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
