"""MCP and HTTP with the index in Milvus (``NOTESEEK_MILVUS__URI``): the doors unchanged.

A small linked vault is indexed by ``noteseek index`` into Milvus (a Milvus Lite file, or
Milvus's C++ engine over TCP as a server: ``tests/milvus_engine.py``); then the MCP server
(official SDK client over stdio) or ``noteseek serve`` (real requests on loopback) opens
that index: every search mode, reading, links, status, and the live index following an edit,
a rename and a deletion. Milvus Lite serves one process at a time, so each door is the only
process holding the file while it runs; another holder is named in the error.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import httpx
import pytest
from mcp import Client

from tests.helpers import project, run_cli, write
from tests.mcp_client import call, error_of, eventually, run, session
from tests.test_serve import serve_env, serving

NOTES = {
    "notes/redis.md": "---\ntitle: Redis\ntags: [caching]\n---\n# Redis\n\n"
    "Redis keys vanish once their time to live runs out: EXPIRE sets the TTL of a key.\n\n"
    "Streams are covered in [[kafka]].\n",
    "notes/kafka.md": "# Kafka\n\nKafka splits a topic into partitions; consumer groups share "
    "the partitions between their members.\n",
    "notes/caching.md": "# Caching\n\nA cache in front of the database: [[redis]] holds the hot "
    "keys for a while.\n",
    "notes/quagga.md": "# Quagga\n\nThe quagga was a zebra of the Cape, hunted to extinction.\n",
}
SEMANTIC = "when does a key expire"


def lite_env(uri: Path | str, collection: str = "noteseek") -> dict[str, str]:
    """The settings of every process here: the index in Milvus (a Lite file or a server's
    URI, under ``collection``), embeddings on."""
    return {
        "NOTESEEK_MILVUS__URI": str(uri),
        "NOTESEEK_MILVUS__COLLECTION": collection,
        "NOTESEEK_EMBEDDING__ENABLED": "true",
        "NOTESEEK_SEARCH__RECENCY": "off",
    }


@dataclass(frozen=True)
class Where:
    """Where a door test keeps its index: Milvus Lite 3 in a file, or Milvus's C++ engine
    over TCP (as a Milvus Server)."""

    backend: str
    uri: str
    collection: str


@pytest.fixture(params=["milvus-lite", "milvus-engine"])
def where(request: pytest.FixtureRequest, tmp_path: Path) -> Where:
    if request.param == "milvus-engine":
        engine = request.getfixturevalue("milvus_engine")
        return Where("milvus", engine.uri, request.getfixturevalue("engine_prefix"))
    return Where("milvus-lite", str(tmp_path / "lite" / "index.db"), "noteseek")


def indexed_vault(tmp: Path, where: Where) -> tuple[Path, Path, dict[str, str]]:
    """A project over a fresh copy of the vault, indexed into Milvus by the CLI; returns
    (project folder, vault, settings). No SQLite index is made."""
    vault = tmp / "vault"
    for rel, text in NOTES.items():
        write(vault / rel, text)
    folder = tmp / "project"
    folder.mkdir()
    project(folder, {"notes": vault})
    env = lite_env(where.uri, where.collection)
    run_cli(["index", "--json"], folder, env)
    assert not (folder / ".noteseek" / "index.db").exists()
    return folder, vault, env


# -- MCP ------------------------------------------------------------------------------------------


async def paths_for(client: Any, query: str, mode: str = "keyword") -> list[str]:
    out = await call(client, "query_documents", {"query": query, "mode": mode, "top_n": 20})
    return [r["path"] for r in out["results"]]


def link_paths(links: list[dict[str, Any]]) -> set[str | None]:
    return {link["doc_id"] for link in links}


@pytest.mark.embeddings
def test_mcp_searches_reads_and_follows_changes_in_milvus(tmp_path: Path, where: Where) -> None:
    folder, vault, env = indexed_vault(tmp_path, where)
    files_table = f"{where.collection}_files"

    async def main() -> None:
        async with session(folder, env=env) as client:

            async def ready() -> bool:
                status = await call(client, "index_status")
                return status["status"] == "ready" and status["embedding"]["pending"] == 0

            await eventually(ready, timeout=60)
            status = await call(client, "index_status")
            assert status["documents"] == 4 and status["service"]["role"] == "writer"
            store = status["store"]
            assert (store["backend"], store["uri"]) == (where.backend, where.uri)
            assert store["collections"][files_table] == 4
            assert status["embedding"]["embedded"] == status["embedding"]["total"] > 0

            # Every search mode.
            keyword = await call(
                client, "query_documents", {"query": "expire ttl", "mode": "keyword"}
            )
            assert keyword["results"][0]["path"] == "notes/redis.md"
            assert keyword["results"][0]["lanes"] == {"keyword": 1}
            semantic = await call(
                client, "query_documents", {"query": SEMANTIC, "mode": "semantic"}
            )
            assert semantic["results"][0]["path"] == "notes/redis.md"
            assert set(semantic["results"][0]["lanes"]) == {"semantic"}
            hybrid = await call(client, "query_documents", {"query": "redis ttl"})
            assert hybrid["mode"] == "hybrid" and hybrid["results"][0]["path"] == "notes/redis.md"
            assert set(hybrid["results"][0]["lanes"]) == {"keyword", "semantic"}
            hyde = await call(
                client,
                "search_with_hypothesis",
                {"hypothesis": "A key is deleted once its time to live runs out."},
            )
            assert hyde["results"][0]["path"] == "notes/redis.md"
            compressed = await call(client, "query_documents_compressed", {"query": "partitions"})
            assert compressed["results"][0]["path"] == "notes/kafka.md"

            # Reading and links.
            chunk = await call(client, "get_chunk", {"chunk_id": keyword["results"][0]["chunk_id"]})
            assert chunk["path"] == "notes/redis.md" and "EXPIRE" in chunk["text"]
            doc = await call(client, "get_document", {"path": "notes/redis.md"})
            assert doc["title"] == "Redis" and "EXPIRE sets the TTL" in doc["content"]
            section = await call(client, "get_section", {"path": "notes/redis.md", "line": 7})
            assert "EXPIRE" in section["text"]
            links = await call(client, "get_links", {"path": "notes/redis.md"})
            assert link_paths(links["outgoing"]) == {"notes/notes/kafka.md"}
            assert link_paths(links["backlinks"]) == {"notes/notes/caching.md"}
            around = await call(client, "get_neighbourhood", {"path": "notes/redis.md"})
            assert {n["path"] for n in around["nodes"]} >= {
                "notes/redis.md",
                "notes/kafka.md",
                "notes/caching.md",
            }

            # An edit, saved as editors do (a temporary file renamed over the note): the new
            # text is found, the old is not.
            saved = vault / "notes/.redis.md.tmp"
            saved.write_text(NOTES["notes/redis.md"].replace("EXPIRE", "OKAPI"), encoding="utf-8")
            os.replace(saved, vault / "notes/redis.md")

            async def edited() -> bool:
                return await paths_for(client, "okapi") == ["notes/redis.md"] and not (
                    await paths_for(client, "EXPIRE")
                )

            await eventually(edited, timeout=30)
            doc = await call(client, "get_document", {"path": "notes/redis.md"})
            assert "OKAPI sets the TTL" in doc["content"]

            # A rename: the old path is gone from search, reading and links.
            os.rename(vault / "notes/caching.md", vault / "notes/cache-layer.md")

            async def renamed() -> bool:
                return await paths_for(client, "database") == ["notes/cache-layer.md"]

            await eventually(renamed, timeout=30)
            message = await error_of(client, "get_document", {"path": "notes/caching.md"})
            assert "no indexed document" in message
            links = await call(client, "get_links", {"path": "notes/redis.md"})
            assert link_paths(links["backlinks"]) == {"notes/notes/cache-layer.md"}
            moved = await call(client, "get_links", {"path": "notes/cache-layer.md"})
            assert link_paths(moved["outgoing"]) == {"notes/notes/redis.md"}
            assert (await paths_for(client, "cache in front of a database", "semantic"))[0] == (
                "notes/cache-layer.md"
            )

            # A new note in a new folder, then the folder deleted.
            write(vault / "notes/zoo/okapi.md", "# Okapi\n\nThe forest giraffe: [[cache-layer]].\n")

            async def created() -> bool:
                links = await call(client, "get_links", {"path": "notes/cache-layer.md"})
                return link_paths(links["backlinks"]) == {"notes/notes/zoo/okapi.md"}

            async def searchable() -> bool:
                return await paths_for(client, "giraffe") == ["notes/zoo/okapi.md"]

            await eventually(created, timeout=30)
            # The links can be read before the run that wrote them has flushed Milvus Lite's
            # segments for search (a flake on a loaded machine): wait for the search as well.
            await eventually(searchable, timeout=30)
            shutil.rmtree(vault / "notes/zoo")

            async def folder_gone() -> bool:
                links = await call(client, "get_links", {"path": "notes/cache-layer.md"})
                return not links["backlinks"] and not await paths_for(client, "giraffe")

            await eventually(folder_gone, timeout=30)

            # A deletion: gone from search (every mode), reading and links.
            (vault / "notes/kafka.md").unlink()

            async def deleted() -> bool:
                return not await paths_for(client, "partitions")

            await eventually(deleted, timeout=30)
            assert "notes/kafka.md" not in await paths_for(client, "kafka partitions", "semantic")
            assert "notes/kafka.md" not in await paths_for(client, "kafka partitions", "hybrid")
            message = await error_of(client, "get_links", {"path": "notes/kafka.md"})
            assert "no indexed document" in message

            async def dangling() -> bool:  # links to it resolve again with the link graph's
                links = await call(client, "get_links", {"path": "notes/redis.md"})  # update
                [link] = links["outgoing"]
                return (link["doc_id"], link["placeholder"]) == (None, "kafka")

            await eventually(dangling, timeout=30)

            # Memory lives in the same Milvus index.
            made = await call(
                client,
                "create_memory",
                {
                    "name": "decisions/ttl",
                    "content": "Session keys get a TTL of 15 minutes, set in [[redis]].",
                },
            )
            assert made["created"]

            async def remembered(query: str, mode: str) -> bool:
                out = await call(client, "search_memories", {"query": query, "mode": mode})
                return [r["path"] for r in out["results"]][:1] == ["decisions/ttl.md"]

            await eventually(lambda: remembered("session minutes", "keyword"), timeout=30)
            await eventually(lambda: remembered("how long does a login last", "semantic"))
            assert "decisions/ttl.md" not in await paths_for(client, "session minutes")
            links = await call(client, "get_links", {"path": "notes/redis.md"})
            assert [b["memory"] for b in links["backlinks"] if "ttl" in b["doc_id"]] == [True]

            # A forced reindex runs as a job and changes nothing.
            job = (await call(client, "reindex", {"force": True}))["job"]

            async def done() -> bool:
                jobs = (await call(client, "index_status"))["service"]["jobs"]
                return any(j["id"] == job["id"] and j["state"] == "done" for j in jobs)

            await eventually(done, timeout=60)
            assert await paths_for(client, "okapi") == ["notes/redis.md"]

            status = await call(client, "index_status")
            files = {r["name"]: r["files"] for r in status["roots"]}
            assert files == {"notes": 3, "memory": 1}
            assert status["store"]["collections"][files_table] == status["documents"] == 4
            assert status["service"]["watcher"]["errors"] == 0

    run(main)
    # The server has exited: the Lite file is free, and everything it wrote is kept.
    found = json.loads(run_cli(["search", "okapi", "--json"], folder, env).stdout)["results"]
    assert [r["path"] for r in found] == ["notes/redis.md"]
    gone = run_cli(["search", "partitions", "--json"], folder, env, code=1)  # nothing matches
    assert json.loads(gone.stdout)["results"] == []


# -- HTTP -----------------------------------------------------------------------------------------


def until(check: Callable[[], bool], timeout: float = 30.0) -> None:
    deadline = time.monotonic() + timeout
    while not check():
        assert time.monotonic() < deadline, "condition not met in time"
        time.sleep(0.1)


def http_paths(client: httpx.Client, query: str, mode: str = "keyword") -> list[str]:
    response = client.post("/query_documents", json={"query": query, "mode": mode, "top_n": 20})
    assert response.status_code == 200, response.text
    return [r["path"] for r in response.json()["results"]]


@pytest.mark.embeddings
def test_http_searches_reads_and_follows_changes_in_milvus(tmp_path: Path, where: Where) -> None:
    folder, vault, env = indexed_vault(tmp_path, where)
    with (
        serving(folder, env=serve_env(tmp_path / "home", **env)) as server,
        server.client() as client,
    ):
        until(
            lambda: (
                (s := client.get("/status").json())["status"] == "ready"
                and s["embedding"]["pending"] == 0
            ),
            timeout=60,
        )
        status = client.get("/status").json()
        assert status["documents"] == 4 and status["store"]["backend"] == where.backend

        assert http_paths(client, "expire ttl")[0] == "notes/redis.md"
        assert http_paths(client, SEMANTIC, "semantic")[0] == "notes/redis.md"
        hybrid = client.post("/query_documents", json={"query": "redis ttl"}).json()
        assert hybrid["results"][0]["path"] == "notes/redis.md"
        assert set(hybrid["results"][0]["lanes"]) == {"keyword", "semantic"}
        hyde = client.post(
            "/search_with_hypothesis",
            json={"hypothesis": "A key is deleted once its time to live runs out."},
        ).json()
        assert hyde["results"][0]["path"] == "notes/redis.md"
        events = client.post(
            "/query_documents_stream", json={"query": "partitions", "mode": "keyword"}
        ).text
        assert "notes/kafka.md" in events and "event: done" in events

        chunk_id = hybrid["results"][0]["chunk_id"]
        assert "EXPIRE" in client.get(f"/chunks/{chunk_id}").json()["text"]
        doc = client.get("/documents/notes/redis.md").json()
        assert doc["title"] == "Redis" and "EXPIRE sets the TTL" in doc["content"]
        links = client.get("/links/notes/redis.md").json()
        assert link_paths(links["outgoing"]) == {"notes/notes/kafka.md"}
        assert link_paths(links["backlinks"]) == {"notes/notes/caching.md"}
        graph = client.get("/graph/notes/redis.md").json()
        assert graph["nodes"][0]["center"] is True and graph["edges"]

        write(vault / "notes/redis.md", NOTES["notes/redis.md"].replace("EXPIRE", "OKAPI"))
        until(lambda: http_paths(client, "okapi") == ["notes/redis.md"])
        assert http_paths(client, "EXPIRE") == []

        os.rename(vault / "notes/caching.md", vault / "notes/cache-layer.md")
        until(lambda: http_paths(client, "database") == ["notes/cache-layer.md"])
        assert client.get("/documents/notes/caching.md").status_code == 404
        links = client.get("/links/notes/redis.md").json()
        assert link_paths(links["backlinks"]) == {"notes/notes/cache-layer.md"}
        page = client.get("/render/notes/cache-layer.md").json()  # the web page's note view
        assert link_paths(page["outgoing"]) == {"notes/notes/redis.md"}

        (vault / "notes/kafka.md").unlink()
        until(lambda: http_paths(client, "partitions") == [])
        assert "notes/kafka.md" not in http_paths(client, "kafka partitions", "hybrid")
        assert client.get("/links/notes/kafka.md").status_code == 404
        [dangling] = client.get("/links/notes/redis.md").json()["outgoing"]
        assert (dangling["doc_id"], dangling["placeholder"]) == (None, "kafka")

        made = client.post("/memories", json={"name": "ops", "content": "Cron rotates logs."})
        assert made.status_code == 201, made.text

        def remembered() -> bool:
            out = client.post("/search_memories", json={"query": "cron logs", "mode": "keyword"})
            return [r["path"] for r in out.json()["results"]] == ["ops.md"]

        until(remembered)
        status = client.get("/status").json()
        assert {r["name"]: r["files"] for r in status["roots"]} == {"notes": 3, "memory": 1}
        assert status["service"]["watcher"]["errors"] == 0

        async def over_mcp() -> None:  # MCP over HTTP, from the same process
            async with Client(f"{server.url}/mcp", read_timeout_seconds=60) as mcp:
                out = await call(mcp, "query_documents", {"query": "okapi", "mode": "hybrid"})
                assert out["results"][0]["path"] == "notes/redis.md"
                links = await call(mcp, "get_links", {"path": "notes/redis.md"})
                assert link_paths(links["backlinks"]) == {"notes/notes/cache-layer.md"}

        run(over_mcp)
    assert server.proc.returncode == 0 and "Traceback" not in server.log
    # A Milvus index is kept, and checked, by Milvus: the writer runs no full checks of it.
    assert "checked the index through" not in server.log
    found = json.loads(run_cli(["search", "okapi", "--json"], folder, env).stdout)["results"]
    assert [r["path"] for r in found] == ["notes/redis.md"]


# -- one process at a time ------------------------------------------------------------------------


def test_a_held_lite_file_is_named_by_every_door_and_the_writer_starts_once_it_is_free(
    tmp_path: Path,
) -> None:
    uri = tmp_path / "held.db"
    folder = project(tmp_path, {"notes": write(tmp_path / "v" / "a.md", "# A\n\nword\n").parent})
    holder = subprocess.Popen(
        [
            sys.executable,
            "-c",
            f"from pymilvus import MilvusClient; MilvusClient({str(uri)!r}); "
            "print('open', flush=True); import time; time.sleep(60)",
        ],
        stdout=subprocess.PIPE,
        stderr=subprocess.DEVNULL,
        text=True,
    )
    env = {"NOTESEEK_MILVUS__URI": str(uri), "NOTESEEK_EMBEDDING__ENABLED": "false"}
    try:
        assert holder.stdout is not None and holder.stdout.readline().strip() == "open"

        async def main() -> None:
            async with session(folder, env=env) as client:
                message = await error_of(client, "query_documents", {"query": "word"})
                assert "another process may have this Milvus Lite file open" in message
                assert "milvus.uri" in message

        run(main)
        with (
            serving(folder, env=serve_env(tmp_path / "home", **env)) as server,
            server.client() as client,
        ):
            response = client.post("/query_documents", json={"query": "word"})
            assert response.status_code == 503, response.text
            message = response.json()["error"]
            assert "another process may have this Milvus Lite file open" in message
            # Once the other process lets go, the writer indexes and watches by itself.
            holder.kill()
            holder.wait(10)

            def serving_again() -> bool:
                status = client.get("/status")
                return (
                    status.status_code == 200
                    and status.json()["status"] == "ready"
                    and status.json()["service"]["watcher"]["running"]
                )

            until(serving_again)
            assert http_paths(client, "word") == ["a.md"]
            write(tmp_path / "v" / "b.md", "# B\n\nanother word\n")
            until(lambda: http_paths(client, "another") == ["b.md"])
        assert "Traceback" not in server.log
        assert server.log.count("another process may have this Milvus Lite file open") <= 3
    finally:
        holder.kill()
        holder.wait(10)


def test_threads_of_one_process_open_a_new_lite_file_at_once(tmp_path: Path) -> None:
    """A door's threads (its searches, its background reader) may open the index together:
    Milvus Lite starts one server per file and process, and none of them is refused."""
    from noteseek.store.backend import MilvusBackend
    from noteseek.store.milvus import MilvusConfig

    backend = MilvusBackend(MilvusConfig(uri=str(tmp_path / "fresh.db")))
    opened: list[Any] = []
    failed: list[BaseException] = []

    def open_one() -> None:
        try:
            opened.append(backend.reader())
        except BaseException as exc:
            failed.append(exc)

    threads = [threading.Thread(target=open_one) for _ in range(3)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(60)
    try:
        assert not failed, failed
        assert len(opened) == 3 and all(s.check() is None for s in opened)
    finally:
        for store in opened:
            store.close()
