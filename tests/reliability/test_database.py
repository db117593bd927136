"""A damaged or unwritable index: every door says what is wrong and what to do; nothing crashes.

The index is a cache of the files. Each test damages a real index the way disks and people do
(a zeroed page in the middle, scattered bad bytes, a truncated file, a WAL deleted under a
running writer) or puts it where it cannot be written (a read-only folder, a full disk, a
folder that cannot be created), then runs the real CLI, ``noteseek serve`` or ``noteseek mcp``
as subprocesses. No output may hold a traceback; searches answer "unavailable" (exit 3, HTTP
503, an MCP error) naming the folder and ``noteseek rebuild``; ``status``, ``/health`` and
``index_status`` say the index is damaged; ``rebuild`` (or ``index``, or the live writer by
itself) builds it again from the files, after which searches work.

The read-only folder and the full disk are real: a read-only bind mount and a small tmpfs,
made in a private mount namespace (``unshare``), so nothing outside the test sees them and
nothing is left mounted.
"""

from __future__ import annotations

import json
import random
import shutil
import sqlite3
import subprocess
import sys
import time
from pathlib import Path

import pytest

from tests.conftest import EXAMPLE_VAULT
from tests.helpers import project, run_cli, writer_elsewhere
from tests.mcp_client import call, error_of, mcp_project, run, session
from tests.test_serve import serve_env, serving

CLI = [sys.executable, "-m", "noteseek.interfaces.cli"]
REBUILD_HINT = "run `noteseek rebuild`"
HOLD_WAL = """
import sqlite3, sys, time
conn = sqlite3.connect(sys.argv[1], isolation_level=None)
conn.execute("PRAGMA wal_autocheckpoint = 0")  # the commit stays in the WAL file only
conn.execute("BEGIN IMMEDIATE")
conn.execute("DELETE FROM chunks WHERE id IN (SELECT id FROM chunks LIMIT 3)")
conn.execute("COMMIT")
print("ready", flush=True)
time.sleep(60)
"""


def indexed(tmp_path: Path) -> Path:
    """A project over a copy of the example vault, indexed by the real CLI."""
    vault = tmp_path / "vault"
    shutil.copytree(EXAMPLE_VAULT, vault)
    folder = tmp_path / "project"
    folder.mkdir()
    project(folder, {"notes": vault})
    cli(folder, "index")
    return folder


def cli(folder: Path, *args: str, code: int = 0) -> subprocess.CompletedProcess[str]:
    """``noteseek ARGS`` in ``folder``: exits ``code``, and no output holds a traceback."""
    proc = run_cli(list(args), folder, code=code)
    assert "Traceback" not in proc.stdout + proc.stderr, proc.stdout + proc.stderr
    return proc


def index_db(folder: Path) -> Path:
    return folder / ".noteseek" / "index.db"


def page_size(db: Path) -> int:
    size = int.from_bytes(db.read_bytes()[16:18], "big")  # the header's page size field
    return 65536 if size == 1 else size


def root_page(db: Path, table: str) -> int:
    with sqlite3.connect(db) as conn:
        row = conn.execute("SELECT rootpage FROM sqlite_schema WHERE name = ?", (table,))
        return int(row.fetchone()[0])


def zero_page(db: Path, page: int) -> None:
    size = page_size(db)
    assert 1 < page <= db.stat().st_size // size, "a page past the first one"
    with db.open("r+b") as f:
        f.seek((page - 1) * size)
        f.write(bytes(size))


def damage_chunks(folder: Path) -> str:
    """Zero the root page of the chunks table (mid-file) in the index; returns what SQLite
    calls that."""
    db = index_db(folder)
    zero_page(db, root_page(db, "chunks"))
    return "database disk image is malformed"


def assert_damaged(proc: subprocess.CompletedProcess[str], folder: Path, reason: str) -> None:
    message = proc.stderr
    assert f"the index in {folder / '.noteseek'} is damaged" in message, message
    assert reason in message and REBUILD_HINT in message, message
    assert len(message.strip().splitlines()) <= 2, message


def assert_searchable(folder: Path) -> None:
    found = json.loads(cli(folder, "search", "redis ttl", "--json").stdout)
    assert any(r["path"] == "notes/redis.md" for r in found["results"]), found
    assert json.loads(cli(folder, "status", "--json").stdout)["damaged"] is None


# -- corruption: the CLI ----------------------------------------------------------------------


def test_a_zeroed_page_in_the_middle_is_reported_by_every_command_and_rebuild_recovers(
    tmp_path: Path,
) -> None:
    folder = indexed(tmp_path)
    reason = damage_chunks(folder)

    assert_damaged(cli(folder, "search", "redis", code=3), folder, reason)
    # The search recorded the damage: status reports it (exit 3), in text and as JSON.
    assert_damaged(cli(folder, "status", code=3), folder, reason)
    status = json.loads(cli(folder, "status", "--json", code=3).stdout)
    assert status["status"] == "damaged" and reason in status["damaged"]
    assert (status["documents"], status["chunks"]) == (0, 0)  # nothing damaged is trusted
    assert_damaged(cli(folder, "get", "notes/redis.md", code=3), folder, reason)

    rebuilt = cli(folder, "rebuild")
    assert f"the index was damaged ({reason}): deleted index.db" in rebuilt.stderr
    assert "built it again from the files" in rebuilt.stderr
    assert_searchable(folder)


def test_a_rebuild_finds_damage_nobody_has_met_yet(tmp_path: Path) -> None:
    folder = indexed(tmp_path)
    damage_chunks(folder)
    rebuilt = cli(folder, "rebuild")  # the first command after the damage
    assert "the index was damaged" in rebuilt.stderr and "deleted index.db" in rebuilt.stderr
    assert_searchable(folder)


def test_scattered_bad_bytes_are_reported_and_rebuild_recovers(tmp_path: Path) -> None:
    folder = indexed(tmp_path)
    db = index_db(folder)
    size, data = page_size(db), bytearray(db.read_bytes())
    rng = random.Random(18)
    for page in range(1, len(data) // size):  # every page but the first: 16 bad bytes each
        for _ in range(16):
            data[page * size + rng.randrange(size)] = rng.randrange(256)
    db.write_bytes(bytes(data))

    status = cli(folder, "status", code=3)
    assert "is damaged" in status.stderr and REBUILD_HINT in status.stderr
    search = cli(folder, "search", "redis", code=3)
    assert "is damaged" in search.stderr and REBUILD_HINT in search.stderr
    rebuilt = cli(folder, "rebuild")
    assert "the index was damaged" in rebuilt.stderr
    assert_searchable(folder)


def test_a_truncated_index_is_rebuilt_by_the_next_index_run(tmp_path: Path) -> None:
    folder = indexed(tmp_path)
    db = index_db(folder)
    with db.open("r+b") as f:
        f.truncate(db.stat().st_size // 2)

    assert_damaged(cli(folder, "search", "redis", code=3), folder, "malformed")
    assert_damaged(cli(folder, "status", code=3), folder, "malformed")
    again = cli(folder, "index")  # index, too, rebuilds a damaged index from the files
    assert "the index was damaged (database disk image is malformed)" in again.stderr
    assert "36 added" in again.stdout
    assert_searchable(folder)


def test_a_wal_deleted_under_a_running_writer_is_reported_and_rebuild_recovers(
    tmp_path: Path,
) -> None:
    folder = indexed(tmp_path)
    db = index_db(folder)
    holder = subprocess.Popen(
        [sys.executable, "-c", HOLD_WAL, str(db)], stdout=subprocess.PIPE, text=True
    )
    try:
        assert holder.stdout is not None and holder.stdout.readline().strip() == "ready"
        Path(f"{db}-wal").unlink()  # the writer's last commit lived only there
        # A second process opening the index now reads a WAL index pointing past the end.
        assert_damaged(cli(folder, "search", "redis", code=3), folder, "SQLITE_IOERR")
        assert_damaged(cli(folder, "status", code=3), folder, "SQLITE_IOERR")
    finally:
        holder.kill()
        holder.wait()
    rebuilt = cli(folder, "rebuild")
    assert "the index was damaged (disk I/O error" in rebuilt.stderr
    assert_searchable(folder)


# -- corruption: the servers ------------------------------------------------------------------


def test_serve_reports_damage_on_health_and_rebuilds_by_itself_as_the_writer(
    tmp_path: Path,
) -> None:
    folder = indexed(tmp_path)
    reason = damage_chunks(folder)
    env = serve_env(tmp_path / "home", NOTESEEK_WATCH__TAKEOVER_INTERVAL="0.2")
    # Another process holds the writer role, so the server starts as a reader and cannot
    # rebuild: the damage stays visible until the holder exits.
    with (
        writer_elsewhere(folder / ".noteseek", "index") as holder,
        serving(folder, env=env) as server,
        server.client() as client,
    ):
        search = client.post("/query_documents", json={"query": "redis"})
        assert search.status_code == 503, search.text
        assert "is damaged" in search.json()["error"] and REBUILD_HINT in search.json()["error"]
        assert search.headers["retry-after"]
        health = client.get("/health")
        assert health.status_code == 503
        assert health.json()["status"] == "damaged" and reason in health.json()["reason"]
        status = client.get("/status").json()
        assert status["status"] == "damaged" and reason in status["damaged"]
        again = client.post("/query_documents", json={"query": "redis"})  # same connection
        assert again.status_code == 503

        holder.kill()
        holder.wait()
        # The server takes the writer role, finds the damage record and rebuilds.
        deadline = time.monotonic() + 30
        while True:
            response = client.post("/query_documents", json={"query": "redis ttl"})
            if response.status_code == 200:
                break
            assert response.status_code == 503, response.text
            assert time.monotonic() < deadline, f"never rebuilt:\n{server.log}"
            time.sleep(0.1)
        assert any(r["path"] == "notes/redis.md" for r in response.json()["results"])
        assert client.get("/health").json() == {"status": "ok"}
        assert client.get("/status").json()["damaged"] is None
    assert "Traceback" not in server.log
    assert "rebuilding it" in server.log


def test_mcp_reports_damage_in_index_status_and_tool_errors(tmp_path: Path) -> None:
    notes = tmp_path / "vault"
    shutil.copytree(EXAMPLE_VAULT, notes)
    base = tmp_path / "project"
    base.mkdir()
    folder = mcp_project(base, notes)
    cli(folder, "index")
    reason = damage_chunks(folder)

    async def main() -> None:
        async with session(folder) as client:
            message = await error_of(client, "query_documents", {"query": "redis"})
            assert "is damaged" in message and reason in message and REBUILD_HINT in message
            status = await call(client, "index_status")
            assert status["status"] == "damaged" and reason in status["damaged"]

    with writer_elsewhere(folder / ".noteseek", "index"):  # the server stays a reader
        run(main)


# -- where the index cannot be written ----------------------------------------------------------


def namespaced(tmp_path: Path, steps: list[str | list[str]], cwd: Path) -> list[str]:
    """Run ``steps`` in a private user and mount namespace (as its root): a string is a shell
    line (a mount, which must succeed), a list the arguments of a ``noteseek`` command run in
    ``cwd``. Returns each command's output, ending with ``exit N``. Nothing is mounted
    outside the namespace, and its mounts go with it."""
    if subprocess.run(["unshare", "-rm", "true"], capture_output=True).returncode != 0:
        pytest.skip("needs user and mount namespaces (unshare -rm) for a real mount")
    lines, outputs = [f"cd '{cwd}'"], []
    for step in steps:
        if isinstance(step, str):
            lines.append(f"{step} || exit 90")
            continue
        out = tmp_path / f"out-{len(outputs)}.txt"
        outputs.append(out)
        argv = " ".join(f"'{a}'" for a in [*CLI, *step])
        lines.append(f"{argv} > '{out}' 2>&1; echo \"exit $?\" >> '{out}'")
    subprocess.run(["unshare", "-rm", "sh", "-c", "\n".join(lines)], check=True, timeout=300)
    texts = [out.read_text(encoding="utf-8") for out in outputs]
    for text in texts:
        assert "Traceback" not in text, text
    return texts


def test_a_complete_index_in_a_read_only_folder_is_searched_and_writes_say_why_not(
    tmp_path: Path,
) -> None:
    folder = indexed(tmp_path)
    index = folder / ".noteseek"
    search, status, index_run, rebuild = namespaced(
        tmp_path,
        [
            f"mount --bind '{index}' '{index}' && mount -o remount,bind,ro '{index}'",
            ["search", "redis ttl", "--json"],
            ["status", "--json"],
            ["index"],
            ["rebuild"],
        ],
        folder,
    )
    assert search.endswith("exit 0\n") and '"path": "notes/redis.md"' in search, search
    assert status.endswith("exit 0\n") and "the index is open read-only" in status, status
    for refused in (index_run, rebuild):
        assert refused.endswith("exit 3\n"), refused
        assert f"cannot write the index folder {index}" in refused and "read-only" in refused


def test_a_full_disk_is_a_clear_error_and_nothing_indexed_is_lost(tmp_path: Path) -> None:
    vault = tmp_path / "vault"
    shutil.copytree(EXAMPLE_VAULT, vault)
    folder = tmp_path / "project"
    folder.mkdir()
    project(folder, {"notes": vault})
    index = folder / ".noteseek"
    index.mkdir()
    # 384 KB holds an empty index, not the example vault's ~700 KB; then the tmpfs grows, as
    # when space is freed, and the next run indexes every file.
    full, search, again, found = namespaced(
        tmp_path,
        [
            f"mount -t tmpfs -o size=384k tmpfs '{index}'",
            ["index"],
            ["search", "redis ttl", "--json"],
            f"mount -o remount,size=8m '{index}'",
            ["index"],
            ["search", "redis ttl", "--json"],
        ],
        folder,
    )
    assert full.endswith("exit 3\n"), full
    assert f"the disk holding the index folder {index} is full" in full, full
    assert "free some space" in full
    assert search.endswith(("exit 0\n", "exit 1\n")), search  # what was committed, if any
    assert again.endswith("exit 0\n") and "0 skipped" in again, again
    assert found.endswith("exit 0\n") and '"path": "notes/redis.md"' in found, found


def test_an_index_folder_that_cannot_be_created_names_what_is_in_the_way(
    tmp_path: Path,
) -> None:
    vault = tmp_path / "vault"
    shutil.copytree(EXAMPLE_VAULT, vault)
    folder = tmp_path / "project"
    folder.mkdir()
    project(folder, {"notes": vault})
    blocker = tmp_path / "a-file"
    blocker.write_text("not a folder", encoding="utf-8")
    target = blocker / "index"
    for command in ("index", "rebuild"):
        proc = cli(folder, "--index-dir", str(target), command, code=3)
        assert f"cannot create the index folder {target}: {blocker} is a file" in proc.stderr
        assert "--index-dir" in proc.stderr
    assert blocker.read_text(encoding="utf-8") == "not a folder"
