"""The SQLite file of a memory folder's table: rows of memories (name, folder, inode, size,
modification time, text key, name skeleton) and of folders (time, last listing, skeleton),
the temporary files seen, and a few values. What the rows mean, and how they are kept right,
is the memory kind's (:mod:`noteseek.sources.memory.table`); this module only stores them.

It is a cache beside the files: written without fsync (``synchronous = OFF``), and any
SQLite error, a damaged or foreign file included, is a :class:`MemoryTableError`, on which the
caller deletes the file (:func:`remove_table`) and builds it again.
"""

from __future__ import annotations

import contextlib
import os
import sqlite3
from collections.abc import Iterator

VERSION = 1

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


class MemoryTableError(Exception):
    """The table's file cannot be used (damaged, not a database, unwritable)."""


@contextlib.contextmanager
def _errors() -> Iterator[None]:
    try:
        yield
    except sqlite3.Error as exc:
        raise MemoryTableError(str(exc)) from exc


class MemoryTableDB:
    """One open connection to a memory folder's table file; every method may raise
    :class:`MemoryTableError`."""

    def __init__(self, path: str) -> None:
        with _errors():
            self.conn = sqlite3.connect(path, timeout=5.0)
            try:
                self.conn.execute("PRAGMA synchronous = OFF")
                version = self.conn.execute("PRAGMA user_version").fetchone()[0]
                if version != VERSION:
                    if version:  # another version's tables: start afresh
                        for (table,) in self.conn.execute(
                            "SELECT name FROM sqlite_master WHERE type = 'table'"
                        ).fetchall():
                            self.conn.execute(f'DROP TABLE IF EXISTS "{table}"')
                    self.conn.executescript(_SCHEMA + f"PRAGMA user_version = {VERSION};")
                else:
                    self.conn.execute("SELECT count(*) FROM dirs").fetchone()
            except BaseException:
                self.conn.close()
                raise

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


def remove_table(path: str) -> None:
    """Delete a table file and its journal (to build it again)."""
    for suffix in ("", "-journal", "-wal", "-shm"):
        with contextlib.suppress(FileNotFoundError):
            os.unlink(path + suffix)
