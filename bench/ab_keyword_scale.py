"""Keyword latency of two versions of noteseek on the 14k-file PowerShell index, interleaved.

    .venv/bin/python bench/ab_keyword_scale.py --a OLD/src --b NEW/src --index DIR \
        --corpus DIR [--queries 600]

``DIR`` holds an index built with ``NOTESEEK_INDEX__DIR=DIR noteseek index CORPUS`` (keyword
only: ``NOTESEEK_EMBEDDING__ENABLED=false``) over the unpacked windows-powershell-docs
archive. Each version runs in its own process (``PYTHONPATH`` = its ``src``); every query
(titles and frontmatter descriptions, as in ``side_by_side.py``) goes to A then B, then B then
A, for ``top_k`` 10 (``Engine.search``, snippets on) and ``top_k`` 100 through the
``query_documents`` operation serialised to JSON. Prints p50 / p95 per version and the median
paired difference, and checks that both versions returned the same results in the same order
(a query stopped by ``search.time_limit`` counts as its time and the error).
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
from pathlib import Path

import numpy as np

from ab_latency import start, stop
from side_by_side import powershell_queries

WORKER = r"""
import json, sys, time
from pathlib import Path
from noteseek.engine import open_engine
from noteseek.operations import NO_LIMITS, Context, execute, parse
engine = open_engine(Path(sys.argv[1]), flags={"index.dir": sys.argv[1],
                     "embedding.enabled": False}, environ={})
ctx = Context(engine, None, NO_LIMITS)
try:  # the facade takes one request object since issue 29; older versions took keywords
    from noteseek.engine import SearchRequest
    def search(text, **options):
        return engine.search(SearchRequest(text, **options))
except ImportError:
    def search(text, **options):
        return engine.search(text, **options)
search("warm up", top_k=10, mode="keyword")
print("ready", flush=True)
for line in sys.stdin:
    item = json.loads(line)
    started = time.perf_counter()
    if item["k"] == 10:
        hits = search(item["text"], top_k=10, mode="keyword").hits
        ids = [h.chunk_id for h in hits]
    else:
        op, params = parse("query_documents", {"query": item["text"], "top_k": 100,
                                               "mode": "keyword"})
        try:
            out = json.dumps(execute(op, ctx, params))
            ids = [r["chunk_id"] for r in json.loads(out)["results"]]
        except Exception as exc:  # the time limit (search.time_limit) on a busy machine
            ids = ["error: " + type(exc).__name__]
    took = (time.perf_counter() - started) * 1000
    print(json.dumps([took, ids]), flush=True)
"""


def ask(proc: subprocess.Popen[str], text: str, k: int) -> tuple[float, list[str]]:
    assert proc.stdin is not None and proc.stdout is not None
    proc.stdin.write(json.dumps({"text": text, "k": k}) + "\n")
    proc.stdin.flush()
    took, ids = json.loads(proc.stdout.readline())
    return float(took), list(ids)


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--a", required=True, help="src folder of version A")
    ap.add_argument("--b", required=True, help="src folder of version B")
    ap.add_argument("--index", type=Path, required=True)
    ap.add_argument("--corpus", type=Path, required=True)
    ap.add_argument("--queries", type=int, default=600)
    ap.add_argument("--k", type=int, action="append", default=None, help="10 and/or 100")
    args = ap.parse_args()
    queries = powershell_queries(args.corpus, args.queries)
    procs = {
        "A": start(args.a, str(args.index), worker=WORKER),
        "B": start(args.b, str(args.index), worker=WORKER),
    }
    try:
        print(f"{len(queries)} queries, {np.mean([len(q.split()) for q in queries]):.1f} words")
        print("| top k | A p50 / p95 ms | B p50 / p95 ms | median B - A ms | same results |")
        print("|---|---|---|---|---|")
        for k in args.k or [10, 100]:
            times: dict[str, list[float]] = {"A": [], "B": []}
            same = 0
            for i, q in enumerate(queries):
                order = ["A", "B"] if i % 2 == 0 else ["B", "A"]
                got = {}
                for name in order:
                    took, ids = ask(procs[name], q, k)
                    times[name].append(took)
                    got[name] = ids
                same += got["A"] == got["B"]
            a, b = np.array(times["A"]), np.array(times["B"])
            print(
                f"| {k}{' JSON' if k == 100 else ''} | {np.percentile(a, 50):.2f} / "
                f"{np.percentile(a, 95):.2f} | {np.percentile(b, 50):.2f} / "
                f"{np.percentile(b, 95):.2f} | {np.median(b - a):+.2f} | {same}/{len(queries)} |"
            )
    finally:
        stop(procs.values())
    return 0


if __name__ == "__main__":
    sys.exit(main())
