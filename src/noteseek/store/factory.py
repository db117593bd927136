"""Pick and open the store backend for an index folder."""

from __future__ import annotations

import time
from pathlib import Path

from noteseek.store.base import IndexCorrupt
from noteseek.store.sqlite import SQLiteStore

INDEX_FILE = "index.db"


def open_store(index_dir: Path, *, readonly: bool = False) -> tuple[SQLiteStore, str | None]:
    """Open (or create) the index in ``index_dir``.

    The index is a cache of the files: a file that SQLite cannot read, or that a newer noteseek
    wrote, is moved aside and a fresh index is created. Returns the store and, when that
    happened, a message saying why (the caller reports it; the next run re-indexes).
    """
    path = index_dir / INDEX_FILE
    try:
        return SQLiteStore(path, readonly=readonly), None
    except IndexCorrupt as exc:
        if readonly:
            raise
        aside = path.with_name(f"{INDEX_FILE}.unusable-{int(time.time())}")
        for suffix in ("", "-wal", "-shm"):
            src = Path(str(path) + suffix)
            if src.exists():
                src.replace(Path(str(aside) + suffix))
        return SQLiteStore(path), f"index was unusable ({exc}); moved to {aside.name}, rebuilding"
