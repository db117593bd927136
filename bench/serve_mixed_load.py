"""`noteseek serve` under searches and memory writes at once (issue 33 item 5).

    .venv/bin/python bench/serve_mixed_load.py [--seconds 120] [--searchers 16] [--writers 4]
        [--pause S] [--vault DIR] [--workdir DIR] [--json FILE] [--py-spy PATH]

Indexes a real vault keyword-only with the CLI (default ``../shared/data/hugo-docs-kis/vault``,
992 pages of the Hugo documentation; keyword only, so the load is on serving, not on a model),
starts ``noteseek serve --port 0`` on loopback in a project folder of its own, waits until the
index is ready, warms it up with 30 searches and waits until the server's CPU use settles. Then
for ``--seconds``:

* ``--searchers`` clients (16) each send one ``POST /query_documents`` at a time, the queries
  drawn with a fixed seed from the corpus (the known-item queries of ``queries.jsonl`` beside
  the vault when there is one, and the pages' titles), a fifth of them with ``top_k`` 20;
* ``--writers`` clients (4) each write one memory at a time over HTTP, alternately a new named
  memory (``POST /memories``, a few sentences of corpus text, tags) and an entry of today's
  daily log (``POST /memories/append``); every write's text is new, so none is skipped.

Every client sends its next request as soon as the answer came (a closed loop: the latencies
are what 20 concurrent clients see when they keep the server saturated), or ``--pause``
seconds later. Prints per kind: requests, errors (any non-2xx answer or exception),
throughput, p50/p95/p99/max latency; the server's resident memory at the start of the window,
its peak and at the end (sampled every second, with its child processes); the CPU the server
and the clients used; the load average before and after. ``--py-spy`` records the server with
py-spy for the whole window (speedscope JSON in the work folder). Stops the server with
SIGTERM by its PID and checks it exited 0. Exit 1 when any request failed.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import random
import re
import shutil
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

from serving import served, wait_idle

REPO = Path(__file__).resolve().parent.parent
DEFAULT_VAULT = REPO.parent / "shared" / "data" / "hugo-docs-kis" / "vault"
TITLE = re.compile(r"^title:\s*['\"]?(.+?)['\"]?\s*$", re.M)
WORD = re.compile(r"[A-Za-z][A-Za-z-]{3,}")


@dataclass
class Outcome:
    kind: str
    started: float
    ms: float
    ok: bool
    error: str | None = None


@dataclass
class Run:
    outcomes: list[Outcome] = field(default_factory=list)
    rss: list[tuple[float, int, int]] = field(default_factory=list)
    """(seconds into the window, server RSS, server and children RSS)."""
    pause: float = 0.0
    """Seconds each client waits after an answer before its next request."""


def corpus_text(vault: Path) -> tuple[list[str], list[str]]:
    """(queries, sentences) drawn from the vault: known-item queries and titles; sentences of
    the pages' text for memories."""
    queries: list[str] = []
    qfile = vault.parent / "queries.jsonl"
    if qfile.is_file():
        for line in qfile.read_text(encoding="utf-8").splitlines():
            queries.append(json.loads(line)["text"])
    sentences: list[str] = []
    for path in sorted(vault.rglob("*.md")):
        text = path.read_text(encoding="utf-8", errors="replace")
        title = TITLE.search(text)
        if title:
            queries.append(title.group(1))
        for sentence in re.split(r"(?<=[.!?])\s+", text):
            if 40 <= len(sentence) <= 300 and "|" not in sentence and "{{" not in sentence:
                sentences.append(" ".join(sentence.split()))
    return queries, sentences


def pct(values: list[float], q: float) -> float:
    return float(np.percentile(values, q)) if values else 0.0


async def searcher(
    client: httpx.AsyncClient, queries: list[str], seed: int, until: float, run: Run
) -> None:
    rng = random.Random(seed)
    while time.perf_counter() < until:
        body = {"query": rng.choice(queries), "top_k": 20 if rng.random() < 0.2 else 10}
        await request(client, "search", "/query_documents", body, run)
        await asyncio.sleep(run.pause)


async def writer(
    client: httpx.AsyncClient, sentences: list[str], seed: int, until: float, run: Run
) -> None:
    rng = random.Random(seed)
    n = 0
    while time.perf_counter() < until:
        n += 1
        text = " ".join(rng.sample(sentences, 3)) + f" (note {seed}-{n})"
        words = WORD.findall(text.lower())
        tags = sorted({rng.choice(words) for _ in range(2)}) if words else []
        if n % 2:
            body = {
                "name": f"load-{seed}-{n}",
                "content": text,
                "type": rng.choice(["fact", "observation", "plan"]),
                "tags": tags,
            }
            await request(client, "create", "/memories", body, run)
        else:
            await request(client, "append", "/memories/append", {"content": text}, run)
        await asyncio.sleep(run.pause)


async def request(
    client: httpx.AsyncClient, kind: str, route: str, body: dict[str, Any], run: Run
) -> None:
    started = time.perf_counter()
    try:
        response = await client.post(route, json=body)
        ok = 200 <= response.status_code < 300
        error = None if ok else f"{response.status_code} {response.text[:200]}"
    except httpx.HTTPError as exc:
        ok, error = False, f"{type(exc).__name__}: {exc}"
    ms = (time.perf_counter() - started) * 1000
    run.outcomes.append(Outcome(kind, started, ms, ok, error))


async def load(
    url: str,
    queries: list[str],
    sentences: list[str],
    args: argparse.Namespace,
    run: Run,
) -> float:
    clients = args.searchers + args.writers
    limits = httpx.Limits(max_connections=clients + 2, max_keepalive_connections=clients + 2)
    async with httpx.AsyncClient(base_url=url, timeout=60, limits=limits) as client:
        started = time.perf_counter()
        until = started + args.seconds
        await asyncio.gather(
            *(searcher(client, queries, 100 + i, until, run) for i in range(args.searchers)),
            *(writer(client, sentences, 200 + i, until, run) for i in range(args.writers)),
        )
        return time.perf_counter() - started


def sample_rss(pid: int, stop: threading.Event, run: Run, t0: float) -> None:
    proc = psutil.Process(pid)
    while not stop.wait(1.0):
        try:
            own = proc.memory_info().rss
            total = own + sum(c.memory_info().rss for c in proc.children(recursive=True))
        except psutil.Error:
            return
        run.rss.append((time.perf_counter() - t0, own, total))


def summary(run: Run, elapsed: float, rss_start: int, load_before: str, load_after: str) -> dict:
    kinds: dict[str, dict[str, Any]] = {}
    groups = {"search": ["search"], "write": ["create", "append"]}
    groups |= {k: [k] for k in ("create", "append")}
    for name, members in groups.items():
        picked = [o for o in run.outcomes if o.kind in members]
        ms = [o.ms for o in picked]
        kinds[name] = {
            "requests": len(picked),
            "errors": sum(1 for o in picked if not o.ok),
            "per_second": round(len(picked) / elapsed, 1),
            "p50": round(pct(ms, 50), 1),
            "p95": round(pct(ms, 95), 1),
            "p99": round(pct(ms, 99), 1),
            "max": round(max(ms, default=0.0), 1),
        }
    own = [r[1] for r in run.rss]
    total = [r[2] for r in run.rss]
    return {
        "seconds": round(elapsed, 1),
        "kinds": kinds,
        "errors": [f"{o.kind}: {o.error}" for o in run.outcomes if not o.ok][:10],
        "rss_mb": {
            "start": round(rss_start / 1e6),
            "peak": round(max(own, default=rss_start) / 1e6),
            "end": round((own[-1] if own else rss_start) / 1e6),
            "growth": round((max(own, default=rss_start) - rss_start) / 1e6),
            "with_children_peak": round(max(total, default=0) / 1e6),
        },
        "rss_by_30s_mb": [round(r[1] / 1e6) for r in run.rss if int(r[0]) % 30 == 0],
        "load_before": load_before,
        "load_after": load_after,
    }


def print_summary(out: dict[str, Any]) -> None:
    print(
        f"\nwindow {out['seconds']} s; load average before {out['load_before']}, "
        f"after {out['load_after']}"
    )
    for name, k in out["kinds"].items():
        print(
            f"{name:7s} {k['requests']:6d} requests ({k['per_second']:5.1f}/s), errors "
            f"{k['errors']}: p50 {k['p50']:7.1f} ms  p95 {k['p95']:7.1f}  p99 {k['p99']:7.1f}  "
            f"max {k['max']:7.1f}"
        )
    rss = out["rss_mb"]
    print(
        f"server RSS {rss['start']} MB at the start, peak {rss['peak']}, end {rss['end']} "
        f"(growth {rss['growth']} MB; with its child processes peak {rss['with_children_peak']})"
    )
    print(f"server RSS every 30 s: {out['rss_by_30s_mb']}")
    for error in out["errors"]:
        print(f"error: {error}")


def loadavg() -> str:
    return " ".join(f"{x:.2f}" for x in os.getloadavg())


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--vault", type=Path, default=DEFAULT_VAULT)
    ap.add_argument("--seconds", type=float, default=120.0)
    ap.add_argument("--searchers", type=int, default=16)
    ap.add_argument("--writers", type=int, default=4)
    ap.add_argument(
        "--pause",
        type=float,
        default=0.0,
        help="Seconds each client waits after an answer (default 0: the next request at once).",
    )
    ap.add_argument("--workdir", type=Path, help="Keep the project and its index here.")
    ap.add_argument("--json", type=Path, help="Write the figures here as JSON.")
    ap.add_argument("--py-spy", type=Path, help="py-spy's executable: record the server.")
    ap.add_argument(
        "--py-spy-mode",
        choices=["cpu", "idle", "gil"],
        default="cpu",
        help="What py-spy samples: threads running (cpu), all threads, waiting ones too "
        "(idle), or the thread holding the GIL (gil).",
    )
    ap.add_argument("--set", action="append", default=[], help="NOTESEEK_ variable=value.")
    args = ap.parse_args()
    if not args.vault.is_dir():
        print(f"skip: {args.vault} not found (the shared data folder is absent)")
        return 0
    queries, sentences = corpus_text(args.vault)
    with tempfile.TemporaryDirectory(prefix="noteseek-mixed-load-") as tmp:
        work = args.workdir or Path(tmp)
        folder = work / "project"
        if folder.exists():
            shutil.rmtree(folder)  # a fresh index and memory folder each run
        folder.mkdir(parents=True)
        (folder / ".noteseek.toml").write_text(
            f'[roots.docs]\npath = "{args.vault.resolve().as_posix()}"\n', encoding="utf-8"
        )
        env = {k: v for k, v in os.environ.items() if not k.startswith("NOTESEEK_")}
        env.update(
            XDG_CONFIG_HOME=str(work / "config"),
            XDG_DATA_HOME=str(work / "data"),
            NOTESEEK_EMBEDDING__ENABLED="false",
        )
        for item in args.set:
            key, _, value = item.partition("=")
            env[key] = value
        cli = [sys.executable, "-m", "noteseek.interfaces.cli"]
        t = time.perf_counter()
        subprocess.run(
            [*cli, "index", "--keyword-only"], cwd=folder, env=env, check=True, capture_output=True
        )
        print(f"indexed {args.vault} keyword-only in {time.perf_counter() - t:.1f} s")
        log_path = work / "serve.log"
        spy = None
        run = Run(pause=args.pause)
        with served(
            folder,
            env,
            log_path,
            ready=lambda s: s["status"] == "ready" and s["documents"] > 0,
            timeout=300,
        ) as server:
            url, status = server.url, server.status
            print(f"serving {url}: {status['documents']} documents, {status['chunks']} chunks")
            with httpx.Client(base_url=url, timeout=120) as client:
                rng = random.Random(7)
                for _ in range(30):
                    client.post("/query_documents", json={"query": rng.choice(queries)})
                idle = wait_idle(server.pid)
                print(f"warmed up; idle after {idle:.0f} s")
            rss_start = psutil.Process(server.pid).memory_info().rss
            if args.py_spy:
                spy = subprocess.Popen(
                    [
                        str(args.py_spy), "record", "--pid", str(server.pid), "--threads",
                        *{"cpu": [], "idle": ["--idle"], "gil": ["--gil"]}[args.py_spy_mode],
                        "--rate", "50", "--format", "speedscope",
                        "--output", str(work / "serve.speedscope.json"),
                    ],
                    stdout=subprocess.DEVNULL,
                    stderr=subprocess.DEVNULL,
                )  # fmt: skip
            load_before = loadavg()
            cpu_before = psutil.Process(server.pid).cpu_times()
            mine_before = psutil.Process().cpu_times()
            stop = threading.Event()
            sampler = threading.Thread(
                target=sample_rss, args=(server.pid, stop, run, time.perf_counter()), daemon=True
            )
            sampler.start()
            elapsed = asyncio.run(load(url, queries, sentences, args, run))
            stop.set()
            sampler.join()
            load_after = loadavg()
            cpu_after = psutil.Process(server.pid).cpu_times()
            cpu = cpu_after.user + cpu_after.system - cpu_before.user - cpu_before.system
            mine_after = psutil.Process().cpu_times()
            mine = mine_after.user + mine_after.system - mine_before.user - mine_before.system
            if spy is not None:
                spy.send_signal(signal.SIGINT)
                try:
                    spy.wait(60)
                except subprocess.TimeoutExpired:
                    spy.kill()
                    spy.wait()
        code = server.code
        out = summary(run, elapsed, rss_start, load_before, load_after)
        out["server_exit"] = code
        out["server_cores"] = round(cpu / elapsed, 2)
        out["client_cores"] = round(mine / elapsed, 2)
        print(
            f"CPU over the window: the server {out['server_cores']} cores, the clients "
            f"(this process) {out['client_cores']}"
        )
        print_summary(out)
        print(f"server stopped with SIGTERM: exit code {code}")
        if args.json:
            args.json.write_text(json.dumps(out, indent=1), encoding="utf-8")
        if "Traceback" in log_path.read_text(errors="replace"):
            print(f"tracebacks in the server log: {log_path}")
        failed = any(k["errors"] for k in out["kinds"].values())
        return 1 if failed or code != 0 else 0


if __name__ == "__main__":
    sys.exit(main())
