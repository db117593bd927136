"""The soak's mixed-load phase: every door at once while the notes change.

One writer (``noteseek serve`` on 127.0.0.1, a free port), ``--mcp-clients`` ``noteseek mcp``
processes (readers beside it) driven by the MCP SDK's stdio client, ``--http-clients`` HTTP
clients (searches through ``bench/serve_load.py``'s request function, plus reads of documents,
sections, links and chunks), and a thread editing files every ``--edit-interval`` seconds.
The editor leaves half of the notes alone, and the readers read only those, so every read
must answer 200: a 404 is an error here, not a note the editor deleted.

Measures requests, errors (non-2xx, exceptions, streams without their end, MCP ``isError``)
and latency percentiles per door; samples the resident memory of every process of the run
once a second (psutil, by the processes' mark: the server, the MCP servers and anything they
start); and at the end writes one more note holding a new word and times until a keyword
search finds it over HTTP and over MCP (the writer's freshness, and the readers').
"""

from __future__ import annotations

import argparse
import random
import re
import sys
import threading
import time
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any
from urllib.parse import quote

import anyio
import httpx
from mcp import Client, StdioServerParameters
from mcp.client.stdio import stdio_client

from index_scale import sample_queries
from serve_load import one, pct
from soak_corpus import Corpus, make_project
from soak_procs import TRACEBACK, Procs, log, problem_of, rss_by_process, stop

FILTERS: list[dict[str, Any]] = [
    {"paths": ["functions/**"]},
    {"paths": ["content-management/*", "!**/_index.md"]},
    {"after": "2000-01-01"},
    {"excluded_files": ["functions/**"]},
    {"where": ["categories!=functions"]},
]
FRESHNESS_TIMEOUT = 60.0


@dataclass
class Door:
    """Requests through one door: latencies of all, and the errors among them."""

    ms: list[float] = field(default_factory=list)
    errors: int = 0
    samples: list[str] = field(default_factory=list)

    def add(self, ms: float, error: str | None) -> None:
        self.ms.append(ms)
        if error is not None:
            self.errors += 1
            if len(self.samples) < 5:
                self.samples.append(error[:300])

    def summary(self) -> dict[str, Any]:
        return {
            "requests": len(self.ms),
            "errors": self.errors,
            "p50_ms": round(pct(self.ms, 50), 1),
            "p95_ms": round(pct(self.ms, 95), 1),
            "p99_ms": round(pct(self.ms, 99), 1),
            "error_samples": self.samples,
        }


@dataclass
class Memory:
    """Peaks of the resident memory samples."""

    sum: int = 0
    max: int = 0
    by_command: Counter[str] = field(default_factory=Counter)

    def sample(self, procs: Procs) -> None:
        rss = rss_by_process(procs)
        if not rss:
            return
        self.sum = max(self.sum, sum(b for _, b in rss.values()))
        self.max = max(self.max, max(b for _, b in rss.values()))
        totals: Counter[str] = Counter()
        for kind, b in rss.values():
            totals[kind] += b
        for kind, b in totals.items():
            self.by_command[kind] = max(self.by_command[kind], b)


class Load:
    """One run of the phase: its settings, its shared state and its results."""

    def __init__(self, args: argparse.Namespace, procs: Procs, folder: Path, corpus: Corpus):
        self.args = args
        self.procs = procs
        self.folder = folder
        self.corpus = corpus
        self.doors = {name: Door() for name in ("http search", "http read", "mcp search")}
        self.memory = Memory()
        self.modes = ["hybrid", "keyword"] + (["semantic"] if args.embeddings else [])
        self.queries: list[str] = []
        self.stable = sorted(corpus.protected)
        self.chunk_ids: list[str] = []
        self.ready = 0
        self.all_ready = anyio.Event()
        self.go = anyio.Event()
        self.deadline = 0.0
        self.final: tuple[str, str, float] | None = None  # (word, path, written at)
        self.final_written = anyio.Event()
        self.freshness: dict[str, float | None] = {"http": None, "mcp": None}
        self.mcp_done = anyio.Event()
        self.sampling = True
        self.edits = 0

    def search_body(self, rng: random.Random) -> dict[str, Any]:
        body: dict[str, Any] = {
            "query": rng.choice(self.queries),
            "mode": rng.choice(self.modes),
            "top_n": rng.choice([5, 10]),
        }
        if rng.random() < 0.25:
            body.update(rng.choice(FILTERS))
        return body

    def mark_ready(self) -> None:
        self.ready += 1
        if self.ready >= self.args.mcp_clients:
            self.all_ready.set()

    async def http_worker(self, client: httpx.AsyncClient, n: int) -> None:
        rng = random.Random(self.args.seed * 1000 + n)
        await self.go.wait()
        while time.monotonic() < self.deadline:
            if rng.random() < 0.6:
                route = "/query_documents_stream" if rng.random() < 0.1 else "/query_documents"
                outcome = await one(client, route, self.search_body(rng))
                self.doors["http search"].add(outcome.ms, None if outcome.ok else outcome.error)
                continue
            path = quote(rng.choice(self.stable))
            kind = rng.choice(["documents", "sections", "links", "chunks"])
            if kind == "chunks" and self.chunk_ids:
                url = f"/chunks/{rng.choice(self.chunk_ids)}"
            elif kind == "sections":
                url = f"/sections/{path}?line=1"
            else:
                url = f"/{'links' if kind == 'links' else 'documents'}/{path}"
            started = time.perf_counter()
            try:
                answer = await client.get(url)
                error = None if answer.is_success else f"{answer.status_code} {url}"
            except httpx.HTTPError as exc:
                error = f"{type(exc).__name__}: {exc} ({url})"
            self.doors["http read"].add((time.perf_counter() - started) * 1000, error)

    async def mcp_worker(self, n: int) -> None:
        rng = random.Random(self.args.seed * 2000 + n)
        tag = self.procs.new_tag("mcp")
        params = StdioServerParameters(
            command=sys.executable,
            args=["-m", "noteseek.interfaces.cli", "mcp"],
            cwd=str(self.folder),
            env=self.procs.env_for(tag),
        )
        ready = False
        try:
            with (self.procs.logs / f"{tag}.err").open("w") as errlog:
                transport = stdio_client(params, errlog=errlog)
                # No client-side cache: every call must reach the server to be measured.
                async with Client(transport, read_timeout_seconds=60, cache=None) as client:
                    with anyio.fail_after(300):
                        while True:
                            status = await client.call_tool("index_status", {})
                            if (status.structured_content or {}).get("status") == "ready":
                                break
                            await anyio.sleep(0.5)
                    ready = True
                    self.mark_ready()
                    await self.go.wait()
                    await self.mcp_searches(client, rng)
                    if n == 0:
                        await self.final_written.wait()
                        self.freshness["mcp"] = await self.until_found(self.mcp_finds(client))
        except Exception as exc:  # a server that cannot start or dies is an error, and ends
            self.doors["mcp search"].add(0.0, f"mcp server {n}: {type(exc).__name__}: {exc}")
        finally:
            if not ready:
                self.mark_ready()
            if n == 0:
                self.mcp_done.set()

    async def mcp_searches(self, client: Client, rng: random.Random) -> None:
        while time.monotonic() < self.deadline:
            body = self.search_body(rng)
            started = time.perf_counter()
            try:
                result = await client.call_tool("query_documents", body)
                error = (
                    f"isError: {result.content[0].text if result.content else ''}"
                    if result.is_error
                    else None
                )
            except Exception as exc:
                error = f"{type(exc).__name__}: {exc}"
            self.doors["mcp search"].add((time.perf_counter() - started) * 1000, error)

    def mcp_finds(self, client: Client) -> Any:
        async def check(word: str, path: str) -> bool:
            result = await client.call_tool(
                "query_documents", {"query": word, "mode": "keyword", "top_n": 5}
            )
            found = (result.structured_content or {}).get("results", [])
            return not result.is_error and any(r["path"] == path for r in found)

        return check

    def http_finds(self, client: httpx.AsyncClient) -> Any:
        async def check(word: str, path: str) -> bool:
            answer = await client.post(
                "/query_documents", json={"query": word, "mode": "keyword", "top_n": 5}
            )
            return answer.is_success and any(r["path"] == path for r in answer.json()["results"])

        return check

    async def until_found(self, check: Any) -> float | None:
        """Seconds from the last edit until ``check`` finds its word (None: never)."""
        assert self.final is not None
        word, path, written = self.final
        while time.monotonic() - written < FRESHNESS_TIMEOUT:
            if await check(word, path):
                return round(time.monotonic() - written, 2)
            await anyio.sleep(0.05)
        return None

    def edit_until(self, stop_editing: threading.Event) -> None:
        """The editor (a thread: its file system calls must not stall the event loop)."""
        while not stop_editing.wait(self.args.edit_interval):
            self.corpus.random_edit()
            self.edits += 1

    async def sampler(self) -> None:
        while self.sampling:
            await anyio.to_thread.run_sync(self.memory.sample, self.procs)
            await anyio.sleep(1.0)

    async def drive(self, url: str) -> None:
        limits = httpx.Limits(max_connections=self.args.http_clients + 2)
        async with (
            httpx.AsyncClient(base_url=url, timeout=60, limits=limits) as client,
            anyio.create_task_group() as group,
        ):
            group.start_soon(self.sampler)
            for n in range(self.args.mcp_clients):
                group.start_soon(self.mcp_worker, n)
            for n in range(self.args.http_clients):
                group.start_soon(self.http_worker, client, n)
            with anyio.fail_after(600):
                await self.all_ready.wait()
            log(f"load: {self.ready} MCP servers ready; {self.args.load_seconds:.0f} s of load")
            self.deadline = time.monotonic() + self.args.load_seconds
            stop_editing = threading.Event()
            editor = threading.Thread(target=self.edit_until, args=(stop_editing,), daemon=True)
            editor.start()
            self.go.set()
            await anyio.sleep(self.args.load_seconds)
            stop_editing.set()
            await anyio.to_thread.run_sync(editor.join)
            path = self.corpus.add()  # the last edit: a new note with a new word
            self.edits += 1
            self.final = (self.corpus.last_word, path, time.monotonic())
            self.final_written.set()
            self.freshness["http"] = await self.until_found(self.http_finds(client))
            if self.args.mcp_clients:
                await self.mcp_done.wait()
            self.sampling = False


async def load_phase(args: argparse.Namespace, work: Path, procs: Procs) -> dict[str, Any]:
    rng = random.Random(args.seed + 1)
    folder = work / "load"
    corpus = make_project(folder, args.corpus, rng, embeddings=args.embeddings)
    notes = corpus.files()
    corpus.protected = frozenset(rng.sample(notes, len(notes) // 2))
    first = procs.run(["index", "--keyword-only", "--json"], folder)
    if problem := problem_of(first):
        raise SystemExit(f"load: first index failed: {problem}")
    load = Load(args, procs, folder, corpus)
    load.queries = sample_queries(corpus.root, 300)
    server = procs.start("serve", ["serve", "--port", "0"], folder)
    exit_code: int | None = None
    try:
        url = await wait_listening(server.stderr, 120)
        async with httpx.AsyncClient(base_url=url, timeout=60) as client:
            await wait_ready(client, args.embeddings)
            load.chunk_ids = await stable_chunks(client, load)
        log(f"load: serve ready at {url}")
        began = time.monotonic()
        await load.drive(url)
        seconds = time.monotonic() - began
    finally:
        exit_code = stop(server)
    # The server and the MCP servers are stopped: nothing of the run may be left.
    leftovers = procs.wait_gone(None, args.leak_grace, group=server.proc.pid)
    logs = [server.stderr_path, *sorted(procs.logs.glob("*-mcp.err"))]
    texts = [p.read_text(encoding="utf-8", errors="replace") for p in logs if p.exists()]
    return {
        "seconds": round(load.args.load_seconds, 1),
        "wall_s": round(seconds, 1),
        "http_clients": args.http_clients,
        "mcp_clients": args.mcp_clients,
        "edits": load.edits,
        "edit_kinds": dict(corpus.ops),
        "doors": {name: door.summary() for name, door in load.doors.items()},
        "freshness_s": load.freshness if args.mcp_clients else {"http": load.freshness["http"]},
        "peak_rss_sum_mb": round(load.memory.sum / 1e6, 1),
        "peak_rss_max_mb": round(load.memory.max / 1e6, 1),
        "peak_rss_by_command_mb": {
            k: round(v / 1e6, 1) for k, v in sorted(load.memory.by_command.items())
        },
        "tracebacks": sum(t.count(TRACEBACK) for t in texts),
        "serve_log_bytes": server.stderr_path.stat().st_size,
        "leftovers": len(leftovers),
        "serve_exit": exit_code,
    }


async def wait_listening(stderr: Any, timeout: float) -> str:
    with anyio.fail_after(timeout):
        while not (m := re.search(r"listening on (http://\S+?) ", stderr())):
            await anyio.sleep(0.05)
    return m.group(1)


async def wait_ready(client: httpx.AsyncClient, embeddings: bool) -> None:
    """Until the server has reconciled (and embedded every section, when asked to)."""
    with anyio.fail_after(3600):
        while True:
            status = (await client.get("/status")).json()
            embedded = not embeddings or status["embedding"]["pending"] == 0
            if status["status"] == "ready" and embedded:
                return
            await anyio.sleep(1.0)


async def stable_chunks(client: httpx.AsyncClient, load: Load) -> list[str]:
    """Chunk ids of notes the editor leaves alone (their ids never change)."""
    out: list[str] = []
    for query in load.queries[:40]:
        answer = await client.post("/query_documents", json={"query": query, "mode": "keyword"})
        answer.raise_for_status()
        stable = load.corpus.protected
        out += [r["chunk_id"] for r in answer.json()["results"] if r["path"] in stable]
    return sorted(set(out))
