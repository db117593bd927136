"""`noteseek serve` under load: 20 concurrent clients for 30 s while a forced re-index runs.

    .venv/bin/python bench/serve_load.py [--clients 20] [--seconds 30] [--vectors random|none]

Unpacks windows-powershell-docs (14,145 pages, about 292,000 sections) into a temporary
folder and indexes it keyword-only with the CLI. With ``--vectors random`` (the default) it
then stores a random unit vector for every section under the bundled model's key, as
``bench/hybrid_latency.py`` does: embedding 292k sections would take hours on two cores, and
vector search costs the same whatever the vectors hold, while every query is still embedded
by the real model. ``--vectors none`` turns embeddings off (hybrid then runs keyword only and
semantic queries are left out of the mix).

It then starts ``noteseek serve`` on a free loopback port (default settings, embeddings on),
waits until the index is ready, warms it up (the model, the vectors, the HNSW graph above
200k vectors and the link-graph communities are built on first use) and waits until the
server's CPU use settles. At the start of the measured window it posts ``/reindex`` with
``force: true`` (every file re-read while the clients query), then runs the clients: each
sends one request at a time, drawn with a fixed seed from page titles (cmdlet names),
headings, 2-4 word runs, natural-language questions and parameter names, in hybrid, keyword or
semantic mode, a quarter of them with filters (path glob, frontmatter field, date), a tenth
through the Server-Sent Events route. Prints errors (any non-2xx answer, exception or stream
without its ``done`` event), throughput and latency percentiles, then stops the server with
SIGTERM by its PID and checks it exited 0.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import random
import signal
import subprocess
import sys
import tempfile
import threading
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import httpx
import numpy as np
import psutil

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO / "bench"))
from hybrid_latency import store_random_vectors  # noqa: E402
from index_scale import DEFAULT_TGZ, sample_queries, unpack  # noqa: E402
from serving import served, wait_idle  # noqa: E402

NATURAL = [
    "how do I create a new user account in active directory",
    "list the windows features that are installed on a server",
    "configure forwarders on a dns server",
    "remove a printer from a print server",
    "get the state of a hyper-v virtual machine",
    "run a scheduled task when the computer starts",
    "export a certificate together with its private key",
    "join a computer to a domain and restart it",
    "change the ip address of a network adapter",
    "turn on bitlocker encryption for a drive",
    "find user accounts that are locked out",
    "create a storage pool from physical disks",
    "add a scope to a dhcp server",
    "allow inbound traffic on a port through the firewall",
    "restart a service on a remote computer",
    "replicate a virtual machine to another host",
    "show the members of a group",
    "set the password policy for a domain",
    "mount a virtual hard disk",
    "check the health of a failover cluster",
]
PARAMETERS = ["-Identity", "-Credential", "-ComputerName", "-Filter", "-WhatIf", "-Force"]
FILTERS: list[dict[str, Any]] = [
    {"paths": ["docset/winserver2022-ps/**"]},
    {"paths": ["**/ActiveDirectory/*"]},
    {"where": ["Module Name=ActiveDirectory"]},
    {"where": ["schema=2.0.0"], "paths": ["docset/winserver2019-ps/**"]},
    {"after": "2000-01-01"},
    {"excluded_files": ["docset/winserver2016-ps/**"]},
]


@dataclass
class Outcome:
    mode: str
    route: str
    ms: float
    ok: bool
    error: str | None = None


@dataclass
class Load:
    outcomes: list[Outcome] = field(default_factory=list)


def pct(values: list[float], q: float) -> float:
    return float(np.percentile(values, q)) if values else 0.0


def random_vectors(folder: Path, env: dict[str, str]) -> int:
    """A random unit vector for every section, under the configured model's key."""
    from noteseek.engine import open_engine

    engine = open_engine(folder, environ=env, flags={"embedding.enabled": True})
    try:
        return store_random_vectors(engine)
    finally:
        engine.close()


def request_mix(corpus: Path, vectors: bool, n: int = 4000) -> list[tuple[str, dict[str, Any]]]:
    """(route, body) pairs drawn with a fixed seed."""
    rng = random.Random(11)
    sampled = sample_queries(corpus, 600)
    modes = ["hybrid"] * 5 + ["keyword"] * 3 + (["semantic"] * 2 if vectors else [])
    out = []
    for _ in range(n):
        kind = rng.random()
        if kind < 0.6:
            text = rng.choice(sampled)
        elif kind < 0.9:
            text = rng.choice(NATURAL)
        else:
            text = rng.choice(PARAMETERS)
        body: dict[str, Any] = {
            "query": text,
            "mode": rng.choice(modes),
            "top_n": rng.choice([5, 5, 10]),
        }
        if rng.random() < 0.25:
            body.update(rng.choice(FILTERS))
        route = "/query_documents_stream" if rng.random() < 0.1 else "/query_documents"
        out.append((route, body))
    return out


async def one(client: httpx.AsyncClient, route: str, body: dict[str, Any]) -> Outcome:
    started = time.perf_counter()
    try:
        if route == "/query_documents":
            response = await client.post(route, json=body)
            ok = response.status_code == 200
            error = None if ok else f"{response.status_code} {response.text[:200]}"
        else:
            done = False
            async with client.stream("POST", route, json=body) as response:
                ok = response.status_code == 200
                async for line in response.aiter_lines():
                    done = done or line == "event: done"
                error = None if ok else f"{response.status_code}"
            if ok and not done:
                ok, error = False, "stream ended without its done event"
    except httpx.HTTPError as exc:
        ok, error = False, f"{type(exc).__name__}: {exc}"
    ms = (time.perf_counter() - started) * 1000
    return Outcome(body["mode"], route, ms, ok, error)


async def run_load(
    url: str, mix: list[tuple[str, dict[str, Any]]], clients: int, seconds: float, reindex: bool
) -> tuple[Load, dict[str, Any] | None, float]:
    load = Load()
    limits = httpx.Limits(max_connections=clients + 2, max_keepalive_connections=clients + 2)
    async with httpx.AsyncClient(base_url=url, timeout=60, limits=limits) as client:
        job = None
        if reindex:
            answer = await client.post("/reindex", json={"force": True})
            answer.raise_for_status()
            job = answer.json()["job"]
        started = time.perf_counter()
        deadline = started + seconds
        position = iter(range(10**9))

        async def worker() -> None:
            while time.perf_counter() < deadline:
                route, body = mix[next(position) % len(mix)]
                load.outcomes.append(await one(client, route, body))

        await asyncio.gather(*(worker() for _ in range(clients)))
        elapsed = time.perf_counter() - started
    return load, job, elapsed


def dump_stacks(server: subprocess.Popen[bytes], seconds: float) -> None:
    for _ in range(int(seconds // 10) + 1):
        time.sleep(5 if _ == 0 else 10)
        if server.poll() is None:
            server.send_signal(signal.SIGUSR1)


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--tgz", type=Path, default=DEFAULT_TGZ)
    ap.add_argument("--clients", type=int, default=20)
    ap.add_argument("--seconds", type=float, default=30.0)
    ap.add_argument("--vectors", choices=["random", "none"], default="random")
    ap.add_argument("--no-reindex", action="store_true", help="No forced re-index meanwhile.")
    ap.add_argument(
        "--workdir",
        type=Path,
        help="Keep the unpacked corpus and the index here and reuse them on the next run "
        "(default: a temporary folder).",
    )
    ap.add_argument("--set", action="append", default=[], help="NOTESEEK_ variable=value.")
    ap.add_argument(
        "--stacks",
        action="store_true",
        help="Have the server print its threads' stacks (SIGUSR1) every 10 s of the window, "
        "into serve.log in the work folder.",
    )
    args = ap.parse_args()
    if not args.tgz.is_file():
        print(f"skip: {args.tgz} not found (the shared data folder is absent)")
        return 0
    vectors = args.vectors == "random"
    with tempfile.TemporaryDirectory(prefix="noteseek-serve-load-") as tmp:
        tmpdir = args.workdir or Path(tmp)
        corpus = tmpdir / "corpus"
        folder = tmpdir / "project"
        reuse = (folder / ".noteseek" / "index.db").exists()
        if not reuse:
            unpack(args.tgz, corpus)
            folder.mkdir(parents=True, exist_ok=True)
            (folder / ".noteseek.toml").write_text(
                f'[roots.docs]\npath = "{corpus.as_posix()}"\n', encoding="utf-8"
            )
        env = {k: v for k, v in os.environ.items() if not k.startswith("NOTESEEK_")}
        env.update(
            XDG_CONFIG_HOME=str(tmpdir / "config"),
            XDG_DATA_HOME=str(tmpdir / "data"),
            NOTESEEK_EMBEDDING__ENABLED="true" if vectors else "false",
        )
        for item in args.set:
            key, _, value = item.partition("=")
            env[key] = value
        cli = [sys.executable, "-m", "noteseek.interfaces.cli"]
        t = time.perf_counter()
        subprocess.run(
            [*cli, "index", "--keyword-only", "--json"],
            cwd=folder,
            env=env,
            check=True,
            capture_output=True,
        )
        print(
            f"indexed keyword-only in {time.perf_counter() - t:.1f} s"
            + (" (reused)" if reuse else "")
        )
        if vectors:
            t = time.perf_counter()
            count = random_vectors(folder, env)
            print(f"stored {count} random unit vectors in {time.perf_counter() - t:.1f} s")
        mix = request_mix(corpus, vectors)
        with served(folder, env, tmpdir / "serve.log") as server:
            url, status = server.url, server.status
            print(
                f"serving {url}: {status['documents']} documents, {status['chunks']} "
                f"sections, embedding {status['embedding']['embedded']}/"
                f"{status['embedding']['total']}"
            )
            with httpx.Client(base_url=url, timeout=120) as client:
                t = time.perf_counter()
                for _route, body in mix[:30]:
                    client.post("/query_documents", json=body).raise_for_status()
                idle = wait_idle(server.pid, 600)
                print(
                    f"warm-up 30 queries, then idle after {time.perf_counter() - t:.0f} s "
                    f"(waited {idle:.0f} s for background work)"
                )
                rss = psutil.Process(server.pid).memory_info().rss
            if args.stacks:
                threading.Thread(
                    target=dump_stacks, args=(server.process, args.seconds), daemon=True
                ).start()
            load, job, elapsed = asyncio.run(
                run_load(url, mix[30:], args.clients, args.seconds, not args.no_reindex)
            )
            peak_rss = psutil.Process(server.pid).memory_info().rss
            report(load, elapsed, args)
            jobs: dict[str, Any] = {}
            try:
                with httpx.Client(base_url=url, timeout=120) as client:
                    t = time.perf_counter()
                    status = client.get("/status").json()
                    print(f"GET /status right after the load: {time.perf_counter() - t:.2f} s")
                jobs = {j["id"]: j for j in status["service"]["jobs"]}
            except httpx.HTTPError as exc:
                print(f"GET /status after the load failed: {type(exc).__name__}")
        code = server.code
        if job is not None:
            print(describe_job(jobs.get(job["id"])))
        print(f"server RSS before {rss / 1e6:.0f} MB, after {peak_rss / 1e6:.0f} MB")
        print(f"server stopped with SIGTERM: exit code {code}")
        errors = [o for o in load.outcomes if not o.ok]
        return 0 if not errors and code == 0 else 1


def report(load: Load, elapsed: float, args: argparse.Namespace) -> None:
    outcomes = load.outcomes
    errors = [o for o in outcomes if not o.ok]
    ms = [o.ms for o in outcomes]
    print(
        f"\n{args.clients} clients, {elapsed:.1f} s, {len(outcomes)} requests: "
        f"{len(outcomes) / elapsed:.1f} req/s, errors {len(errors)}"
        + (" (zero-error check passed)" if not errors else " (ZERO-ERROR CHECK FAILED)")
    )
    print(f"all      p50 {pct(ms, 50):7.1f} ms  p95 {pct(ms, 95):7.1f}  p99 {pct(ms, 99):7.1f}")
    groups: dict[str, list[float]] = {}
    for o in outcomes:
        groups.setdefault(o.mode, []).append(o.ms)
        if o.route.endswith("_stream"):
            groups.setdefault("stream", []).append(o.ms)
    for name, values in sorted(groups.items()):
        print(
            f"{name:8s} p50 {pct(values, 50):7.1f} ms  p95 {pct(values, 95):7.1f}  "
            f"p99 {pct(values, 99):7.1f}  ({len(values)} requests)"
        )
    for o in errors[:10]:
        print(f"error: {o.route} {o.mode}: {o.error}")


def describe_job(job: dict[str, Any] | None) -> str:
    if job is None:
        return "forced re-index: state unknown"
    now = time.time()
    took = (job["finished"] or now) - (job["started"] or now)
    counts = (
        {k: job["result"].get(k) for k in ("scanned", "updated", "unchanged", "chunks_written")}
        if job.get("result")
        else None
    )
    return (
        f"forced re-index: {job['state']}"
        + (f" in {took:.1f} s" if job["finished"] else f", running for {took:.1f} s")
        + (f": {json.dumps(counts)}" if counts else "")
    )


if __name__ == "__main__":
    sys.exit(main())
