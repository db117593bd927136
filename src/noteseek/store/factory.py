"""Pick and open the store backend for an index folder.

A backend is ``"sqlite"`` (the embedded default: one file in the index folder) or a
:class:`MilvusConfig` (the whole index in Milvus: Lite, Server or Zilliz Cloud by its URI),
chosen from the settings by :func:`backend_for`. Nothing outside ``store/`` constructs a
backend class: it asks here. The Milvus package is imported only when Milvus is chosen, so
the embedded index never loads the client.
"""

from __future__ import annotations

import socket
from collections.abc import Iterable
from contextlib import AbstractContextManager, nullcontext
from pathlib import Path
from typing import TYPE_CHECKING, Any, cast

from noteseek.config import Settings
from noteseek.store import folder as index_folder
from noteseek.store.base import Store, StoreError
from noteseek.store.sqlite import INDEX_SUFFIXES, SQLiteStore

if TYPE_CHECKING:
    from noteseek.store.milvus.core import MilvusConfig

INDEX_FILE = "index.db"
DEFAULT_BACKEND = "sqlite"
BACKENDS = ("sqlite", "milvus")
GRAPH_WAIT = 300.0
"""Seconds a writer waits for another one's link graph update (a large one takes minutes)."""


def backend_for(settings: Settings) -> str | MilvusConfig:
    """The backend the settings choose: the one place that decision is made.

    An empty ``milvus.uri`` is the embedded SQLite index; any other is Milvus at that URI.
    """
    milvus = settings.milvus
    if not milvus.enabled:
        return DEFAULT_BACKEND
    from noteseek.store.milvus.core import MilvusConfig

    return MilvusConfig(
        uri=milvus.uri,
        token=milvus.token.get_secret_value() if milvus.token else "",
        db_name=milvus.db_name,
        prefix=milvus.collection,
        timeout=milvus.timeout,
    )


def describe(backend: str | MilvusConfig, store: Store | None = None) -> dict[str, Any]:
    """What ``status`` shows of a backend: its name and where it is (no secrets); with the
    opened ``store`` of a Milvus backend, its server version and rows per collection."""
    if isinstance(backend, str):
        return {"backend": backend}
    from noteseek.store.milvus import MilvusStore, redact

    kind = "milvus-lite" if backend.lite else "milvus"
    out: dict[str, Any] = {
        "backend": kind,
        "uri": redact(backend.uri),
        "collection": backend.prefix,
    }
    if isinstance(store, MilvusStore):
        out.update(store.details())
        out["leases"] = store.lease_holders()
    return out


def hold_roots(store: Store, names: Iterable[str]) -> dict[str, StoreError]:
    """Take the leases of the roots a write is about to touch, for as long as the handle
    stays open: several writers share a Milvus index root by root (``store/milvus/leases.py``).
    Returns the roots another writer holds, each with the error naming that writer. The
    embedded index has one writer, guarded by the index folder's lock: nothing to take."""
    hold = getattr(store, "hold_roots", None)
    busy: dict[str, StoreError] = {}
    if hold is not None:
        for name in names:
            try:
                hold([name])
            except StoreError as exc:
                busy[name] = exc
    return busy


def writing_graph(store: Store) -> AbstractContextManager[None]:
    """Hold the right to bring the kept link graph up to date (one writer at a time in a
    shared Milvus index; waits up to :data:`GRAPH_WAIT` seconds for another writer's)."""
    writing = getattr(store, "writing_graph", None)
    return nullcontext() if writing is None else cast(Any, writing(GRAPH_WAIT))


def foreign_roots(store: Store) -> set[str]:
    """The roots of a shared (Milvus) index that another machine added: its folders, which a
    writer here neither indexes nor watches unless configured to."""
    hosts = getattr(store, "root_hosts", None)
    if hosts is None:
        return set()
    here = socket.gethostname()
    return {name for name, host in hosts().items() if host and host != here}


def _milvus(backend: str | MilvusConfig, readonly: bool) -> Store | None:
    if isinstance(backend, str):
        return None
    from noteseek.store.milvus import MilvusStore

    store: Store = MilvusStore(backend, readonly=readonly)
    return store


def open_store(
    index_dir: Path, *, readonly: bool = False, backend: str | MilvusConfig = DEFAULT_BACKEND
) -> tuple[Store, str | None]:
    """Open (or create) the index in ``index_dir``; returns (store, notice).

    An existing index in a folder this process cannot write (a read-only mount, another
    user's folder) is opened read-only: searching works, and the notice says why writing
    will not. An index that cannot be used raises a ``StoreError`` saying why and what to do
    (``IndexCorrupt`` for a damaged one, recorded in the folder for ``index`` and ``rebuild``
    to rebuild from the files).
    """
    _check(backend)
    milvus = _milvus(backend, readonly)
    if milvus is not None:
        return milvus, None
    path = index_dir / INDEX_FILE
    if (
        not readonly
        and path.exists()
        and not (index_folder.writable(index_dir) and index_folder.writable(path))
    ):
        notice = (
            f"the index folder {index_dir} is not writable: the index is open read-only "
            "(searching works; indexing needs a writable folder)"
        )
        return SQLiteStore(path, readonly=True), notice
    return SQLiteStore(path, readonly=readonly), None


def open_reader(index_dir: Path, *, backend: str | MilvusConfig = DEFAULT_BACKEND) -> Store:
    """Another read-only handle on an existing index, for background work (a long scan on
    it holds nothing that the shared handle's searches wait for)."""
    _check(backend)
    milvus = _milvus(backend, True)
    if milvus is not None:
        return milvus
    return SQLiteStore(index_dir / INDEX_FILE, readonly=True)


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


def index_present(index_dir: Path, backend: str | MilvusConfig = DEFAULT_BACKEND) -> bool:
    """Whether there is an index to open (a Milvus index is created on first use)."""
    return not isinstance(backend, str) or (index_dir / INDEX_FILE).exists()


def remove_index(index_dir: Path, *, backend: str | MilvusConfig = DEFAULT_BACKEND) -> list[str]:
    """Delete the index's files (a damaged index is rebuilt from the files, never repaired);
    returns the names deleted. The damage record stays: the rebuild clears it when done.
    A Milvus index is never damaged in this sense: it is cleared and written again."""
    _check(backend)
    if not isinstance(backend, str):
        return []
    removed = []
    for suffix in INDEX_SUFFIXES:
        target = index_dir / f"{INDEX_FILE}{suffix}"
        try:
            target.unlink()
        except FileNotFoundError:
            continue
        except OSError as exc:
            raise index_folder.folder_error(index_dir, exc) from None
        removed.append(target.name)
    return removed


def _check(backend: str | MilvusConfig) -> None:
    if isinstance(backend, str) and backend not in BACKENDS[:1]:
        raise ValueError(f"unknown store backend {backend!r}; known: {', '.join(BACKENDS)}")
