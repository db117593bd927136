"""Memory through the real doors: MCP with the official SDK client over stdio (one agent, and
three agents writing one memory folder at once) and HTTP against a running ``noteseek serve``."""

from __future__ import annotations

import re
import time
from pathlib import Path

import anyio
import pytest

from tests.helpers import project, write
from tests.mcp_client import call, error_of, eventually, run, session
from tests.test_serve import serve_env, serving


def memory_project(tmp_path: Path, *, embeddings: bool = False) -> Path:
    docs = tmp_path / "docs"
    write(docs / "auth.md", "# Auth\n\nThe auth module issues login tokens.\n")
    settings = "" if embeddings else "[embedding]\nenabled = false\n"
    return project(tmp_path, {"docs": docs}, settings)


async def found(client, query: str, mode: str, path: str) -> bool:
    out = await call(client, "search_memories", {"query": query, "mode": mode})
    return path in [r["path"] for r in out["results"]]


@pytest.mark.embeddings
def test_an_agent_writes_finds_links_and_restores_memory_over_mcp(tmp_path: Path) -> None:
    folder = memory_project(tmp_path, embeddings=True)

    async def main() -> None:
        async with session(folder) as client:
            await eventually(
                lambda: _ready(client), timeout=60
            )  # the documents are indexed and embedded
            made = await call(
                client,
                "create_memory",
                {
                    "name": "decisions/tokens",
                    "content": "Login tokens now expire after 15 minutes; refresh tokens last "
                    "a week. Plan to refactor [[auth]] for rotation.",
                    "type": "plan",
                    "tags": ["security"],
                },
            )
            assert made["created"] and made["indexed"].startswith("queued")
            keyword = await eventually(
                lambda: found(client, "refresh tokens", "keyword", "decisions/tokens.md"),
                timeout=10,
                step=0.05,
            )
            semantic = await eventually(
                lambda: found(
                    client, "how long does a session last", "semantic", "decisions/tokens.md"
                ),
                timeout=30,
                step=0.1,
            )
            print(f"searchable by keyword after {keyword:.2f} s, by meaning after {semantic:.2f} s")
            linked = await call(
                client,
                "search_linked_memories",
                {"query": "rotation", "target_document": "auth.md", "mode": "keyword"},
            )
            assert [link["type"] for link in linked["links"]] == ["refactors"]
            links = await call(client, "get_links", {"path": "auth.md"})
            assert links["backlinks"][0]["memory"] is True
            await call(client, "delete_memory", {"name": "decisions/tokens"})
            await eventually(lambda: _gone(client, "refresh tokens"), timeout=10, step=0.05)
            await call(client, "restore_memory", {"name": "decisions/tokens"})
            await eventually(
                lambda: found(client, "refresh tokens", "keyword", "decisions/tokens.md"),
                timeout=10,
            )
            message = await error_of(client, "create_memory", {"name": "../up", "content": "x"})
            assert "'..'" in message
            stats = await call(client, "memory_stats")
            assert stats["memories"] == 1 and stats["trash"] == 0

    run(main)


async def _ready(client) -> bool:
    status = await call(client, "index_status")
    return bool(status["status"] == "ready" and status["documents"] > 0)


async def _gone(client, query: str) -> bool:
    out = await call(client, "search_memories", {"query": query, "mode": "keyword"})
    return not out["results"]


def test_three_agents_write_one_memory_folder_at_once(tmp_path: Path) -> None:
    folder = memory_project(tmp_path)
    entries = 12

    async def agent(number: int) -> None:
        async with session(folder) as client:
            for i in range(entries):
                await call(client, "append_memory", {"content": f"agent {number} note {i} done."})
            await call(
                client,
                "create_memory",
                {"name": f"agent-{number}", "content": f"Agent {number} was here."},
            )

    async def main() -> None:
        async with anyio.create_task_group() as group:
            for number in range(3):
                group.start_soon(agent, number)
        async with session(folder) as client:
            listed = await call(client, "list_memories", {"status": "all"})
            assert {m["name"] for m in listed["memories"]} >= {"agent-0", "agent-1", "agent-2"}
            assert not listed["problems"]

    run(main)
    logs = list((folder / ".memories" / "memory").glob("*.md"))
    text = "".join(p.read_text(encoding="utf-8") for p in logs)
    for number in range(3):
        for i in range(entries):
            assert text.count(f"agent {number} note {i} done.") == 1, (number, i)
    # Every entry is whole: a heading, a blank line, its text.
    assert len(re.findall(r"^## \d\d:\d\d\n\nagent \d note \d+ done\.$", text, re.M)) == 3 * entries
    assert not list((folder / ".memories").rglob(".*tmp*"))


def test_memory_over_http(tmp_path: Path) -> None:
    folder = memory_project(tmp_path)
    with serving(folder, env=serve_env(tmp_path / "home")) as server, server.client() as client:
        server.wait_ready(client)
        made = client.post(
            "/memories", json={"name": "ops", "content": "The cron job rotates logs nightly."}
        )
        assert made.status_code == 201, made.text
        assert made.json()["created"] is True
        deadline = time.monotonic() + 10
        while True:
            hits = client.post(
                "/search_memories", json={"query": "cron logs", "mode": "keyword"}
            ).json()["results"]
            if hits:
                break
            assert time.monotonic() < deadline
            time.sleep(0.05)
        assert hits[0]["path"] == "ops.md"
        docs = client.post("/query_documents", json={"query": "cron", "mode": "keyword"}).json()
        assert docs["results"] == []
        assert client.get("/memory/ops").json()["content"] == "The cron job rotates logs nightly."
        listed = client.post("/memories/list", json={}).json()["memories"]
        assert [m["name"] for m in listed] == ["ops"]
        assert client.get("/memories/stats").json()["memories"] == 1
        again = client.post("/memories", json={"name": "ops", "content": "Different."})
        assert again.status_code == 409 and "already exists" in again.json()["error"]
        bad = client.post("/memories", json={"name": "/etc/passwd", "content": "x"})
        assert bad.status_code == 400 and "Traceback" not in bad.text
        missing = client.get("/memory/nothing")
        assert missing.status_code == 404
        assert client.post("/memories/delete", json={"name": "ops"}).status_code == 200
        assert (folder / ".memories" / ".trash" / "ops.md").exists()
