"""Query latency of two versions of noteseek, interleaved query by query (a paired A/B).

    .venv/bin/python bench/ab_latency.py --a OLD/src --b NEW/src --index-root /tmp/evalix \
        [--dataset NAME=FOLDER ...] [--queries 200] [--mode hybrid --mode keyword]

Each version runs in its own process (``PYTHONPATH`` set to its ``src``), opened over the same
index built by ``noteseek eval --index <index-root>/<name>``; the driver sends every query to A
then B (then B then A for the next, so neither always goes first), so load from other work on
the machine falls on both alike. Prints p50 and p95 per version, mode and dataset, and the
median of the paired differences.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
from collections.abc import Iterable
from pathlib import Path

import numpy as np

DATA = Path(__file__).resolve().parent.parent.parent / "shared" / "data"

WORKER = r"""
import json, sys, time
from pathlib import Path
from noteseek.eval.runner import eval_engine
ds, engine = eval_engine(Path(sys.argv[1]), Path(sys.argv[2]), flags={})
try:  # the facade takes one request object since issue 29; older versions took keywords
    from noteseek.engine import SearchRequest
    def search(text, **options):
        return engine.search(SearchRequest(text, **options))
except ImportError:
    def search(text, **options):
        return engine.search(text, **options)
search("warm up", top_k=10, mode="hybrid")
print("ready", flush=True)
for line in sys.stdin:
    item = json.loads(line)
    started = time.perf_counter()
    search(item["text"], top_k=10, mode=item["mode"])
    print((time.perf_counter() - started) * 1000, flush=True)
"""


def start(src: str, *args: str, worker: str = WORKER) -> subprocess.Popen[str]:
    """A worker process running ``worker`` with the code of ``src``; returns once ready."""
    env = {**os.environ, "PYTHONPATH": src}
    proc = subprocess.Popen(
        [sys.executable, "-c", worker, *args],
        env=env,
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        text=True,
    )
    assert proc.stdout is not None
    if proc.stdout.readline().strip() != "ready":
        raise SystemExit(f"{src}: the worker did not start")
    return proc


def stop(procs: Iterable[subprocess.Popen[str]], timeout: float = 60) -> None:
    """End the workers: their input closes, they finish and exit."""
    for proc in procs:
        if proc.stdin is not None:
            proc.stdin.close()
        proc.wait(timeout=timeout)


def ask(proc: subprocess.Popen[str], text: str, mode: str) -> float:
    assert proc.stdin is not None and proc.stdout is not None
    proc.stdin.write(json.dumps({"text": text, "mode": mode}) + "\n")
    proc.stdin.flush()
    return float(proc.stdout.readline())


def queries(folder: Path, limit: int) -> list[str]:
    lines = (folder / "queries.jsonl").read_text(encoding="utf-8").splitlines()
    return [json.loads(line)["text"] for line in lines if line.strip()][:limit]


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--a", required=True, help="src folder of version A")
    ap.add_argument("--b", required=True, help="src folder of version B")
    ap.add_argument("--index-root", type=Path, required=True)
    ap.add_argument("--dataset", action="append", default=None, help="name=folder")
    ap.add_argument("--queries", type=int, default=200)
    ap.add_argument("--mode", action="append", default=None)
    args = ap.parse_args()
    modes = args.mode or ["keyword", "hybrid"]
    pairs = args.dataset or [f"{n}={DATA / n}" for n in ("scifact-dev", "hugo-docs-kis")]
    print("| dataset | mode | A p50 / p95 ms | B p50 / p95 ms | median B - A ms |")
    print("|---|---|---|---|---|")
    for pair in pairs:
        name, _, folder = pair.partition("=")
        a = start(args.a, folder, str(args.index_root / name))
        b = start(args.b, folder, str(args.index_root / name))
        try:
            for mode in modes:
                times: dict[str, list[float]] = {"a": [], "b": []}
                for i, text in enumerate(queries(Path(folder), args.queries)):
                    order = [("a", a), ("b", b)] if i % 2 == 0 else [("b", b), ("a", a)]
                    for label, proc in order:
                        times[label].append(ask(proc, text, mode))
                ta, tb = np.array(times["a"]), np.array(times["b"])
                print(
                    f"| {name} | {mode} | {np.percentile(ta, 50):.1f} / {np.percentile(ta, 95):.1f}"
                    f" | {np.percentile(tb, 50):.1f} / {np.percentile(tb, 95):.1f}"
                    f" | {np.median(tb - ta):+.2f} |"
                )
        finally:
            stop((a, b))
    return 0


if __name__ == "__main__":
    sys.exit(main())
