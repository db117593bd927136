"""Hybrid query latency at about 50,000 chunks, query embedding included.

    .venv/bin/python bench/hybrid_latency.py [--chunks 50000] [--queries 300] [--dtype float32]

Indexes a random subset of windows-powershell-docs (keyword rows) until it holds about
``--chunks`` chunks, then stores a random unit vector under every chunk's embedding key for the
configured model, so the vector lane searches a full-size matrix without spending an hour
embedding (exact search costs the same whatever the vectors hold). Queries are real: each one
is embedded by the bundled model, searched in both lanes and fused. Prints p50/p95/p99 of the
whole call and of each stage. Target (issue 3): p50 <= 30 ms, p95 <= 60 ms. With
``--all-stages``, hybrid runs again with every stage on but re-ranking (score-aware fusion, the
graph lane, duplicates removed three ways, a per-document limit, MMR, query expansion; the
community boost is on by default).
Target (issue 4): p50 <= 50 ms.
"""

from __future__ import annotations

import argparse
import random
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import numpy as np

from noteseek.embed.onnx import MODELS
from noteseek.engine import Engine, SearchRequest, open_engine

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO / "bench"))
from index_scale import DEFAULT_TGZ, sample_queries, unpack  # noqa: E402


def store_random_vectors(engine: Engine) -> int:
    """A random unit vector under every chunk key without a vector of the configured model
    (exact search costs the same whatever the vectors hold); returns how many were stored."""
    store = engine.store
    model = engine.model_id
    rng = np.random.default_rng(0)
    pending = store.pending_embeddings(model)
    dim = MODELS[engine.settings.embedding.model].dimension
    for start in range(0, len(pending), 5000):
        part = pending[start : start + 5000]
        v = rng.normal(size=(len(part), dim)).astype(np.float32)
        v /= np.linalg.norm(v, axis=1, keepdims=True)
        store.put_vectors(model, [(k, row.tobytes()) for (k, _), row in zip(part, v, strict=True)])
    store.set_meta("embedding_model", model)
    return len(pending)


def pct(values: list[float], q: float) -> float:
    return float(np.percentile(values, q)) if values else 0.0


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--tgz", type=Path, default=DEFAULT_TGZ)
    ap.add_argument("--chunks", type=int, default=50_000)
    ap.add_argument("--queries", type=int, default=300)
    ap.add_argument("--dtype", default="float32", choices=["float32", "float16"])
    ap.add_argument("--hnsw-threshold", type=int, default=None)
    ap.add_argument(
        "--all-stages",
        action="store_true",
        help="then run hybrid again with every post-fusion stage on (ALL_STAGES)",
    )
    args = ap.parse_args()
    if not args.tgz.is_file():
        print(f"skip: {args.tgz} not found (the shared data folder is absent)")
        return 0
    with tempfile.TemporaryDirectory(prefix="noteseek-hybrid-") as tmp:
        tmpdir = Path(tmp)
        unpacked = tmpdir / "unpacked"
        unpack(args.tgz, unpacked)
        pages = sorted(unpacked.rglob("*.md"))
        random.Random(3).shuffle(pages)
        corpus = tmpdir / "corpus"
        flags = {
            "index.dir": str(tmpdir / "index"),
            "roots.docs.path": str(corpus),
            "vectors.dtype": args.dtype,
        }
        if args.hnsw_threshold is not None:
            flags["vectors.hnsw_threshold"] = args.hnsw_threshold
        engine = open_engine(tmpdir, flags=flags, environ={})
        taken = 0
        while engine.status()["chunks"] < args.chunks and taken < len(pages):
            for page in pages[taken : taken + 500]:
                target = corpus / page.relative_to(unpacked)
                target.parent.mkdir(parents=True, exist_ok=True)
                target.write_bytes(page.read_bytes())
            taken += 500
            engine.index(keyword_only=True)
        model = engine.model_id
        store_random_vectors(engine)
        status = engine.status()
        print(
            f"{status['files']} files, {status['chunks']} chunks, "
            f"{status['embedding']['embedded']} vectors ({args.dtype}), model {model}"
        )
        queries = sample_queries(corpus, args.queries)
        started = time.perf_counter()
        engine.search(SearchRequest("warm up the model and the matrix", mode="hybrid"))
        print(
            f"first query (loads model and {status['chunks']} vectors): "
            f"{(time.perf_counter() - started) * 1000:.0f} ms"
        )
        groups = engine.communities()
        print(
            f"link graph: {len(engine.link_graph().edges)} links, "
            f"{len(set(groups.values()))} communities over {len(groups)} documents"
        )
        hnsw = engine.vector_index().wait_for_hnsw()  # built in the background when above
        print(f"vector index: {'HNSW' if hnsw else 'exact'}")
        for mode in ("keyword", "semantic", "hybrid"):
            measure(engine, queries, mode, mode)
        engine.close()
        if args.all_stages:
            engine = open_engine(tmpdir, flags={**flags, **ALL_STAGES}, environ={})
            started = time.perf_counter()
            vocabulary = engine.concept_vocabulary()
            print(
                f"concept vocabulary: {len(vocabulary or ())} words in "
                f"{time.perf_counter() - started:.1f} s"
            )
            engine.search(SearchRequest("warm up", mode="hybrid"))
            measure(engine, queries, "hybrid", "all stages")
            engine.close()
    return 0


ALL_STAGES = {
    "search.fusion": "score-aware",
    "search.graph_weight": 0.1,
    "search.dedupe": True,
    "search.near_duplicate": 0.85,
    "search.semantic_duplicate": 0.95,
    "search.max_per_document": 3,
    "search.mmr_lambda": 0.9,
    "search.expansion_terms": 3,
}
"""Every post-fusion stage on (the community boost is on by default), re-ranking excluded."""


def measure(engine: Any, queries: list[str], mode: str, label: str) -> None:
    total: list[float] = []
    stages: dict[str, list[float]] = {}
    for q in queries:
        t = time.perf_counter()
        res = engine.search(SearchRequest(q, top_k=10, mode=mode))
        total.append((time.perf_counter() - t) * 1000)
        for key, value in res.timings_ms.items():
            stages.setdefault(key, []).append(value)
    parts = ", ".join(f"{k} p50 {pct(v, 50):.1f}" for k, v in stages.items())
    print(
        f"{label:10s} {len(total)} queries: p50 {pct(total, 50):.1f} ms, "
        f"p95 {pct(total, 95):.1f} ms, p99 {pct(total, 99):.1f} ms  ({parts})"
    )


if __name__ == "__main__":
    sys.exit(main())
