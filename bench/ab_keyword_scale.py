"""Keyword latency of two versions of noteseek on the 14k-file PowerShell index, interleaved.

    .venv/bin/python bench/ab_keyword_scale.py --a OLD/src --b NEW/src --index DIR \
        --corpus DIR [--queries 600]
    .venv/bin/python bench/ab_keyword_scale.py --a OLD/src --b NEW/src --index DIR \
        --corpus DIR --door [--index-b DIR] [--rounds 5] [--queries 500] \
        [--query-set held-out|titles-descriptions] [--set-a KEY=VALUE] [--set-b KEY=VALUE]

``DIR`` holds an index built with ``NOTESEEK_INDEX__DIR=DIR noteseek index CORPUS`` (keyword
only: ``NOTESEEK_EMBEDDING__ENABLED=false``) over the unpacked windows-powershell-docs
archive. Each version runs in its own process (``PYTHONPATH`` = its ``src``); every query
(titles and frontmatter descriptions, as in ``side_by_side.py``) goes to A then B, then B then
A, for ``top_k`` 10 (``Engine.search``, snippets on) and ``top_k`` 100 through the
``query_documents`` operation serialised to JSON. Prints p50 / p95 per version and the median
paired difference, and checks that both versions returned the same results in the same order
(a query stopped by ``search.time_limit`` counts as its time and the error).

``--door``: instead, the door users call, ``noteseek --index-dir DIR search --queries F --json
--top-k 10 --mode keyword`` (one process per pass, every query once, ``took_ms`` of each),
pass after pass, A then B, then B then A, for ``--rounds`` rounds. Prints each pass's p50 and
p95, each version's median over the rounds and B's over A's, and how many queries returned
the same results (chunk ids and scores) in both. ``--index-b``: B searches this index instead
(an index B's writer built); ``--set-a`` / ``--set-b``: a setting for one version only
(``search.common_term_fraction=0.05``), given as its ``NOTESEEK_`` variable. Queries:
``held-out`` the titles and descriptions of the pages' front matter (``releases.py``'s
held-out queries, seed 32; most are cmdlet names), ``titles-descriptions`` half titles, half
SYNOPSIS sentences (``side_by_side.powershell_queries``, as above).
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
from pathlib import Path
from typing import Any

import numpy as np

from ab_latency import start, stop
from releases import held_out_queries
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


def door_pass(src: str, index: Path, queries: Path, settings: list[str], home: Path) -> list[Any]:
    """One ``noteseek search --queries`` process of the version at ``src``: its JSON lines."""
    env = {k: v for k, v in os.environ.items() if not k.startswith("NOTESEEK_")}
    env.update(
        PYTHONPATH=src,
        XDG_DATA_HOME=str(home / "data"),
        XDG_CONFIG_HOME=str(home / "config"),
        NO_COLOR="1",
    )
    for setting in settings:
        key, _, value = setting.partition("=")
        env["NOTESEEK_" + key.upper().replace(".", "__")] = value
    argv = [sys.executable, "-m", "noteseek.interfaces.cli", "--index-dir", str(index)]
    argv += ["search", "--queries", str(queries), "--json", "--top-k", "10", "--mode", "keyword"]
    out = subprocess.run(argv, env=env, capture_output=True, text=True, check=False, cwd=home)
    if out.returncode not in (0, 1):
        raise SystemExit(f"{src}: exited {out.returncode}\n{out.stderr[-2000:]}")
    return [json.loads(line) for line in out.stdout.splitlines() if line.strip()]


def door(args: argparse.Namespace) -> None:
    """The ``--door`` comparison (module docstring), in a temporary home folder."""
    with tempfile.TemporaryDirectory(prefix="ab-door-") as tmp:
        door_in(args, Path(tmp))


def door_in(args: argparse.Namespace, home: Path) -> None:
    """The passes, their table and the summary line; queries and user folders under ``home``."""
    path = home / "queries.jsonl"
    if args.query_set == "held-out":
        held_out_queries(args.corpus, args.queries, path)
    else:
        with path.open("w", encoding="utf-8") as out:
            for i, text in enumerate(powershell_queries(args.corpus, args.queries)):
                out.write(json.dumps({"_id": f"q{i}", "text": text}) + "\n")
    versions = {
        "A": (args.a, args.index, args.set_a),
        "B": (args.b, args.index_b or args.index, args.set_b),
    }
    took: dict[str, list[list[float]]] = {"A": [], "B": []}
    found: dict[str, list[Any]] = {}
    print(f"{args.query_set} queries ({path}), {args.rounds} rounds, A then B, then B then A")
    print("| round | A p50 / p95 ms | B p50 / p95 ms |\n|---|---|---|")
    for round_ in range(args.rounds):
        cells = {}
        for name in ("A", "B") if round_ % 2 == 0 else ("B", "A"):
            src, index, settings = versions[name]
            lines = door_pass(src, index, path, settings, home)
            ms = [float(line["took_ms"]) for line in lines]
            took[name].append(ms)
            found.setdefault(name, lines)
            cells[name] = f"{np.percentile(ms, 50):.2f} / {np.percentile(ms, 95):.2f}"
        print(f"| {round_ + 1} | {cells['A']} | {cells['B']} |", flush=True)
    p50 = {n: float(np.median([np.percentile(t, 50) for t in took[n]])) for n in took}
    p95 = {n: float(np.median([np.percentile(t, 95) for t in took[n]])) for n in took}
    same = sum(
        [(r["chunk_id"], r["score"]) for r in a["results"]]
        == [(r["chunk_id"], r["score"]) for r in b["results"]]
        for a, b in zip(found["A"], found["B"], strict=True)
    )
    print(
        f"\nmedian over the rounds: A p50 {p50['A']:.2f} ms, p95 {p95['A']:.2f} ms; "
        f"B p50 {p50['B']:.2f} ms, p95 {p95['B']:.2f} ms; B / A: p50 {p50['B'] / p50['A']:.2f}, "
        f"p95 {p95['B'] / p95['A']:.2f}; same results {same}/{len(found['A'])}; "
        f"load average now {os.getloadavg()[0]:.2f}"
    )


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--a", required=True, help="src folder of version A")
    ap.add_argument("--b", required=True, help="src folder of version B")
    ap.add_argument("--index", type=Path, required=True)
    ap.add_argument("--corpus", type=Path, required=True)
    ap.add_argument("--queries", type=int, default=600)
    ap.add_argument("--k", type=int, action="append", default=None, help="10 and/or 100")
    ap.add_argument("--door", action="store_true", help="noteseek search --queries, per pass")
    ap.add_argument("--index-b", type=Path, help="--door: the index B searches (default --index)")
    ap.add_argument("--rounds", type=int, default=5, help="--door: passes of each version")
    ap.add_argument("--query-set", choices=["held-out", "titles-descriptions"], default="held-out")
    ap.add_argument("--set-a", action="append", default=[], help="--door: KEY=VALUE for A")
    ap.add_argument("--set-b", action="append", default=[], help="--door: KEY=VALUE for B")
    args = ap.parse_args()
    if args.door:
        door(args)
        return 0
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
