"""Exact vs HNSW vector search: latency, build time and recall@10, to set hnsw_threshold.

    .venv/bin/python bench/vector_search.py [--sizes 10000 25000 50000 100000 200000]
        [--real INDEX_DB]

Synthetic part: unit vectors (384 dimensions) drawn around 200 random centres, like chunks of
documents on a few hundred topics; queries are fresh draws around the same centres. For each
size it times exact search (float32 and float16 matrices) and usearch HNSW (build time, query
time) and reports HNSW recall@10 against exact search. ``--real`` adds the same measurements
on the vectors of an existing index (for example one built by ``noteseek eval --index``),
with held-out vectors of that index as queries.
"""

from __future__ import annotations

import argparse
import sqlite3
import sys
import time
from pathlib import Path

import numpy as np

from noteseek.store.exact import exact_top
from noteseek.store.hnsw import build_hnsw

DIM = 384


def clustered(n: int, rng: np.random.Generator, centres: np.ndarray) -> np.ndarray:
    picks = centres[rng.integers(0, len(centres), size=n)]
    v = picks + rng.normal(scale=0.6 / np.sqrt(DIM), size=(n, DIM))
    v = v.astype(np.float32)
    return v / np.linalg.norm(v, axis=1, keepdims=True)


def top_rows(matrix: np.ndarray, q: np.ndarray, k: int) -> list[int]:
    return [row for row, _ in exact_top(matrix, q, k)]


def measure(label: str, matrix: np.ndarray, queries: np.ndarray, k: int = 10) -> None:
    n = matrix.shape[0]
    ids = np.arange(n, dtype=np.int64)
    truth = []
    times = []
    for q in queries:
        t = time.perf_counter()
        truth.append(set(top_rows(matrix, q, k)))
        times.append((time.perf_counter() - t) * 1000)
    half = matrix.astype(np.float16)
    times16 = []
    for q in queries:
        t = time.perf_counter()
        top_rows(half, q, k)
        times16.append((time.perf_counter() - t) * 1000)
    t = time.perf_counter()
    index = build_hnsw(ids, matrix, DIM)
    build = time.perf_counter() - t
    htimes = []
    found = 0
    for q, expected in zip(queries, truth, strict=True):
        t = time.perf_counter()
        got = index.search(q, k)
        htimes.append((time.perf_counter() - t) * 1000)
        found += len(set(int(x) for x in got.keys) & expected)
    recall = found / (k * len(queries))
    print(
        f"| {label} | {n:,} | {np.percentile(times, 50):.2f} / {np.percentile(times, 95):.2f} | "
        f"{np.percentile(times16, 50):.2f} | {build:.1f} | "
        f"{np.percentile(htimes, 50):.3f} / {np.percentile(htimes, 95):.3f} | {recall:.4f} |",
        flush=True,
    )


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--sizes", type=int, nargs="+", default=[10_000, 25_000, 50_000, 100_000])
    ap.add_argument("--queries", type=int, default=200)
    ap.add_argument("--real", type=Path, default=None)
    args = ap.parse_args()
    print(
        "| data | vectors | exact f32 p50 / p95 ms | exact f16 p50 ms | HNSW build s | "
        "HNSW p50 / p95 ms | HNSW recall@10 |"
    )
    print("|---|---|---|---|---|---|---|")
    rng = np.random.default_rng(1)
    centres = rng.normal(size=(200, DIM))
    centres /= np.linalg.norm(centres, axis=1, keepdims=True)
    for n in args.sizes:
        measure(
            "clustered synthetic", clustered(n, rng, centres), clustered(args.queries, rng, centres)
        )
    if args.real is not None:
        conn = sqlite3.connect(f"file:{args.real}?mode=ro", uri=True)
        blobs = [r[0] for r in conn.execute("SELECT vector FROM vectors")]
        matrix = np.frombuffer(b"".join(blobs), dtype=np.float32).reshape(len(blobs), -1)
        order = np.random.default_rng(2).permutation(len(matrix))
        held = order[: args.queries]
        rest = order[args.queries :]
        measure(f"real ({args.real.parent.name})", matrix[rest].copy(), matrix[held])
    return 0


if __name__ == "__main__":
    sys.exit(main())
