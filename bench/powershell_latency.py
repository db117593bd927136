"""Search latency on an embedded index of the PowerShell docs, from a fresh process's first
query on: what issue 17's table in docs/benchmarks.md reports.

    .venv/bin/python bench/powershell_latency.py --index-dir DIR --corpus FOLDER [--queries 500]

Opens the index in this (new) process and times its first hybrid query (model loading, vectors
mapped or read, everything), then 20 warm-up queries, then ``--queries`` queries per mode
(``Engine.search(q, top_k=10, mode=...)``, snippets on) for hybrid, keyword and semantic, then
the same queries as ``noteseek search --mode keyword --top-k 100 --json`` answers them (the
``query_documents`` operation, its response written as JSON), and prints p50 / p95 of each and
the process's peak RSS. Queries: titles and descriptions of the corpus's pages drawn with a
fixed seed (``bench/side_by_side.py: powershell_queries``), the first 20 to warm up, the next
``--queries`` timed. ``--fts5``: keyword search as before the saved postings (FTS5 answers every
query), for a paired comparison on the same index. ``--profile N``: then the keyword queries
once more under cProfile, and its top N functions by own time. After the first query the heap is
settled as the servers settle theirs (``settle_heap``: ``gc.freeze``); ``--no-settle`` leaves it.
The garbage collections that ran during the top-100 queries are counted and timed, and then
(untimed) how many pipeline passes each top-100 query took.
"""

from __future__ import annotations

import argparse
import cProfile
import gc
import json
import pstats
import resource
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import numpy as np

from noteseek.engine import SearchRequest

sys.path.insert(0, str(Path(__file__).resolve().parent))
from noteseek.engine import open_engine
from noteseek.operations import NO_LIMITS, Context, execute, parse
from noteseek.operations.runtime import settle_heap
from noteseek.search import pipeline
from noteseek.store.sqlite.postings_state import PostingsState
from side_by_side import powershell_queries

WARMUP = 20


class CollectorTimes:
    """A ``gc.callbacks`` entry: how many collections of each generation ran, and how long."""

    def __init__(self) -> None:
        self.started = 0.0
        self.ms: dict[int, list[float]] = {0: [], 1: [], 2: []}

    def __call__(self, phase: str, info: dict[str, int]) -> None:
        if phase == "start":
            self.started = time.perf_counter()
        else:
            self.ms[info["generation"]].append((time.perf_counter() - self.started) * 1000)

    def summary(self) -> str:
        return (
            "; ".join(
                f"generation {g}: {len(v)} taking {sum(v):.0f} ms (longest {max(v, default=0):.1f})"
                for g, v in self.ms.items()
            )
            + f"; frozen objects {gc.get_freeze_count()}"
        )


def passes(context: Context, queries: list[str]) -> dict[int, int]:
    """How many queries ran the pipeline once, twice, ... (untimed: the pass is counted by
    wrapping ``pipeline._run``)."""
    counted = [0]
    real = pipeline._run

    def counting(*args: Any) -> Any:
        counted[0] += 1
        return real(*args)

    pipeline._run = counting  # type: ignore[assignment]
    try:
        out: dict[int, int] = {}
        for q in queries:
            counted[0] = 0
            op, params = parse("query_documents", {"query": q, "top_n": 100, "mode": "keyword"})
            execute(op, context, params)
            out[counted[0]] = out.get(counted[0], 0) + 1
    finally:
        pipeline._run = real  # type: ignore[assignment]
    return dict(sorted(out.items()))


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--index-dir", type=Path, required=True)
    ap.add_argument("--corpus", type=Path, required=True, help="the indexed PowerShell docs")
    ap.add_argument("--queries", type=int, default=500)
    ap.add_argument("--fts5", action="store_true", help="leave the saved postings unused")
    ap.add_argument("--profile", type=int, default=0, help="top functions of a keyword profile")
    ap.add_argument(
        "--no-settle", action="store_true", help="leave the heap as is (before: no gc.freeze)"
    )
    args = ap.parse_args()
    queries = powershell_queries(args.corpus, args.queries + WARMUP)
    started = time.perf_counter()
    engine = open_engine(args.index_dir, flags={"index.dir": str(args.index_dir)}, environ={})
    if args.fts5:
        store: Any = engine.store
        store._postings_state = PostingsState(Path(tempfile.mkdtemp(prefix="no-postings-")))
    first = engine.search(SearchRequest(queries[0], top_k=10, mode="hybrid"))
    print(
        f"first hybrid query of a fresh process: {time.perf_counter() - started:.2f} s "
        f"(lanes {first.lanes})"
    )
    if not args.no_settle:
        settle_heap()  # as `noteseek mcp` and `serve` do once the index is open
    for q in queries[:WARMUP]:
        engine.search(SearchRequest(q, top_k=10, mode="hybrid"))
    timed = queries[WARMUP : WARMUP + args.queries]
    for mode in ("hybrid", "keyword", "semantic"):
        ms = []
        for q in timed:
            t = time.perf_counter()
            engine.search(SearchRequest(q, top_k=10, mode=mode))
            ms.append((time.perf_counter() - t) * 1000)
        p50, p95 = np.percentile(ms, 50), np.percentile(ms, 95)
        print(f"{mode} top 10: p50 {p50:.1f} ms, p95 {p95:.1f} ms ({len(ms)} queries)")
    context = Context(engine, None, NO_LIMITS)
    collections = CollectorTimes()
    gc.callbacks.append(collections)
    ms = []
    for q in timed:
        t = time.perf_counter()
        op, params = parse("query_documents", {"query": q, "top_n": 100, "mode": "keyword"})
        json.dumps(execute(op, context, params), ensure_ascii=False)
        ms.append((time.perf_counter() - t) * 1000)
    p50, p95 = np.percentile(ms, 50), np.percentile(ms, 95)
    print(f"keyword top 100 as JSON: p50 {p50:.1f} ms, p95 {p95:.1f} ms ({len(ms)} queries)")
    gc.callbacks.remove(collections)
    print(f"garbage collections during them: {collections.summary()}")
    print(f"passes per top-100 query (grouping widens): {passes(context, timed)}")
    if args.profile:
        profile = cProfile.Profile()
        profile.enable()
        for q in timed:
            engine.search(SearchRequest(q, top_k=10, mode="keyword"))
        profile.disable()
        pstats.Stats(profile).sort_stats("tottime").print_stats(args.profile)
    print(f"peak RSS: {resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024:.0f} MB")
    engine.close()
    return 0


if __name__ == "__main__":
    sys.exit(main())
