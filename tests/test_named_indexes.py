"""Named indexes from the command line (subprocesses, isolated user dirs): ``index --name``,
``use``, ``use --list``, ``indexes``, ``use --remove``, and the index in use that indexing
another folder never replaces silently."""

from __future__ import annotations

import json
import re
from pathlib import Path

from tests.helpers import run_cli, write

NO_VECTORS = {"NOTESEEK_EMBEDDING__ENABLED": "false"}


def _answered_by(elsewhere: Path, word: str) -> str:
    """The header line of a search run in a folder without a project file."""
    proc = run_cli(["search", word, "-m", "keyword"], elsewhere, NO_VECTORS)
    return proc.stderr.splitlines()[0]


def test_named_indexes_switch_only_when_asked(tmp_path: Path) -> None:
    work, home, elsewhere = tmp_path / "work", tmp_path / "home-notes", tmp_path / "cwd"
    write(work / "plan.md", "# Plan\n\nThe quarterly roadmap for the team.\n")
    write(home / "garden.md", "# Garden\n\nTomatoes and the roadmap of the garden beds.\n")
    elsewhere.mkdir()

    named = run_cli(["index", str(work), "--name", "work"], elsewhere, NO_VECTORS)
    assert "index named 'work' and in use" in named.stderr
    assert "roots: work)" in _answered_by(elsewhere, "roadmap")

    # Indexing another folder without a name keeps the index in use, and says so.
    other = run_cli(["index", str(home)], elsewhere, NO_VECTORS)
    assert "the index in use stays 'work'" in other.stderr
    assert "roots: work)" in _answered_by(elsewhere, "roadmap")

    run_cli(["index", str(home), "--name", "home"], elsewhere, NO_VECTORS)
    assert "roots: home-notes)" in _answered_by(elsewhere, "roadmap")

    switched = run_cli(["use", "work"], elsewhere)
    assert switched.stdout.startswith("using 'work': index ")
    assert "roots: work)" in _answered_by(elsewhere, "roadmap")
    status = json.loads(run_cli(["status", "--json"], elsewhere, NO_VECTORS).stdout)
    assert status["index_dir_reason"] == "the index in use: work (noteseek use)"

    listed = run_cli(["use", "--list"], elsewhere).stdout.splitlines()
    assert [line[:8] for line in listed if not line.startswith("    ")] == ["  home  ", "* work  "]
    shown = run_cli(["indexes"], elsewhere).stdout.splitlines()
    assert shown == listed
    # Each with what it holds: files, chunks, the model (none: keyword only), size, last write.
    assert re.match(r"    1 files, 1 chunks, keyword only, [0-9.]+ MB, last written 20", shown[-1])
    entries = json.loads(run_cli(["indexes", "--json"], elsewhere).stdout)
    assert [(e["name"], e["in_use"], e["exists"]) for e in entries] == [
        ("home", False, True),
        ("work", True, True),
    ]
    assert entries[1]["roots"] == {"work": str(work)}
    assert (entries[1]["files"], entries[1]["chunks"], entries[1]["model"]) == (1, 1, None)
    assert entries[1]["size_bytes"] > 0

    removed = run_cli(["use", "--remove", "home"], elsewhere)
    assert "forgot 'home'; its index stays in" in removed.stdout
    assert Path(entries[0]["dir"]).is_dir()  # the index folder is kept
    assert [e["name"] for e in json.loads(run_cli(["indexes", "--json"], elsewhere).stdout)] == [
        "work"
    ]


def test_named_index_errors_are_plain(tmp_path: Path) -> None:
    write(tmp_path / "notes" / "a.md", "# A\n\nText.\n")
    unknown = run_cli(["use", "nope"], tmp_path, code=1)
    assert "no index is named 'nope'" in unknown.stderr and "Traceback" not in unknown.stderr
    bad = run_cli(["index", str(tmp_path / "notes"), "--name", "bad name"], tmp_path, code=2)
    assert "cannot name an index" in bad.stderr
    assert not (tmp_path / "notes" / ".noteseek").exists()
    both = run_cli(["use", "x", "--remove", "y"], tmp_path, code=2)
    assert "not both" in both.stderr
    empty = run_cli(["indexes"], tmp_path)
    assert "no named indexes yet" in empty.stderr


def test_memory_search_names_the_index_that_answered(tmp_path: Path) -> None:
    notes = tmp_path / "notes"
    write(notes / "a.md", "# A\n\nText.\n")
    folder = tmp_path
    (folder / ".noteseek.toml").write_text(
        f'[roots.notes]\npath = "{notes.as_posix()}"\n', encoding="utf-8"
    )
    run_cli(["index"], folder, NO_VECTORS)
    run_cli(["memory", "add", "deploy-notes", "The deploy uses blue green switching."], folder)
    found = run_cli(["memory", "search", "blue green", "-m", "keyword"], folder, NO_VECTORS)
    header = found.stderr.splitlines()[0]
    assert header.startswith("index ") and "(roots: notes)" in header, found.stderr
    assert "deploy-notes" in found.stdout
    quiet = run_cli(["memory", "search", "blue green", "-m", "keyword", "-q"], folder, NO_VECTORS)
    assert not quiet.stderr.startswith("index ")


def test_any_command_and_the_mcp_server_open_a_named_index(tmp_path: Path) -> None:
    """``--index NAME`` (global, and on mcp and serve): an MCP client config names the index
    instead of copying its hashed folder; an unknown name lists the known ones."""
    from tests.mcp_client import call, run, session

    work, home, elsewhere = tmp_path / "work", tmp_path / "home-notes", tmp_path / "cwd"
    write(work / "plan.md", "# Plan\n\nThe quarterly roadmap for the team.\n")
    write(home / "garden.md", "# Garden\n\nTomatoes and the roadmap of the garden beds.\n")
    elsewhere.mkdir()
    run_cli(["index", str(work), "--name", "work"], elsewhere, NO_VECTORS)
    run_cli(["index", str(home), "--name", "home"], elsewhere, NO_VECTORS)  # now in use
    found = run_cli(["--index", "work", "search", "roadmap", "--json"], elsewhere, NO_VECTORS)
    assert [r["path"] for r in json.loads(found.stdout)["results"]] == ["plan.md"]
    wrong = run_cli(["--index", "nope", "search", "roadmap"], elsewhere, NO_VECTORS, code=2)
    assert "no index is named 'nope'; named indexes: home, work" in wrong.stderr

    async def main() -> None:
        async with session(elsewhere, "--index", "work", "--no-watch", env=NO_VECTORS) as client:
            out = await call(client, "query_documents", {"query": "roadmap"})
            assert [r["path"] for r in out["results"]] == ["plan.md"]

    run(main)
