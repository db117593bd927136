"""Every MCP tool called by the official SDK client over real stdio, with valid arguments: its
structured result has the fields the schema promises and its text rendering is the one its
operation names (a tool added without a call here fails the listing check)."""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

import pytest

from tests.mcp_client import call, eventually, run, session
from tests.test_git_doors import history


async def _text(client: Any, tool: str, arguments: dict[str, Any]) -> tuple[str, Any]:
    """The text rendering and the structured result of a successful call."""
    result = await client.call_tool(tool, arguments)
    assert not result.is_error, result.content[0].text
    text = result.content[0].text
    assert text and "Traceback" not in text
    return text, result.structured_content


@pytest.mark.embeddings  # search_with_hypothesis embeds its passage
def test_every_tool_answers_in_its_own_rendering(tmp_path: Path) -> None:
    _repo, folder = history(tmp_path)
    config = folder / ".noteseek.toml"
    config.write_text(config.read_text().replace("enabled = false", "enabled = true"))
    called: set[str] = set()

    async def main() -> None:
        async with session(folder) as client:
            listed = {t.name for t in (await client.list_tools()).tools}

            async def text(tool: str, arguments: dict[str, Any] | None = None) -> tuple[str, Any]:
                called.add(tool)
                return await _text(client, tool, arguments or {})

            async def ready() -> bool:
                status = await call(client, "index_status")
                vectors = status["embedding"]
                return (
                    bool(status["status"] == "ready" and vectors["total"] >= 2)
                    and not (vectors["pending"])
                )

            await eventually(ready, timeout=60)

            # Searches: a head line, then each result with its heading path and text.
            shown, out = await text("query_documents", {"query": "login tokens expire"})
            assert out["results"][0]["path"] == "auth.md"
            assert re.match(r"\d+ results? \(\w+, [\d.]+ ms\)", shown)
            assert "[1] docs/auth.md > Auth (lines " in shown and "15 minutes" in shown
            chunk_id = out["results"][0]["chunk_id"]
            shown, out = await text("query_documents_compressed", {"query": "login tokens"})
            assert "compressed: " in shown and out["compression"]["tokens_saved"] >= 0
            shown, out = await text(
                "search_with_hypothesis", {"hypothesis": "Login tokens expire after minutes."}
            )
            assert " result" in shown.split("\n")[0] and out["results"]
            shown, out = await text("search_git_history", {"query": "token lifetime"})
            assert out["commits"][0]["subject"] == "Shorten token lifetime"
            assert " commits (" in shown.split("\n")[0] and "Shorten token lifetime" in shown

            # Reading: a section, a numbered document, links and the neighbourhood.
            shown, out = await text("get_chunk", {"chunk_id": chunk_id})
            assert shown.startswith("docs/auth.md > Auth (lines ") and "15 minutes" in shown
            shown, out = await text("get_section", {"path": "auth.md", "line": 3})
            assert out["heading_path"] == ["Auth"] and "15 minutes" in shown
            shown, out = await text("get_document", {"path": "auth.md"})
            assert shown.startswith("docs/auth.md lines 1-") and "    1  # Auth" in shown
            shown, out = await text("get_links", {"path": "auth.md"})
            assert shown.startswith("docs/auth.md\nlinks to (0):") and out["backlinks"] == []
            shown, out = await text("get_neighbourhood", {"path": "auth.md"})
            assert "docs/auth.md" in shown and "{" not in shown

            # The index: its status, and a re-index that returns a job.
            shown, out = await text("index_status")
            assert out["status"] == "ready" and "status: ready" in shown
            shown, out = await text("reindex")
            assert out["job"]["id"] and f"id={out['job']['id']}" in shown

            # Memory writes: one line naming the memory and how it reaches the index.
            shown, out = await text(
                "create_memory",
                {"name": "decisions/tokens", "content": "Tokens last 15 minutes. See [[auth]]."},
            )
            assert out["created"] and shown.startswith(out["message"])
            assert "(memory/decisions/tokens.md; " in shown
            shown, out = await text("append_memory", {"content": "Rotated the signing key."})
            assert out["created"] and out["name"].startswith("memory/")
            assert shown.startswith(out["message"]) and ".md; " in shown
            shown, out = await text(
                "update_memory", {"name": "decisions/tokens", "append": "Refresh lasts a week."}
            )
            assert out["name"] == "decisions/tokens" and "(memory/decisions/tokens.md; " in shown
            shown, out = await text("read_memory", {"name": "decisions/tokens"})
            assert "Refresh lasts a week." in out["content"] and "Refresh lasts a week." in shown
            shown, out = await text("list_memories")
            assert out["count"] >= 1 and "memories (" in shown
            shown, out = await text("memory_stats")
            assert out["memories"] == 2 and "memories: 2" in shown  # the named one and the log

            async def findable() -> bool:
                found = await call(
                    client, "search_memories", {"query": "refresh lasts", "mode": "keyword"}
                )
                return bool(found["results"])

            await eventually(findable, timeout=30)
            shown, out = await text("search_memories", {"query": "refresh lasts"})
            assert "decisions/tokens.md" in shown
            shown, out = await text(
                "search_linked_memories", {"query": "tokens", "target_document": "auth.md"}
            )
            assert out["target"] == "docs/auth.md" and "memory links to docs/auth.md" in shown

            # Flush: the summary is appended once, and the call succeeds (it failed with 'root'
            # after writing, so an agent that retried flushed twice).
            shown, out = await text("flush_memories", {"dry_run": True})
            assert out["dry_run"] and out["written_to"] is None and out["summary"]
            assert shown.startswith(out["message"]) and "sources: " in shown
            shown, out = await text("flush_memories")
            assert not out["dry_run"] and out["written_to"] and out["sources"]
            assert shown.startswith(out["message"]) and out["summary"].strip() in shown
            log = folder / ".memories" / f"{out['written_to']}.md"
            assert log.read_text(encoding="utf-8").count(out["summary"].strip()) == 1

            shown, out = await text("delete_memory", {"name": "decisions/tokens"})
            assert "to the trash" in shown and "(memory/.trash/decisions/tokens.md; " in shown
            shown, out = await text("restore_memory", {"name": "decisions/tokens"})
            assert out["name"] == "decisions/tokens"
            assert (folder / ".memories" / "decisions" / "tokens.md").is_file()

            assert listed == called, f"tools without a call here: {sorted(listed - called)}"

    run(main)
