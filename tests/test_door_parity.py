"""The same query on the same memory folder ranks the same through every door.

The memory kind's profile (small chunks grown to ``memory.expand_chars``, the memory recency,
document weight and per-document cap) belongs to the kind, so ``noteseek search --source
memory``, ``noteseek memory search``, MCP ``query_documents(source="memory")`` and
``search_memories``, and HTTP (which the page reads) give one ranking with the same line
ranges. Commits likewise: the CLI, MCP and HTTP all answer from ``search_git_history``.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import anyio
import httpx

from tests.git_repos import Repo
from tests.helpers import project, run_cli, write
from tests.mcp_client import call, session
from tests.test_serve import serve_env, serving

DAYS = {
    "2023-05-07": [
        ("18:20", "conversation with Caroline and Melanie"),
        ("Caroline", "I went to a LGBTQ support group yesterday and it was so powerful."),
        ("Melanie", "That sounds amazing. What happened at the support group?"),
        ("Caroline", "The transgender stories were inspiring; I felt accepted."),
        ("Melanie", "I painted a lake sunrise last year, painting calms me down."),
    ],
    "2023-05-25": [
        ("13:10", "conversation with Caroline and Melanie"),
        ("Melanie", "We went camping with the kids in the mountains last week."),
        ("Caroline", "I am researching adoption agencies for my future family."),
        ("Melanie", "Pottery class was fun: I made a black and white bowl."),
        ("Caroline", "I gave a school speech about my transgender journey."),
    ],
    "2023-06-09": [
        ("09:00", "conversation with Caroline and Melanie"),
        ("Caroline", "I joined a mentorship program for LGBTQ youth at the center."),
        ("Melanie", "My kids loved the dinosaur exhibit at the museum."),
        ("Caroline", "The support group asked me to speak about adoption next month."),
    ],
}
QUERIES = [
    "support group Caroline",
    "what did Melanie paint",
    "adoption agencies",
    "Caroline and Melanie conversation",
]


def _log(day: str, turns: list[tuple[str, str]]) -> str:
    time_, title = turns[0]
    lines = [f"# {day}", "", f"## {time_} {title}", ""]
    for speaker, text in turns[1:]:
        lines += [f"{speaker}: {text}", ""]
    return "\n".join(lines)


def _memory_project(tmp_path: Path) -> Path:
    docs = tmp_path / "docs"
    write(docs / "readme.md", "# Readme\n\nA support group for the project's users.\n")
    folder = project(tmp_path, {"docs": docs}, "[embedding]\nenabled = false\n")
    for day, turns in DAYS.items():
        write(folder / ".memories" / "memory" / f"{day}.md", _log(day, turns))
    return folder


def _ranking(results: list[dict[str, Any]]) -> list[tuple[str, int, int]]:
    return [(r["doc_id"], r["start_line"], r["end_line"]) for r in results]


def _cli(folder: Path, env: dict[str, str], *args: str) -> dict[str, Any]:
    out = run_cli([*args, "--json", "--mode", "keyword"], folder, env=env).stdout
    parsed: dict[str, Any] = json.loads(out)
    return parsed


def test_a_memory_search_ranks_the_same_through_every_door(tmp_path: Path) -> None:
    folder = _memory_project(tmp_path)
    env = serve_env(tmp_path / "home")
    run_cli(["index"], folder, env=env)
    rankings: dict[str, dict[str, list[tuple[str, int, int]]]] = {q: {} for q in QUERIES}
    for q in QUERIES:
        rankings[q]["cli search --source memory"] = _ranking(
            _cli(folder, env, "search", q, "--source", "memory")["results"]
        )
        rankings[q]["cli memory search"] = _ranking(
            _cli(folder, env, "memory", "search", q)["results"]
        )

    async def over_mcp() -> None:
        async with session(folder, env=env) as client:
            for q in QUERIES:
                args = {"query": q, "mode": "keyword"}
                docs = await call(client, "query_documents", {**args, "source": "memory"})
                rankings[q]["mcp query_documents"] = _ranking(docs["results"])
                memories = await call(client, "search_memories", args)
                rankings[q]["mcp search_memories"] = _ranking(memories["results"])

    anyio.run(over_mcp)
    with serving(folder, env=env) as server, server.client() as client:
        server.wait_ready(client)
        for q in QUERIES:
            body = {"query": q, "mode": "keyword"}
            docs = client.post("/query_documents", json={**body, "source": "memory"})
            memories = client.post("/search_memories", json=body)
            assert docs.status_code == memories.status_code == 200
            rankings[q]["http query_documents"] = _ranking(docs.json()["results"])
            rankings[q]["http search_memories"] = _ranking(memories.json()["results"])
    for q, by_door in rankings.items():
        first = by_door["cli memory search"]
        assert first, f"{q!r} found no memory"
        for door, ranking in by_door.items():
            assert ranking == first, f"{q!r}: {door} ranks {ranking}, memory search {first}"
        # The memory profile holds on every door: the best result grows to its neighbours
        # (memory.expand_chars), beyond the one turn or lone heading it matched.
        _, start, end = first[0]
        assert end - start >= 4, (q, first)


def test_a_commit_search_ranks_the_same_through_every_door(tmp_path: Path) -> None:
    repo = Repo(tmp_path / "repo")
    repo.commit("Add the cache page", {"cache.md": "# Cache\n\nEntries expire.\n"})
    repo.commit("Explain cache expiry", {"cache.md": "# Cache\n\nEntries expire after a TTL.\n"})
    repo.commit("Document token rotation", {"auth.md": "# Auth\n\nTokens rotate.\n"})
    notes = tmp_path / "notes"
    write(notes / "index.md", "# Index\n\nNothing about caches.\n")
    history = f'[roots.history]\npath = "{repo.path.as_posix()}"\nkind = "git"\n'
    folder = project(tmp_path, {"notes": notes}, history + "[embedding]\nenabled = false\n")
    env = serve_env(tmp_path / "home")
    run_cli(["index"], folder, env=env)
    query = "cache expiry"
    cli = _cli(folder, env, "search", query, "--source", "commits")["commits"]

    async def over_mcp() -> list[dict[str, Any]]:
        async with session(folder, env=env) as client:
            out = await call(client, "search_git_history", {"query": query, "mode": "keyword"})
            commits: list[dict[str, Any]] = out["commits"]
            return commits

    mcp = anyio.run(over_mcp)
    with serving(folder, env=env) as server, server.client() as client:
        server.wait_ready(client)
        reply: httpx.Response = client.post(
            "/search_git_history", json={"query": query, "mode": "keyword"}
        )
        http = reply.json()["commits"]
    hashes = [c["hash"] for c in cli]
    assert hashes, "no commit found"
    assert [c["hash"] for c in mcp] == hashes
    assert [c["hash"] for c in http] == hashes
