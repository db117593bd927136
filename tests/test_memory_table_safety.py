"""The memory folder's table file against what others can plant in the folder (issue 44, R1
and R6): a link at the table or at its folder, another program's database at the table's path,
a file where its folder belongs and a folder where its file belongs. Every memory write still
succeeds (without the table when it cannot be used), with no traceback, and noteseek never
changes, empties or deletes a file it did not make; a table of the previous release (no
application id) keeps its rows and is adopted."""

from __future__ import annotations

import os
import sqlite3
import subprocess
from pathlib import Path

import pytest

from noteseek.sources.memory.folder import MemoryFolder
from noteseek.sources.memory.table import TABLE_DIR, TABLE_FILE
from noteseek.store.memory_table import APPLICATION_ID, VERSION
from tests.helpers import project, run_cli, write

BOOKMARKS = [("https://example.org/a",), ("https://example.org/b",)]
NOT_A_DATABASE = b"a user's own notes, not a database\n" * 50


def foreign_database(path: Path, user_version: int) -> Path:
    """Another program's SQLite database: a ``bookmarks`` table with two rows."""
    path.parent.mkdir(parents=True, exist_ok=True)
    conn = sqlite3.connect(path)
    with conn:
        conn.execute("CREATE TABLE bookmarks (url TEXT)")
        conn.executemany("INSERT INTO bookmarks VALUES (?)", BOOKMARKS)
        conn.execute(f"PRAGMA user_version = {user_version}")
    conn.close()
    return path


def assert_untouched(path: Path, user_version: int) -> None:
    conn = sqlite3.connect(f"file:{path}?mode=ro", uri=True)
    try:
        tables = [n for (n,) in conn.execute("SELECT name FROM sqlite_master WHERE type='table'")]
        assert tables == ["bookmarks"]
        assert conn.execute("SELECT url FROM bookmarks ORDER BY url").fetchall() == BOOKMARKS
        assert conn.execute("PRAGMA user_version").fetchone()[0] == user_version
        assert conn.execute("PRAGMA application_id").fetchone()[0] == 0
    finally:
        conn.close()


@pytest.fixture
def folder(tmp_path: Path) -> Path:
    """A project whose memory folder (``.memories``) exists, without a table yet."""
    write(tmp_path / "docs" / "a.md", "# A\n\nA document about something else.\n")
    (tmp_path / ".memories").mkdir()
    return project(tmp_path, {"docs": tmp_path / "docs"})


def add_and_find(folder: Path) -> subprocess.CompletedProcess[str]:
    """``noteseek memory add`` succeeds without a traceback, writes the memory's file and makes
    it searchable; the add's run (its stderr: at most one line about the table)."""
    added = run_cli(["memory", "add", "deploy", "The deploy uses blue green switching."], folder)
    assert "Traceback" not in added.stderr, added.stderr
    assert len([line for line in added.stderr.splitlines() if "table" in line]) <= 1, added.stderr
    text = (folder / ".memories" / "deploy.md").read_text(encoding="utf-8")
    assert "The deploy uses blue green switching." in text
    found = run_cli(["memory", "search", "blue green", "-m", "keyword"], folder)
    assert "deploy" in found.stdout
    return added


# -- R1: links are never followed, foreign databases never changed ----------------------------


def test_a_link_at_the_table_to_another_database_leaves_that_database_whole(
    folder: Path, tmp_path: Path
) -> None:
    other = foreign_database(tmp_path / "elsewhere" / "bookmarks.sqlite", 7)
    (folder / ".memories" / TABLE_DIR).mkdir()
    link = folder / ".memories" / TABLE_DIR / TABLE_FILE
    link.symlink_to(other)
    add_and_find(folder)
    assert_untouched(other, 7)
    assert link.is_symlink() and link.resolve() == other  # left as it was
    assert sorted(p.name for p in other.parent.iterdir()) == ["bookmarks.sqlite"]


@pytest.mark.parametrize("content", ["foreign database", "not a database"])
def test_a_link_at_the_table_folder_is_never_followed(
    folder: Path, tmp_path: Path, content: str
) -> None:
    elsewhere = tmp_path / "elsewhere"
    target = elsewhere / TABLE_FILE
    if content == "foreign database":
        foreign_database(target, 7)
    else:
        write(target, "").write_bytes(NOT_A_DATABASE)
    link = folder / ".memories" / TABLE_DIR
    link.symlink_to(elsewhere, target_is_directory=True)
    add_and_find(folder)
    # Nothing written, emptied or deleted in the folder the link points to.
    assert sorted(p.name for p in elsewhere.iterdir()) == [TABLE_FILE]
    if content == "foreign database":
        assert_untouched(target, 7)
    else:
        assert target.read_bytes() == NOT_A_DATABASE
    assert link.is_symlink()


@pytest.mark.parametrize("user_version", [7, VERSION])
def test_another_programs_database_at_the_table_keeps_its_tables(
    folder: Path, user_version: int
) -> None:
    """Even with noteseek's own version number: only a file noteseek made (its application
    id) or one with noteseek's exact schema is ever taken as the table."""
    table = foreign_database(folder / ".memories" / TABLE_DIR / TABLE_FILE, user_version)
    add_and_find(folder)
    assert_untouched(table, user_version)


def test_a_file_with_another_name_is_never_written_through_the_table(folder: Path) -> None:
    """A hard link at the table's path: its other name (someone's empty file) stays empty, and
    the table is built again under its own name alone."""
    theirs = write(folder / "theirs.sqlite", "")
    table = folder / ".memories" / TABLE_DIR / TABLE_FILE
    table.parent.mkdir()
    os.link(theirs, table)
    add_and_find(folder)
    assert theirs.read_bytes() == b"" and theirs.stat().st_nlink == 1
    conn = sqlite3.connect(table)
    try:
        assert conn.execute("PRAGMA application_id").fetchone()[0] == APPLICATION_ID
        assert [n for (n,) in conn.execute("SELECT name FROM files")] == ["deploy"]
    finally:
        conn.close()


def test_another_program_holding_a_database_there_does_not_get_it_deleted(
    folder: Path,
) -> None:
    """A database locked by its program is not damaged: it is neither deleted nor changed."""
    table = foreign_database(folder / ".memories" / TABLE_DIR / TABLE_FILE, 0)
    holder = sqlite3.connect(table, isolation_level=None)
    try:
        holder.execute("BEGIN EXCLUSIVE")
        mem = MemoryFolder(folder / ".memories")
        assert mem.create("kept", "Written while another program held the file.").created
    finally:
        holder.execute("ROLLBACK")
        holder.close()
    assert_untouched(table, 0)


# -- R6: a file where the folder belongs, a folder where the file belongs ----------------------


def test_a_file_where_the_table_folder_belongs(folder: Path) -> None:
    planted = folder / ".memories" / TABLE_DIR
    planted.write_bytes(NOT_A_DATABASE)
    add_and_find(folder)
    assert planted.read_bytes() == NOT_A_DATABASE


def test_a_folder_where_the_table_file_belongs(folder: Path) -> None:
    planted = folder / ".memories" / TABLE_DIR / TABLE_FILE
    write(planted / "inside.txt", "kept")
    add_and_find(folder)
    assert (planted / "inside.txt").read_text() == "kept"


# -- the previous release's table --------------------------------------------------------------


def test_a_table_of_the_previous_release_keeps_its_rows_and_is_adopted(tmp_path: Path) -> None:
    memories = tmp_path / "memories"
    mem = MemoryFolder(memories)
    assert mem.create("first", "The kettle is descaled monthly.").created
    table = memories / TABLE_DIR / TABLE_FILE
    # As the previous release left it: user_version 1, no application id; and a value the
    # next write keeps only if it uses this file rather than building a new one.
    conn = sqlite3.connect(table)
    with conn:
        conn.execute("PRAGMA application_id = 0")
        conn.execute("INSERT INTO meta VALUES ('probe', 'kept')")
    conn.close()
    inode = table.stat().st_ino
    again = mem.create("second", "The kettle is descaled monthly.")
    assert (again.created, again.duplicate_of) == (False, "first")
    assert mem.create("third", "Something new.").created
    conn = sqlite3.connect(table)
    try:
        assert conn.execute("PRAGMA application_id").fetchone()[0] == APPLICATION_ID
        assert conn.execute("PRAGMA user_version").fetchone()[0] == VERSION
        assert conn.execute("SELECT value FROM meta WHERE key = 'probe'").fetchone() == ("kept",)
        names = {n for (n,) in conn.execute("SELECT name FROM files")}
        assert names == {"first", "third"}
    finally:
        conn.close()
    assert table.stat().st_ino == inode


def test_a_damaged_table_of_noteseek_is_still_built_again(tmp_path: Path) -> None:
    """Refusing foreign files does not stop noteseek from rebuilding its own table of another
    version (this one made by noteseek, its application id set)."""
    memories = tmp_path / "memories"
    mem = MemoryFolder(memories)
    assert mem.create("first", "The kettle is descaled monthly.").created
    table = memories / TABLE_DIR / TABLE_FILE
    conn = sqlite3.connect(table)
    with conn:
        conn.execute(f"PRAGMA user_version = {VERSION + 98}")
    conn.close()
    assert mem.create("second", "The kettle is descaled monthly.").duplicate_of == "first"
    conn = sqlite3.connect(table)
    try:
        assert conn.execute("PRAGMA user_version").fetchone()[0] == VERSION
        assert {n for (n,) in conn.execute("SELECT name FROM files")} == {"first"}
    finally:
        conn.close()
