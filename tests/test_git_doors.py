"""Git history through the real doors: MCP ``search_git_history`` with the official SDK client
over stdio, and HTTP against a running ``noteseek serve`` that picks up a new commit live."""

from __future__ import annotations

import re
import time
from pathlib import Path

from tests.git_repos import Repo
from tests.helpers import project
from tests.mcp_client import call, error_of, eventually, run, session
from tests.test_serve import serve_env, serving


def history(tmp_path: Path) -> tuple[Repo, Path]:
    repo = Repo(tmp_path / "site")
    repo.commit("Add the auth guide", {"docs/auth.md": "# Auth\n\nLogin tokens.\n"}, day=10)
    repo.commit(
        "Shorten token lifetime\n\nA stolen token was valid for a day: now 15 minutes.",
        {"docs/auth.md": "# Auth\n\nLogin tokens expire after 15 minutes.\n"},
        author=("Bo", "bo@example.org"),
        day=100,
    )
    repo.commit("Add the changelog", {"CHANGELOG.md": "# Changes\n\nFirst release.\n"}, day=120)
    folder = tmp_path / "project"
    folder.mkdir()
    project(folder, {"docs": repo.path / "docs"}, "[embedding]\nenabled = false\n")
    with (folder / ".noteseek.toml").open("a", encoding="utf-8") as fh:
        fh.write(f'[roots.site]\npath = "{repo.path.as_posix()}"\nkind = "git"\n')
    return repo, folder


def test_an_agent_asks_which_commit_changed_the_auth_docs_and_why(tmp_path: Path) -> None:
    _repo, folder = history(tmp_path)

    async def main() -> None:
        async with session(folder) as client:
            tools = {t.name: t for t in (await client.list_tools()).tools}
            schema = tools["search_git_history"].input_schema["properties"]
            for name in ("query", "top_k", "min_score", "file_pattern", "author", "after"):
                assert name in schema
            assert "before" in schema and "include_diff" in schema

            async def answered() -> bool:
                out = await call(
                    client,
                    "search_git_history",
                    {"query": "token lifetime", "file_pattern": "docs/auth*", "mode": "keyword"},
                )
                return bool(out["commits"])

            await eventually(answered, timeout=30)
            out = await call(
                client,
                "search_git_history",
                {
                    "query": "why do login tokens expire sooner",
                    "file_pattern": "docs/**",
                    "after": "2023-12-01",
                    "before": "2024-06-01",
                    "top_n": 3,
                    "include_diff": True,
                },
            )
            top = out["commits"][0]
            assert top["subject"] == "Shorten token lifetime"
            assert "stolen token" in top["message"]
            assert top["author"] == "Bo" and top["date"].startswith("2024-02-22")
            assert top["file"] == "docs/auth.md"
            assert "+Login tokens expire after 15 minutes." in top["hunk"]
            assert len(top["short_hash"]) == 10 and top["hash"].startswith(top["short_hash"])
            # The text an agent reads: a line per commit, never the JSON again.
            asked = {"query": "token lifetime", "mode": "keyword"}
            text = (await client.call_tool("search_git_history", asked)).content[0].text
            assert " commits (keyword, " in text.split("\n")[0] and "{" not in text
            assert re.search(r"\[1\] [0-9a-f]{10} 2024-02-22 Bo: Shorten token lifetime \(", text)
            stats = (await client.call_tool("memory_stats", {})).content[0].text
            assert "memories: " in stats and "{" not in stats and "\n" in stats
            by_ada = await call(
                client, "search_git_history", {"query": "auth", "author": "ada", "mode": "keyword"}
            )
            assert {c["subject"] for c in by_ada["commits"]} == {"Add the auth guide"}
            # A document result says when it last changed, from the index.
            docs = await call(client, "query_documents", {"query": "login tokens"})
            assert docs["results"][0]["last_change"]["author"] == "Bo"
            assert "top_n" in await error_of(
                client, "search_git_history", {"query": "x", "top_n": 0}
            )
            assert "cannot read the date" in await error_of(
                client, "search_git_history", {"query": "x", "after": "last spring"}
            )

    run(main)


def test_a_new_commit_is_searchable_over_http_within_seconds(tmp_path: Path) -> None:
    repo, folder = history(tmp_path)
    with serving(folder, env=serve_env(tmp_path / "home")) as server, server.client() as client:
        server.wait_ready(client)
        first = client.post(
            "/search_git_history", json={"query": "changelog", "mode": "keyword"}
        ).json()
        assert first["commits"][0]["subject"] == "Add the changelog"
        repo.commit(
            "Describe the rate limiter", {"docs/limits.md": "# Limits\n\nA token bucket.\n"}
        )
        committed = time.monotonic()
        while True:
            found = client.post(
                "/search_git_history", json={"query": "rate limiter bucket", "mode": "keyword"}
            ).json()["commits"]
            if found:
                break
            assert time.monotonic() - committed < 5, "the new commit was not found within 5 s"
            time.sleep(0.05)
        assert found[0]["subject"] == "Describe the rate limiter"
        bad = client.post("/search_git_history", json={"query": "x", "author": 3})
        assert bad.status_code == 400 and "Traceback" not in bad.text
