"""What only the SQLite backend does: an unusable index file is refused and recorded, never fatal.

The index is a cache of the files, so a file SQLite cannot read (at open or in any later call),
or one written by a newer noteseek, raises ``IndexCorrupt`` with a message that says what to
do; damage is recorded in the index folder for every process, and ``rebuild`` deletes the files
and builds them again. Other failures (read-only, full, locked) are store errors too; nothing
leaves the store as a ``sqlite3`` error.
"""

from __future__ import annotations

import sqlite3
from pathlib import Path

import pytest

from noteseek.store.errors import IndexCorrupt, IndexFull, StoreError
from noteseek.store.factory import (
    INDEX_FILE,
    damage,
    index_file,
    open_reader,
    open_store,
    remove_index,
)
from noteseek.store.folder import mark_damaged
from noteseek.store.migrations import SCHEMA_VERSION
from noteseek.store.sqlite.errors import store_error


def test_a_fresh_index_gets_the_current_schema(tmp_path: Path) -> None:
    store, notice = open_store(tmp_path)
    assert store.check() is None
    store.close()
    assert notice is None
    with sqlite3.connect(tmp_path / INDEX_FILE) as conn:
        assert conn.execute("PRAGMA user_version").fetchone()[0] == SCHEMA_VERSION


def test_a_file_that_is_not_a_database_is_refused_recorded_and_removed(tmp_path: Path) -> None:
    (tmp_path / INDEX_FILE).write_bytes(b"this is not a database, just some bytes" * 200)
    with pytest.raises(IndexCorrupt, match=r"damaged \(file is not a database\).*rebuild"):
        open_reader(tmp_path)
    assert damage(tmp_path) == "file is not a database"
    with pytest.raises(IndexCorrupt) as raised:
        open_store(tmp_path)
    assert raised.value.reason == "file is not a database"
    assert remove_index(tmp_path) == [INDEX_FILE]
    assert damage(tmp_path) is None  # no index file: nothing to distrust
    store, notice = open_store(tmp_path)
    try:
        assert notice is None and store.stats()["files"] == 0
        assert damage(tmp_path) is None  # the record was about the file that is gone
    finally:
        store.close()


def zero_root_page(db: Path, table: str) -> None:
    with sqlite3.connect(db) as conn:
        row = conn.execute("SELECT rootpage FROM sqlite_schema WHERE name = ?", (table,))
        page = row.fetchone()[0]
    with db.open("r+b") as f:
        f.seek((page - 1) * 4096)
        f.write(bytes(4096))


def test_damage_met_after_opening_is_a_store_error_and_recorded(tmp_path: Path) -> None:
    store, _ = open_store(tmp_path)
    store.ensure_root("notes", str(tmp_path))
    store.set_problems("notes", "a.md", [("skipped", "x" * 50_000)])  # pages past the first
    store.close()
    zero_root_page(tmp_path / INDEX_FILE, "problems")
    # Opening reads the header and checks the small tables every command reads: it succeeds.
    store, _ = open_store(tmp_path)
    try:
        with pytest.raises(IndexCorrupt, match="database disk image is malformed"):
            store.problems()
        assert damage(tmp_path) == "database disk image is malformed"
        try:
            problem = store.check()  # what rebuild asks before clearing in place
        except IndexCorrupt as exc:
            problem = exc.reason
        assert problem is not None
    finally:
        store.close()


def test_damage_in_a_small_table_every_command_reads_is_found_on_opening(tmp_path: Path) -> None:
    store, _ = open_store(tmp_path)
    store.set_meta("filler", "x" * 50_000)
    store.close()
    zero_root_page(tmp_path / INDEX_FILE, "meta")
    with pytest.raises(IndexCorrupt, match="is damaged"):
        open_store(tmp_path)
    assert damage(tmp_path) is not None
    # A reader for background work is not checked again (its opener was).
    reader = open_reader(tmp_path)
    reader.close()


def test_the_full_check_finds_what_no_read_met_and_records_it(tmp_path: Path) -> None:
    store, _ = open_store(tmp_path)
    store.ensure_root("notes", str(tmp_path))
    store.set_problems("notes", "a.md", [("skipped", "x" * 50_000)])
    assert store.verify() is None  # sound
    store.close()
    zero_root_page(tmp_path / INDEX_FILE, "problems")
    store, _ = open_store(tmp_path)
    try:
        found = store.verify()
        assert found is not None and found.startswith("the check found damage: ")
        assert "\n" not in found
        assert damage(tmp_path) == found  # recorded for every process
    finally:
        store.close()


def test_a_record_about_a_replaced_file_is_stale(tmp_path: Path) -> None:
    # A reader that still has the old file open (so its inode is not reused) records damage
    # after a rebuild replaced the file: the record does not apply to the new one.
    old, _ = open_store(tmp_path)
    remove_index(tmp_path)
    new, _ = open_store(tmp_path)
    try:
        mark_damaged(tmp_path, "disk I/O error", old.file)  # type: ignore[attr-defined]
        assert damage(tmp_path) is None
        mark_damaged(tmp_path, "disk I/O error", index_file(tmp_path))
        assert damage(tmp_path) == "disk I/O error"
    finally:
        old.close()
        new.close()


def test_sqlite_errors_become_store_errors_that_say_what_to_do(tmp_path: Path) -> None:
    def error(code: int, text: str) -> sqlite3.Error:
        exc = sqlite3.OperationalError(text)
        exc.sqlite_errorcode = code  # type: ignore[attr-defined]
        exc.sqlite_errorname = "SQLITE_X"  # type: ignore[attr-defined]
        return exc

    store, _ = open_store(tmp_path)
    store.close()
    path = tmp_path / INDEX_FILE
    full = store_error(error(13, "database or disk is full"), path, None)
    assert isinstance(full, IndexFull) and f"index folder {tmp_path} is full" in str(full)
    locked = store_error(error(5, "database is locked"), path, None)
    assert isinstance(locked, StoreError) and "locked by another process" in str(locked)
    readonly = store_error(error(8, "attempt to write a readonly database"), path, None)
    assert isinstance(readonly, StoreError) and "make its folder writable" in str(readonly)
    assert store_error(error(1, "no such function: nope"), path, None) is None  # a bug
    assert damage(tmp_path) is None  # none of those is damage
    io = store_error(error(522, "disk I/O error"), path, None)
    assert isinstance(io, IndexCorrupt) and damage(tmp_path) == "disk I/O error (SQLITE_X)"


def test_an_index_from_a_newer_noteseek_is_refused_with_what_to_do(tmp_path: Path) -> None:
    store, _ = open_store(tmp_path)
    store.set_meta("from", "the future")
    store.close()
    with sqlite3.connect(tmp_path / INDEX_FILE) as conn:
        conn.execute(f"PRAGMA user_version = {SCHEMA_VERSION + 1}")
    with pytest.raises(IndexCorrupt, match="newer than this noteseek"):
        open_reader(tmp_path)
    with pytest.raises(IndexCorrupt, match=r"newer than this noteseek.*noteseek rebuild"):
        open_store(tmp_path)
    assert damage(tmp_path) is None  # not damage: the newer noteseek still reads it


def test_a_reader_does_not_migrate(tmp_path: Path) -> None:
    with sqlite3.connect(tmp_path / INDEX_FILE) as conn:
        conn.execute("CREATE TABLE placeholder (x)")  # a database at schema version 0
    with pytest.raises(IndexCorrupt, match="needs a migration"):
        open_reader(tmp_path)
    store, notice = open_store(tmp_path)
    store.close()
    assert notice is None  # the writer migrates it in place
