"""The memory folder's table: each memory's name, what its name looks like and a hash of its
text, so a write finds an identical text or a look-alike name without reading the folder.

It lives in the folder, hidden (``.noteseek-memory-table/table.sqlite``, in a folder of its own
so that its journal never touches the memory folder's own entries; the SQLite side is
:mod:`noteseek.store.memory_table`), and is a cache: deleted, damaged or of another version,
it is built again from the files by the next write. What others may plant at its path (a
link, a file or folder in the wrong place, another program's database) is left alone, and
writes go on without the table (a create then reads the folder). Every write
goes through it under the folder's lock (:class:`~noteseek.sources.memory.folder.MemoryFolder`
opens it, :meth:`refresh` brings it up to date, :meth:`record` enters what the write changed),
and it stays right when people change files by hand:

* a folder whose modification time moved (a file added, removed or renamed, or an editor's
  save by rename) is listed again: entries whose inode changed are read again, others kept;
* a file changed in place keeps its folder's time: each write re-checks ``SWEEP`` entries
  (size, modification time, inode) in turn, and the file a lookup finds is read again before
  it is trusted, so the table never reports a text a file no longer holds;
* a folder is listed again at least every ``RELIST_SECONDS``, for a change made by hand while
  a write to the same folder runs (the write then records the folder's new time as its own);
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
import stat
import time
from collections.abc import Callable, Iterator

from noteseek.sources.memory.format import memory_kind, normalise
from noteseek.sources.memory.names import skeleton
from noteseek.store.memory_table import (
    MemoryTableDB,
    MemoryTableError,
    RefusedTableError,
    remove_table,
)

log = logging.getLogger(__name__)

TABLE_DIR = ".noteseek-memory-table"
TABLE_FILE = "table.sqlite"
SWEEP = 32
"""Entries re-checked by each write (a file changed in place keeps its folder's time)."""
RELIST_SECONDS = 60.0
STALE_TEMP_SECONDS = 60.0
TEMP_RE = re.compile(r"\.(.+\.md)\.[0-9a-f]{12}\.tmp")
"""The temporary file of :func:`~noteseek.sources.memory.durable.write_atomic`."""

Digest = Callable[[str], "str | None"]
"""The text key of the memory ``name`` as its file holds it now; None when it cannot be read
(not UTF-8, invalid frontmatter, too large, a link out of the folder)."""


def text_key(text: str) -> str:
    """What two memories with the same text share: a hash of their whitespace-normalised text."""
    data = normalise(text).encode("utf-8", "surrogatepass")
    return hashlib.blake2b(data, digest_size=16).hexdigest()


class TableError(Exception):
    """The table cannot be used (the folder is read-only, the disk is full, ...)."""


class FolderTable:
    """The table of one memory folder, open for one write under the folder's lock."""

    def __init__(self, base: str, digest: Digest, db: MemoryTableDB) -> None:
        self.base = base
        self.digest = digest
        self.db = db
        self.removed_temps: list[str] = []

    @classmethod
    @contextlib.contextmanager
    def opened(cls, base: str, digest: Digest) -> Iterator[FolderTable]:
        """The table of the folder ``base`` (its real path), brought up to date; built again
        when missing, damaged or of another version. :class:`TableError` when it cannot be,
        among others when what is at its path is not noteseek's to use or delete (a link, a
        file or folder in the wrong place, another program's database): that is left as it
        is, and the write goes on without the table."""
        path = os.path.join(base, TABLE_DIR, TABLE_FILE)
        db = None
        for attempt in range(2):
            try:
                db = MemoryTableDB(path)
                table = cls(base, digest, db)
                table.refresh()
                break
            except (MemoryTableError, OSError) as exc:
                if db is not None:
                    db.close()
                    db = None
                if attempt or isinstance(exc, RefusedTableError):
                    raise TableError(f"the memory table cannot be used: {exc}") from exc
                log.warning("building the memory table of %s again: %s", base, exc)
                try:
                    remove_table(path)
                except (MemoryTableError, OSError) as removing:
                    raise TableError(
                        f"the memory table cannot be used: {exc}; nor removed: {removing}"
                    ) from removing
        assert db is not None
        try:
            yield table
            db.commit()
        except (MemoryTableError, OSError) as exc:
            raise TableError(f"the memory table cannot be used: {exc}") from exc
        finally:
            db.close()

    # -- look-ups ----------------------------------------------------------------------------

    def find_text(self, key: str) -> str | None:
        """The first memory (by name) whose text has ``key``, read again to be sure."""
        for name in self.db.names_with_key(key):
            if self._enter(name) == key:
                return name
        return None

    def find_alike(self, name: str) -> tuple[str, str] | None:
        """(the part of ``name`` that looks like an existing one, that existing name) for a
        file or folder already in the folder whose name differs from ``name``'s but looks the
        same (:func:`~noteseek.sources.memory.names.skeleton`); None when there is none."""
        parts = name.split("/")
        for i in range(1, len(parts)):
            prefix = "/".join(parts[:i])
            found = self.db.dir_like(skeleton(prefix), prefix)
            if found is not None:
                return prefix, found
        found = self.db.file_like(skeleton(name), name)
        return None if found is None else (name, found)

    def count(self) -> int:
        return self.db.count()

    # -- keeping it right --------------------------------------------------------------------

    def refresh(self) -> None:
        """Bring the table up to date with the folder (see the module docstring)."""
        now = time.time_ns()
        dirs = self.db.dirs()
        if not dirs:
            self._list("", None, now)
        relist = int(RELIST_SECONDS * 1e9)
        for folder, mtime_ns, listed_ns in dirs:
            try:
                st = os.stat(self._path(folder))
            except FileNotFoundError:
                self.db.drop_dir(folder)
                continue
            if not stat.S_ISDIR(st.st_mode):
                self.db.drop_dir(folder)
            elif st.st_mtime_ns != mtime_ns or now - listed_ns > relist:
                self._list(folder, st, now)
        self._sweep()
        self._clean_temps(now)
        self.db.commit()

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
            if not self.db.set_dir_time(folder, st.st_mtime_ns):
                # A folder the write made: it holds only what the write put there.
                self._list(folder, None, now)

    def _enter(self, name: str) -> str | None:
        """Read the memory ``name`` again into the table; its text key (None: unreadable or
        gone)."""
        path = self._path(name) + ".md"
        try:
            lst = os.lstat(path)
            st = os.stat(path) if stat.S_ISLNK(lst.st_mode) else lst
        except OSError:
            self.db.drop_file(name)
            return None
        key = self.digest(name) if stat.S_ISREG(st.st_mode) else None
        stamp = (lst.st_ino, st.st_size, st.st_mtime_ns)
        self.db.put_file(name, name.rpartition("/")[0], stamp, key, skeleton(name))
        return key

    def _list(self, folder: str, st: os.stat_result | None, now: int) -> None:
        """List ``folder`` again: files added, removed or replaced (a new inode) are entered
        again, folders added are listed, folders gone are dropped."""
        path = self._path(folder)
        if st is None:
            st = os.stat(path)
            self.db.put_dir(folder, st.st_mtime_ns, now, skeleton(folder))
        found: dict[str, int] = {}
        subdirs: set[str] = set()
        prefix = f"{folder}/" if folder else ""
        with os.scandir(path) as entries:
            for entry in entries:
                if entry.name.startswith("."):
                    if TEMP_RE.fullmatch(entry.name):
                        self.db.add_temp(prefix + entry.name)
                    continue
                if entry.name.startswith("~"):
                    continue
                if entry.is_dir(follow_symlinks=False):
                    subdirs.add(prefix + entry.name)
                elif entry.name.endswith(".md") and memory_kind(prefix + entry.name):
                    found[prefix + entry.name[:-3]] = entry.inode()
        known = self.db.inodes_in(folder)
        for gone in known.keys() - found.keys():
            self.db.drop_file(gone)
        for name, ino in found.items():
            if known.get(name) != ino:
                self._enter(name)
        self.db.set_dir_time(folder, st.st_mtime_ns, now)
        had = self.db.children(folder)
        for gone in had - subdirs:
            self.db.drop_dir(gone)
        for new in sorted(subdirs - had):
            self._list(new, None, now)

    def _sweep(self) -> None:
        """Re-check the next ``SWEEP`` entries, in name order, round the table."""
        rows = self.db.stamps_after(self.db.get("sweep") or "", SWEEP)
        for name, ino, size, mtime_ns in rows:
            path = self._path(name) + ".md"
            try:
                lst = os.lstat(path)
                st = os.stat(path) if stat.S_ISLNK(lst.st_mode) else lst
                stamp: tuple[int, int, int] | None = (lst.st_ino, st.st_size, st.st_mtime_ns)
            except OSError:
                stamp = None
            if stamp != (ino, size, mtime_ns):
                self._enter(name)
        if rows:
            self.db.set("sweep", rows[-1][0])

    def _clean_temps(self, now: int) -> None:
        """Remove the temporary files of killed writes once they are old enough."""
        for rel in self.db.temps():
            path = self._path(rel)
            try:
                age = now - os.lstat(path).st_mtime_ns
            except FileNotFoundError:
                self.db.drop_temp(rel)
                continue
            except OSError:
                continue
            if age < STALE_TEMP_SECONDS * 1e9:
                continue
            with contextlib.suppress(FileNotFoundError):
                os.unlink(path)
            self.removed_temps.append(rel)
            log.info("removed %s, the temporary file of a write that never finished", rel)
            self.db.drop_temp(rel)

    def _path(self, rel: str) -> str:
        return os.path.join(self.base, *rel.split("/")) if rel else self.base
