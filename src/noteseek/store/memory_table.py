"""The SQLite file of a memory folder's table: rows of memories (name, folder, inode, size,
modification time, text key, name skeleton) and of folders (time, last listing, skeleton),
the temporary files seen, and a few values. What the rows mean, and how they are kept right,
is the memory kind's (:mod:`noteseek.sources.memory.table`); this module only stores them.

It is a cache beside the files: written without fsync (``synchronous = OFF``), and a damaged
file of noteseek's is a :class:`MemoryTableError`, on which the caller deletes the file
(:func:`remove_table`) and builds it again.

Anyone who can write the memory folder (a shared or synced folder, a repository's
``.memories/``) can plant things at the table's path, so the file is opened as one that may not
be noteseek's: a link (at the file or at its folder) is never followed, a folder where the
file belongs or a file where the folder belongs never used, and a database noteseek did not
make (its ``application_id``) never changed. Each is a :class:`RefusedTableError`: the caller
works without the table and deletes nothing. A file with other names (hard links) is never
written either: only this name of it is deleted, which leaves the others whole, and the table
built again.
"""

from __future__ import annotations

import contextlib
import functools
import os
import sqlite3
import stat
from collections.abc import Callable, Iterator
from typing import Any

VERSION = 1
APPLICATION_ID = 0x4E534D54
"""``PRAGMA application_id`` of a table noteseek made ("NSMT"): only such a file's tables are
ever dropped. The previous release set none (see :meth:`MemoryTableDB._prepare`)."""

_SCHEMA = """
CREATE TABLE files (
    name TEXT PRIMARY KEY, dir TEXT NOT NULL, ino INTEGER, size INTEGER, mtime_ns INTEGER,
    text_key TEXT, skel TEXT NOT NULL);
CREATE INDEX files_key ON files(text_key);
CREATE INDEX files_skel ON files(skel);
CREATE INDEX files_dir ON files(dir);
CREATE TABLE dirs (
    dir TEXT PRIMARY KEY, parent TEXT, mtime_ns INTEGER NOT NULL, listed_ns INTEGER NOT NULL,
    skel TEXT NOT NULL);
CREATE INDEX dirs_skel ON dirs(skel);
CREATE INDEX dirs_parent ON dirs(parent);
CREATE TABLE temps (path TEXT PRIMARY KEY);
CREATE TABLE meta (key TEXT PRIMARY KEY, value TEXT);
"""

FileStamp = tuple[str, int, int, int]
"""(name, inode, size, modification time in ns) of a memory's row."""


_SIDE_FILES = ("-journal", "-wal", "-shm")
_NOFOLLOW = getattr(os, "O_NOFOLLOW", 0)
_DIRECTORY = getattr(os, "O_DIRECTORY", 0)
_NONBLOCK = getattr(os, "O_NONBLOCK", 0)
_AT = {os.open, os.stat, os.unlink} <= os.supports_dir_fd
"""Whether paths can be taken relative to the folder's descriptor (POSIX), so that the folder
checked is the folder used; elsewhere each path is checked with ``lstat`` before it is used."""


class MemoryTableError(Exception):
    """The table's file cannot be used (damaged, not a database, unwritable)."""


class RefusedTableError(MemoryTableError):
    """What is at the table's path is not a file noteseek may use, nor delete: a link, a folder
    where the file belongs (or a file where its folder belongs), a file with another name, a
    database another program made, or a path noteseek has no permission for."""


_NOT_DAMAGED = {
    sqlite3.SQLITE_BUSY,
    sqlite3.SQLITE_LOCKED,
    sqlite3.SQLITE_PERM,
    sqlite3.SQLITE_READONLY,
    sqlite3.SQLITE_CANTOPEN,
    sqlite3.SQLITE_AUTH,
}
"""Errors that say nothing against the file (another program holds it, no permission): it is
not deleted for them, as it may well be another program's database in use."""


@contextlib.contextmanager
def _errors() -> Iterator[None]:
    try:
        yield
    except sqlite3.Error as exc:
        code = getattr(exc, "sqlite_errorcode", None)
        if code is not None and code & 0xFF in _NOT_DAMAGED:
            raise RefusedTableError(str(exc)) from exc
        raise MemoryTableError(str(exc)) from exc


class MemoryTableDB:
    """One open connection to a memory folder's table file; every method may raise
    :class:`MemoryTableError`."""

    def __init__(self, path: str) -> None:
        """Open the table at ``path``, creating it (and its folder, one level) when missing.
        :class:`RefusedTableError` when what is there must be left alone."""
        pinned = _claim(path)
        with _errors():
            self.conn = sqlite3.connect(path, timeout=5.0)
            try:
                # SQLite opened the path again: a swap since _claim (say, a link put in place
                # of the file or its folder) is caught before anything is written.
                if _identity(path) != pinned:
                    raise RefusedTableError(f"{path} changed while it was being opened")
                self.conn.execute("PRAGMA synchronous = OFF")
                self._prepare(path)
            except BaseException:
                self.conn.close()
                raise

    def _prepare(self, path: str) -> None:
        """Create the tables in a new (empty) file, drop and create again those of another
        version of noteseek's, adopt the previous release's (same schema, no application id);
        refuse any other database."""
        app = self.conn.execute("PRAGMA application_id").fetchone()[0]
        version = self.conn.execute("PRAGMA user_version").fetchone()[0]
        if app == APPLICATION_ID and version == VERSION:
            self.conn.execute("SELECT count(*) FROM dirs").fetchone()
        elif app == APPLICATION_ID or (app == 0 and version == 0 and not self._schema()):
            tables = [t for (t,) in self.conn.execute(_TABLES).fetchall()]
            drops = "".join(f'DROP TABLE IF EXISTS "{t}";' for t in tables)
            self.conn.executescript(
                f"BEGIN; {drops} {_SCHEMA} PRAGMA application_id = {APPLICATION_ID}; "
                f"PRAGMA user_version = {VERSION}; COMMIT;"
            )
        elif app == 0 and version == VERSION and self._schema() == _noteseek_schema():
            self.conn.execute(f"PRAGMA application_id = {APPLICATION_ID}")
        else:
            raise RefusedTableError(
                f"{path} is a database noteseek did not make (application_id {app}, "
                f"user_version {version}); it is left as it is"
            )

    def _schema(self) -> list[tuple[Any, ...]]:
        return [tuple(row) for row in self.conn.execute(_MASTER).fetchall()]

    def close(self) -> None:
        self.conn.close()

    def commit(self) -> None:
        with _errors():
            self.conn.commit()

    # -- memories ----------------------------------------------------------------------------

    def put_file(
        self, name: str, folder: str, stamp: tuple[int, int, int], key: str | None, skel: str
    ) -> None:
        with _errors():
            self.conn.execute(
                "INSERT OR REPLACE INTO files (name, dir, ino, size, mtime_ns, text_key, skel) "
                "VALUES (?, ?, ?, ?, ?, ?, ?)",
                (name, folder, *stamp, key, skel),
            )

    def drop_file(self, name: str) -> None:
        with _errors():
            self.conn.execute("DELETE FROM files WHERE name = ?", (name,))

    def inodes_in(self, folder: str) -> dict[str, int]:
        """name -> inode of the memories directly in ``folder``."""
        with _errors():
            rows = self.conn.execute("SELECT name, ino FROM files WHERE dir = ?", (folder,))
            return {str(name): int(ino) for name, ino in rows.fetchall()}

    def names_with_key(self, key: str) -> list[str]:
        with _errors():
            rows = self.conn.execute(
                "SELECT name FROM files WHERE text_key = ? ORDER BY name", (key,)
            )
            return [str(name) for (name,) in rows.fetchall()]

    def file_like(self, skel: str, name: str) -> str | None:
        """A memory other than ``name`` whose name has the skeleton ``skel``."""
        with _errors():
            row = self.conn.execute(
                "SELECT name FROM files WHERE skel = ? AND name != ? ORDER BY name LIMIT 1",
                (skel, name),
            ).fetchone()
        return None if row is None else str(row[0])

    def stamps_after(self, after: str, limit: int) -> list[FileStamp]:
        """The next ``limit`` rows after the name ``after``, round to the first ones."""
        query = "SELECT name, ino, size, mtime_ns FROM files WHERE name > ? ORDER BY name LIMIT ?"
        with _errors():
            rows = self.conn.execute(query, (after, limit)).fetchall()
            if len(rows) < limit:
                rows += self.conn.execute(query, ("", limit - len(rows))).fetchall()
        return [(str(n), int(i), int(s), int(m)) for n, i, s, m in rows]

    def count(self) -> int:
        with _errors():
            return int(self.conn.execute("SELECT count(*) FROM files").fetchone()[0])

    # -- folders -----------------------------------------------------------------------------

    def dirs(self) -> list[tuple[str, int, int]]:
        """(folder, modification time, time of its last listing) of every folder, in order."""
        with _errors():
            rows = self.conn.execute("SELECT dir, mtime_ns, listed_ns FROM dirs ORDER BY dir")
            return [(str(d), int(m), int(n)) for d, m, n in rows.fetchall()]

    def put_dir(self, folder: str, mtime_ns: int, listed_ns: int, skel: str) -> None:
        parent = None if not folder else folder.rpartition("/")[0]
        with _errors():
            self.conn.execute(
                "INSERT OR REPLACE INTO dirs (dir, parent, mtime_ns, listed_ns, skel) "
                "VALUES (?, ?, ?, ?, ?)",
                (folder, parent, mtime_ns, listed_ns, skel),
            )

    def set_dir_time(self, folder: str, mtime_ns: int, listed_ns: int | None = None) -> bool:
        """Set a folder's time (and the time it was listed); False when it has no row."""
        with _errors():
            if listed_ns is None:
                cursor = self.conn.execute(
                    "UPDATE dirs SET mtime_ns = ? WHERE dir = ?", (mtime_ns, folder)
                )
            else:
                cursor = self.conn.execute(
                    "UPDATE dirs SET mtime_ns = ?, listed_ns = ? WHERE dir = ?",
                    (mtime_ns, listed_ns, folder),
                )
            return bool(cursor.rowcount)

    def children(self, folder: str) -> set[str]:
        with _errors():
            rows = self.conn.execute("SELECT dir FROM dirs WHERE parent = ?", (folder,))
            return {str(d) for (d,) in rows.fetchall()}

    def dir_like(self, skel: str, folder: str) -> str | None:
        """A folder other than ``folder`` whose name has the skeleton ``skel``."""
        with _errors():
            row = self.conn.execute(
                "SELECT dir FROM dirs WHERE skel = ? AND dir != ? ORDER BY dir LIMIT 1",
                (skel, folder),
            ).fetchone()
        return None if row is None else str(row[0])

    def drop_dir(self, folder: str) -> None:
        """Forget a folder, with every memory and folder under it."""
        below = folder.replace("\\", "\\\\").replace("%", "\\%").replace("_", "\\_") + "/%"
        with _errors():
            for table in ("files", "dirs"):
                self.conn.execute(
                    f"DELETE FROM {table} WHERE dir = ? OR dir LIKE ? ESCAPE '\\'",
                    (folder, below),
                )

    # -- temporary files and values ----------------------------------------------------------

    def add_temp(self, path: str) -> None:
        with _errors():
            self.conn.execute("INSERT OR IGNORE INTO temps VALUES (?)", (path,))

    def temps(self) -> list[str]:
        with _errors():
            return [str(p) for (p,) in self.conn.execute("SELECT path FROM temps").fetchall()]

    def drop_temp(self, path: str) -> None:
        with _errors():
            self.conn.execute("DELETE FROM temps WHERE path = ?", (path,))

    def get(self, key: str) -> str | None:
        with _errors():
            row = self.conn.execute("SELECT value FROM meta WHERE key = ?", (key,)).fetchone()
        return None if row is None else str(row[0])

    def set(self, key: str, value: str) -> None:
        with _errors():
            self.conn.execute("INSERT OR REPLACE INTO meta VALUES (?, ?)", (key, value))


_TABLES = "SELECT name FROM sqlite_master WHERE type = 'table' ORDER BY name"
_MASTER = "SELECT type, name, tbl_name, sql FROM sqlite_master ORDER BY type, name"


@functools.cache
def _noteseek_schema() -> list[tuple[Any, ...]]:
    """What ``sqlite_master`` of a table of this version holds (the same text since the
    previous release, which set no application id)."""
    conn = sqlite3.connect(":memory:")
    try:
        conn.executescript(_SCHEMA)
        return [tuple(row) for row in conn.execute(_MASTER).fetchall()]
    finally:
        conn.close()


_Identity = tuple[int, int, int, int]
"""(device, inode) of the table's folder, then of its file."""
_Where = Callable[[str], str]
"""The path of a name in the table's folder, to use with the folder's descriptor."""


def _claim(path: str) -> _Identity:
    """The identity of the table's file, created empty when missing, after checking without
    following links that its folder is a folder and the file (and any journal beside it) a
    regular file with no other name; :class:`RefusedTableError` otherwise."""
    folder, name = os.path.split(path)
    try:
        with contextlib.suppress(FileExistsError):
            os.mkdir(folder)
        with _folder(folder) as (dir_fd, where, dir_st):
            for suffix in (*_SIDE_FILES, ""):
                try:
                    # Not opened unless a regular file: a device or a FIFO is never read.
                    st = os.stat(where(name + suffix), dir_fd=dir_fd, follow_symlinks=False)
                except FileNotFoundError:
                    continue
                _check_file(path + suffix, st)
            flags = os.O_RDWR | os.O_CREAT | _NOFOLLOW | _NONBLOCK | getattr(os, "O_CLOEXEC", 0)
            fd = os.open(where(name), flags, 0o666, dir_fd=dir_fd)
            try:
                st = os.fstat(fd)
            finally:
                os.close(fd)
            _check_file(path, st)
    except OSError as exc:
        reason = exc.strerror or exc
        raise RefusedTableError(f"{path} cannot be opened as noteseek's table: {reason}") from exc
    return (dir_st.st_dev, dir_st.st_ino, st.st_dev, st.st_ino)


def _identity(path: str) -> _Identity | None:
    """The identity of the folder and file at ``path`` now; None when either is a link or is
    not what it should be."""
    try:
        dir_st = os.lstat(os.path.dirname(path))
        st = os.lstat(path)
    except OSError:
        return None
    if not stat.S_ISDIR(dir_st.st_mode) or not stat.S_ISREG(st.st_mode):
        return None
    return (dir_st.st_dev, dir_st.st_ino, st.st_dev, st.st_ino)


def _check_file(path: str, st: os.stat_result) -> None:
    if not stat.S_ISREG(st.st_mode):
        raise RefusedTableError(f"{path} is not a regular file (a link, a folder or a device)")
    if st.st_nlink != 1:
        # Written through this name, the file would change under its other names too; deleting
        # this name (to build the table again) leaves them whole, so that is done instead.
        raise MemoryTableError(f"{path} has {st.st_nlink} names (hard links)")


@contextlib.contextmanager
def _folder(folder: str) -> Iterator[tuple[int | None, _Where, os.stat_result]]:
    """The table's folder, checked not to be a link: (its descriptor, the path of a name in it
    to use with that descriptor, its stat); :class:`RefusedTableError` when it is not a folder.
    Without descriptors (Windows): no descriptor, full paths, checked by ``lstat`` only."""
    if not _AT:
        st = os.lstat(folder)
        if not stat.S_ISDIR(st.st_mode):
            raise RefusedTableError(f"{folder} is not a folder (a link or a file)")
        yield None, lambda name: os.path.join(folder, name), st
        return
    try:
        dir_fd = os.open(folder, os.O_RDONLY | _DIRECTORY | _NOFOLLOW)
    except OSError as exc:
        reason = exc.strerror or exc
        raise RefusedTableError(f"{folder} is not a folder (a link or a file): {reason}") from exc
    try:
        st = os.fstat(dir_fd)
        if not stat.S_ISDIR(st.st_mode):
            raise RefusedTableError(f"{folder} is not a folder")
        yield dir_fd, lambda name: name, st
    finally:
        os.close(dir_fd)


def remove_table(path: str) -> None:
    """Delete a table file and its journal (to build it again): only regular files, in a folder
    that is not a link, so that nothing a link points to is ever deleted.
    :class:`RefusedTableError` (and nothing deleted) when the folder is not one."""
    folder, name = os.path.split(path)
    with _folder(folder) as (dir_fd, where, _):
        for suffix in ("", *_SIDE_FILES):
            try:
                st = os.stat(where(name + suffix), dir_fd=dir_fd, follow_symlinks=False)
            except FileNotFoundError:
                continue
            if stat.S_ISREG(st.st_mode):
                with contextlib.suppress(FileNotFoundError):
                    os.unlink(where(name + suffix), dir_fd=dir_fd)
