"""The embedded store: one SQLite file in WAL mode, FTS5 tables of analyzed terms, vectors.

One module per role (``catalog``, ``chunks``, ``keyword``, ``vectors``) over one connection
(``core``); :class:`SQLiteStore` joins them into the handle that ``store.factory`` opens.
"""

from __future__ import annotations

import time
from pathlib import Path

from noteseek.store.base import IndexCorrupt
from noteseek.store.sqlite.catalog import SQLiteCatalog
from noteseek.store.sqlite.chunks import SQLiteChunks
from noteseek.store.sqlite.keyword import SQLiteKeywordIndex
from noteseek.store.sqlite.vectors import SQLiteVectors


class SQLiteStore(SQLiteCatalog, SQLiteChunks, SQLiteKeywordIndex, SQLiteVectors):
    """A :class:`noteseek.store.base.Store` in one SQLite file.

    One connection per instance; calls are serialised by a lock so the instance may be shared
    between threads. Other processes can open the same file concurrently (WAL: readers never
    block the writer).
    """


def open_sqlite(path: Path, *, readonly: bool = False) -> tuple[SQLiteStore, str | None]:
    """Open (or create) the index file at ``path``.

    The index is a cache of the files: a file that SQLite cannot read, or that a newer noteseek
    wrote, is moved aside and a fresh index is created. Returns the store and, when that
    happened, a message saying why (the caller reports it; the next run re-indexes).
    """
    try:
        return SQLiteStore(path, readonly=readonly), None
    except IndexCorrupt as exc:
        if readonly:
            raise
        aside = path.with_name(f"{path.name}.unusable-{int(time.time())}")
        for suffix in ("", "-wal", "-shm"):
            src = Path(str(path) + suffix)
            if src.exists():
                src.replace(Path(str(aside) + suffix))
        return SQLiteStore(path), f"index was unusable ({exc}); moved to {aside.name}, rebuilding"
