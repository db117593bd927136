"""Resident memory of `noteseek mcp` on an existing index: after its first answers, then idle.

    .venv/bin/python bench/mcp_idle_rss.py --index-dir DIR [--query TEXT ...] [--settle 60]
        [--idle 30] [--mode hybrid]

Spawns `noteseek --index-dir DIR mcp` with the official SDK client over stdio (the server is
the index's live writer, as an agent's would be), asks `index_status`, runs each query through
`query_documents`, waits until the server reports no indexing or embedding work (at most
`--settle` seconds), then samples the resident set of the server and of every process it
started for `--idle` seconds. Prints the peak and the last sample, the server alone and with
its children (the parser pool exists only while files are parsed).
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import sys
import time
from typing import Any

import anyio
import psutil
from mcp import Client, StdioServerParameters


def anon_mb(proc: psutil.Process) -> float:
    """The process's resident anonymous memory (heap, not pages of mapped files) in MB."""
    with open(f"/proc/{proc.pid}/status") as status:
        for line in status:
            if line.startswith("RssAnon:"):
                return int(line.split()[1]) / 1024
    return 0.0


def tree_rss(proc: psutil.Process) -> tuple[float, float]:
    """(RSS of the process, RSS of it and its descendants) in MB."""
    own = proc.memory_info().rss
    total = own
    for child in proc.children(recursive=True):
        with contextlib.suppress(psutil.NoSuchProcess):
            total += child.memory_info().rss
    return own / 1e6, total / 1e6


def server_process() -> psutil.Process:
    """The server: the newest child of this process that runs noteseek."""
    kids = [p for p in psutil.Process().children() if "noteseek" in " ".join(p.cmdline())]
    return max(kids, key=lambda p: p.create_time())


def status_text(result: Any) -> str:
    return " ".join(getattr(c, "text", "") for c in result.content)


async def measure(args: argparse.Namespace) -> dict[str, Any]:
    params = StdioServerParameters(
        command=sys.executable,
        args=["-m", "noteseek.interfaces.cli", "--index-dir", args.index_dir, "mcp"],
        env={
            **os.environ,
            "NOTESEEK_INDEX__DIR": args.index_dir,
            **dict(item.split("=", 1) for item in args.set),
        },
    )
    out: dict[str, Any] = {"samples": []}
    async with Client(params, read_timeout_seconds=300) as client:
        server = server_process()
        started = time.perf_counter()
        await client.call_tool("index_status", {})
        out["after_status_mb"] = tree_rss(server)
        for query in args.query:
            await client.call_tool(
                "query_documents", {"query": query, "mode": args.mode, "top_k": 10}
            )
        out["after_queries_mb"] = tree_rss(server)
        deadline = time.perf_counter() + args.settle
        while time.perf_counter() < deadline:
            text = status_text(await client.call_tool("index_status", {}))
            if '"status": "ready"' in text or '"status":"ready"' in text:
                out["ready"] = True
                break
            await anyio.sleep(2)
        out["settled_s"] = round(time.perf_counter() - started, 1)
        for _ in range(max(1, int(args.idle))):
            out["samples"].append(tree_rss(server))
            out["anon_mb"] = round(anon_mb(server))
            await anyio.sleep(1)
    return out


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--index-dir", required=True)
    ap.add_argument("--query", action="append", default=[])
    ap.add_argument("--mode", default="hybrid")
    ap.add_argument("--settle", type=float, default=60.0)
    ap.add_argument("--idle", type=float, default=30.0)
    ap.add_argument("--set", action="append", default=[], help="NOTESEEK_X__Y=value for the server")
    args = ap.parse_args()
    if not args.query:
        args.query = ["how do I list running processes", "Get-ChildItem recurse"]
    out = anyio.run(measure, args)
    own = [s[0] for s in out["samples"]]
    total = [s[1] for s in out["samples"]]
    print(json.dumps({k: v for k, v in out.items() if k != "samples"}))
    print("| measure | server MB | server and children MB |")
    print("|---|---|---|")
    first = out["after_status_mb"]
    print(f"| after index_status | {first[0]:.0f} | {first[1]:.0f} |")
    print(
        f"| after the queries | {out['after_queries_mb'][0]:.0f} | "
        f"{out['after_queries_mb'][1]:.0f} |"
    )
    print(f"| idle, peak | {max(own):.0f} | {max(total):.0f} |")
    print(f"| idle, last | {own[-1]:.0f} | {total[-1]:.0f} |")
    print(f"| idle, last: the server's anonymous memory | {out['anon_mb']} | |")
    return 0


if __name__ == "__main__":
    sys.exit(main())
