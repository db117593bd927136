"""Drive `noteseek mcp` with the official SDK's client over real stdio (a subprocess)."""

from __future__ import annotations

import os
import sys
import time
from collections.abc import AsyncIterator, Awaitable, Callable
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

import anyio
from mcp import Client, StdioServerParameters

from tests.helpers import project


def mcp_project(tmp: Path, notes: Path, *, embeddings: bool = False, extra: str = "") -> Path:
    """A project folder whose one root is ``notes``; embeddings off unless asked for."""
    settings = "" if embeddings else "[embedding]\nenabled = false\n"
    return project(tmp, {"notes": notes}, settings + extra)


def server_params(
    cwd: Path, *args: str, env: dict[str, str] | None = None
) -> StdioServerParameters:
    """The server's command; its environment has no ``NOTESEEK_*`` setting but ``env``'s."""
    clean = {k: v for k, v in os.environ.items() if not k.startswith("NOTESEEK_")}
    return StdioServerParameters(
        command=sys.executable,
        args=["-m", "noteseek.interfaces.cli", "mcp", *args],
        cwd=str(cwd),
        env={**clean, **(env or {})},
    )


@asynccontextmanager
async def session(
    cwd: Path, *args: str, env: dict[str, str] | None = None
) -> AsyncIterator[Client]:
    async with Client(server_params(cwd, *args, env=env), read_timeout_seconds=60) as client:
        yield client


async def call(client: Client, tool: str, arguments: dict[str, Any] | None = None) -> Any:
    """The structured result of a successful call (fails the test on a tool error)."""
    result = await client.call_tool(tool, arguments or {})
    assert not result.is_error, result.content[0].text
    assert result.content and result.content[0].text  # the compact text rendering
    return result.structured_content


async def error_of(client: Client, tool: str, arguments: dict[str, Any]) -> str:
    """The message of a call that must fail."""
    result = await client.call_tool(tool, arguments)
    assert result.is_error, f"{tool}({arguments}) succeeded: {result.structured_content}"
    text = result.content[0].text
    assert "Traceback" not in text
    return text


async def eventually(
    check: Callable[[], Awaitable[bool]], timeout: float = 10.0, step: float = 0.1
) -> float:
    """Poll ``check`` until it is true; returns the seconds it took (fails on timeout)."""
    started = time.monotonic()
    while True:
        if await check():
            return time.monotonic() - started
        if time.monotonic() - started > timeout:
            raise AssertionError(f"condition not met within {timeout} s")
        await anyio.sleep(step)


async def wait_until_found(client: Client, query: str, path: str) -> float:
    """Poll query_documents until ``path`` is the only result; returns the seconds it took."""

    async def found() -> bool:
        out = await call(client, "query_documents", {"query": query})
        return [r["path"] for r in out["results"]] == [path]

    return await eventually(found)


def run(main: Callable[[], Awaitable[None]]) -> None:
    anyio.run(main)
