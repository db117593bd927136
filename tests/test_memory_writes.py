"""Memory writes that cost the same however many memories the folder holds (issue 30, item 6):
the folder's table of text hashes and names, kept right when people change files by hand;
names that only look alike; temporary files of killed writes; twelve writers in three
processes; and a rerun of ``flush --archive`` that counts only what it changed."""

from __future__ import annotations

import json
import multiprocessing
import os
import threading
import time
from pathlib import Path

import pytest

from noteseek.sources.memory.folder import MemoryFolder
from noteseek.sources.memory.format import Conflict, InvalidName
from noteseek.sources.memory.table import SWEEP, TABLE_DIR, TABLE_FILE
from tests.helpers import engine_for, project, write
from tests.test_memory import run
from tests.test_summarize import FakeChat, chat, fake_server  # noqa: F401 (fixtures)

FRONTMATTER = "---\ntype: fact\nstatus: active\ntags: []\n---\n"


class CountingFolder(MemoryFolder):
    """A memory folder that counts the memory files it reads for the table."""

    def __init__(self, path: Path) -> None:
        super().__init__(path)
        self.read_for_table: list[str] = []

    def _digest(self, base: str, name: str) -> str | None:
        self.read_for_table.append(name)
        return super()._digest(base, name)


def fill(folder: Path, count: int, *, start: int = 0) -> None:
    """``count`` memories written as a person (or another tool) would: straight to the files."""
    folder.mkdir(parents=True, exist_ok=True)
    for i in range(start, start + count):
        (folder / f"m{i:05d}.md").write_text(
            f"{FRONTMATTER}# Memory {i}\n\nMemory {i} is about topic {i % 97}, detail {i * 7}.\n",
            encoding="utf-8",
        )


# -- the table: one file read per create, whatever the folder holds ----------------------------


def test_a_create_reads_no_other_memory_once_the_table_is_built(tmp_path: Path) -> None:
    folder = tmp_path / "memories"
    fill(folder, 500)
    mem = CountingFolder(folder)
    assert mem.create("first", "The first memory written through noteseek.").created
    assert len(mem.read_for_table) == 501  # the table was built: every memory read once
    for i in range(5):
        mem.read_for_table.clear()
        assert mem.create(f"new/{i}", f"A new fact, number {i}.").created
        assert mem.read_for_table == [f"new/{i}"]  # only what it wrote
    mem.read_for_table.clear()
    same = mem.create("again", "Memory 250 is about topic 56, detail 1750.")
    assert (same.created, same.duplicate_of) == (False, "m00250")
    assert mem.read_for_table == ["m00250"]  # the match, read again before it is trusted
    mem.read_for_table.clear()
    assert mem.append("A daily entry.").created
    assert len(mem.read_for_table) == 1  # the log it wrote


def test_the_table_follows_files_added_removed_and_renamed_by_hand(tmp_path: Path) -> None:
    folder = tmp_path / "memories"
    fill(folder, 10)
    mem = MemoryFolder(folder)
    assert mem.create("a", "Something noteseek wrote.").created
    (folder / "by-hand.md").write_text("# By hand\n\nThe kettle is descaled monthly.\n")
    found = mem.create("b", "The kettle is descaled monthly.")
    assert found.duplicate_of == "by-hand"
    os.rename(folder / "by-hand.md", folder / "renamed.md")
    assert mem.create("b", "The kettle is descaled monthly.").duplicate_of == "renamed"
    (folder / "renamed.md").unlink()
    assert mem.create("b", "The kettle is descaled monthly.").created
    sub = folder / "projects" / "atlas"
    sub.mkdir(parents=True)
    (sub / "plan.md").write_text("Ship the atlas importer in May.\n")
    assert mem.create("c", "Ship the atlas importer in May.").duplicate_of == "projects/atlas/plan"
    (sub / "plan.md").unlink()
    sub.rmdir()
    assert mem.create("c", "Ship the atlas importer in May.").created


def test_a_file_changed_in_place_is_never_reported_for_text_it_no_longer_holds(
    tmp_path: Path,
) -> None:
    folder = tmp_path / "memories"
    fill(folder, SWEEP * 4)  # more than one write re-checks
    mem = MemoryFolder(folder)
    assert mem.create("note", "The backup runs at 02:00.").created
    target = folder / "note.md"
    stamp = os.stat(folder).st_mtime_ns
    # Edited in place (the folder's time does not move), keeping the size.
    target.write_text(target.read_text().replace("02:00", "03:00"))
    assert os.stat(folder).st_mtime_ns == stamp
    assert mem.create("other", "The backup runs at 02:00.").created
    # And text edited in place into a file is found once the sweep reaches it.
    (folder / "m00003.md").write_text("The fridge is defrosted in March.\n")
    for i in range(SWEEP * 4 // SWEEP + 2):
        mem.append(f"Entry {i}.")
    assert mem.create("fridge", "The fridge is defrosted in March.").duplicate_of == "m00003"


@pytest.mark.parametrize("damage", ["missing", "garbage", "empty", "old version"])
def test_a_missing_or_damaged_table_is_built_again(tmp_path: Path, damage: str) -> None:
    import sqlite3

    folder = tmp_path / "memories"
    fill(folder, 20)
    mem = MemoryFolder(folder)
    assert mem.create("a", "First written.").created
    table = folder / TABLE_DIR / TABLE_FILE
    if damage == "missing":
        table.unlink()
    elif damage == "garbage":
        table.write_bytes(b"not a database at all" * 100)
    elif damage == "empty":
        table.write_bytes(b"")
    else:
        with sqlite3.connect(table) as conn:
            conn.execute("PRAGMA user_version = 99")
        conn.close()
    (folder / "hand.md").write_text("Added while the table was away.\n")
    assert mem.create("b", "Added while the table was away.").duplicate_of == "hand"
    assert mem.create("c", "Memory 7 is about topic 7, detail 49.").duplicate_of == "m00007"
    assert mem.create("d", "Something new.").created


def test_twelve_writers_in_three_processes_all_succeed(tmp_path: Path) -> None:
    """Before the table each create read every memory under the lock: with 2,500 memories
    and 12 writers, creates waited past the 10 s lock timeout and failed."""
    folder = tmp_path / "memories"
    fill(folder, 2_500)
    out = tmp_path / "results"
    out.mkdir()
    methods = multiprocessing.get_all_start_methods()
    context = multiprocessing.get_context("fork" if "fork" in methods else "spawn")
    workers = [
        context.Process(target=_four_writers, args=(str(folder), str(out), p)) for p in range(3)
    ]
    for process in workers:
        process.start()
    for process in workers:
        process.join(120)
        assert process.exitcode == 0
    results = [
        json.loads(line)
        for f in sorted(out.iterdir())
        for line in f.read_text().split("\n")
        if line
    ]
    failures = [r for r in results if r["error"]]
    assert failures == []
    assert len(results) == 24
    assert sum(r["created"] for r in results) == 24
    listed = MemoryFolder(folder).list()
    assert listed.problems == [] and len(listed.records) == 2_524


def _four_writers(folder: str, out: str, process: int) -> None:
    start = threading.Barrier(4)
    lines: list[str] = []

    def write(thread: int) -> None:
        mem = MemoryFolder(folder)
        start.wait()
        for n in range(2):
            name = f"w{process}-{thread}-{n}"
            began = time.monotonic()
            try:
                created = mem.create(name, f"Writer {process}.{thread} wrote fact {n}.").created
                error = None
            except Exception as exc:
                created, error = False, f"{type(exc).__name__}: {exc}"
            seconds = time.monotonic() - began
            lines.append(
                json.dumps({"name": name, "created": created, "error": error, "s": seconds})
            )

    threads = [threading.Thread(target=write, args=(t,)) for t in range(4)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    Path(out, f"p{process}.jsonl").write_text("\n".join(lines) + "\n")


# -- temporary files of killed writes ------------------------------------------------------------


def test_a_killed_writes_temporary_file_is_removed_by_a_later_write(tmp_path: Path) -> None:
    folder = tmp_path / "memories"
    mem = MemoryFolder(folder)
    mem.create("projects/atlas", "The atlas plan.")
    old = folder / "projects" / ".atlas.md.0123456789ab.tmp"
    fresh = folder / ".note.md.ba9876543210.tmp"
    other = folder / ".notes.tmp"  # not a write's temporary file: never touched
    for path in (old, fresh, other):
        path.write_text("half a memo")
    an_hour_ago = time.time() - 3600
    os.utime(old, (an_hour_ago, an_hour_ago))
    mem.create("b", "Another memory.")
    assert not old.exists()
    assert fresh.exists() and other.exists()  # a minute old at least before it goes
    os.utime(fresh, (an_hour_ago, an_hour_ago))
    mem.append("A later write.")
    assert not fresh.exists() and other.exists()


# -- names that look alike -------------------------------------------------------------------------


def test_names_composed_differently_are_one_name(tmp_path: Path) -> None:
    folder = tmp_path / "memories"
    mem = MemoryFolder(folder)
    nfc, nfd = "caf\u00e9", "cafe\u0301"
    assert mem.create(nfd, "The café opens at eight.").created
    assert os.listdir(folder).count(f"{nfc}.md") == 1  # written in NFC
    again = mem.create(nfc, "The café opens at eight.")
    assert (again.created, again.name) == (False, nfc)
    with pytest.raises(Conflict, match="already exists with different content"):
        mem.create(nfd, "The café closes at six.")
    assert mem.read(nfd).name == nfc
    # A file a person (or macOS) wrote decomposed is found by either spelling.
    (folder / "cre\u0300me.md").write_text("Buy crème fraîche.\n")
    assert mem.read("cr\u00e8me").body == "Buy crème fraîche."
    same = mem.create("cr\u00e8me", "Buy crème fraîche.")
    assert (same.created, same.name) == (False, "cre\u0300me")
    mem.update("cr\u00e8me", status="archived")
    assert sorted(p.name for p in folder.glob("*.md")) == ["caf\u00e9.md", "cre\u0300me.md"]


def test_names_that_only_look_alike_are_refused_precisely(tmp_path: Path) -> None:
    folder = tmp_path / "memories"
    mem = MemoryFolder(folder)
    mem.create("atlas", "The atlas plan.")
    mem.create("projects/notes", "Project notes.")
    with pytest.raises(
        Conflict, match=r"'Atlas' looks like the existing memory 'atlas' \(only letter case\)"
    ):
        mem.create("Atlas", "Another plan.")
    with pytest.raises(
        Conflict,
        match=r"'аtlas' looks like the existing memory 'atlas' \(look-alike letters: 'а' "
        r"\(Cyrillic\)\)",
    ):
        mem.create("\u0430tlas", "Another plan.")
    with pytest.raises(Conflict, match=r"'prоjects' looks like the existing folder 'projects'"):
        mem.create("pr\u043ejects/plan", "A plan.")
    with pytest.raises(InvalidName, match="looks like the long-term file MEMORY"):
        mem.create("\u041c\u0415\u041c\u041eRY", "Long-term facts.")
    with pytest.raises(InvalidName, match="looks like the daily-log folder"):
        mem.create("mem\u043ery/2025-01-01", "A day.")
    for device in ("CON", "nul", "aux.notes", "com1", "projects/LPT3"):
        with pytest.raises(InvalidName, match="Windows device name"):
            mem.create(device, "A device.")
    with pytest.raises(InvalidName, match="240 bytes long in UTF-8 \\(120 characters\\)"):
        mem.create("é" * 120, "Too long a name in bytes.")
    assert mem.create("é" * 100, "Just short enough.").created
    assert sorted(p.name for p in folder.iterdir() if not p.name.startswith(".")) == [
        "atlas.md",
        "projects",
        "é" * 100 + ".md",
    ]


# -- flush --archive, run again --------------------------------------------------------------------


def test_a_rerun_of_flush_archive_counts_only_what_it_changed(
    tmp_path: Path,
    chat: FakeChat,  # noqa: F811 (the fixture imported above)
) -> None:
    chat.reply("- The six facts, summarised.")
    docs = tmp_path / "docs"
    write(docs / "a.md", "# A\n\nA note.\n")
    settings = f'[flush]\nbase_url = "{chat.base_url}"\nmodel = "tiny"\n'
    folder = project(tmp_path, {"docs": docs}, settings)
    with engine_for(folder) as engine:
        engine.index()
        for i in range(6):
            run(engine, "create_memory", name=f"m{i}", content=f"Fact number {i} is kept.")
        # A flush --archive stopped half-way: three files say archived, the index not yet.
        stopped = engine.memory_folder()
        for i in range(3):
            stopped.update(f"m{i}", status="archived")
        done = run(engine, "flush_memories", archive=True)
        assert sorted(done["archived"]) == ["m3", "m4", "m5"]
        assert done["message"].endswith("; archived 3 memories; 3 were archived already")
        again = run(engine, "update_memory", name="m0", status="archived")
        assert again["indexed"] == "unchanged"
        assert "already has these values; nothing written" in again["message"]
    assert MemoryFolder(folder / ".memories").list(status="archived").records != []
