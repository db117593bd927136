"""Distinct vectors of an embedded index: how many, and what holding each once does to exact
search and to the HNSW graph's recall.

    .venv/bin/python bench/ann_distinct.py --index-dir DIR --corpus FOLDER [--queries 200]

Reads the matrix the writer saved beside the index (``vectors-<model>.json``: run ``noteseek
index`` first; it is saved from 20,000 vectors), expands it to one row per chunk as the index
held it before the distinct-vector change, embeds ``--queries`` real queries of the corpus
with the index's model (``bench/side_by_side.py: powershell_queries``), and prints, for one
row per chunk and for distinct vectors: rows, exact top-10 latency, and the recall@10 of an
HNSW graph (connectivity 16, expansion 128 on insert, 256 on search, as ``store/hnsw.py``
builds it) against exact search. Recall counts a graph result as right when its score reaches
the tenth exact score (chunks sharing a vector tie, so rowids alone would miscount).
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))
from noteseek.engine import open_engine
from noteseek.store.exact import exact_top
from noteseek.store.hnsw import build_hnsw
from side_by_side import powershell_queries


def measure(label: str, matrix: np.ndarray, queries: np.ndarray) -> None:
    ids = np.arange(matrix.shape[0], dtype=np.int64)
    started = time.perf_counter()
    graph = build_hnsw(ids, matrix, matrix.shape[1])
    built = time.perf_counter() - started
    recall, exact_ms = [], []
    for q in queries:
        t = time.perf_counter()
        truth = exact_top(matrix, q, 10)
        exact_ms.append((time.perf_counter() - t) * 1000)
        tenth = truth[-1][1] - 1e-5
        found = graph.search(q, 10)
        recall.append(sum(1 for d in found.distances if 1.0 - float(d) >= tenth) / 10)
    print(
        f"| {label} | {matrix.shape[0]:,} | {matrix.nbytes / 2**20:.0f} | "
        f"{np.percentile(exact_ms, 50):.2f} / {np.percentile(exact_ms, 95):.2f} | "
        f"{built:.1f} | {np.mean(recall):.4f} |",
        flush=True,
    )


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--index-dir", type=Path, required=True)
    ap.add_argument("--corpus", type=Path, required=True, help="the indexed PowerShell docs")
    ap.add_argument("--queries", type=int, default=200)
    args = ap.parse_args()
    sidecars = sorted(args.index_dir.glob("vectors-*.json"))
    if not sidecars:
        print(f"skip: no saved vectors in {args.index_dir} (run noteseek index first)")
        return 0
    meta = json.loads(sidecars[0].read_text(encoding="utf-8"))
    count, distinct = int(meta["count"]), int(meta["distinct"])
    keys = np.load(args.index_dir / meta["files"]["keys"])
    rows = keys[2 * count : 3 * count]
    matrix = np.ascontiguousarray(np.load(args.index_dir / meta["files"]["matrix"]))
    engine = open_engine(args.index_dir, flags={"index.dir": str(args.index_dir)}, environ={})
    texts = powershell_queries(args.corpus, args.queries)
    queries = np.stack([engine.embed_query(t) for t in texts]).astype(np.float32)
    engine.close()
    print(f"{count:,} chunks, {distinct:,} distinct vectors, {len(texts)} queries\n")
    print("| rows | count | matrix MB | exact top 10 p50 / p95 ms | graph build s | recall@10 |")
    print("|---|---|---|---|---|---|")
    measure("one per chunk", np.ascontiguousarray(matrix[rows]), queries)
    measure("distinct vectors", matrix, queries)
    return 0


if __name__ == "__main__":
    sys.exit(main())
