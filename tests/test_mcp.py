"""`noteseek mcp` through the official SDK client over real stdio: tools, bad input, live index.

Every test starts the real server as a subprocess in a temporary project (the example vault
copied, embeddings off unless the test is marked ``embeddings``) and talks MCP to it.
"""

from __future__ import annotations

import os
import shutil
import signal
import subprocess
import sys
import time
from pathlib import Path

import anyio
import pytest

from noteseek.indexing.lock import WriterLock
from tests.helpers import write
from tests.mcp_client import (
    call,
    error_of,
    eventually,
    mcp_project,
    run,
    session,
    wait_until_found,
)

TOOLS = {
    "query_documents",
    "query_documents_compressed",
    "search_with_hypothesis",
    "search_git_history",
    "get_chunk",
    "get_document",
    "get_section",
    "get_links",
    "get_neighbourhood",
    "index_status",
    "reindex",
    "create_memory",
    "append_memory",
    "update_memory",
    "delete_memory",
    "restore_memory",
    "read_memory",
    "list_memories",
    "memory_stats",
    "search_memories",
    "search_linked_memories",
    "flush_memories",
}


async def ready(client) -> None:
    last: dict = {}

    async def indexed() -> bool:
        last.update(await call(client, "index_status"))
        return last["status"] == "ready" and last["documents"] > 0

    try:
        await eventually(indexed, timeout=30)
    except AssertionError:
        raise AssertionError(f"never ready: {last}") from None


def test_tools_are_listed_with_strict_schemas(vault: Path, tmp_path: Path) -> None:
    folder = mcp_project(tmp_path, vault)

    async def main() -> None:
        started = time.monotonic()
        async with session(folder) as client:
            listed = (await client.list_tools()).tools
            assert time.monotonic() - started < 10  # the 1 s target is measured in bench/
            assert {t.name for t in listed} == TOOLS
            by_name = {t.name: t for t in listed}
            for tool in listed:
                assert tool.description and len(tool.description) > 40
                assert tool.input_schema["type"] == "object"
                assert tool.input_schema.get("additionalProperties") is False
            query = by_name["query_documents"].input_schema
            assert query["required"] == ["query"]
            top_k = query["properties"]["top_k"]
            # search.top_k's bounds: the same on every door and in the library.
            assert (top_k["type"], top_k["minimum"], top_k["maximum"]) == ("integer", 1, 1000)
            assert "default" not in top_k and "search.top_k" in top_k["description"]
            assert set(query["properties"]) == {
                "query",
                "top_k",
                "mode",
                "paths",
                "tags",
                "root",
                "after",
                "before",
                "where",
                "source",
                "min_score",
                "excluded_files",
                "expand_chars",
                "explain",
            }
            compressed = by_name["query_documents_compressed"].input_schema["properties"]
            assert compressed["min_score"]["default"] == 0.3
            assert compressed["similarity_threshold"]["default"] == 0.85
            assert by_name["query_documents"].annotations.read_only_hint is True
            assert by_name["reindex"].annotations.read_only_hint is False

    run(main)


def test_query_documents_results_and_filters(vault: Path, tmp_path: Path) -> None:
    folder = mcp_project(tmp_path, vault)

    async def main() -> None:
        async with session(folder) as client:
            await ready(client)
            out = await call(client, "query_documents", {"query": "redis ttl expiry"})
            assert out["status"] == "ready"
            assert 1 <= len(out["results"]) <= 10  # search.top_k
            first = out["results"][0]
            assert first["path"] == "notes/redis.md"
            assert first["title"] == "Redis"
            assert "Expiry and TTL" in first["heading_path"]
            assert first["start_line"] <= first["end_line"]
            assert 0 < first["score"] <= 1
            assert first["lanes"] == {"keyword": 1}
            assert "EXPIRE" in first["content"]
            assert first["truncated"] is False
            # Aliases of top_n.
            for alias in ("k", "limit", "top_k", "top_n"):
                got = await call(client, "query_documents", {"query": "redis", alias: 2})
                assert len(got["results"]) == 2
            # Filters and exclusions.
            tagged = await call(
                client, "query_documents", {"query": "cache", "tags": ["caching"], "top_n": 5}
            )
            assert tagged["results"]
            # The notes tagged caching (one result per note: results are grouped).
            assert {r["path"] for r in tagged["results"]} <= {
                "notes/redis.md",
                "notes/caching-strategies.md",
                "notes/缓存策略.md",
            }
            without = await call(
                client,
                "query_documents",
                {"query": "redis ttl", "excluded_files": ["notes/redis.md"], "top_n": 20},
            )
            assert "notes/redis.md" not in {r["path"] for r in without["results"]}
            only = await call(
                client, "query_documents", {"query": "redis", "paths": ["notes/*"], "top_n": 20}
            )
            assert all(r["path"].startswith("notes/") for r in only["results"])
            wide = await call(
                client, "query_documents", {"query": "redis ttl expiry", "expand_chars": 4000}
            )
            grown = wide["results"][0]
            assert first["content"] in grown["content"]
            assert len(first["content"]) < len(grown["content"]) <= 4000
            assert (
                grown["start_line"] <= first["start_line"] <= first["end_line"] <= grown["end_line"]
            )
            high = await call(client, "query_documents", {"query": "redis", "min_score": 0.9})
            assert all(r["score"] >= 0.9 for r in high["results"])
            # Gitignored drafts are never searchable.
            secret = await call(client, "query_documents", {"query": "secret draft"})
            assert all(not r["path"].startswith("drafts/") for r in secret["results"])

    run(main)


def test_bad_arguments_get_precise_errors(vault: Path, tmp_path: Path) -> None:
    folder = mcp_project(tmp_path, vault)

    async def main() -> None:
        async with session(folder) as client:
            await ready(client)
            msg = await error_of(client, "query_documents", {"query": "x", "colour": "red"})
            assert "unknown parameter 'colour'" in msg
            assert "top_k (or top_n, k, limit)" in msg and "excluded_files" in msg
            msg = await error_of(client, "query_documents", {"query": "x", "top_n": 1001})
            assert "top_n" in msg and "1000" in msg and "1001" in msg
            msg = await error_of(client, "query_documents", {"query": "x", "top_n": 0})
            assert "greater than or equal to 1" in msg
            msg = await error_of(client, "query_documents", {"query": "x", "top_n": "many"})
            assert "top_n" in msg and "integer" in msg
            msg = await error_of(client, "query_documents", {"query": "x", "k": 2, "limit": 3})
            assert "give one" in msg
            msg = await error_of(client, "query_documents", {"query": ""})
            assert "query" in msg and "at least 1 character" in msg
            msg = await error_of(client, "query_documents", {"top_n": 3})
            assert "query is required" in msg
            msg = await error_of(client, "query_documents", {"query": "x", "mode": "fuzzy"})
            assert "mode" in msg and "hybrid" in msg
            msg = await error_of(client, "query_documents", {"query": "x", "after": "someday"})
            assert "cannot read the date 'someday'" in msg
            msg = await error_of(client, "query_documents", {"query": "x", "expand_chars": 9000})
            assert "expand_chars" in msg and "8000" in msg
            msg = await error_of(client, "query_documents", {"query": "x", "min_score": 1.5})
            assert "min_score" in msg
            msg = await error_of(client, "query_documents", {"query": "x", "root": "nope"})
            assert "unknown root 'nope'" in msg
            msg = await error_of(
                client, "query_documents_compressed", {"query": "x", "similarity_threshold": -1}
            )
            assert "similarity_threshold" in msg
            msg = await error_of(client, "get_chunk", {"chunk_id": "not-an-id"})
            assert "chunk_id" in msg
            msg = await error_of(client, "get_chunk", {"chunk_id": "0123456789abcdef"})
            assert "0123456789abcdef" in msg
            msg = await error_of(client, "get_document", {"path": "notes/redis.md", "max_lines": 0})
            assert "max_lines" in msg
            msg = await error_of(client, "no_such_tool", {})
            assert "no_such_tool" in msg
            # The server is still healthy after all that.
            assert (await call(client, "query_documents", {"query": "redis"}))["results"]

    run(main)


def test_get_chunk_and_get_document_stay_inside_the_roots(vault: Path, tmp_path: Path) -> None:
    outside = write(tmp_path / "outside" / "private.md", "# Private\n\nbank pin 1234\n")
    os.symlink(outside, vault / "notes" / "linked-private.md")
    folder = mcp_project(tmp_path, vault)

    async def main() -> None:
        async with session(folder) as client:
            await ready(client)
            hit = (await call(client, "query_documents", {"query": "redis ttl"}))["results"][0]
            chunk = await call(client, "get_chunk", {"chunk_id": hit["chunk_id"]})
            assert chunk["path"] == "notes/redis.md" and "TTL" in chunk["text"]
            doc = await call(
                client, "get_document", {"path": "notes/redis.md", "from_line": 2, "max_lines": 3}
            )
            assert doc["from_line"] == 2 and doc["to_line"] == 4
            assert doc["content"].split("\n")[0] == "title: Redis"
            assert doc["more"] is True and doc["total_lines"] > 10
            by_abs = await call(client, "get_document", {"path": str(vault / "notes" / "redis.md")})
            assert by_abs["path"] == "notes/redis.md"
            for bad, expected in [
                ("../outside/private.md", "'..' is not allowed"),
                ("notes/../../outside/private.md", "'..' is not allowed"),
                (str(outside), "not a document inside the indexed roots"),
                ("/etc/passwd", "not a document inside the indexed roots"),
                # A link out of the root is not even indexed (reported by the walk instead).
                ("notes/linked-private.md", "no indexed document"),
                ("drafts/secret-draft.md", "no indexed document"),
                ("notes/nothing.md", "no indexed document"),
            ]:
                msg = await error_of(client, "get_document", {"path": bad})
                assert expected in msg, (bad, msg)
                assert "1234" not in msg
            msg = await error_of(
                client, "get_document", {"path": "notes/redis.md", "from_line": 100000}
            )
            assert "past it" in msg
            # Links, the section holding a line and the neighbourhood, as over HTTP and the CLI.
            links = await call(client, "get_links", {"path": "notes/redis.md"})
            assert links["doc_id"].endswith("notes/redis.md") and links["backlinks"]
            section = await call(client, "get_section", {"path": "notes/redis.md", "line": 12})
            assert section["kind"] == "section" and "EXPIRE" in section["text"]
            around = await call(client, "get_neighbourhood", {"path": "notes/redis.md"})
            assert around["nodes"][0]["center"] is True
            msg = await error_of(client, "get_links", {"path": "notes/linked-private.md"})
            assert "1234" not in msg

    run(main)


def test_status_reindex_and_compressed(vault: Path, tmp_path: Path) -> None:
    folder = mcp_project(tmp_path, vault)

    async def main() -> None:
        async with session(folder) as client:
            await ready(client)
            status = await call(client, "index_status")
            assert status["documents"] >= 30 and status["chunks"] > status["documents"]
            assert status["service"]["role"] == "writer"
            assert status["service"]["watcher"]["running"] is True
            assert status["embedding"]["enabled"] is False
            assert any("no body text" in f["reason"] for f in status["failures"])
            job = (await call(client, "reindex", {"force": True}))["job"]
            assert job["state"] in {"queued", "running", "done"}

            async def done() -> bool:
                jobs = (await call(client, "index_status"))["service"]["jobs"]
                return any(j["id"] == job["id"] and j["state"] == "done" for j in jobs)

            await eventually(done)
            msg = await error_of(client, "reindex", {"paths": ["../elsewhere"]})
            assert "'..' is not allowed" in msg
            msg = await error_of(client, "reindex", {"paths": ["no-such-root"]})
            assert "neither a root" in msg
            assert (await call(client, "reindex", {"paths": ["notes"]}))["job"]["roots"] == [
                "notes"
            ]
            out = await call(client, "query_documents_compressed", {"query": "redis", "top_n": 10})
            info = out["compression"]
            assert info["kept"] == len(out["results"])
            assert info["tokens_saved"] == info["tokens_before"] - info["tokens_after"] >= 0
            assert all(r["score"] >= 0.3 for r in out["results"])

    run(main)


def test_results_follow_edits_creations_renames_and_deletions(vault: Path, tmp_path: Path) -> None:
    folder = mcp_project(tmp_path, vault)

    async def paths_for(client, query: str) -> set[str]:
        out = await call(client, "query_documents", {"query": query, "top_n": 20})
        return {r["path"] for r in out["results"]}

    async def main() -> None:
        async with session(folder) as client:
            await ready(client)
            # Create.
            write(vault / "notes" / "zebra.md", "# Zebra\n\nThe quagga crossing protocol.\n")

            async def created() -> bool:
                return "notes/zebra.md" in await paths_for(client, "quagga")

            await eventually(created)
            # Edit, saved atomically (temporary file renamed over the note).
            tmp = vault / "notes" / ".zebra.md.tmp"
            tmp.write_text("# Zebra\n\nThe okapi crossing protocol.\n", encoding="utf-8")
            os.replace(tmp, vault / "notes" / "zebra.md")

            async def edited() -> bool:
                found = await paths_for(client, "okapi")
                return "notes/zebra.md" in found and not await paths_for(client, "quagga")

            await eventually(edited)
            # Rename.
            os.rename(vault / "notes" / "zebra.md", vault / "notes" / "equids.md")

            async def renamed() -> bool:
                return await paths_for(client, "okapi") == {"notes/equids.md"}

            await eventually(renamed)
            # Delete, including a whole folder.
            (vault / "notes" / "equids.md").unlink()
            shutil.rmtree(vault / "people")

            async def deleted() -> bool:
                gone = not await paths_for(client, "okapi")
                people = [p for p in await paths_for(client, "maria keller") if "people/" in p]
                return gone and not people

            await eventually(deleted)
            status = await call(client, "index_status")
            assert status["service"]["batches_indexed"] >= 4
            assert status["service"]["watcher"]["errors"] == 0

    run(main)


def test_a_reader_and_a_writer_share_one_index(vault: Path, tmp_path: Path) -> None:
    folder = mcp_project(tmp_path, vault)

    async def main() -> None:
        async with session(folder) as writer:
            await ready(writer)
            async with session(folder) as reader:
                status = await call(reader, "index_status")
                assert status["service"]["role"] == "reader"
                assert (
                    status["service"]["writer_pid"]
                    == ((await call(writer, "index_status"))["service"]["pid"])
                )
                for client in (writer, reader):
                    out = await call(client, "query_documents", {"query": "redis ttl"})
                    assert out["results"][0]["path"] == "notes/redis.md"
                msg = await error_of(reader, "reindex", {})
                assert "reader" in msg and "writer" in msg
                # A change indexed by the writer is seen by the reader.
                write(vault / "notes" / "capybara.md", "# Capybara\n\nThe hydrochoerus note.\n")
                await wait_until_found(reader, "hydrochoerus", "notes/capybara.md")
            # (the reader exits first here; the takeover is tested below)

    run(main)


def start_cli(folder: Path, *args: str) -> subprocess.Popen[bytes]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("NOTESEEK_")}
    return subprocess.Popen(
        [sys.executable, "-m", "noteseek.interfaces.cli", *args],
        cwd=folder,
        env=env,
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
    )


def wait_for_writer(folder: Path, proc: subprocess.Popen[bytes]) -> None:
    deadline = time.monotonic() + 20
    while not (folder / ".noteseek" / "writer.json").exists():
        assert proc.poll() is None, proc.stderr.read().decode() if proc.stderr else ""
        assert time.monotonic() < deadline, "the process never took the writer role"
        time.sleep(0.05)


def stop(proc: subprocess.Popen[bytes]) -> None:
    if proc.poll() is None:
        proc.kill()
        proc.wait()


def test_a_reader_takes_over_when_the_writer_exits(vault: Path, tmp_path: Path) -> None:
    """`noteseek watch` writes first; the MCP server reads, then takes over when it stops."""
    folder = mcp_project(tmp_path, vault, extra="[watch]\ntakeover_interval = 0.2\n")
    watcher = start_cli(folder, "watch")
    try:
        wait_for_writer(folder, watcher)

        async def main() -> None:
            async with session(folder) as client:
                assert (await call(client, "index_status"))["service"]["role"] == "reader"
                await ready(client)
                watcher.send_signal(signal.SIGTERM)
                assert await anyio.to_thread.run_sync(lambda: watcher.wait(20)) == 0

                async def took_over() -> bool:
                    service = (await call(client, "index_status"))["service"]
                    return service["role"] == "writer" and service["watcher"]["running"]

                await eventually(took_over)
                write(vault / "notes" / "axolotl.md", "# Axolotl\n\nThe ambystoma note.\n")
                await wait_until_found(client, "ambystoma", "notes/axolotl.md")

        run(main)
    finally:
        stop(watcher)


@pytest.mark.parametrize("how", ["SIGTERM", "stdin closed"])
def test_the_server_stops_cleanly(vault: Path, tmp_path: Path, how: str) -> None:
    folder = mcp_project(tmp_path, vault)
    proc = start_cli(folder, "mcp")
    try:
        wait_for_writer(folder, proc)
        if how == "SIGTERM":
            proc.send_signal(signal.SIGTERM)
        else:
            assert proc.stdin is not None
            proc.stdin.close()
        assert proc.wait(timeout=20) == 0
    finally:
        stop(proc)
    # The role was given up and the lock is free for the next process.
    assert not (folder / ".noteseek" / "writer.json").exists()
    lock = WriterLock(folder / ".noteseek")
    assert lock.try_acquire()
    lock.release()


def test_a_client_that_leaves_before_listing_tools_never_has_the_index_opened(
    vault: Path, tmp_path: Path
) -> None:
    """The index opens once the tools are listed; a server whose client left before never
    opens it (shutting down waited for it to open, then closed it)."""
    folder = mcp_project(tmp_path, vault)
    proc = start_cli(folder, "mcp")
    try:
        assert proc.stdin is not None
        proc.stdin.close()
        assert proc.wait(timeout=20) == 0
    finally:
        stop(proc)
    assert not (folder / ".noteseek" / "writer.json").exists()
    assert not (folder / ".noteseek" / "index.db").exists()


def vector_count(index: Path) -> int:
    import sqlite3

    db = index / "index.db"
    if not db.exists():
        return 0
    conn = sqlite3.connect(f"file:{db}?mode=ro", uri=True, timeout=5)
    try:
        return int(conn.execute("SELECT count(*) FROM vectors").fetchone()[0])
    except sqlite3.OperationalError:
        return 0  # tables not created yet
    finally:
        conn.close()


@pytest.mark.embeddings
def test_kill_9_while_embedding_then_a_restart_finishes(vault: Path, tmp_path: Path) -> None:
    folder = mcp_project(tmp_path, vault, embeddings=True, extra="[embedding]\nbatch_size = 4\n")
    index = folder / ".noteseek"
    proc = start_cli(folder, "mcp")
    try:
        deadline = time.monotonic() + 120
        while vector_count(index) == 0:
            assert proc.poll() is None, proc.stderr.read().decode() if proc.stderr else ""
            assert time.monotonic() < deadline, "embedding never started"
            time.sleep(0.02)
        proc.kill()  # SIGKILL in the middle of the embedding phase
        proc.wait()
    finally:
        stop(proc)
    killed_at = vector_count(index)
    assert killed_at > 0

    async def main() -> None:
        async with session(folder) as client:
            status = await call(client, "index_status")
            assert status["service"]["role"] == "writer"  # the dead writer's lock was released
            assert status["chunks"] > 0  # the keyword rows committed before the kill are there
            assert status["status"] == "indexing"
            assert 0 < status["embedding"]["embedded"] < status["embedding"]["total"]
            hybrid = await call(client, "query_documents", {"query": "redis ttl"})
            assert "notes/redis.md" in {r["path"] for r in hybrid["results"]}  # meanwhile

            async def finished() -> bool:
                s = await call(client, "index_status")
                return s["status"] == "ready" and s["embedding"]["pending"] == 0

            await eventually(finished, timeout=180, step=0.5)
            out = await call(
                client,
                "query_documents",
                {"query": "how long until a cached key disappears", "mode": "semantic"},
            )
            assert "notes/redis.md" in {r["path"] for r in out["results"]}
            hyde = await call(
                client,
                "search_with_hypothesis",
                {"hypothesis": "Redis deletes a key once its time to live runs out."},
            )
            assert hyde["mode"] == "hybrid"  # keyword matches of the hypothesis fused in
            assert "notes/redis.md" in {r["path"] for r in hyde["results"]}
            assert {"semantic", "keyword"} <= set(hyde["results"][0]["lanes"])

    run(main)
    import sqlite3

    conn = sqlite3.connect(index / "index.db")
    try:
        assert conn.execute("PRAGMA integrity_check").fetchone()[0] == "ok"
        embed_keys = conn.execute("SELECT count(DISTINCT embed_key) FROM chunks").fetchone()[0]
        assert vector_count(index) >= embed_keys > killed_at
    finally:
        conn.close()


def test_config_file_option_and_a_broken_config(vault: Path, tmp_path: Path) -> None:
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    (tmp_path / "proj").mkdir()
    config = mcp_project(tmp_path / "proj", vault) / ".noteseek.toml"
    (tmp_path / "broken").mkdir()
    (tmp_path / "broken" / ".noteseek.toml").write_text("[search]\ntop_k = 'many'\n")

    async def main() -> None:
        async with session(elsewhere, "--config", str(config)) as client:
            await ready(client)
            out = await call(client, "query_documents", {"query": "redis ttl"})
            assert out["results"][0]["path"] == "notes/redis.md"
        async with session(tmp_path / "broken") as client:
            # The server still starts and lists its tools; calls explain the problem.
            assert len((await client.list_tools()).tools) == len(TOOLS)
            msg = await error_of(client, "query_documents", {"query": "redis"})
            assert "configuration" in msg and "top_k" in msg

    run(main)
