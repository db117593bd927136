"""Damage no command reads is still found (issue 33, N7): the open check and the full check.

SQLite reports a damaged page only when a statement reads it, and a search reads little of an
index. Each test writes 4 KB of random bytes over one page of a real index after a checkpoint
(so the page is in ``index.db`` itself, not in the WAL), then runs the real CLI, ``noteseek
serve`` or ``noteseek mcp`` as subprocesses: ``status --check`` finds the damage, every door
reports it once found, searches answer or say what is wrong (never a traceback), the live
writer finds it by itself and rebuilds the index from the files, and a damaged page of a small
table every command reads is found as soon as a command opens the index.
"""

from __future__ import annotations

import json
import random
import sqlite3
import subprocess
import sys
import time
from pathlib import Path

from tests.helpers import writer_elsewhere
from tests.mcp_client import call, run, session
from tests.reliability.test_database import (
    REBUILD_HINT,
    assert_searchable,
    cli,
    index_db,
    indexed,
    page_size,
    root_page,
)
from tests.test_serve import serve_env, serving

FOUND = "the check found damage"


def checkpoint(db: Path) -> int:
    """Move every committed page into ``db`` itself; returns its page count."""
    with sqlite3.connect(db) as conn:
        busy, _, _ = conn.execute("PRAGMA wal_checkpoint(TRUNCATE)").fetchone()
        assert busy == 0, "another connection kept the checkpoint from finishing"
        return int(conn.execute("PRAGMA page_count").fetchone()[0])


def scramble(db: Path, page: int) -> None:
    """Write 4 KB (a page) of random bytes over page ``page``."""
    size = page_size(db)
    with db.open("r+b") as f:
        f.seek((page - 1) * size)
        f.write(random.Random(page).randbytes(size))


def scramble_middle_page(db: Path, table: str = "chunks_fts_content") -> int:
    """Scramble the page of ``table`` nearest the middle of the file (by default the FTS5
    copy of the sections' text, which no search or status reads back); returns it."""
    count = checkpoint(db)
    with sqlite3.connect(db) as conn:  # SQLite's dbstat: which b-tree each page is in
        rows = conn.execute("SELECT pageno FROM dbstat WHERE name = ?", (table,)).fetchall()
    page = min((int(r[0]) for r in rows), key=lambda p: abs(p - count / 2))
    assert 1 < page < count, (page, count)
    scramble(db, page)
    return page


def noteseek(folder: Path, *args: str) -> subprocess.CompletedProcess[str]:
    """``noteseek ARGS`` in ``folder``, whatever its exit code (never with a traceback)."""
    proc = subprocess.run(
        [sys.executable, "-m", "noteseek.interfaces.cli", *args],
        cwd=folder,
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert "Traceback" not in proc.stdout + proc.stderr, proc.stdout + proc.stderr
    return proc


def assert_reported(message: str, folder: Path) -> None:
    """The message every door gives once a check found damage: where, why, what rebuilds."""
    assert f"the index in {folder / '.noteseek'} is damaged ({FOUND}" in message, message
    assert REBUILD_HINT in message, message
    assert len(message.strip().splitlines()) <= 2, message


def search_answers_or_says_why_not(folder: Path) -> None:
    """A search either answers (the damage is nowhere it reads) or says the index is damaged
    and what rebuilds it (exit 3); nothing else."""
    proc = noteseek(folder, "search", "redis ttl", "--json")
    if proc.returncode == 0:
        found = json.loads(proc.stdout)
        assert any(r["path"] == "notes/redis.md" for r in found["results"]), found
        return
    assert proc.returncode == 3, proc.stdout + proc.stderr
    assert "is damaged" in proc.stderr and REBUILD_HINT in proc.stderr, proc.stderr


# -- the CLI ------------------------------------------------------------------------------------


def test_a_random_middle_page_is_found_by_status_check_and_rebuild_recovers(
    tmp_path: Path,
) -> None:
    folder = indexed(tmp_path)
    page = scramble_middle_page(index_db(folder))

    # Nothing the commands read: they answer as before (status says it was never checked).
    before = cli(folder, "status")
    assert "not checked through yet (noteseek status --check)" in before.stdout, before.stdout
    search_answers_or_says_why_not(folder)

    checked = cli(folder, "status", "--check", code=3)
    assert_reported(checked.stderr, folder)
    # Recorded for every process: status, search and get say so until it is rebuilt.
    assert_reported(cli(folder, "status", code=3).stderr, folder)
    status = json.loads(cli(folder, "status", "--json", code=3).stdout)
    assert status["status"] == "damaged" and FOUND in status["damaged"]
    assert FOUND in status["check"]["found"] and status["check"]["at"] > time.time() - 60
    assert_reported(cli(folder, "search", "redis", code=3).stderr, folder)
    assert_reported(cli(folder, "get", "notes/redis.md", code=3).stderr, folder)

    rebuilt = cli(folder, "rebuild")
    assert f"the index was damaged ({FOUND}" in rebuilt.stderr, rebuilt.stderr
    assert_searchable(folder)
    # The new file was never checked through; once it is, status says so.
    assert json.loads(cli(folder, "status", "--json").stdout)["check"] is None
    sound = cli(folder, "status", "--check")
    assert "checked through" in sound.stdout and "sound" in sound.stdout, sound.stdout
    check = json.loads(cli(folder, "status", "--json").stdout)["check"]
    assert check["found"] is None and 0 <= check["seconds"] < 30, check
    assert page > 1


def test_a_damaged_small_table_is_found_by_the_first_command_that_opens_the_index(
    tmp_path: Path,
) -> None:
    """The keyword log (which files changed since the keyword postings were saved) is read
    by no search of a small index: the check of the small tables at open finds it."""
    folder = indexed(tmp_path)
    db = index_db(folder)
    checkpoint(db)
    scramble(db, root_page(db, "keyword_log"))

    search = cli(folder, "search", "redis", code=3)
    assert "is damaged" in search.stderr and REBUILD_HINT in search.stderr, search.stderr
    status = json.loads(cli(folder, "status", "--json", code=3).stdout)
    assert status["status"] == "damaged"
    again = cli(folder, "index")  # index rebuilds a damaged index from the files
    assert "the index was damaged" in again.stderr, again.stderr
    assert_searchable(folder)


# -- the servers --------------------------------------------------------------------------------


def test_serve_as_the_writer_finds_damage_no_search_meets_and_rebuilds(tmp_path: Path) -> None:
    folder = indexed(tmp_path)
    scramble_middle_page(index_db(folder))
    env = serve_env(tmp_path / "home")
    with serving(folder, env=env) as server, server.client() as client:
        # The writer reconciles, then checks the file through in the background, finds the
        # damage and rebuilds. Searches meanwhile answer or say why not, never fail otherwise.
        deadline = time.monotonic() + 60
        while "rebuilt:" not in server.log:
            assert time.monotonic() < deadline, f"never rebuilt:\n{server.log}"
            response = client.post("/query_documents", json={"query": "redis ttl"})
            assert response.status_code in (200, 503), response.text
            if response.status_code == 503:
                assert "is damaged" in response.json()["error"], response.text
            time.sleep(0.05)
        assert f"s): {FOUND}" in server.log and "rebuilding it" in server.log, server.log
        while client.get("/health").status_code != 200:  # the new file is being checked
            assert time.monotonic() < deadline, server.log
            time.sleep(0.05)
        response = client.post("/query_documents", json={"query": "redis ttl"})
        assert any(r["path"] == "notes/redis.md" for r in response.json()["results"])
        # The rebuilt file is checked through in turn, and found sound.
        while (status := client.get("/status").json())["check"] is None:
            assert time.monotonic() < deadline, server.log
            time.sleep(0.1)
        assert status["check"]["found"] is None and status["damaged"] is None, status
    assert "Traceback" not in server.log


def test_damage_status_check_finds_is_reported_by_health_status_and_index_status(
    tmp_path: Path,
) -> None:
    folder = indexed(tmp_path)
    scramble_middle_page(index_db(folder))
    env = serve_env(tmp_path / "home", NOTESEEK_WATCH__TAKEOVER_INTERVAL="0.2")
    # Another process holds the writer role: the server is a reader, and only reports.
    with (
        writer_elsewhere(folder / ".noteseek", "index") as holder,
        serving(folder, env=env) as server,
        server.client() as client,
    ):
        assert client.get("/health").json() == {"status": "ok"}
        assert_reported(cli(folder, "status", "--check", code=3).stderr, folder)

        health = client.get("/health")
        assert health.status_code == 503 and health.json()["status"] == "damaged"
        assert FOUND in health.json()["reason"]
        status = client.get("/status").json()
        assert status["status"] == "damaged" and FOUND in status["damaged"]
        assert FOUND in status["check"]["found"]
        search = client.post("/query_documents", json={"query": "redis"})
        assert search.status_code == 503 and REBUILD_HINT in search.json()["error"]

        async def main() -> None:
            async with session(folder, env={"NOTESEEK_EMBEDDING__ENABLED": "false"}) as mcp:
                reported = await call(mcp, "index_status")
                assert reported["status"] == "damaged" and FOUND in reported["damaged"]
                assert FOUND in reported["check"]["found"]

        run(main)

        holder.kill()
        holder.wait()
        # The server takes the writer role and rebuilds the index from the files.
        deadline = time.monotonic() + 60
        while client.get("/health").status_code != 200:
            assert time.monotonic() < deadline, f"never rebuilt:\n{server.log}"
            time.sleep(0.1)
        assert client.post("/query_documents", json={"query": "redis"}).status_code == 200
    assert "rebuilding it" in server.log and "Traceback" not in server.log
