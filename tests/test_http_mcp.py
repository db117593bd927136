"""MCP over streamable HTTP at /mcp, driven by the official SDK's client, and its guards."""

from __future__ import annotations

from pathlib import Path

import httpx
import httpx2
from mcp import Client
from mcp.client.streamable_http import streamable_http_client

from tests.mcp_client import call, error_of, eventually, run
from tests.test_mcp import TOOLS
from tests.test_serve import TOKEN, serve_env, serving, vault_project

INITIALIZE = {
    "jsonrpc": "2.0",
    "id": 1,
    "method": "initialize",
    "params": {
        "protocolVersion": "2025-06-18",
        "capabilities": {},
        "clientInfo": {"name": "test", "version": "0"},
    },
}
MCP_HEADERS = {"Accept": "application/json, text/event-stream"}


def test_the_sdk_client_lists_and_calls_the_tools(vault: Path, tmp_path: Path) -> None:
    folder = vault_project(tmp_path, vault)
    with serving(folder) as server:

        async def main() -> None:
            async with Client(f"{server.url}/mcp", read_timeout_seconds=60) as client:
                listed = (await client.list_tools()).tools
                assert {t.name for t in listed} == TOOLS
                query = next(t for t in listed if t.name == "query_documents")
                assert query.input_schema["required"] == ["query"]
                assert "explain" in query.input_schema["properties"]  # every door explains

                async def indexed() -> bool:
                    status = await call(client, "index_status")
                    return status["status"] == "ready" and status["documents"] > 0

                await eventually(indexed, timeout=30)
                out = await call(client, "query_documents", {"query": "redis ttl", "k": 2})
                assert [r["path"] for r in out["results"]][:1] == ["notes/redis.md"]
                assert len(out["results"]) == 2
                # The same precise errors as over stdio.
                message = await error_of(client, "query_documents", {"query": "x", "top_n": 0})
                assert "top_n" in message

        run(main)


def test_mcp_over_http_with_the_token(vault: Path, tmp_path: Path) -> None:
    folder = vault_project(tmp_path, vault)
    env = serve_env(folder / "home", NOTESEEK_SERVE__TOKEN=TOKEN)
    with serving(folder, env=env) as server:

        async def main() -> None:
            # The SDK's transport takes the HTTP client that carries the header.
            http = httpx2.AsyncClient(headers={"Authorization": f"Bearer {TOKEN}"}, timeout=60)
            async with (
                http,
                Client(
                    streamable_http_client(f"{server.url}/mcp", http_client=http),
                    read_timeout_seconds=60,
                ) as client,
            ):
                assert {t.name for t in (await client.list_tools()).tools} == TOOLS
                status = await call(client, "index_status")
                assert status["service"]["role"] == "writer"

        run(main)
        with server.client() as anon:
            refused = anon.post("/mcp", json=INITIALIZE, headers=MCP_HEADERS)
            assert refused.status_code == 401
            assert "API token" in refused.json()["error"]


def test_mcp_refuses_foreign_host_and_origin(vault: Path, tmp_path: Path) -> None:
    folder = vault_project(tmp_path, vault)
    with serving(folder, "--no-watch") as server, server.client() as client:
        port = httpx.URL(server.url).port
        ok = client.post("/mcp", json=INITIALIZE, headers=MCP_HEADERS)
        assert ok.status_code == 200, ok.text
        assert ok.headers["mcp-session-id"]
        rebound = client.post(
            "/mcp", json=INITIALIZE, headers={**MCP_HEADERS, "Host": f"attacker.example:{port}"}
        )
        assert rebound.status_code == 421
        foreign = client.post(
            "/mcp", json=INITIALIZE, headers={**MCP_HEADERS, "Origin": "http://attacker.example"}
        )
        assert foreign.status_code == 403
        local_page = client.post(
            "/mcp", json=INITIALIZE, headers={**MCP_HEADERS, "Origin": f"http://localhost:{port}"}
        )
        assert local_page.status_code == 200
