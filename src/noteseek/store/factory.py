"""Pick and open the store backend for an index folder.

``backend`` names the implementation of ``base.Store``: today only ``sqlite`` (the embedded
default); settings will choose it once a second backend exists. Nothing outside ``store/``
constructs a backend class: it asks here.
"""

from __future__ import annotations

from pathlib import Path

from noteseek.config import Settings
from noteseek.store import folder as index_folder
from noteseek.store.base import Store
from noteseek.store.sqlite import INDEX_SUFFIXES, SQLiteStore

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
    """Open (or create) the index in ``index_dir``; returns (store, notice).

    An existing index in a folder this process cannot write (a read-only mount, another
    user's folder) is opened read-only: searching works, and the notice says why writing
    will not. An index that cannot be used raises a ``StoreError`` saying why and what to do
    (``IndexCorrupt`` for a damaged one, recorded in the folder for ``index`` and ``rebuild``
    to rebuild from the files).
    """
    _check(backend)
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


def open_reader(index_dir: Path, *, backend: str = DEFAULT_BACKEND) -> Store:
    """Another read-only handle on an existing index, for background work (a long scan on
    it holds nothing that the shared handle's searches wait for)."""
    _check(backend)
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


def remove_index(index_dir: Path, *, backend: str = DEFAULT_BACKEND) -> list[str]:
    """Delete the index's files (a damaged index is rebuilt from the files, never repaired);
    returns the names deleted. The damage record stays: the rebuild clears it when done."""
    _check(backend)
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


def _check(backend: str) -> None:
    if backend not in BACKENDS:
        raise ValueError(f"unknown store backend {backend!r}; known: {', '.join(BACKENDS)}")
