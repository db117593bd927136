"""SQLite's errors as store errors, at the boundary of every public method of the store.

SQLite reports a damaged file only when a statement reaches the bad page, so damage can
surface in any call, long after the index was opened: every public method of
:class:`~noteseek.store.sqlite.SQLiteStore` goes through :func:`translate_errors`, and a
damaged file is recorded in the index folder (``store.folder``) the moment any handle sees it.

=============================== =================== ==========================================
SQLite result code              store error         what the user is told
=============================== =================== ==========================================
CORRUPT, NOTADB, IOERR;         IndexCorrupt        damaged; ``noteseek rebuild``
text that is not UTF-8
FULL                            IndexFull           the disk is full; free space
READONLY, CANTOPEN, PERM, AUTH  IndexUnwritable     the folder cannot be written
BUSY, LOCKED                    IndexBusy           another process holds it; try again
anything else                   (unchanged)         a bug in noteseek: it propagates as is
=============================== =================== ==========================================
"""

from __future__ import annotations

import sqlite3
from pathlib import Path
from typing import Any, TypeVar

from noteseek import deadline
from noteseek.store.boundary import wrap_public_methods
from noteseek.store.errors import IndexBusy, IndexCorrupt, IndexFull, IndexUnwritable, StoreError
from noteseek.store.folder import FileIdentity, damaged_message, full_message, mark_damaged

SQLITE_PERM, SQLITE_BUSY, SQLITE_LOCKED, SQLITE_READONLY, SQLITE_INTERRUPT = 3, 5, 6, 8, 9
SQLITE_IOERR, SQLITE_CORRUPT, SQLITE_FULL, SQLITE_CANTOPEN = 10, 11, 13, 14
SQLITE_AUTH, SQLITE_NOTADB = 23, 26
DAMAGE_CODES = frozenset({SQLITE_IOERR, SQLITE_CORRUPT, SQLITE_NOTADB})
UNWRITABLE_CODES = frozenset({SQLITE_READONLY, SQLITE_CANTOPEN, SQLITE_PERM, SQLITE_AUTH})

C = TypeVar("C", bound=type)


SQLITE_ERRORS = (sqlite3.Error, UnicodeDecodeError)
"""What a call into SQLite raises: its errors, and ``UnicodeDecodeError`` when damaged bytes
reach a text value or SQLite's own message about them."""


def store_error(
    exc: Exception, path: Path, file: FileIdentity | None
) -> StoreError | KeyboardInterrupt | None:
    """``exc`` (one of ``SQLITE_ERRORS``) as the store error it means, or None for a bug.

    Damage is recorded in the index folder on the way (``file`` is the index file the
    connection opened, so the record cannot stick to a file created again later).

    A statement interrupted while no deadline of this thread has passed was stopped by a
    signal: Ctrl-C (or SIGTERM, which the CLI turns into the same) raised KeyboardInterrupt
    inside the progress handler, and ``sqlite3`` swallows a callback's exception and only
    reports "interrupted". It leaves as the KeyboardInterrupt it was, so the command stops as
    an interrupt does (exit 130, the index consistent), not with a traceback.
    """
    code = getattr(exc, "sqlite_errorcode", None)
    if isinstance(code, int) and code & 0xFF == SQLITE_INTERRUPT and not deadline.expired():
        return KeyboardInterrupt()
    folder = path.parent
    if isinstance(exc, UnicodeDecodeError) or str(exc).startswith("Could not decode to UTF-8"):
        # Everything noteseek stores is UTF-8: other bytes are damage (in the text itself, or
        # in the schema that SQLite quotes in its error).
        raw = exc.object if isinstance(exc, UnicodeDecodeError) else str(exc).encode()
        reason = f"text that is not UTF-8: {bytes(raw[:120]).decode('utf-8', 'replace')}"
        mark_damaged(folder, reason, file)
        return IndexCorrupt(damaged_message(folder, reason), reason)
    code = getattr(exc, "sqlite_errorcode", None)
    if not isinstance(code, int):
        return None
    primary = code & 0xFF  # extended codes (SQLITE_IOERR_SHORT_READ ...) keep it in the low byte
    reason = str(exc)
    if primary == SQLITE_IOERR:  # "disk I/O error" alone does not say which
        reason += f" ({getattr(exc, 'sqlite_errorname', 'SQLITE_IOERR')})"
    if primary in DAMAGE_CODES:
        mark_damaged(folder, reason, file)
        return IndexCorrupt(damaged_message(folder, reason), reason)
    if primary == SQLITE_FULL:
        return IndexFull(full_message(folder, reason), reason)
    if primary in UNWRITABLE_CODES:
        return IndexUnwritable(
            f"cannot write the index {path} ({reason}); make its folder writable, or choose "
            "another folder (--index-dir or index.dir)"
        )
    if primary in (SQLITE_BUSY, SQLITE_LOCKED):
        return IndexBusy(
            f"the index in {folder} is locked by another process ({reason}); try again shortly"
        )
    return None


def damage_code(exc: sqlite3.Error) -> bool:
    """Whether SQLite's ``exc`` says the file is damaged (CORRUPT, NOTADB, IOERR)."""
    code = getattr(exc, "sqlite_errorcode", None)
    return isinstance(code, int) and code & 0xFF in DAMAGE_CODES


def raise_mapped(exc: Exception, store: Any) -> None:
    """Raise ``exc`` as what it means for ``store`` (its ``path`` and ``file``): a store error,
    or the interrupt it was. Returns when it is neither (a bug: the caller re-raises it)."""
    mapped = store_error(exc, Path(store.path), store.file)
    if mapped is not None:
        raise mapped from exc


def translate_errors(cls: C) -> C:
    """Wrap every public method of ``cls`` so SQLite errors leave it as store errors.

    The instance gives the path and the file identity (``path``, ``file``).
    """
    return wrap_public_methods(cls, lambda: SQLITE_ERRORS, _raise_mapped)


def _raise_mapped(store: Any, exc: BaseException) -> None:
    if isinstance(exc, Exception):
        raise_mapped(exc, store)
