"""Memory creates at 10,000 memories, in process and through ``noteseek serve`` (issue 30,
item 6: p95 at most 50 ms through serve, whatever the folder holds).

    .venv/bin/python bench/memory_writes.py [--memories 10000] [--creates 300]
        [--writers 12] [--embeddings on|off] [--workdir DIR]

1. Creates ``--memories`` memories through the memory kind's writer (``MemoryFolder.create``,
   the path every door takes: locked, atomic, fsync'd, duplicate text looked up in the
   folder's table) in a fresh project's memory folder, and prints the create time per
   thousand (p50, p95): flat if a create costs the same whatever the folder holds.
2. Indexes the project with the CLI (``noteseek index``; embedded unless ``--embeddings
   off``).
3. Starts ``noteseek serve --port 0`` on loopback, waits until it is ready, warms up with 10
   creates, and times ``--creates`` creates one after the other (``POST /memories``, each a
   new name and a new text, as an agent writes them): p50, p95, p99, max, and any answer that
   is not 201.
4. Then ``--writers`` clients at once, in three processes, each creating 10 memories: the
   failures (any answer but 201) and the latency percentiles.
5. Stops the server with SIGTERM by its PID and checks that it exited 0.

Before the table, a create read and parsed every memory under the folder's lock: 2.6 s per
create in process at 10,000 memories (0.3-0.6 s at 2,000), and 4 of 24 creates of 12
concurrent writers failed with "lock held for 10 s".
"""

from __future__ import annotations

import argparse
import json
import multiprocessing
import os
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path
from typing import Any

import httpx

from serving import served

REPO = Path(__file__).resolve().parent.parent
TOPICS = [
    "the staging database", "the billing service", "the deploy pipeline", "the auth tokens",
    "the search index", "the backup job", "the mobile release", "the API gateway",
    "the data warehouse", "the on-call rota", "the design review", "the cache layer",
]  # fmt: skip
FACTS = [
    "moved to a new host", "is owned by Ana", "runs every night at 02:00", "needs a review",
    "was rolled back on Tuesday", "has a known memory leak", "is documented in the wiki",
    "uses Postgres 16", "expires after 15 minutes", "is blocked on the vendor",
]  # fmt: skip


def text_of(i: int, tag: str = "") -> str:
    topic, fact = TOPICS[i % len(TOPICS)], FACTS[(i // len(TOPICS)) % len(FACTS)]
    return f"Note {tag}{i}: {topic} {fact} (seen in ticket {1000 + i * 7})."


def percentiles(samples: list[float]) -> dict[str, float]:
    s = sorted(samples)

    def at(q: float) -> float:
        return s[min(len(s) - 1, int(q * len(s)))] * 1000

    return {
        "p50": round(statistics.median(s) * 1000, 1),
        "p95": round(at(0.95), 1),
        "p99": round(at(0.99), 1),
        "max": round(s[-1] * 1000, 1),
    }


def fill(folder: Path, count: int) -> None:
    sys.path.insert(0, str(REPO / "src"))
    from noteseek.sources.memory.folder import MemoryFolder

    mem = MemoryFolder(folder)
    times: list[float] = []
    started = time.perf_counter()
    for i in range(count):
        t = time.perf_counter()
        result = mem.create(f"notes/n{i:05d}", text_of(i), tags=["bench"])
        times.append(time.perf_counter() - t)
        assert result.created, result.message
        if (i + 1) % 1000 == 0:
            print(f"  created {i + 1:>6}: this thousand {percentiles(times[-1000:])} ms")
    print(f"created {count} memories in process in {time.perf_counter() - started:.0f} s")


def _writer_process(url: str, tag: str, clients: int, each: int, out: str) -> None:
    """``clients`` threads of one process, each creating ``each`` memories at once."""
    results: list[dict[str, Any]] = []
    barrier = threading.Barrier(clients)

    def run(thread: int) -> None:
        with httpx.Client(base_url=url, timeout=60) as client:
            barrier.wait()
            for n in range(each):
                body = {
                    "name": f"conc/{tag}-{thread}-{n}",
                    "content": text_of(n, f"{tag}.{thread}."),
                }
                t = time.perf_counter()
                try:
                    answer = client.post("/memories", json=body)
                    status, detail = answer.status_code, answer.text[:200]
                except httpx.HTTPError as exc:
                    status, detail = 0, f"{type(exc).__name__}: {exc}"
                results.append({"s": time.perf_counter() - t, "status": status, "detail": detail})

    threads = [threading.Thread(target=run, args=(i,)) for i in range(clients)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    Path(out).write_text(json.dumps(results))


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--memories", type=int, default=10_000)
    ap.add_argument("--creates", type=int, default=300)
    ap.add_argument("--writers", type=int, default=12, help="Concurrent clients (3 processes).")
    ap.add_argument("--embeddings", choices=["on", "off"], default="on")
    ap.add_argument("--workdir", type=Path, help="Keep the project here (default: temporary).")
    args = ap.parse_args()
    with tempfile.TemporaryDirectory(prefix="noteseek-memory-writes-") as tmp:
        base = args.workdir or Path(tmp)
        folder = base / "project"
        docs = folder / "docs"
        docs.mkdir(parents=True, exist_ok=True)
        (docs / "readme.md").write_text("# Project\n\nA project with a memory folder.\n")
        (folder / ".noteseek.toml").write_text('[roots.docs]\npath = "docs"\n', encoding="utf-8")
        env = {k: v for k, v in os.environ.items() if not k.upper().startswith("NOTESEEK_")}
        env.update(
            HOME=str(base / "home"),
            XDG_CONFIG_HOME=str(base / "config"),
            XDG_DATA_HOME=str(base / "data"),
            NOTESEEK_EMBEDDING__ENABLED="true" if args.embeddings == "on" else "false",
            PYTHONPATH=str(REPO / "src"),
        )
        print(f"{args.memories} memories, embeddings {args.embeddings}, {os.cpu_count()} cores")
        fill(folder / ".memories", args.memories)
        cli = [sys.executable, "-m", "noteseek.interfaces.cli"]
        t = time.perf_counter()
        subprocess.run([*cli, "index"], cwd=folder, env=env, check=True, capture_output=True)
        print(f"indexed in {time.perf_counter() - t:.0f} s")
        with served(folder, env, base / "serve.log", timeout=900) as server:
            url, status = server.url, server.status
            with httpx.Client(base_url=url, timeout=60) as client:
                print(f"serving {url}: {status['documents']} documents")
                for i in range(10):
                    body = {"name": f"warm/w{i}", "content": text_of(i, "warm.")}
                    client.post("/memories", json=body).raise_for_status()
                times: list[float] = []
                failed: list[str] = []
                for i in range(args.creates):
                    body = {"name": f"timed/t{i:04d}", "content": text_of(i, "timed.")}
                    t = time.perf_counter()
                    answer = client.post("/memories", json=body)
                    times.append(time.perf_counter() - t)
                    if answer.status_code != 201:
                        failed.append(f"{answer.status_code}: {answer.text[:200]}")
                print(
                    f"{args.creates} creates through serve, one at a time: "
                    f"{percentiles(times)} ms; {len(failed)} not 201"
                )
                for line in failed[:5]:
                    print("  ", line)
            if args.writers:
                per_process = [args.writers // 3 + (i < args.writers % 3) for i in range(3)]
                outs = [base / f"writers-{i}.json" for i in range(3)]
                context = multiprocessing.get_context("spawn")
                procs = [
                    context.Process(target=_writer_process, args=(url, f"p{i}", n, 10, str(out)))
                    for i, (n, out) in enumerate(zip(per_process, outs, strict=True))
                    if n
                ]
                for proc in procs:
                    proc.start()
                for proc in procs:
                    proc.join(600)
                results = [r for out in outs if out.exists() for r in json.loads(out.read_text())]
                bad = [r for r in results if r["status"] != 201]
                print(
                    f"{args.writers} writers at once in {len(procs)} processes, "
                    f"{len(results)} creates: {len(bad)} failed; "
                    f"{percentiles([r['s'] for r in results])} ms"
                )
                for r in bad[:5]:
                    print("  ", r["status"], r["detail"])
        code = server.code
        print(f"server (pid {server.pid}) exited {code}")
        return 0 if code == 0 else 1


if __name__ == "__main__":
    sys.exit(main())
