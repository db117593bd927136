"""The SQLite connection every role shares: pragmas, schema migrations, transactions.

One connection per handle; calls are serialised by a lock so a handle may be shared between
threads. Other processes can open the same file at once (WAL: readers never block the writer,
and a reader sees only committed transactions). SQLite's errors leave as store errors
(``errors.py``): here for opening and for the transaction's own statements, and at every
public method of the store for the rest.
"""

from __future__ import annotations

import os
import re
import sqlite3
import threading
from collections.abc import Iterator, Mapping, Sequence
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from noteseek import deadline
from noteseek.deadline import SQLITE_PROGRESS_STEPS, sqlite_progress
from noteseek.globs import path_match
from noteseek.store.base import ChangeToken
from noteseek.store.errors import IndexCorrupt, IndexUnwritable, is_interrupt
from noteseek.store.folder import (
    FileIdentity,
    damaged_message,
    folder_error,
    identity,
    mark_damaged,
)
from noteseek.store.migrations import MIGRATIONS, SCHEMA_VERSION
from noteseek.store.sqlite.errors import SQLITE_ERRORS, damage_code, raise_mapped
from noteseek.store.sqlite.sql import author_match

OPEN_CHECKED = (
    "meta",
    "roots",
    "runs",
    "keyword_log",
    "graph_dirty",
    "sqlite_sequence",
    "sqlite_stat1",
    "chunks_fts_config",
    "docs_fts_config",
    "chunks_fts_idx",
    "docs_fts_idx",
    "communities",
    "tags",
)
"""Tables the open check goes through: small whatever the index's size (a few pages each;
the FTS5 term indexes and the communities tens), read by every command that opens it."""
OPEN_CHECK_SECONDS = 0.05
"""The open check's time limit (4 ms on the 165k-chunk PowerShell index)."""
CHECK_PROBLEMS = 20
"""Problems a full check lists at most (the first ones say enough)."""
CHECK_STOP_POLL = 0.1
"""Seconds between looks at a full check's stop event."""


class SQLiteCore:
    """The connection, the schema and the transaction that the role classes build on."""

    def __init__(self, path: Path | str, *, readonly: bool = False) -> None:
        self.path = str(path)
        self.readonly = readonly
        self.created = not Path(self.path).exists() or Path(self.path).stat().st_size == 0
        self.file: FileIdentity | None = identity(Path(self.path))
        """The file this handle opened: damage found through it is recorded as about it."""
        self._lock = threading.RLock()
        self._depth = 0
        self._writes = 0
        if not self.readonly:
            folder = Path(self.path).parent
            try:
                folder.mkdir(parents=True, exist_ok=True)
            except OSError as exc:
                raise folder_error(folder, exc) from None
        try:
            self._conn = self._connect()
            if self.file is None:
                self.file = identity(Path(self.path))
            self._migrate()
        except SQLITE_ERRORS as exc:
            raise_mapped(exc, self)
            raise

    def _connect(self) -> sqlite3.Connection:
        conn = sqlite3.connect(self._uri(), uri=True, isolation_level=None, check_same_thread=False)
        conn.execute("PRAGMA busy_timeout = 10000")
        if not self.readonly:
            _set_wal(conn)
            # Checkpoints every 40 MB of log rather than SQLite's 4 MB: a page written again and
            # again by one run (FTS5's segments, the B-trees' upper levels) is copied into the
            # file once per checkpoint. A cold index of the 14k-page corpus: 40.7 -> 39.4 s
            # (mean of 3-4 alternated runs), a second less of system time.
            conn.execute(f"PRAGMA wal_autocheckpoint = {WAL_CHECKPOINT_PAGES}")
        conn.execute("PRAGMA synchronous = NORMAL")
        conn.execute("PRAGMA foreign_keys = ON")
        conn.execute("PRAGMA temp_store = MEMORY")
        conn.execute("PRAGMA cache_size = -65536")
        # Every page read is checked for cells that run off it as it is read (a damaged page
        # a search meets is an error, never wrong rows): no measurable cost (20,000 chunk
        # lookups on the 165k-chunk PowerShell index, 128-154 ms off and 157-193 ms on).
        conn.execute("PRAGMA cell_size_check = ON")
        # No memory-mapped reads: the pages they touch count in the process's resident memory
        # (an idle MCP server on the 165k-chunk PowerShell index: 546 MB mapped, 391 MB not,
        # bench/mcp_idle_rss.py), for no clear speed difference in a busy A/B.
        conn.execute("PRAGMA mmap_size = 0")
        # A search's time budget interrupts its statements (noteseek/deadline.py); other
        # threads have no deadline and run to the end.
        conn.set_progress_handler(sqlite_progress, SQLITE_PROGRESS_STEPS)
        conn.create_function("ns_path_match", 2, path_match, deterministic=True)
        conn.create_function("ns_author_match", 3, author_match, deterministic=True)
        return conn

    def _uri(self) -> str:
        if not self.readonly:
            return f"file:{self.path}"
        if self._needs_immutable():
            # A WAL index can be read without its -shm file only as immutable: right when the
            # folder is read-only and no writer is connected (a writer keeps -wal and -shm).
            return f"file:{self.path}?mode=ro&immutable=1"
        return f"file:{self.path}?mode=ro"

    def _needs_immutable(self) -> bool:
        base = Path(self.path)
        folder = base.parent
        if os.access(folder, os.W_OK) or Path(f"{self.path}-shm").exists():
            return False
        wal = Path(f"{self.path}-wal")
        if wal.exists() and wal.stat().st_size > 0:
            raise IndexUnwritable(
                f"the index in {folder} has changes not yet written to {base.name}, and its "
                "folder is read-only: open it once where the folder is writable (any noteseek "
                "command), or make the folder writable"
            )
        return True

    def _migrate(self) -> None:
        version = self._conn.execute("PRAGMA user_version").fetchone()[0]
        folder = Path(self.path).parent
        if version > SCHEMA_VERSION:
            reason = (
                f"index schema version {version} is newer than this noteseek ({SCHEMA_VERSION})"
            )
            raise IndexCorrupt(
                f"the index in {folder} cannot be read: {reason}; run `noteseek rebuild` to "
                "build it again for this version, or use the newer noteseek",
                reason,
            )
        if version == SCHEMA_VERSION:
            return
        if self.readonly:
            reason = f"index schema version {version} needs a migration"
            raise IndexCorrupt(
                f"the index in {folder} cannot be read: {reason}, which a read-only handle "
                "cannot run; run any noteseek command where its folder is writable",
                reason,
            )
        for target in range(version + 1, SCHEMA_VERSION + 1):
            with self.transaction():
                # Another process may have migrated meanwhile (several servers starting on
                # a new index at once): read the version again under the write lock.
                current = self._conn.execute("PRAGMA user_version").fetchone()[0]
                if current >= target:
                    continue
                for statement in split_sql(MIGRATIONS[target - 1]):
                    self._conn.execute(statement)
                self._conn.execute(f"PRAGMA user_version = {target}")

    def _after_run(self) -> None:
        """What a role does when the writer records the end of an index run (nothing here)."""

    def close(self) -> None:
        with self._lock:
            try:
                if not self.readonly:
                    self._conn.execute("PRAGMA optimize")
            except sqlite3.Error:
                pass
            self._conn.close()

    @contextmanager
    def transaction(self) -> Iterator[None]:
        """A write transaction (nested calls join the outer one)."""
        with self._lock:
            if self._depth:
                # Nested: a savepoint, so a failed inner write leaves the outer batch intact.
                name = f"sp{self._depth}"
                self._tx(f"SAVEPOINT {name}")
                self._depth += 1
                try:
                    yield
                except BaseException:
                    self._undo(f"ROLLBACK TO {name}", f"RELEASE {name}")
                    raise
                else:
                    self._tx(f"RELEASE {name}")
                finally:
                    self._depth -= 1
                return
            self._tx("BEGIN IMMEDIATE")
            self._depth = 1
            try:
                yield
            except BaseException:
                self._depth = 0
                self._undo("ROLLBACK")
                raise
            else:
                self._depth = 0
                try:
                    self._tx("COMMIT")
                except BaseException:
                    self._undo("ROLLBACK")  # a failed COMMIT (disk full) leaves it open
                    raise
                self._writes += 1

    def _tx(self, statement: str) -> None:
        """A transaction statement; its failure (a full disk at COMMIT) as a store error."""
        try:
            self._conn.execute(statement)
        except SQLITE_ERRORS as exc:
            raise_mapped(exc, self)
            raise

    def _undo(self, *statements: str) -> None:
        """Roll back after a failure. SQLite may have rolled back already (a full disk, an
        I/O error): then there is nothing to undo, and the original error is what counts."""
        if not self._conn.in_transaction:
            return
        try:
            for statement in statements:
                self._conn.execute(statement)
        except sqlite3.Error:
            pass

    def check(self) -> str | None:
        """``PRAGMA quick_check``: None when the file's structures are sound."""
        with self._lock:
            rows = self._conn.execute("PRAGMA quick_check(20)").fetchall()
        problems = [str(r[0]) for r in rows if r[0] != "ok"]
        return "; ".join(problems) or None

    def open_check(self) -> None:
        """The check of a process opening the index: ``PRAGMA quick_check`` of the small
        tables every command reads whole (:data:`OPEN_CHECKED`), within
        :data:`OPEN_CHECK_SECONDS`. Damage found is recorded and raised as ``IndexCorrupt``;
        a check that runs out of time says nothing (the full check covers the rest)."""
        with self._lock:
            present = {
                str(r[0])
                for r in self._conn.execute("SELECT name FROM sqlite_schema WHERE type = 'table'")
            }
            try:
                with deadline.limit(OPEN_CHECK_SECONDS):
                    for table in OPEN_CHECKED:
                        if table not in present:
                            continue
                        rows = self._conn.execute(f"PRAGMA quick_check('{table}')").fetchall()
                        problems = [str(r[0]) for r in rows if r[0] != "ok"]
                        if problems:
                            raise self._damage(problems)
            except deadline.DeadlineExceeded:
                return

    def verify(self, stop: threading.Event | None = None) -> str | None:
        """``PRAGMA integrity_check`` of the whole file: None when sound, else what is wrong
        (recorded as damage). ``stop`` set interrupts it (then None): SQLite calls no progress
        handler inside the check, so a watcher thread interrupts the connection."""
        done = threading.Event()
        if stop is not None:
            threading.Thread(
                target=self._interrupt_on, args=(stop, done), name="noteseek-check-stop"
            ).start()
        try:
            with self._lock:
                rows = self._conn.execute(f"PRAGMA integrity_check({CHECK_PROBLEMS})").fetchall()
        except sqlite3.OperationalError as exc:
            if stop is not None and stop.is_set() and is_interrupt(exc):
                return None
            if damage_code(exc):
                return self._damage(str(exc)).reason
            raise
        except sqlite3.DatabaseError as exc:  # a page the check could not walk at all
            if damage_code(exc):
                return self._damage(str(exc)).reason
            raise
        finally:
            done.set()
        problems = [str(r[0]) for r in rows if r[0] != "ok"]
        return None if not problems else self._damage(problems).reason

    def _interrupt_on(self, stop: threading.Event, done: threading.Event) -> None:
        """Interrupt this connection's statement once ``stop`` is set, until ``done``."""
        while not done.wait(CHECK_STOP_POLL):
            if stop.is_set():
                self._conn.interrupt()
                return

    def _damage(self, problems: str | list[str]) -> IndexCorrupt:
        """Damage a check found (SQLite's error, or the check's lines): recorded in the index
        folder for every process, and the error that says so (on one line)."""
        folder = Path(self.path).parent
        if isinstance(problems, str):
            problems = [problems]
        lines = [
            line.strip()
            for problem in problems
            for line in problem.splitlines()
            if line.strip() and line.strip() != "*** in database main ***"
        ]
        reason = f"the check found damage: {'; '.join(lines[:3]) or 'malformed'}"
        mark_damaged(folder, reason, self.file)
        return IndexCorrupt(damaged_message(folder, reason), reason)

    def change_token(self) -> ChangeToken:
        """Changes whenever this or another connection commits a write."""
        with self._lock:
            version = self._conn.execute("PRAGMA data_version").fetchone()[0]
            return int(version), self._writes

    def _posted_files(self, rowids: Sequence[int]) -> dict[int, int]:
        """Chunk rowid -> file id known without a query (the keyword postings' rows): some of
        ``rowids``, or none."""
        return {}

    def _q(self, sql: str, params: Sequence[Any] | Mapping[str, Any] = ()) -> list[Any]:
        with self._lock:
            return self._conn.execute(sql, params).fetchall()


def split_sql(script: str) -> list[str]:
    """Statements of a migration script (triggers keep their inner semicolons)."""
    statements: list[str] = []
    buf: list[str] = []
    in_trigger = False
    for line in script.splitlines():
        if not line.strip():
            continue
        buf.append(line)
        if re.match(r"\s*CREATE TRIGGER", line, re.I):
            in_trigger = True
        if in_trigger:
            if re.match(r"\s*END;\s*$", line, re.I):
                statements.append("\n".join(buf))
                buf, in_trigger = [], False
        elif line.rstrip().endswith(";"):
            statements.append("\n".join(buf))
            buf = []
    if buf and "".join(buf).strip():
        statements.append("\n".join(buf))
    return statements


WAL_WAIT = 10.0
"""Seconds a new connection waits to switch the file to WAL while another holds it."""
WAL_CHECKPOINT_PAGES = 10_000
"""Pages of write-ahead log after which a writer's commit copies them into the file."""


def _set_wal(conn: sqlite3.Connection) -> None:
    """``journal_mode = WAL``, waiting while another connection holds the file: the switch
    does not wait on ``busy_timeout`` (a reader opening the index while the writer created it
    failed at once with "database is locked")."""
    import time

    deadline = time.monotonic() + WAL_WAIT
    while True:
        try:
            conn.execute("PRAGMA journal_mode = WAL")
            return
        except sqlite3.OperationalError as exc:
            if "locked" not in str(exc) or time.monotonic() > deadline:
                raise
            time.sleep(0.05)
