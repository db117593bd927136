"""Search latency on an embedded index of the PowerShell docs, from a fresh process's first
query on: what issue 17's table in docs/benchmarks.md reports.

    .venv/bin/python bench/powershell_latency.py --index-dir DIR --corpus FOLDER [--queries 200]

Opens the index in this (new) process and times its first hybrid query (model loading, vectors
mapped or read, everything), then 20 warm-up queries, then ``--queries`` queries per mode
(``Engine.search(q, top_k=10, mode=...)``, snippets on) for hybrid, keyword and semantic, and
prints p50 / p95 per mode and the process's peak RSS. Queries: ``--sample`` titles and
descriptions of the corpus's pages drawn with a fixed seed (``bench/side_by_side.py:
powershell_queries``), the first 20 to warm up, the next ``--queries`` timed.
"""

from __future__ import annotations

import argparse
import resource
import sys
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))
from noteseek.engine import open_engine
from side_by_side import powershell_queries

WARMUP = 20


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--index-dir", type=Path, required=True)
    ap.add_argument("--corpus", type=Path, required=True, help="the indexed PowerShell docs")
    ap.add_argument("--queries", type=int, default=200)
    ap.add_argument("--sample", type=int, default=300, help="queries drawn from the corpus")
    args = ap.parse_args()
    queries = powershell_queries(args.corpus, max(args.sample, args.queries + WARMUP))
    started = time.perf_counter()
    engine = open_engine(args.index_dir, flags={"index.dir": str(args.index_dir)}, environ={})
    first = engine.search(queries[0], top_k=10, mode="hybrid")
    print(
        f"first hybrid query of a fresh process: {time.perf_counter() - started:.2f} s "
        f"(lanes {first.lanes})"
    )
    for q in queries[:WARMUP]:
        engine.search(q, top_k=10, mode="hybrid")
    for mode in ("hybrid", "keyword", "semantic"):
        ms = []
        for q in queries[WARMUP : WARMUP + args.queries]:
            t = time.perf_counter()
            engine.search(q, top_k=10, mode=mode)
            ms.append((time.perf_counter() - t) * 1000)
        p50, p95 = np.percentile(ms, 50), np.percentile(ms, 95)
        print(f"{mode} top 10: p50 {p50:.1f} ms, p95 {p95:.1f} ms ({len(ms)} queries)")
    print(f"peak RSS: {resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024:.0f} MB")
    engine.close()
    return 0


if __name__ == "__main__":
    sys.exit(main())
