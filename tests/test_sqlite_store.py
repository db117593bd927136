"""What only the SQLite backend does: an unusable index file is set aside, never fatal.

The index is a cache of the files, so a file SQLite cannot read, or one written by a newer
noteseek, is moved aside (with its WAL files) and a fresh index takes its place; the notice
says why. A read-only handle never moves anything: it reports the index as corrupt.
"""

from __future__ import annotations

import sqlite3
from pathlib import Path

import pytest

from noteseek.store.base import IndexCorrupt
from noteseek.store.factory import INDEX_FILE, open_reader, open_store
from noteseek.store.migrations import SCHEMA_VERSION


def test_a_fresh_index_gets_the_current_schema(tmp_path: Path) -> None:
    store, notice = open_store(tmp_path)
    store.close()
    assert notice is None
    with sqlite3.connect(tmp_path / INDEX_FILE) as conn:
        assert conn.execute("PRAGMA user_version").fetchone()[0] == SCHEMA_VERSION


def test_a_file_that_is_not_a_database_is_moved_aside(tmp_path: Path) -> None:
    (tmp_path / INDEX_FILE).write_bytes(b"this is not a database, just some bytes" * 200)
    with pytest.raises(IndexCorrupt):
        open_reader(tmp_path)
    store, notice = open_store(tmp_path)
    try:
        assert notice is not None and "moved to index.db.unusable-" in notice
        assert store.stats()["files"] == 0
    finally:
        store.close()
    (aside,) = tmp_path.glob(f"{INDEX_FILE}.unusable-*")
    assert aside.read_bytes().startswith(b"this is not a database")


def test_an_index_from_a_newer_noteseek_is_moved_aside(tmp_path: Path) -> None:
    store, _ = open_store(tmp_path)
    store.set_meta("from", "the future")
    store.close()
    with sqlite3.connect(tmp_path / INDEX_FILE) as conn:
        conn.execute(f"PRAGMA user_version = {SCHEMA_VERSION + 1}")
    with pytest.raises(IndexCorrupt, match="newer than this noteseek"):
        open_reader(tmp_path)
    store, notice = open_store(tmp_path)
    try:
        assert notice is not None and "newer than this noteseek" in notice
        assert store.meta("from") is None
    finally:
        store.close()


def test_a_reader_does_not_migrate(tmp_path: Path) -> None:
    with sqlite3.connect(tmp_path / INDEX_FILE) as conn:
        conn.execute("CREATE TABLE placeholder (x)")  # a database at schema version 0
    with pytest.raises(IndexCorrupt, match="needs a migration"):
        open_reader(tmp_path)
    store, notice = open_store(tmp_path)
    store.close()
    assert notice is None  # the writer migrates it in place
