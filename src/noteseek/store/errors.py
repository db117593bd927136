"""What goes wrong with an index, as the errors every store backend raises (re-exported by
``store.base``), and how code above the store recognises the database errors a store lets
through (:data:`DATABASE_ERRORS`, :func:`is_interrupt`) without importing a backend's driver."""

from __future__ import annotations

import sqlite3


class StoreError(RuntimeError):
    """The index cannot be used as asked. The message names the index folder and says what
    to do; the doors show it as is (unavailable), never as a traceback. ``reason`` is the
    cause alone (SQLite's words), for reports that say what was done about it."""

    transient = False
    """True when the same work may succeed soon unchanged (the index busy or unreachable)."""

    def __init__(self, message: str, reason: str | None = None) -> None:
        super().__init__(message)
        self.reason = reason or message


class IndexCorrupt(StoreError):
    """The index is damaged (or from another schema): it is a cache, so it is rebuilt from
    the files. Damage is recorded in the index folder (``store.folder``) until then."""


class IndexUnwritable(StoreError):
    """The index folder cannot be created or written (read-only, permissions, a file in the
    way). A complete index in a read-only folder is still opened for reading."""


class IndexFull(StoreError):
    """The disk (or quota) holding the index is full; nothing committed is lost."""


class IndexBusy(StoreError):
    """Another process holds the index locked for longer than the store waits."""

    transient = True


class IndexUnavailable(StoreError):
    """The index cannot be reached or opened now (a server down, a file another process
    holds); it may be later, so work on it is tried again."""

    transient = True


class WriterConflict(StoreError):
    """Another writer holds what this write needs (a root of an index several writers
    share): the message names it. A conflict, as another process holding the writer role."""


class WriteRejected(ValueError):
    """The store refused one file's rows (a constraint); the run records it and goes on."""


DATABASE_ERRORS: tuple[type[Exception], ...] = (sqlite3.Error,)
"""What a database may raise past a store's translation into store errors: a result the
store does not map (a damaged file that answers a statement with "no such table", a bug).
Code that reads an index about to be deleted catches these with :class:`StoreError`
(:data:`UNREADABLE`)."""

UNREADABLE: tuple[type[Exception], ...] = (StoreError, *DATABASE_ERRORS)
"""What reading a damaged index may raise: a store error, or one the store let through."""


def is_interrupt(exc: BaseException) -> bool:
    """Whether ``exc`` is a statement the database stopped because its progress handler
    asked it to (``noteseek/deadline.py``: the request's time budget ran out, or a signal),
    not a fault of the index."""
    return isinstance(exc, sqlite3.OperationalError) and "interrupted" in str(exc)
