"""The SQLite connection every role shares: pragmas, schema migrations, transactions.

One connection per handle; calls are serialised by a lock so a handle may be shared between
threads. Other processes can open the same file at once (WAL: readers never block the writer,
and a reader sees only committed transactions).
"""

from __future__ import annotations

import re
import sqlite3
import threading
from collections.abc import Iterator, Mapping, Sequence
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from noteseek.deadline import SQLITE_PROGRESS_STEPS, sqlite_progress
from noteseek.globs import path_match
from noteseek.store.base import ChangeToken, IndexCorrupt
from noteseek.store.migrations import MIGRATIONS, SCHEMA_VERSION
from noteseek.store.sqlite.sql import author_match


class SQLiteCore:
    """The connection, the schema and the transaction that the role classes build on."""

    def __init__(self, path: Path | str, *, readonly: bool = False) -> None:
        self.path = str(path)
        self.readonly = readonly
        self.created = not Path(self.path).exists() or Path(self.path).stat().st_size == 0
        self._lock = threading.RLock()
        self._depth = 0
        self._writes = 0
        try:
            self._conn = self._connect()
            self._migrate()
        except sqlite3.OperationalError:
            raise  # locked or busy: the file is fine, the caller reports the error
        except sqlite3.DatabaseError as exc:
            raise IndexCorrupt(f"{self.path}: {exc}") from exc

    def _connect(self) -> sqlite3.Connection:
        if not self.readonly:
            Path(self.path).parent.mkdir(parents=True, exist_ok=True)
        uri = f"file:{self.path}{'?mode=ro' if self.readonly else ''}"
        conn = sqlite3.connect(uri, uri=True, isolation_level=None, check_same_thread=False)
        conn.execute("PRAGMA busy_timeout = 10000")
        if not self.readonly:
            conn.execute("PRAGMA journal_mode = WAL")
        conn.execute("PRAGMA synchronous = NORMAL")
        conn.execute("PRAGMA foreign_keys = ON")
        conn.execute("PRAGMA temp_store = MEMORY")
        conn.execute("PRAGMA cache_size = -65536")
        conn.execute("PRAGMA mmap_size = 268435456")
        # A search's time budget interrupts its statements (noteseek/deadline.py); other
        # threads have no deadline and run to the end.
        conn.set_progress_handler(sqlite_progress, SQLITE_PROGRESS_STEPS)
        conn.create_function("ns_path_match", 2, path_match, deterministic=True)
        conn.create_function("ns_author_match", 3, author_match, deterministic=True)
        return conn

    def _migrate(self) -> None:
        version = self._conn.execute("PRAGMA user_version").fetchone()[0]
        if version > SCHEMA_VERSION:
            raise IndexCorrupt(
                f"index schema version {version} is newer than this noteseek ({SCHEMA_VERSION})"
            )
        if version == SCHEMA_VERSION:
            return
        if self.readonly:
            raise IndexCorrupt(f"index schema version {version} needs a migration")
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
                self._conn.execute(f"SAVEPOINT {name}")
                self._depth += 1
                try:
                    yield
                except BaseException:
                    self._conn.execute(f"ROLLBACK TO {name}")
                    self._conn.execute(f"RELEASE {name}")
                    raise
                else:
                    self._conn.execute(f"RELEASE {name}")
                finally:
                    self._depth -= 1
                return
            self._conn.execute("BEGIN IMMEDIATE")
            self._depth = 1
            try:
                yield
            except BaseException:
                self._depth = 0
                self._conn.execute("ROLLBACK")
                raise
            else:
                self._depth = 0
                self._conn.execute("COMMIT")
                self._writes += 1

    def change_token(self) -> ChangeToken:
        """Changes whenever this or another connection commits a write."""
        with self._lock:
            version = self._conn.execute("PRAGMA data_version").fetchone()[0]
            return int(version), self._writes

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
