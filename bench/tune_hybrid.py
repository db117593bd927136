"""Choose the hybrid fusion defaults (RRF k, lane weights, candidates) on the dev sets.

    .venv/bin/python bench/tune_hybrid.py --index-root /tmp/noteseek-eval \
        [--datasets hugo-docs-kis scifact-dev] [--model bge-small-en]

Each dataset is indexed (with vectors) by ``noteseek eval --index <index-root>/<dataset>-<model>``
semantics: the folder is reused when it exists. Every query runs once per lane (keyword,
semantic) with deep candidate lists; fusion variants are then computed offline from those
lists, so the grid costs no extra searches. Prints nDCG@10 / Recall@10 / MRR@10 per variant.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path
from typing import Any

from noteseek.engine import SearchRequest
from noteseek.eval.datasets import Dataset
from noteseek.eval.runner import eval_engine, score_ranking
from noteseek.search.fusion import rrf

DATA = Path(__file__).resolve().parent.parent.parent / "shared" / "data"
DEPTH = 300


def lanes_for(folder: Path, index_root: Path, model: str) -> tuple[Dataset, dict[str, Any]]:
    index_dir = index_root / f"{folder.name}-{model}"
    ds, engine = eval_engine(folder, index_dir, flags={"embedding.model": model})
    engine.index()  # builds (or brings up to date) the index and its vectors
    lanes: dict[str, Any] = {}
    for qid, text in ds.queries.items():
        per: dict[str, list[tuple[str, str]]] = {}
        for mode in ("keyword", "semantic"):
            hits = engine.search(SearchRequest(text, top_k=DEPTH, mode=mode, snippets=False)).hits
            per[mode] = [(h.chunk_id, h.path) for h in hits]
        lanes[qid] = per
    engine.close()
    return ds, lanes


def fuse_and_score(
    ds: Dataset, lanes: dict[str, Any], k: float, w_kw: float, w_sem: float, depth: int
) -> dict[str, float]:
    totals = {"ndcg@10": 0.0, "recall@10": 0.0, "mrr@10": 0.0}
    for qid, per in lanes.items():
        ids: dict[str, int] = {}
        paths: dict[int, str] = {}
        ranked_lanes: dict[str, list[tuple[int, float]]] = {}
        for lane, items in per.items():
            weight = w_kw if lane == "keyword" else w_sem
            if weight == 0:
                continue
            seq = []
            for chunk_id, path in items[:depth]:
                rowid = ids.setdefault(chunk_id, len(ids))
                paths[rowid] = path
                seq.append((rowid, 0.0))
            ranked_lanes[lane] = seq
        fused = rrf(ranked_lanes, {"keyword": w_kw, "semantic": w_sem}, k)
        docs: dict[str, None] = {}
        for f in fused:
            docs.setdefault(ds.doc_id_of(paths[f.rowid]), None)
        scores = score_ranking(list(docs), ds.qrels.get(qid, {}))
        for key in totals:
            totals[key] += scores[key]
    n = max(1, len(lanes))
    return {key: value / n for key, value in totals.items()}


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--datasets", nargs="+", default=["hugo-docs-kis", "scifact-dev"])
    ap.add_argument("--model", default="bge-small-en")
    ap.add_argument("--index-root", type=Path, required=True)
    args = ap.parse_args()
    for name in args.datasets:
        folder = DATA / name
        if not folder.is_dir():
            print(f"skip {name}: {folder} is absent")
            continue
        ds, lanes = lanes_for(folder, args.index_root, args.model)
        print(f"\n## {name}, {args.model} ({len(lanes)} queries)\n")
        print("| variant | nDCG@10 | R@10 | MRR@10 |")
        print("|---|---|---|---|")
        for label, w_kw, w_sem in (("keyword only", 1, 0), ("semantic only", 0, 1)):
            m = fuse_and_score(ds, lanes, 60, w_kw, w_sem, DEPTH)
            print(f"| {label} | {m['ndcg@10']:.4f} | {m['recall@10']:.4f} | {m['mrr@10']:.4f} |")
        for depth in (50, DEPTH):
            for k in (5, 10, 20, 40, 60, 100):
                for w_sem in (0.75, 1.0, 1.25, 1.5, 2.0, 3.0):
                    m = fuse_and_score(ds, lanes, k, 1.0, w_sem, depth)
                    print(
                        f"| candidates {depth}, k {k}, keyword 1, semantic {w_sem} | "
                        f"{m['ndcg@10']:.4f} | {m['recall@10']:.4f} | {m['mrr@10']:.4f} |",
                        flush=True,
                    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
