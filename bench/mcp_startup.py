"""How fast `noteseek mcp` answers `initialize` and `tools/list`, cold and warm.

    .venv/bin/python bench/mcp_startup.py [--runs 5]

Each run spawns the server with the official SDK client over stdio in a project over a copy of
the bundled example vault (embeddings on, as shipped): "cold" has no index yet (indexing starts
in the background), "warm" reuses the index of the previous run. Prints the time from spawn to
the initialize answer, to the tools/list answer, and to the first query_documents answer.
Target (issue 5): initialize and tools/list within 1 s, even cold.
"""

from __future__ import annotations

import argparse
import shutil
import statistics
import sys
import tempfile
import time
from pathlib import Path

import anyio
from mcp import Client, StdioServerParameters

REPO = Path(__file__).resolve().parent.parent


async def one_run(folder: Path) -> tuple[float, float, float]:
    params = StdioServerParameters(
        command=sys.executable, args=["-m", "noteseek.interfaces.cli", "mcp"], cwd=str(folder)
    )
    started = time.perf_counter()
    async with Client(params, read_timeout_seconds=60) as client:
        initialised = time.perf_counter() - started
        await client.list_tools()
        listed = time.perf_counter() - started
        await client.call_tool("query_documents", {"query": "redis ttl"})
        queried = time.perf_counter() - started
    return initialised, listed, queried


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--runs", type=int, default=5)
    args = ap.parse_args()
    rows: dict[str, list[tuple[float, float, float]]] = {"cold": [], "warm": []}
    for _ in range(args.runs):
        with tempfile.TemporaryDirectory(prefix="noteseek-mcp-") as tmp:
            folder = Path(tmp)
            shutil.copytree(REPO / "examples" / "vault", folder / "vault")
            (folder / ".noteseek.toml").write_text('[roots.notes]\npath = "vault"\n')
            rows["cold"].append(anyio.run(one_run, folder))
            rows["warm"].append(anyio.run(one_run, folder))
    print(
        "| start | runs | initialize median / max s | tools/list median / max s "
        "| first query median s |"
    )
    print("|---|---|---|---|---|")
    for kind, values in rows.items():
        init = [v[0] for v in values]
        listed = [v[1] for v in values]
        query = [v[2] for v in values]
        print(
            f"| {kind} | {len(values)} | {statistics.median(init):.2f} / {max(init):.2f} | "
            f"{statistics.median(listed):.2f} / {max(listed):.2f} | "
            f"{statistics.median(query):.2f} |"
        )
    return 0


if __name__ == "__main__":
    sys.exit(main())
