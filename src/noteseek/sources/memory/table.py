"""The memory folder's table: each memory's name, what its name looks like and a hash of its
text, so a write finds an identical text or a look-alike name without reading the folder.

It lives in the folder, hidden (``.noteseek-memory-table/table.sqlite``, in a folder of its own
so that its journal never touches the memory folder's own entries), and is a cache: deleted,
damaged or of another version, it is built again from the files by the next write. Every write
goes through it under the folder's lock (:class:`~noteseek.sources.memory.folder.MemoryFolder`
opens it, :meth:`refresh` brings it up to date, :meth:`record` enters what the write changed),
and it stays right when people change files by hand:

* a folder whose modification time moved (a file added, removed or renamed, or an editor's
  save by rename) is listed again: entries whose inode changed are read again, others kept;
* a file changed in place keeps its folder's time: each write re-checks ``SWEEP`` entries
  (size, modification time, inode) in turn, and the file a lookup finds is read again before
  it is trusted, so the table never reports a text a file no longer holds;
* a folder is listed again at least every ``RELIST_SECONDS``, for a change made in the same
  clock tick as a write (the folder's time then does not move again);
* a write's temporary file (``.name.md.<hex>.tmp``) left by a killed process is removed once
  it is ``STALE_TEMP_SECONDS`` old (no live write has one that old: writes hold the lock for
  milliseconds).

So a write costs a stat of each folder, ``SWEEP`` stats and a few indexed look-ups, whatever
the number of memories; a folder changed by hand costs one listing of it at the next write.
"""

from __future__ import annotations

import contextlib
import hashlib
import logging
import os
import re
import sqlite3
import stat
import time
from collections.abc import Callable, Iterator

from noteseek.sources.memory.format import memory_kind, normalise
from noteseek.sources.memory.names import skeleton

log = logging.getLogger(__name__)

TABLE_DIR = ".noteseek-memory-table"
TABLE_FILE = "table.sqlite"
VERSION = 1
SWEEP = 32
"""Entries re-checked by each write (a file changed in place keeps its folder's time)."""
RELIST_SECONDS = 60.0
STALE_TEMP_SECONDS = 60.0
TEMP_RE = re.compile(r"\.(.+\.md)\.[0-9a-f]{12}\.tmp")
"""The temporary file of :func:`~noteseek.sources.memory.durable.write_atomic`."""

Digest = Callable[[str], "str | None"]
"""The text key of the memory ``name`` as its file holds it now; None when it cannot be read
(not UTF-8, invalid frontmatter, too large, a link out of the folder)."""

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


def text_key(text: str) -> str:
    """What two memories with the same text share: a hash of their whitespace-normalised text."""
    data = normalise(text).encode("utf-8", "surrogatepass")
    return hashlib.blake2b(data, digest_size=16).hexdigest()


class TableError(Exception):
    """The table cannot be used (the folder is read-only, the disk is full, ...)."""


class FolderTable:
    """The table of one memory folder, open for one write under the folder's lock."""

    def __init__(self, base: str, digest: Digest, conn: sqlite3.Connection) -> None:
        self.base = base
        self.digest = digest
        self.conn = conn
        self.removed_temps: list[str] = []

    @classmethod
    @contextlib.contextmanager
    def opened(cls, base: str, digest: Digest) -> Iterator[FolderTable]:
        """The table of the folder ``base`` (its real path), brought up to date; built again
        when missing, damaged or of another version. :class:`TableError` when it cannot be."""
        folder = os.path.join(base, TABLE_DIR)
        path = os.path.join(folder, TABLE_FILE)
        conn = None
        for attempt in range(2):
            try:
                os.makedirs(folder, exist_ok=True)
                conn = _connect(path)
                table = cls(base, digest, conn)
                table.refresh()
                break
            except (sqlite3.Error, OSError) as exc:
                if conn is not None:
                    conn.close()
                    conn = None
                if attempt:
                    raise TableError(f"the memory table cannot be used: {exc}") from exc
                log.warning("rebuilding the memory table of %s: %s", base, exc)
                _remove(folder)
        assert conn is not None
        try:
            yield table
            conn.commit()
        except (sqlite3.Error, OSError) as exc:
            raise TableError(f"the memory table cannot be used: {exc}") from exc
        finally:
            conn.close()

    # -- look-ups ----------------------------------------------------------------------------

    def find_text(self, key: str) -> str | None:
        """The first memory (by name) whose text has ``key``, read again to be sure."""
        rows = self.conn.execute(
            "SELECT name FROM files WHERE text_key = ? ORDER BY name", (key,)
        ).fetchall()
        for (name,) in rows:
            if self._enter(name) == key:
                return str(name)
        return None

    def find_alike(self, name: str) -> tuple[str, str] | None:
        """(the part of ``name`` that looks like an existing one, that existing name) for a
        file or folder already in the folder whose name differs from ``name``'s but looks the
        same (:func:`~noteseek.sources.memory.names.skeleton`); None when there is none."""
        parts = name.split("/")
        for i in range(1, len(parts)):
            prefix = "/".join(parts[:i])
            row = self.conn.execute(
                "SELECT dir FROM dirs WHERE skel = ? AND dir != ? ORDER BY dir LIMIT 1",
                (skeleton(prefix), prefix),
            ).fetchone()
            if row is not None:
                return prefix, str(row[0])
        row = self.conn.execute(
            "SELECT name FROM files WHERE skel = ? AND name != ? ORDER BY name LIMIT 1",
            (skeleton(name), name),
        ).fetchone()
        return None if row is None else (name, str(row[0]))

    def count(self) -> int:
        return int(self.conn.execute("SELECT count(*) FROM files").fetchone()[0])

    # -- keeping it right --------------------------------------------------------------------

    def refresh(self) -> None:
        """Bring the table up to date with the folder (see the module docstring)."""
        now = time.time_ns()
        dirs = self.conn.execute(
            "SELECT dir, mtime_ns, listed_ns FROM dirs ORDER BY dir"
        ).fetchall()
        if not dirs:
            self._list("", None, now)
        relist = int(RELIST_SECONDS * 1e9)
        for folder, mtime_ns, listed_ns in dirs:
            try:
                st = os.stat(self._path(folder))
            except FileNotFoundError:
                self._drop_dir(folder)
                continue
            if not stat.S_ISDIR(st.st_mode):
                self._drop_dir(folder)
            elif st.st_mtime_ns != mtime_ns or now - listed_ns > relist:
                self._list(folder, st, now)
        self._sweep()
        self._clean_temps(now)
        self.conn.commit()

    def record(self, name: str) -> None:
        """Enter what a write just did to the memory ``name`` (written, moved or removed), and
        the times of its folders, which the write moved (the table was up to date before)."""
        self._enter(name)
        parts = name.split("/")[:-1]
        now = time.time_ns()
        for i in range(len(parts) + 1):
            folder = "/".join(parts[:i])
            try:
                st = os.stat(self._path(folder))
            except OSError:
                break
            updated = self.conn.execute(
                "UPDATE dirs SET mtime_ns = ? WHERE dir = ?", (st.st_mtime_ns, folder)
            ).rowcount
            if not updated:  # a folder the write made: it holds only what the write put there
                self._add_dir(folder, st.st_mtime_ns, now)
                self._list(folder, st, now)

    def _enter(self, name: str) -> str | None:
        """Read the memory ``name`` again into the table; its text key (None: unreadable or
        gone)."""
        path = self._path(name) + ".md"
        try:
            lst = os.lstat(path)
            st = os.stat(path) if stat.S_ISLNK(lst.st_mode) else lst
        except OSError:
            self.conn.execute("DELETE FROM files WHERE name = ?", (name,))
            return None
        key = self.digest(name) if stat.S_ISREG(st.st_mode) else None
        folder = name.rpartition("/")[0]
        self.conn.execute(
            "INSERT OR REPLACE INTO files (name, dir, ino, size, mtime_ns, text_key, skel) "
            "VALUES (?, ?, ?, ?, ?, ?, ?)",
            (name, folder, lst.st_ino, st.st_size, st.st_mtime_ns, key, skeleton(name)),
        )
        return key

    def _list(self, folder: str, st: os.stat_result | None, now: int) -> None:
        """List ``folder`` again: files added, removed or replaced (a new inode) are entered
        again, folders added are listed, folders gone are dropped."""
        path = self._path(folder)
        if st is None:
            st = os.stat(path)
            self._add_dir(folder, st.st_mtime_ns, now)
        found: dict[str, int] = {}
        subdirs: set[str] = set()
        prefix = f"{folder}/" if folder else ""
        with os.scandir(path) as entries:
            for entry in entries:
                if entry.name.startswith("."):
                    if TEMP_RE.fullmatch(entry.name):
                        self.conn.execute(
                            "INSERT OR IGNORE INTO temps VALUES (?)", (prefix + entry.name,)
                        )
                    continue
                if entry.name.startswith("~"):
                    continue
                if entry.is_dir(follow_symlinks=False):
                    subdirs.add(prefix + entry.name)
                elif entry.name.endswith(".md") and memory_kind(prefix + entry.name):
                    found[prefix + entry.name[:-3]] = entry.inode()
        known = dict(
            self.conn.execute("SELECT name, ino FROM files WHERE dir = ?", (folder,)).fetchall()
        )
        for gone in known.keys() - found.keys():
            self.conn.execute("DELETE FROM files WHERE name = ?", (gone,))
        for name, ino in found.items():
            if known.get(name) != ino:
                self._enter(name)
        self.conn.execute(
            "UPDATE dirs SET mtime_ns = ?, listed_ns = ? WHERE dir = ?",
            (st.st_mtime_ns, now, folder),
        )
        had = {
            str(d) for (d,) in self.conn.execute("SELECT dir FROM dirs WHERE parent = ?", (folder,))
        }
        for gone in had - subdirs:
            self._drop_dir(gone)
        for new in sorted(subdirs - had):
            self._list(new, None, now)

    def _add_dir(self, folder: str, mtime_ns: int, now: int) -> None:
        parent = None if not folder else folder.rpartition("/")[0]
        self.conn.execute(
            "INSERT OR REPLACE INTO dirs (dir, parent, mtime_ns, listed_ns, skel) "
            "VALUES (?, ?, ?, ?, ?)",
            (folder, parent, mtime_ns, now, skeleton(folder)),
        )

    def _drop_dir(self, folder: str) -> None:
        """Forget a folder that is gone, with everything under it."""
        below = folder.replace("\\", "\\\\").replace("%", "\\%").replace("_", "\\_") + "/%"
        for table, column in (("files", "dir"), ("dirs", "dir")):
            self.conn.execute(
                f"DELETE FROM {table} WHERE {column} = ? OR {column} LIKE ? ESCAPE '\\'",
                (folder, below),
            )

    def _sweep(self) -> None:
        """Re-check the next ``SWEEP`` entries, in name order, round the table."""
        row = self.conn.execute("SELECT value FROM meta WHERE key = 'sweep'").fetchone()
        after = "" if row is None else str(row[0])
        rows = self.conn.execute(
            "SELECT name, ino, size, mtime_ns FROM files WHERE name > ? ORDER BY name LIMIT ?",
            (after, SWEEP),
        ).fetchall()
        if len(rows) < SWEEP:
            rows += self.conn.execute(
                "SELECT name, ino, size, mtime_ns FROM files ORDER BY name LIMIT ?",
                (SWEEP - len(rows),),
            ).fetchall()
        for name, ino, size, mtime_ns in rows:
            path = self._path(name) + ".md"
            try:
                lst = os.lstat(path)
                st = os.stat(path) if stat.S_ISLNK(lst.st_mode) else lst
                now = (lst.st_ino, st.st_size, st.st_mtime_ns)
            except OSError:
                now = None
            if now != (ino, size, mtime_ns):
                self._enter(name)
        if rows:
            self.conn.execute(
                "INSERT OR REPLACE INTO meta VALUES ('sweep', ?)", (str(rows[-1][0]),)
            )

    def _clean_temps(self, now: int) -> None:
        """Remove the temporary files of killed writes once they are old enough."""
        for (rel,) in self.conn.execute("SELECT path FROM temps").fetchall():
            path = self._path(rel)
            try:
                age = now - os.lstat(path).st_mtime_ns
            except FileNotFoundError:
                age = None
            except OSError:
                continue
            if age is not None and age < STALE_TEMP_SECONDS * 1e9:
                continue
            if age is not None:
                with contextlib.suppress(FileNotFoundError):
                    os.unlink(path)
                self.removed_temps.append(rel)
                log.info("removed %s, the temporary file of a write that never finished", rel)
            self.conn.execute("DELETE FROM temps WHERE path = ?", (rel,))

    def _path(self, rel: str) -> str:
        return os.path.join(self.base, *rel.split("/")) if rel else self.base


def _connect(path: str) -> sqlite3.Connection:
    conn = sqlite3.connect(path, timeout=5.0, isolation_level="DEFERRED")
    try:
        conn.execute("PRAGMA synchronous = OFF")  # a cache: a damaged table is built again
        version = conn.execute("PRAGMA user_version").fetchone()[0]
        if version != VERSION:
            if version:  # another version: start afresh
                for (table,) in conn.execute(
                    "SELECT name FROM sqlite_master WHERE type = 'table'"
                ).fetchall():
                    conn.execute(f'DROP TABLE IF EXISTS "{table}"')
            conn.executescript(_SCHEMA + f"PRAGMA user_version = {VERSION};")
        else:
            conn.execute("SELECT count(*) FROM dirs").fetchone()
    except BaseException:
        conn.close()
        raise
    return conn


def _remove(folder: str) -> None:
    for name in (TABLE_FILE, TABLE_FILE + "-journal", TABLE_FILE + "-wal", TABLE_FILE + "-shm"):
        with contextlib.suppress(FileNotFoundError):
            os.unlink(os.path.join(folder, name))
