"""The memory folder's write side on real files: names that could escape or hide, sizes,
hand-edited files that must never be rewritten, duplicates, the trash, atomic writes, and three
processes appending to one daily log at once."""

from __future__ import annotations

import datetime as dt
import multiprocessing
import os
import re
import stat
from pathlib import Path

import filelock
import pytest
import yaml

from noteseek.sources.memory import folder as mf_module
from noteseek.sources.memory.folder import MemoryFolder
from noteseek.sources.memory.format import (
    DAILY_DIR,
    LONG_TERM,
    MEMORY_STATUSES,
    MEMORY_TYPES,
    TRASH,
    Busy,
    Conflict,
    InvalidMemory,
    InvalidName,
    MemoryFolderError,
    NotFound,
    TooLarge,
    check_name,
    memory_kind,
)
from noteseek.sources.memory.table import TABLE_DIR

TZ = dt.timezone(dt.timedelta(hours=2))
NOW = dt.datetime(2025, 3, 14, 9, 26, 53, 589_793, tzinfo=TZ)
TODAY = "memory/2025-03-14"


@pytest.fixture
def folder(tmp_path: Path) -> Path:
    return tmp_path / "memories"


@pytest.fixture
def mem(folder: Path) -> MemoryFolder:
    return MemoryFolder(folder, clock=lambda: NOW)


def frontmatter_of(path: Path) -> dict[str, object]:
    text = path.read_text(encoding="utf-8")
    assert text.startswith("---\n")
    data = yaml.safe_load(text.split("---\n")[1])
    assert isinstance(data, dict)
    return data


def leftovers(folder: Path) -> list[str]:
    """Hidden files a write may have left (the lock file, the folder's table and the trash
    folder are expected)."""
    found = []
    for dirpath, dirnames, filenames in os.walk(folder):
        if os.path.basename(dirpath) == TABLE_DIR:
            continue
        for name in [*dirnames, *filenames]:
            if name.startswith(".") and name not in (".noteseek-memory.lock", TRASH, TABLE_DIR):
                found.append(os.path.join(dirpath, name))
    return found


# -- layout and names --------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("rel", "kind"),
    [
        ("MEMORY.md", "long_term"),
        ("memory/2025-01-31.md", "daily"),
        ("memory/2025-01-31-session-notes.md", "daily"),  # OpenClaw's session-memory files
        ("projects/atlas.md", "memory"),
        ("DREAMS.md", "memory"),
        ("memory/notes.md", None),
        ("memory/2025-02-30.md", None),
        ("memory/2025/01-31.md", None),
        (".trash/a.md", None),
        ("a/.hidden.md", None),
        (".git/x.md", None),
        ("~lock.md", None),
        ("notes.txt", None),
        ("MEMORY.markdown", None),
    ],
)
def test_memory_kind(rel: str, kind: str | None) -> None:
    assert memory_kind(rel) == kind


def test_constants() -> None:
    assert MEMORY_TYPES == ("plan", "journal", "fact", "observation", "reflection")
    assert MEMORY_STATUSES == ("active", "archived")
    assert (DAILY_DIR, LONG_TERM, TRASH) == ("memory", "MEMORY.md", ".trash")


@pytest.mark.parametrize(
    ("name", "message"),
    [
        ("../x", "'..'"),
        ("/etc/x", "absolute"),
        ("a/../../b", "'..'"),
        ("./a", "'.'"),
        (".hidden", "hidden"),
        ("a/.hidden", "hidden"),
        (".trash/a", "restore"),
        ("~a", "'~'"),
        ("memory/notadate", "reserved"),
        ("memory/2025-02-30", "not a real date"),
        ("memory/2025-01-01/x", "reserved"),
        ("a\x00b", "U+0000"),
        ("a\nb", "U+000A"),
        ("a\u202eb", "U+202E"),
        ("a\\b", "backslash"),
        ("", "empty"),
        (".md", "empty"),
        ("a//b", "empty segment"),
        ("a/", "empty segment"),
        ("x/" * 500 + "x", "1,001 bytes"),
        (None, "must be a string"),
    ],
)
def test_bad_names_are_refused_precisely(name: object, message: str) -> None:
    with pytest.raises(InvalidName, match=re.escape(message)):
        check_name(name)


@pytest.mark.parametrize(
    ("name", "message"),
    [
        ("a:b", "':'"),
        ("a*b", "'*'"),
        (" a", "space"),
        ("a ", "space"),
        ("a.", "ends with '.'"),
        ("memory/2025-01-01", "append"),
        ("Memory/2025-01-01", "letter case"),
        ("memory", "letter case"),
        ("notes.txt", "names a .txt file; memories are Markdown files: use 'notes'"),
        ("a.md.md", "names a .md file"),
        ("x" * 201, "'xxxxxxxxxxxxxxxxxxxxx...' is 201 bytes"),
        ("é" * 120, "is 240 bytes long in UTF-8 (120 characters)"),
        ("CON", "Windows device name CON"),
        ("nul", "Windows device name NUL"),
        ("notes/aux.plan", "Windows device name AUX"),
        ("com1", "Windows device name COM1"),
        ("LPT9.draft", "Windows device name LPT9"),
        ("МЕМОRY", "looks like the long-term file MEMORY (look-alike letters: 'М' (Cyrillic)"),
        ("ΜΕΜΟRY", "looks like the long-term file MEMORY (look-alike letters: 'Μ' (Greek)"),
        ("memоry/2025-01-01", "folder 'memоry' looks like the daily-log folder 'memory/'"),
        ("memоry/notes", "looks like the daily-log folder"),
        ("ＭＥＭＯＲＹ", "looks like the long-term file MEMORY (fullwidth or other compatibility"),
    ],
)
def test_new_names_are_held_to_plain_characters(name: str, message: str) -> None:
    check_name(name)  # an existing file of that name may still be read and changed
    with pytest.raises(InvalidName, match=re.escape(message)):
        check_name(name, new=True)


@pytest.mark.parametrize(
    ("name", "checked"),
    [
        ("projects/atlas", "projects/atlas"),
        ("projects/atlas.md", "projects/atlas"),
        ("Überlegungen/straße", "Überlegungen/straße"),
        ("日本語 メモ", "日本語 メモ"),
        ("v1.2 plan_final-b", "v1.2 plan_final-b"),
        ("project.atlas.plan", "project.atlas.plan"),
        ("MEMORY", "MEMORY"),
        ("MEMORY.md", "MEMORY"),
        ("x" * 200, "x" * 200),
        ("é" * 100, "é" * 100),  # 200 bytes
        ("e\u0301" * 100, "é" * 100),  # written in NFC
        ("console", "console"),
        ("com10", "com10"),
    ],
)
def test_good_names(name: str, checked: str) -> None:
    assert check_name(name, new=True) == checked


def test_daily_names_are_valid_for_existing_logs() -> None:
    assert check_name("memory/2025-01-31") == "memory/2025-01-31"
    assert check_name("memory/2025-01-31-session.md") == "memory/2025-01-31-session"


def test_traversal_writes_nothing_anywhere(mem: MemoryFolder, tmp_path: Path) -> None:
    for name in ("../x", "/etc/x", "a/../../b", ".hidden", "memory/notadate", "a\x00b"):
        with pytest.raises(InvalidName):
            mem.create(name, "text")
        with pytest.raises(InvalidName):
            mem.update(name, body="text")
        with pytest.raises(InvalidName):
            mem.delete(name)
        with pytest.raises(InvalidName):
            mem.read(name)
    assert sorted(p.name for p in tmp_path.iterdir()) == []  # not even the folder was made


def test_a_symlinked_folder_leading_out_is_refused(
    mem: MemoryFolder, folder: Path, tmp_path: Path
) -> None:
    outside = tmp_path / "outside"
    outside.mkdir()
    (outside / "secret.md").write_text("---\ntype: fact\n---\nsecret\n", encoding="utf-8")
    folder.mkdir()
    os.symlink(outside, folder / "link")
    os.symlink(outside / "secret.md", folder / "evil.md")
    for call in (
        lambda: mem.create("link/x", "text"),
        lambda: mem.update("link/secret", body="changed"),
        lambda: mem.update("evil", body="changed"),
        lambda: mem.read("evil"),
        lambda: mem.delete("evil"),
    ):
        with pytest.raises(InvalidName, match="outside the memory folder"):
            call()
    assert sorted(p.name for p in outside.iterdir()) == ["secret.md"]
    assert (outside / "secret.md").read_text(encoding="utf-8").endswith("secret\n")
    listed = mem.list()
    assert listed.records == []
    assert dict(listed.problems) == {
        "evil": "a symbolic link leading out of the memory folder",
        "link": "a symbolic link to a folder; not followed",
    }


def test_a_symlink_inside_the_folder_is_written_through(mem: MemoryFolder, folder: Path) -> None:
    mem.create("real", "the real text")
    os.symlink(folder / "real.md", folder / "alias.md")
    mem.update("alias", status="archived")
    assert (folder / "alias.md").is_symlink()
    assert mem.read("real").status == "archived"


def test_a_trash_folder_leading_out_is_refused(
    mem: MemoryFolder, folder: Path, tmp_path: Path
) -> None:
    outside = tmp_path / "outside"
    outside.mkdir()
    mem.create("a", "text")
    os.symlink(outside, folder / TRASH)
    with pytest.raises(InvalidName, match="outside"):
        mem.delete("a")
    assert (folder / "a.md").exists()
    assert list(outside.iterdir()) == []


# -- create ------------------------------------------------------------------------------------


def test_create_writes_frontmatter_title_body_and_links(mem: MemoryFolder, folder: Path) -> None:
    result = mem.create(
        "projects/atlas.md",
        "Atlas stores events in Postgres.\r\n",
        type="plan",
        tags=["#project/atlas", "db", "DB"],
        links=["src/db.py", "[[Design notes]]"],
        title="Atlas storage",
    )
    path = folder / "projects" / "atlas.md"
    assert (result.name, result.path, result.created, result.duplicate_of) == (
        "projects/atlas",
        path,
        True,
        None,
    )
    assert path.read_bytes() == (
        b"---\ntype: plan\nstatus: active\ntags: [project/atlas, db]\n"
        b"created_at: 2025-03-14T09:26:53+02:00\nupdated_at: 2025-03-14T09:26:53+02:00\n---\n\n"
        b"# Atlas storage\n\nAtlas stores events in Postgres.\n\n"
        b"Related: [[src/db.py]], [[Design notes]]\n"
    )
    record = mem.read("projects/atlas")
    assert record.title == "Atlas storage"
    assert (
        record.body
        == "Atlas stores events in Postgres.\n\nRelated: [[src/db.py]], [[Design notes]]"
    )
    assert record.created_at == NOW.replace(microsecond=0)
    assert record.tags == ("project/atlas", "db")
    assert record.kind == "memory"
    assert record.frontmatter["created_at"] == "2025-03-14T09:26:53+02:00"


def test_create_parses_with_the_markdown_parser(mem: MemoryFolder, folder: Path) -> None:
    from noteseek.parse import parse_markdown

    mem.create("a", "Body with a link.", tags=["x"], links=["src/auth.py"], title="T")
    doc = parse_markdown((folder / "a.md").read_text(encoding="utf-8"), "a.md")
    assert doc.title == "T"
    assert doc.warnings == []
    assert "x" in doc.tags
    assert [link.target for link in doc.links] == ["src/auth.py"]


def test_create_refuses_to_overwrite(mem: MemoryFolder, folder: Path) -> None:
    mem.create("a", "first text", tags=["x"])
    before = (folder / "a.md").read_bytes()
    same = mem.create("a.md", "first   text\n", tags=["X"])
    assert (same.name, same.created, same.duplicate_of) == ("a", False, None)
    for kwargs in ({"tags": ["y"]}, {"tags": ["x"], "type": "plan"}, {"tags": ["x"], "title": "T"}):
        with pytest.raises(Conflict, match="use update"):
            mem.create("a", "first text", **kwargs)  # type: ignore[arg-type]
    with pytest.raises(Conflict, match="different content"):
        mem.create("a", "second text", tags=["x"])
    assert (folder / "a.md").read_bytes() == before


def test_identical_text_is_not_duplicated(mem: MemoryFolder, folder: Path) -> None:
    mem.create("facts/db", "Atlas uses  Postgres 16.\nIt runs on the db host.", links=["x"])
    result = mem.create("other/name", "  Atlas uses Postgres 16. It runs\n\n on the db host. ")
    assert (result.name, result.created, result.duplicate_of) == ("facts/db", False, "facts/db")
    assert "already holds this text" in result.message
    assert not (folder / "other").exists()
    assert mem.create("other/name", "Atlas uses Postgres 17.").created


def test_invalid_field_values(mem: MemoryFolder) -> None:
    cases: list[tuple[dict[str, object], str]] = [
        ({"type": "idea"}, "type 'idea' is not one of: plan, journal"),
        ({"status": "done"}, "status 'done' is not one of: active, archived"),
        ({"tags": ["two words"]}, "not a tag"),
        ({"tags": ["123"]}, "not a tag"),
        ({"links": ["a]]b"]}, "not a document name"),
        ({"links": ["a\nb"]}, "not a document name"),
        ({"title": "two\nlines"}, "one line"),
        ({"title": "  "}, "non-empty"),
    ]
    for kwargs, message in cases:
        with pytest.raises(InvalidMemory, match=re.escape(message)):
            mem.create("a", "text", **kwargs)  # type: ignore[arg-type]
    for body, message in (("  \n ", "empty"), ("a\x00b", "NUL"), (3, "must be a string")):
        with pytest.raises(InvalidMemory, match=message):
            mem.create("a", body)  # type: ignore[arg-type]


def test_tags_as_one_string(mem: MemoryFolder) -> None:
    mem.create("a", "text", tags="alpha, #beta gamma/delta")
    assert mem.read("a").tags == ("alpha", "beta", "gamma/delta")


# -- sizes and atomic writes -------------------------------------------------------------------


def test_huge_bodies_are_refused_and_leave_nothing(folder: Path) -> None:
    mem = MemoryFolder(folder, max_bytes=1000, clock=lambda: NOW)
    with pytest.raises(TooLarge, match="1001 bytes of UTF-8; the limit is 1000 bytes"):
        mem.create("a", "x" * 1001)
    with pytest.raises(TooLarge, match="the limit is 1000 bytes"):
        mem.create("a", "é" * 501)  # 1002 bytes of UTF-8, 501 characters
    with pytest.raises(TooLarge):
        mem.append("y" * 1001)
    mem.create("a", "small")
    with pytest.raises(TooLarge):
        mem.update("a", body="z" * 5000)
    assert mem.create("b", "x" * 1000).created
    listed = sorted(p.name for p in folder.iterdir())
    assert listed == [".noteseek-memory-table", ".noteseek-memory.lock", "a.md", "b.md"]
    assert leftovers(folder) == []


def test_a_log_cannot_grow_past_four_times_max_bytes(folder: Path) -> None:
    """A full daily log runs on in a continuation (issue 44 R16); an update is refused."""
    mem = MemoryFolder(folder, max_bytes=100, clock=lambda: NOW)
    for i in range(4):
        mem.append(f"{i} " + "w" * 70)
    path = folder / f"{TODAY}.md"
    before = path.read_bytes()
    done = mem.append("5 " + "w" * 70)
    assert done.created and done.name == f"{TODAY}-2"
    assert path.read_bytes() == before
    assert "5 www" in (folder / f"{TODAY}-2.md").read_text()
    assert not mem.append("5 " + "w" * 70).created  # found in the continuation: not twice
    with pytest.raises(TooLarge, match="400 bytes"):
        mem.update(TODAY, append_text="m" * (400 - len(before)))  # plus "\n\n" is too much
    assert path.read_bytes() == before
    assert leftovers(folder) == []


def test_a_failed_write_leaves_the_old_file_and_no_temporary_file(
    mem: MemoryFolder, folder: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    mem.create("a", "original text")
    before = (folder / "a.md").read_bytes()

    def broken_replace(src: str, dst: str) -> None:
        raise OSError(28, "No space left on device")

    monkeypatch.setattr(mf_module.os, "replace", broken_replace)
    with pytest.raises(MemoryFolderError, match="could not write a: No space left on device"):
        mem.update("a", body="new text")
    with pytest.raises(MemoryFolderError):
        mem.append("an entry")
    assert (folder / "a.md").read_bytes() == before
    assert leftovers(folder) == []
    assert not (folder / f"{TODAY}.md").exists()


def test_permissions_of_an_existing_file_are_kept(mem: MemoryFolder, folder: Path) -> None:
    mem.create("a", "text")
    os.chmod(folder / "a.md", 0o600)
    mem.update("a", status="archived")
    assert stat.S_IMODE((folder / "a.md").stat().st_mode) == 0o600


def test_busy_when_another_writer_holds_the_lock(folder: Path) -> None:
    mem = MemoryFolder(folder, lock_timeout=0.05, clock=lambda: NOW)
    mem.append("first")
    with (
        filelock.FileLock(str(folder / ".noteseek-memory.lock")),
        pytest.raises(Busy, match="another writer"),
    ):
        mem.append("second")
    assert mem.append("second").created


def _append_many(folder: str, worker: int, count: int) -> None:
    mem = MemoryFolder(folder)
    when = dt.datetime(2025, 3, 14, 12, 0, tzinfo=TZ)
    for i in range(count):
        mem.append(f"worker {worker} entry {i} " + "text " * 40, title=f"w{worker}", when=when)


def test_three_processes_appending_lose_and_tear_nothing(folder: Path) -> None:
    # Forked workers start at once (spawned ones import pytest and noteseek first, seconds on a
    # loaded machine); either way each is its own process with its own lock file descriptor.
    methods = multiprocessing.get_all_start_methods()
    context = multiprocessing.get_context("fork" if "fork" in methods else "spawn")
    workers = [
        context.Process(target=_append_many, args=(str(folder), worker, 30)) for worker in range(3)
    ]
    for process in workers:
        process.start()
    for process in workers:
        process.join(60)
        assert process.exitcode == 0
    text = (folder / f"{TODAY}.md").read_text(encoding="utf-8")
    assert text.startswith("# 2025-03-14\n\n## 12:00 w")
    for worker in range(3):
        for i in range(30):
            assert text.count(f"worker {worker} entry {i} text") == 1
    entries = text.split("\n## ")[1:]
    assert len(entries) == 90
    assert all(
        re.fullmatch(r"12:00 w\d\n\nworker \d entry \d+ (text ){39}text\n\n?", e) for e in entries
    )
    assert leftovers(folder) == []
    assert MemoryFolder(folder).read(TODAY).body is not None


# -- append ------------------------------------------------------------------------------------


def test_append_starts_the_log_and_adds_entries(mem: MemoryFolder, folder: Path) -> None:
    first = mem.append("Decided to use Postgres.", title="decision")
    assert (first.name, first.created) == (TODAY, True)
    mem.append("Second\r\nentry.")
    later = dt.datetime(2025, 3, 14, 23, 59, tzinfo=TZ)
    mem.append("Late entry.", when=later)
    assert (folder / f"{TODAY}.md").read_text(encoding="utf-8") == (
        "# 2025-03-14\n\n## 09:26 decision\n\nDecided to use Postgres.\n"
        "\n## 09:26\n\nSecond\nentry.\n\n## 23:59\n\nLate entry.\n"
    )
    other = mem.append("Next day.", when=dt.datetime(2025, 3, 15, 8, 5))  # naive: local time
    assert other.name == "memory/2025-03-15"


def test_append_skips_an_entry_already_in_the_log(mem: MemoryFolder, folder: Path) -> None:
    mem.append("Decided to use Postgres.", title="decision")
    before = (folder / f"{TODAY}.md").read_bytes()
    again = mem.append("  Decided to use\nPostgres.  ", title="other title")
    assert (again.created, again.name) == (False, TODAY)
    assert (folder / f"{TODAY}.md").read_bytes() == before
    assert mem.append("Decided to use Postgres today.").created


def test_append_to_a_hand_written_log(mem: MemoryFolder, folder: Path) -> None:
    path = folder / f"{TODAY}.md"
    path.parent.mkdir(parents=True)
    path.write_bytes(b"# My day\n\nno newline at the end")
    mem.append("entry")
    assert path.read_bytes() == b"# My day\n\nno newline at the end\n\n## 09:26\n\nentry\n"


# -- update ------------------------------------------------------------------------------------


def test_update_keeps_unknown_keys_and_created_at(folder: Path) -> None:
    times = iter([NOW, NOW + dt.timedelta(hours=1)])
    mem = MemoryFolder(folder, clock=lambda: next(times))
    mem.create("a", "text", tags=["x"], title="Title")
    path = folder / "a.md"
    text = path.read_text(encoding="utf-8")
    path.write_text(
        text.replace("---\n\n", "owner: ana\nreviewed: 2024-01-02\nextra: {k: [1, 2]}\n---\n\n"),
        encoding="utf-8",
    )
    mem.update("a", type="observation", tags=["y", "z"], status="archived")
    data = frontmatter_of(path)
    assert data == {
        "type": "observation",
        "status": "archived",
        "tags": ["y", "z"],
        "created_at": dt.datetime(2025, 3, 14, 7, 26, 53, tzinfo=dt.UTC),
        "updated_at": dt.datetime(2025, 3, 14, 8, 26, 53, tzinfo=dt.UTC),
        "owner": "ana",
        "reviewed": dt.date(2024, 1, 2),
        "extra": {"k": [1, 2]},
    }
    assert path.read_text(encoding="utf-8").endswith("---\n\n# Title\n\ntext\n")


def test_update_body_title_and_append_text(mem: MemoryFolder, folder: Path) -> None:
    mem.create("a", "old text", links=["src/x.py"], title="Old")
    mem.update("a", append_text="An added paragraph.")
    record = mem.read("a")
    assert record.body == "old text\n\nAn added paragraph.\n\nRelated: [[src/x.py]]"
    mem.update("a", title="New", body="new text")
    record = mem.read("a")
    assert (record.title, record.body) == ("New", "new text")
    assert (folder / "a.md").read_text(encoding="utf-8").endswith("---\n\n# New\n\nnew text\n")


def test_update_replaces_a_tag_key(mem: MemoryFolder, folder: Path) -> None:
    (folder).mkdir()
    (folder / "a.md").write_text("---\ntag: old\n---\nbody\n", encoding="utf-8")
    mem.update("a", tags=["new"])
    assert mem.read("a").tags == ("new",)
    assert "tag" not in frontmatter_of(folder / "a.md")


def test_daily_log_and_long_term_get_frontmatter_only_when_a_field_is_set(
    mem: MemoryFolder, folder: Path
) -> None:
    mem.append("entry one")
    path = folder / f"{TODAY}.md"
    mem.update(TODAY, append_text="a note")
    assert path.read_text(encoding="utf-8") == "# 2025-03-14\n\n## 09:26\n\nentry one\n\na note\n"
    mem.update(TODAY, status="archived")
    assert frontmatter_of(path) == {
        "status": "archived",
        "updated_at": dt.datetime(2025, 3, 14, 7, 26, 53, tzinfo=dt.UTC),
    }
    assert path.read_text(encoding="utf-8").endswith(
        "---\n\n# 2025-03-14\n\n## 09:26\n\nentry one\n\na note\n"
    )
    record = mem.read(TODAY)
    assert (record.kind, record.status, record.type) == ("daily", "archived", "journal")
    assert record.created_at == dt.datetime(2025, 3, 14).astimezone()

    (folder / LONG_TERM).write_text("# Facts\n\n- the sky is blue\n", encoding="utf-8")
    mem.update("MEMORY", append_text="- water is wet")
    assert (folder / LONG_TERM).read_text(encoding="utf-8") == (
        "# Facts\n\n- the sky is blue\n\n- water is wet\n"
    )
    assert mem.read("MEMORY.md").kind == "long_term"
    (folder / LONG_TERM).write_text("no heading\n", encoding="utf-8")
    with pytest.raises(InvalidMemory, match="reads as frontmatter"):
        mem.update("MEMORY", body="---\na: 1\n---\ntext")


def test_update_of_a_named_memory_without_frontmatter_keeps_its_date(
    mem: MemoryFolder, folder: Path
) -> None:
    folder.mkdir()
    path = folder / "hand.md"
    path.write_text("written by hand\n", encoding="utf-8")
    os.utime(path, (1_700_000_000, 1_700_000_000))
    assert mem.read("hand").created_at == dt.datetime.fromtimestamp(1_700_000_000).astimezone()
    mem.update("hand", body="rewritten")
    record = mem.read("hand")
    assert record.created_at.timestamp() == 1_700_000_000
    assert record.updated_at == NOW.replace(microsecond=0)
    assert record.body == "rewritten"


def test_update_errors(mem: MemoryFolder) -> None:
    with pytest.raises(NotFound, match="no memory named 'missing'"):
        mem.update("missing", body="x")
    mem.create("a", "text")
    with pytest.raises(InvalidMemory, match="nothing to update"):
        mem.update("a")
    with pytest.raises(InvalidMemory, match="type 'idea'"):
        mem.update("a", type="idea")
    with pytest.raises(InvalidMemory, match="append_text is empty"):
        mem.update("a", append_text="")


# -- hand-edited files -------------------------------------------------------------------------


def test_invalid_frontmatter_is_reported_refused_and_never_rewritten(
    mem: MemoryFolder, folder: Path
) -> None:
    mem.create("good", "a good memory")
    bad = folder / "notes" / "bad.md"
    bad.parent.mkdir()
    bad.write_bytes(b"---\ntitle: [unclosed\ntype: fact\n---\nThe body survives.\n")
    latin = folder / "latin.md"
    latin.write_bytes("caf\xe9\n".encode("latin-1"))
    before = bad.read_bytes()

    listed = mem.list()
    assert [r.name for r in listed.records] == ["good"]
    problems = dict(listed.problems)
    assert set(problems) == {"notes/bad", "latin"}
    assert "invalid YAML at line 3" in problems["notes/bad"]
    assert "not valid UTF-8" in problems["latin"]
    assert mem.stats().problems == 2

    with pytest.raises(InvalidMemory, match=r"invalid YAML.*it was not changed"):
        mem.update("notes/bad", status="archived")
    with pytest.raises(InvalidMemory, match="invalid YAML"):
        mem.update("notes/bad", append_text="more")
    with pytest.raises(InvalidMemory, match="invalid YAML"):
        mem.read("notes/bad")
    with pytest.raises(Conflict, match="already exists"):
        mem.create("notes/bad", "The body survives.")
    with pytest.raises(InvalidMemory, match="UTF-8"):
        mem.update("latin", body="x")
    assert bad.read_bytes() == before
    assert latin.read_bytes() == "caf\xe9\n".encode("latin-1")
    assert leftovers(folder) == []
    # A person can still move it out of the way, and it comes back byte for byte.
    mem.delete("notes/bad")
    mem.restore("notes/bad")
    assert bad.read_bytes() == before


def test_frontmatter_that_is_not_a_mapping_is_reported(mem: MemoryFolder, folder: Path) -> None:
    folder.mkdir()
    (folder / "list.md").write_text("---\n- a\n- b\n---\nbody\n", encoding="utf-8")
    assert "expected a mapping" in dict(mem.list().problems)["list"]
    with pytest.raises(InvalidMemory):
        mem.update("list", body="x")


# -- delete and restore ------------------------------------------------------------------------


def test_trash_and_restore_round_trip(mem: MemoryFolder, folder: Path) -> None:
    mem.create("projects/atlas", "atlas text", tags=["p"])
    before = (folder / "projects" / "atlas.md").read_bytes()
    gone = mem.delete("projects/atlas")
    assert gone.name == ".trash/projects/atlas"
    assert gone.path == folder / TRASH / "projects" / "atlas.md"
    assert not (folder / "projects" / "atlas.md").exists()
    assert mem.list().records == []
    trashed = mem.list(include_trash=True).records
    assert [(r.name, r.trashed) for r in trashed] == [(".trash/projects/atlas", True)]
    assert mem.read(".trash/projects/atlas").body == "atlas text"
    with pytest.raises(NotFound):
        mem.read("projects/atlas")

    back = mem.restore("projects/atlas")
    assert (back.name, back.path) == ("projects/atlas", folder / "projects" / "atlas.md")
    assert (folder / "projects" / "atlas.md").read_bytes() == before
    assert mem.list(include_trash=True).records[0].name == "projects/atlas"


def test_deleting_again_stamps_the_trash_name(folder: Path) -> None:
    times = iter(NOW + dt.timedelta(seconds=s) for s in range(100))
    mem = MemoryFolder(folder, clock=lambda: next(times))
    mem.create("a", "version one")
    assert mem.delete("a").name == ".trash/a"
    mem.create("a", "version two")
    second = mem.delete("a")
    assert re.fullmatch(r"\.trash/a~20250314T0926\d\d", second.name)
    mem.create("a", "version three")
    third = mem.delete("a")
    assert third.name != second.name
    assert mem.stats().trash == 3

    assert mem.restore("a").message.startswith(f"restored {third.name}")
    assert mem.read("a").body == "version three"
    with pytest.raises(Conflict, match="a memory with that name exists"):
        mem.restore("a")
    with pytest.raises(Conflict):
        mem.restore(".trash/a")
    mem.delete("a")
    restored = mem.restore(".trash/a")
    assert restored.name == "a"
    assert mem.read("a").body == "version one"


def test_delete_and_restore_errors(mem: MemoryFolder) -> None:
    with pytest.raises(NotFound, match="no memory named 'x'"):
        mem.delete("x")
    with pytest.raises(NotFound, match="in the trash"):
        mem.restore("x")
    with pytest.raises(NotFound):
        mem.restore(".trash/x")
    with pytest.raises(InvalidName):
        mem.restore(".trash/../x")
    with pytest.raises(InvalidName):
        mem.delete(".trash/x")


def test_a_daily_log_goes_to_the_trash_and_back(mem: MemoryFolder, folder: Path) -> None:
    mem.append("entry")
    mem.delete(TODAY)
    assert (folder / TRASH / f"{TODAY}.md").exists()
    assert mem.list(include_trash=True).records[0].kind == "daily"
    mem.restore(TODAY)
    assert mem.read(TODAY).kind == "daily"


# -- read, list, stats -------------------------------------------------------------------------


def _populate(folder: Path) -> MemoryFolder:
    days = iter(dt.datetime(2025, 3, day, 10, 0, tzinfo=dt.UTC) for day in (1, 5, 10, 12, 13))
    mem = MemoryFolder(folder, clock=lambda: next(days))
    mem.create("plans/atlas", "plan atlas", type="plan", tags=["project/atlas", "Q1"])
    mem.create("facts/db", "db fact", tags=["project/beacon"])
    mem.create("refl", "a reflection", type="reflection", status="archived", tags=["q1"])
    mem.append("a log entry", when=dt.datetime(2025, 3, 11, 9, 0, tzinfo=dt.UTC))
    (folder / LONG_TERM).write_text("# Long term\n\nfacts\n", encoding="utf-8")
    os.utime(folder / LONG_TERM, (1_741_000_000, 1_741_000_000))  # 2025-03-03
    (folder / "memory" / "2025-03-02-session.md").write_text("session notes\n", encoding="utf-8")
    (folder / "memory" / "scratch.md").write_text("not a memory\n", encoding="utf-8")
    (folder / ".git").mkdir()
    (folder / ".git" / "x.md").write_text("hidden\n", encoding="utf-8")
    (folder / "notes.txt").write_text("not markdown\n", encoding="utf-8")
    return mem


def test_list_sorts_newest_first_and_filters(folder: Path) -> None:
    mem = _populate(folder)
    listed = mem.list()
    assert listed.problems == []
    assert [r.name for r in listed.records] == [
        "memory/2025-03-11",
        "refl",
        "facts/db",
        "MEMORY",
        "memory/2025-03-02-session",
        "plans/atlas",
    ]
    assert all(r.body is None for r in listed.records)
    assert [r.kind for r in listed.records] == [
        "daily",
        "memory",
        "memory",
        "long_term",
        "daily",
        "memory",
    ]

    def names(**kwargs: object) -> list[str]:
        return [r.name for r in mem.list(**kwargs).records]  # type: ignore[arg-type]

    assert names(type="plan") == ["plans/atlas"]
    assert names(type="journal") == ["memory/2025-03-11", "memory/2025-03-02-session"]
    assert names(status="archived") == ["refl"]
    assert names(tags=["project"]) == ["facts/db", "plans/atlas"]
    assert names(tags=["PROJECT/atlas"]) == ["plans/atlas"]
    assert names(tags=["q1"]) == ["refl", "plans/atlas"]
    assert names(tags=["q1", "project"]) == ["plans/atlas"]
    assert names(tags=["proj"]) == []
    assert names(after=dt.datetime(2025, 3, 5, 10, 0, tzinfo=dt.UTC)) == [
        "memory/2025-03-11",
        "refl",
        "facts/db",
    ]
    assert names(
        after=dt.datetime(2025, 3, 4, tzinfo=dt.UTC),
        before=dt.datetime(2025, 3, 10, 10, 0, tzinfo=dt.UTC),
    ) == ["facts/db"]
    with pytest.raises(InvalidMemory, match="type 'facts'"):
        mem.list(type="facts")


def test_read_returns_the_record_with_its_body(folder: Path) -> None:
    mem = _populate(folder)
    record = mem.read("plans/atlas.md")
    assert record.name == "plans/atlas"
    assert record.path == folder / "plans" / "atlas.md"
    assert (record.type, record.status, record.kind) == ("plan", "active", "memory")
    assert record.tags == ("project/atlas", "Q1")
    assert record.created_at == dt.datetime(2025, 3, 1, 10, 0, tzinfo=dt.UTC)
    assert record.body == "plan atlas"
    assert record.size == (folder / "plans" / "atlas.md").stat().st_size
    long_term = mem.read("MEMORY")
    assert (long_term.title, long_term.body, long_term.type) == ("Long term", "facts", "fact")
    assert long_term.created_at.timestamp() == 1_741_000_000
    session = mem.read("memory/2025-03-02-session")
    assert session.created_at == dt.datetime(2025, 3, 2).astimezone()
    with pytest.raises(InvalidName):
        mem.read("memory/scratch")


def test_stats(folder: Path) -> None:
    mem = _populate(folder)
    mem.delete("facts/db")
    stats = mem.stats()
    assert stats.memories == 5
    assert stats.by_type == {"journal": 2, "reflection": 1, "fact": 1, "plan": 1}
    assert stats.by_status == {"active": 4, "archived": 1}
    assert stats.daily_logs == 2
    assert stats.trash == 1
    assert stats.problems == 0
    assert stats.oldest == dt.datetime(2025, 3, 1, 10, 0, tzinfo=dt.UTC)
    assert stats.newest == dt.datetime(2025, 3, 11).astimezone()
    sizes = [r.size for r in mem.list().records]
    assert stats.total_bytes == sum(sizes)


def test_an_empty_or_missing_folder(folder: Path) -> None:
    mem = MemoryFolder(folder)
    assert mem.list().records == []
    assert mem.stats().memories == 0
    assert mem.stats().oldest is None
    with pytest.raises(NotFound):
        mem.read("a")


def test_a_leading_heading_in_the_body_is_the_title(mem: MemoryFolder, folder: Path) -> None:
    first = mem.create("a", "# Atlas\n\nAtlas uses Postgres.")
    assert mem.read("a").title == "Atlas"
    assert (
        (folder / "a.md")
        .read_text(encoding="utf-8")
        .endswith("---\n\n# Atlas\n\nAtlas uses Postgres.\n")
    )
    again = mem.create("a", "# Atlas\n\nAtlas uses Postgres.")
    assert (first.created, again.created) == (True, False)
    same_text = mem.create("b", "# Another title\n\nAtlas uses Postgres.")
    assert same_text.duplicate_of == "a"


def test_a_trash_entry_linking_to_a_file_that_is_not_markdown_is_refused(
    mem: MemoryFolder, folder: Path
) -> None:
    mem.create("a", "text")
    (folder / TRASH).mkdir()
    (folder / TRASH / "data.txt").write_text("not a memory\n", encoding="utf-8")
    os.symlink(folder / TRASH / "data.txt", folder / TRASH / "b.md")
    with pytest.raises(InvalidName, match="not a memory"):
        mem.restore(".trash/b")
    assert not (folder / "b.md").exists()


def test_every_listed_name_can_be_read(mem: MemoryFolder, folder: Path) -> None:
    folder.mkdir()
    for rel in ("memory.md", "Memory/x.md", "notes.txt.md", "a b/c:d.md"):
        (folder / rel).parent.mkdir(exist_ok=True)
        (folder / rel).write_text(f"written by hand as {rel}\n", encoding="utf-8")
    names = [r.name for r in mem.list().records]
    assert sorted(names) == ["Memory/x", "a b/c:d", "memory", "notes.txt"]
    for name in names:
        assert mem.read(name).body == f"written by hand as {name}.md"


def test_update_title_changes_a_title_key_and_the_heading(mem: MemoryFolder, folder: Path) -> None:
    folder.mkdir()
    path = folder / "a.md"
    path.write_text(
        "---\ntitle: Old\ncreated_at: 2024-05-01\n---\n# Old\n\ntext\n", encoding="utf-8"
    )
    assert mem.read("a").created_at == dt.datetime(2024, 5, 1).astimezone()
    mem.update("a", title="New")
    assert frontmatter_of(path)["title"] == "New"
    assert frontmatter_of(path)["created_at"] == dt.date(2024, 5, 1)
    assert path.read_text(encoding="utf-8").endswith("---\n\n# New\n\ntext\n")


# -- appends to a long daily log ---------------------------------------------------------------


@pytest.mark.parametrize(
    ("log", "text", "held"),
    [
        ("# 2025-01-01\n\n## 10:00\n\nthe deploy  key\nrotates\n", "the deploy key rotates", True),
        ("# 2025-01-01\n\n## 10:00\n\nthe deploy key rotates weekly\n", "the deploy key", False),
        ("# 2025-01-01\n\n## 10:00\n\nthe key\n\n## 11:00\n\nrotates\n", "key rotates", False),
        ("# 2025-01-01\n\n## 10:00\n\nC++ (and .NET) [x]*?\n", "C++  (and .NET)\t[x]*?", True),
        ("# 2025-01-01\n\n## 10:00\n\nalpha\n", "beta", False),
    ],
)
def test_an_entry_is_found_whatever_its_white_space(log: str, text: str, held: bool) -> None:
    from noteseek.sources.memory.format import has_entry

    assert has_entry(log, text) is held


@pytest.mark.parametrize(
    "text",
    [
        "a\n\nRelated: [[x]]\n",
        "Related: [[x]]",
        "a Related: [[x]]",
        "a\nRelated: [[x]] \n\n\n",
        "a\n\nRelated: [[x]]\nb",
        "x\n\n\nRelated: [[a]] Related: [[b]]",
        "\n\nRelated: [[q]]",
        "a\nRelated: [[x]\n",
        "",
    ],
)
def test_the_related_line_is_cut_only_when_it_ends_the_text(text: str) -> None:
    from noteseek.sources.memory.format import _RELATED_RE, core_text

    assert core_text(text) == _RELATED_RE.sub("", text)


def test_a_create_is_not_a_duplicate_of_a_daily_log(tmp_path: Path) -> None:
    folder = MemoryFolder(tmp_path / "memory")
    when = dt.datetime(2025, 1, 1, 10, 0)
    folder.append("the deploy key rotates weekly", when=when)
    log_text = (tmp_path / "memory" / "memory" / "2025-01-01.md").read_text()
    body = log_text.split("\n", 1)[1].strip()
    made = folder.create("copy-of-the-day", body)
    assert made.created
    assert made.duplicate_of is None
