"""The embedded store: one SQLite file in WAL mode, FTS5 tables of analyzed terms, vectors.

One module per role (``catalog``, ``chunks``, ``keyword``, ``vectors``, ``graph``,
``transfer``) over one connection (``core``); :class:`SQLiteStore` joins them into the handle
that ``store.factory`` opens.
"""

from __future__ import annotations

from noteseek.store.sqlite.catalog import SQLiteCatalog
from noteseek.store.sqlite.chunks import SQLiteChunks
from noteseek.store.sqlite.errors import translate_errors
from noteseek.store.sqlite.graph import SQLiteGraph
from noteseek.store.sqlite.keyword import SQLiteKeywordIndex
from noteseek.store.sqlite.transfer import SQLiteTransfer

INDEX_SUFFIXES = ("-wal", "-shm", "")
"""The files of one index: ``index.db`` and its WAL files, in the order they are deleted (the
WAL files first, so no process opening the index meanwhile pairs the old WAL with a new
database file)."""


@translate_errors
class SQLiteStore(SQLiteCatalog, SQLiteChunks, SQLiteKeywordIndex, SQLiteTransfer, SQLiteGraph):
    """A :class:`noteseek.store.base.Store` in one SQLite file.

    One connection per instance; calls are serialised by a lock so the instance may be shared
    between threads. Other processes can open the same file concurrently (WAL: readers never
    block the writer). Every public method raises store errors, never ``sqlite3`` ones
    (``errors.py``); a damaged file is recorded in the index folder when any call meets it.
    """
