"""Pick and open the store backend for an index folder.

``backend`` names the implementation of ``base.Store``: today only ``sqlite`` (the embedded
default); settings will choose it once a second backend exists. Nothing outside ``store/``
constructs a backend class: it asks here.
"""

from __future__ import annotations

from pathlib import Path

from noteseek.config import Settings
from noteseek.store.base import Store
from noteseek.store.sqlite import SQLiteStore, open_sqlite

INDEX_FILE = "index.db"
DEFAULT_BACKEND = "sqlite"
BACKENDS = ("sqlite",)


def backend_for(settings: Settings) -> str:
    """The backend the settings choose: the one place that decision is made.

    Today every index is the embedded SQLite file; a scale-out backend is chosen here from its
    settings section when it exists (the Milvus issue: an empty ``milvus.uri`` stays SQLite).
    """
    del settings  # nothing to choose between yet
    return DEFAULT_BACKEND


def open_store(
    index_dir: Path, *, readonly: bool = False, backend: str = DEFAULT_BACKEND
) -> tuple[Store, str | None]:
    """Open (or create) the index in ``index_dir``.

    An index the backend cannot use is set aside and a fresh one created (it is a cache of the
    files); the message then says why, for the caller to report. Returns (store, message).
    """
    _check(backend)
    return open_sqlite(index_dir / INDEX_FILE, readonly=readonly)


def open_reader(index_dir: Path, *, backend: str = DEFAULT_BACKEND) -> Store:
    """Another read-only handle on an existing index, for background work (a long scan on
    it holds nothing that the shared handle's searches wait for)."""
    _check(backend)
    return SQLiteStore(index_dir / INDEX_FILE, readonly=True)


def _check(backend: str) -> None:
    if backend not in BACKENDS:
        raise ValueError(f"unknown store backend {backend!r}; known: {', '.join(BACKENDS)}")
