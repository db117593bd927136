"""Search latency of two versions through the door users call, alternated run by run.

    .venv/bin/python bench/door_ab.py --a OLD/src --b NEW/src --index-dir DIR \
        --queries F [--queries G ...] [--mode keyword] [--top-k 10] [--rounds 3]

Each round runs ``noteseek --index-dir DIR search --queries F --json --mode M --top-k K`` once
with each version (``PYTHONPATH`` set to its ``src``; A then B in odd rounds, B then A in even
ones, so load from other work falls on both alike) and reads every query's ``took_ms`` from
the JSON lines. Printed per query file: p50 and p95 of each version over all rounds, and the
ratio B / A of the p50s (below 1: B is faster). The query files are ``{"_id", "text"}`` lines
drawn from the corpus (the titles and descriptions of hugo-docs-kis, the questions of
scifact-dev).
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
from pathlib import Path

import numpy as np


def run(src: str, index_dir: Path, queries: Path, mode: str, top_k: int, home: Path) -> list[float]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("NOTESEEK_")}
    env.update(PYTHONPATH=src, HOME=str(home), XDG_CONFIG_HOME=str(home / "c"))
    command = [sys.executable, "-m", "noteseek.interfaces.cli", "--index-dir", str(index_dir)]
    search = ["search", "--queries", str(queries), "--json", "--mode", mode, "--top-k", str(top_k)]
    out = subprocess.run(
        [*command, *search],
        env=env,
        capture_output=True,
        text=True,
        check=False,
    )
    if out.returncode not in (0, 1):
        raise SystemExit(f"{src}: noteseek search failed:\n{out.stderr}")
    return [float(json.loads(line)["took_ms"]) for line in out.stdout.splitlines() if line]


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--a", required=True, help="src folder of version A (the previous release)")
    ap.add_argument("--b", required=True, help="src folder of version B")
    ap.add_argument("--index-dir", type=Path, required=True)
    ap.add_argument("--queries", type=Path, action="append", required=True)
    ap.add_argument("--mode", default="keyword")
    ap.add_argument("--top-k", type=int, default=10)
    ap.add_argument("--rounds", type=int, default=3)
    args = ap.parse_args()
    print("| queries | n | A p50 / p95 ms | B p50 / p95 ms | B / A (p50) |")
    print("|---|---|---|---|---|")
    with tempfile.TemporaryDirectory() as home:
        for queries in args.queries:
            took: dict[str, list[float]] = {"a": [], "b": []}
            for r in range(args.rounds):
                order = ("a", "b") if r % 2 == 0 else ("b", "a")
                for v in order:
                    src = args.a if v == "a" else args.b
                    took[v] += run(src, args.index_dir, queries, args.mode, args.top_k, Path(home))
            a, b = np.array(took["a"]), np.array(took["b"])
            pa, pb = np.percentile(a, [50, 95]), np.percentile(b, [50, 95])
            print(
                f"| {queries.parent.name}/{queries.name} | {len(a)} | {pa[0]:.2f} / {pa[1]:.2f} "
                f"| {pb[0]:.2f} / {pb[1]:.2f} | {pb[0] / pa[0]:.3f} |"
            )


if __name__ == "__main__":
    main()
