"""Index-time choices are remembered per index: a keyword-only index stays keyword-only for
later runs until ``noteseek index --embed``, and every door says so plainly."""

from __future__ import annotations

import json
import sqlite3
import time
from pathlib import Path

import pytest

from noteseek.store.factory import index_file
from noteseek.store.folder import mark_damaged
from tests.helpers import project, run_cli, write
from tests.test_serve import serve_env, serving

NOTE = "keyword only (chosen at index time); run `noteseek index --embed` to add meaning search"


def _vault(tmp_path: Path) -> Path:
    notes = tmp_path / "notes"
    write(notes / "tea.md", "# Tea\n\nGreen tea is steeped at low temperature.\n")
    write(notes / "coffee.md", "# Coffee\n\nEspresso needs finely ground beans.\n")
    return project(tmp_path, {"notes": notes})


def _embedding(cwd: Path, env: dict[str, str]) -> dict[str, object]:
    data = json.loads(run_cli(["status", "--json"], cwd, env).stdout)
    return dict(data["embedding"])


# Embeddings on for this process's CLI runs: the point is that nothing gets embedded anyway.
ON = {"NOTESEEK_EMBEDDING__ENABLED": "true"}


@pytest.mark.embeddings
def test_keyword_only_is_remembered_until_embed(tmp_path: Path) -> None:
    cwd = _vault(tmp_path)
    first = run_cli(["index", "--keyword-only"], cwd, ON)
    assert NOTE in " ".join(first.stdout.split())

    # A plain index run later (a new note too) keeps the index keyword-only: nothing embedded.
    write(cwd / "notes" / "water.md", "# Water\n\nBoil water for tea.\n")
    run_cli(["index"], cwd, ON)
    emb = _embedding(cwd, ON)
    assert emb["keyword_only"] is True
    assert emb["embedded"] == 0 and emb["total"] == 3

    status = run_cli(["status"], cwd, ON)
    assert NOTE in " ".join(status.stdout.split())
    assert "run noteseek index" not in status.stdout

    # Hybrid (the default mode) answers with keyword results and the notice, not an error.
    found = run_cli(["search", "espresso"], cwd, ON)
    assert "coffee.md" in found.stdout
    said = " ".join(found.stderr.split())
    assert NOTE in said and "run noteseek index" not in said
    data = json.loads(run_cli(["search", "espresso", "--json"], cwd, ON).stdout)
    assert data["results"][0]["path"] == "coffee.md"
    assert any(NOTE in w for w in data["warnings"])

    # Semantic search has nothing to search: a clear message, no traceback.
    refused = run_cli(["search", "espresso", "--mode", "semantic"], cwd, ON, code=2)
    assert NOTE in " ".join(refused.stderr.split())
    assert "Traceback" not in refused.stderr

    # A rebuild keeps the choice too.
    run_cli(["rebuild"], cwd, ON)
    assert _embedding(cwd, ON)["embedded"] == 0

    # --embed undoes the choice and embeds.
    run_cli(["index", "--embed"], cwd, ON)
    emb = _embedding(cwd, ON)
    assert emb["keyword_only"] is False
    assert emb["embedded"] == emb["total"] == 3
    after = run_cli(["search", "espresso"], cwd, ON)
    assert "keyword only" not in after.stderr
    assert "coffee.md" in after.stdout


def test_keyword_only_and_embed_together_are_refused(tmp_path: Path) -> None:
    cwd = _vault(tmp_path)
    for command in (["index"], ["rebuild"]):
        proc = run_cli([*command, "--keyword-only", "--embed"], cwd, code=2)
        assert "contradict" in proc.stderr
        assert "Traceback" not in proc.stderr


def test_keyword_only_survives_a_rebuild_of_a_damaged_index(tmp_path: Path) -> None:
    cwd = _vault(tmp_path)
    run_cli(["index", "--keyword-only"], cwd, ON)
    index_dir = Path(json.loads(run_cli(["status", "--json"], cwd, ON).stdout)["index_dir"])
    mark_damaged(index_dir, "disk I/O error", index_file(index_dir))
    report = json.loads(run_cli(["index", "--json"], cwd, ON).stdout)
    assert "damaged" in report["rebuilt_because"]
    assert report["keyword_only"] is True
    emb = _embedding(cwd, ON)
    assert emb["keyword_only"] is True and emb["embedded"] == 0


def _unreadable(index_dir: Path) -> None:
    """Damage the index file so nothing in it can be read (its header zeroed, after moving
    every committed page into the file): the keyword-only choice it records is lost with it."""
    db = index_dir / "index.db"
    with sqlite3.connect(db) as conn:
        conn.execute("PRAGMA wal_checkpoint(TRUNCATE)")
    with db.open("r+b") as f:
        f.write(b"\0" * 100)


def _keyword_only_index(tmp_path: Path) -> tuple[Path, Path]:
    cwd = _vault(tmp_path)
    run_cli(["index", "--keyword-only"], cwd, ON)
    index_dir = Path(json.loads(run_cli(["status", "--json"], cwd, ON).stdout)["index_dir"])
    _unreadable(index_dir)
    return cwd, index_dir


@pytest.mark.parametrize("command", [["rebuild"], ["index"]])
def test_keyword_only_survives_the_rebuild_of_an_unreadable_index(
    tmp_path: Path, command: list[str]
) -> None:
    """Issue 44 item 4: an index whose file cannot be read at all was rebuilt with embeddings
    (the choice was read from the damaged file only); an explicit rebuild, and the rebuild
    an index run does by itself, keep it now. Embeddings are on: a lost choice embeds."""
    cwd, index_dir = _keyword_only_index(tmp_path)
    assert "is damaged" in run_cli(["status"], cwd, ON, code=3).stderr
    run_cli(command, cwd, ON)
    emb = _embedding(cwd, ON)
    assert emb["keyword_only"] is True
    assert emb["embedded"] == 0 and emb["total"] == 2
    with sqlite3.connect(index_dir / "index.db") as conn:  # no vector was computed at all
        assert conn.execute("SELECT count(*) FROM vectors").fetchone()[0] == 0


def test_the_live_writer_rebuilds_an_unreadable_keyword_only_index_keyword_only(
    tmp_path: Path,
) -> None:
    cwd, index_dir = _keyword_only_index(tmp_path)
    env = serve_env(tmp_path / "home", NOTESEEK_EMBEDDING__ENABLED="true")
    with serving(cwd, env=env) as server, server.client() as client:
        deadline = time.monotonic() + 60
        while "rebuilt:" not in server.log:
            assert time.monotonic() < deadline, f"never rebuilt:\n{server.log}"
            time.sleep(0.05)
        status = server.wait_ready(client)
        assert status["damaged"] is None and status["documents"] == 2
        assert status["embedding"]["keyword_only"] is True
        time.sleep(1.0)  # a writer that embedded would have started by now
        status = client.get("/status").json()
        assert status["status"] == "ready", status
        assert status["embedding"]["embedded"] == 0, status["embedding"]
    assert "rebuilding it" in server.log and "Traceback" not in server.log, server.log
    with sqlite3.connect(index_dir / "index.db") as conn:
        assert conn.execute("SELECT count(*) FROM vectors").fetchone()[0] == 0


def test_serve_keeps_a_keyword_only_index_keyword_only(tmp_path: Path) -> None:
    cwd = _vault(tmp_path)
    run_cli(["index", "--keyword-only"], cwd, ON)
    env = serve_env(tmp_path / "home", NOTESEEK_EMBEDDING__ENABLED="true")
    with serving(cwd, env=env) as server, server.client() as client:
        status = server.wait_ready(client)  # ready: no embedding counted as work to do
        assert status["embedding"]["keyword_only"] is True
        found = client.post("/query_documents", json={"query": "espresso"}).json()
        assert found["results"][0]["path"] == "coffee.md"
        assert any(NOTE in w for w in found["warnings"])
        time.sleep(1.0)  # a writer that embedded would have started by now
        status = client.get("/status").json()
        assert status["status"] == "ready"
        assert status["embedding"]["embedded"] == 0


@pytest.mark.embeddings
def test_the_model_chosen_at_index_time_is_remembered(tmp_path: Path) -> None:
    """`NOTESEEK_EMBEDDING__MODEL=minilm-l6 noteseek index` is a choice of the index: later
    commands without it search its vectors instead of embedding everything again with the
    default model; a model set explicitly still wins."""
    cwd = _vault(tmp_path)
    run_cli(["index"], cwd, {**ON, "NOTESEEK_EMBEDDING__MODEL": "minilm-l6"})
    emb = _embedding(cwd, ON)
    assert emb["model"] == "all-MiniLM-L6-v2/int8"
    assert emb["embedded"] == emb["total"] == 2

    # Not set: the index's model, with nothing pending and a plain index run embedding nothing.
    run_cli(["index"], cwd, ON)
    emb = _embedding(cwd, ON)
    assert emb["model"] == "all-MiniLM-L6-v2/int8"
    assert emb["embedded"] == emb["total"] == 2
    found = json.loads(
        run_cli(["search", "ground beans", "--mode", "semantic", "--json"], cwd, ON).stdout
    )
    assert found["results"][0]["path"] == "coffee.md"

    # An explicit choice wins: the default model has no vectors here yet.
    chosen = {**ON, "NOTESEEK_EMBEDDING__MODEL": "bge-small-en"}
    status = json.loads(run_cli(["status", "--json"], cwd, chosen).stdout)
    assert status["embedding"]["model"] == "bge-small-en-v1/int8"
    assert status["embedding"]["embedded"] == 0
