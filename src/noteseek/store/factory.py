"""Pick the store backend for an index: the one place that decision is made.

:func:`backend_for` turns the settings into a :class:`~noteseek.store.backend.Backend` (the
embedded SQLite index in the index folder, or Milvus at ``milvus.uri``), which the engine asks
everything else of: opening the index, its presence, its removal, its description, how
writers share it. Nothing outside ``store/`` constructs a backend or asks which one it has.
The Milvus package is imported only when Milvus is used, so the embedded index never loads
the client.

:func:`open_store`, :func:`open_reader` and :func:`remove_index` are the embedded index in a
folder, for tools and tests that hold a folder rather than settings.
"""

from __future__ import annotations

from pathlib import Path

from noteseek.config import Settings
from noteseek.store import folder as index_folder
from noteseek.store.backend import INDEX_FILE, Backend, MilvusBackend, SQLiteBackend
from noteseek.store.base import Store

__all__ = [
    "INDEX_FILE",
    "Backend",
    "backend_for",
    "damage",
    "embedded_backend",
    "index_file",
    "mark_damaged",
    "milvus_backend",
    "open_reader",
    "open_store",
    "remove_index",
]


def backend_for(settings: Settings, index_dir: Path) -> Backend:
    """The backend the settings choose for the index folder ``index_dir``.

    An empty ``milvus.uri`` is the embedded SQLite index in ``index_dir``; any other is Milvus
    at that URI (the folder then keeps only the writer's lock and the damage records).
    """
    if not settings.milvus.enabled:
        return SQLiteBackend(index_dir)
    return milvus_backend(settings, settings.milvus.uri)


def embedded_backend(index_dir: Path) -> SQLiteBackend:
    """The embedded SQLite index in the folder ``index_dir``."""
    return SQLiteBackend(index_dir)


def milvus_backend(settings: Settings, uri: str, prefix: str | None = None) -> Backend:
    """Milvus at ``uri`` with the ``[milvus]`` settings' token, database and timeout; the
    collection prefix is ``prefix``, else ``milvus.collection`` (``migrate --to`` names
    another index than the configured one this way)."""
    from noteseek.store.milvus.core import MilvusConfig

    milvus = settings.milvus
    return MilvusBackend(
        MilvusConfig(
            uri=uri,
            token=milvus.token.get_secret_value() if milvus.token else "",
            db_name=milvus.db_name,
            prefix=milvus.collection if prefix is None else prefix,
            timeout=milvus.timeout,
        )
    )


def open_store(index_dir: Path, *, readonly: bool = False) -> tuple[Store, str | None]:
    """Open (or create) the embedded index in ``index_dir``: see :meth:`SQLiteBackend.open`."""
    return SQLiteBackend(index_dir).open(readonly=readonly)


def open_reader(index_dir: Path) -> Store:
    """Another read-only handle on the embedded index in ``index_dir``."""
    return SQLiteBackend(index_dir).reader()


def remove_index(index_dir: Path) -> list[str]:
    """Delete the embedded index's files in ``index_dir``; returns the names deleted."""
    return SQLiteBackend(index_dir).remove()


def index_file(index_dir: Path) -> index_folder.FileIdentity | None:
    """The identity of the index's file (None when there is none): it changes when the index
    is deleted and created again, which tells other handles to open it again."""
    return index_folder.identity(index_dir / INDEX_FILE)


def damage(index_dir: Path) -> str | None:
    """Why the index in ``index_dir`` is damaged, as recorded by any process; None if not."""
    return index_folder.damage(index_dir, index_file(index_dir))


def mark_damaged(index_dir: Path, reason: str) -> None:
    """Record the index's current file as damaged (or as being rebuilt), for every process."""
    index_folder.mark_damaged(index_dir, reason, index_file(index_dir))
