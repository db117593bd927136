"""Query latency of each ranking stage on the eval sets, interleaved so noise hits all alike.

    .venv/bin/python bench/stage_latency.py --index-root /tmp/evalix \
        [--dataset NAME=FOLDER ...] [--queries 200]

For each dataset (indexed with vectors by ``noteseek eval --index <index-root>/<name>``), one
engine per configuration is opened over the same index; every query then runs once in each
configuration in turn (top 10 results, hybrid mode, snippets on, as a user's search), so
other work on the machine slows every configuration equally. Prints p50 and p95 per
configuration and dataset: the p50 column of the ablation table in docs/evaluation.md.
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path
from typing import Any

import numpy as np

from noteseek.engine import SearchRequest
from noteseek.eval.runner import eval_engine
from tune_fusion import DATA

PLAIN = {"search.community_boost": 1.0}
CONFIGS: dict[str, dict[str, Any]] = {
    "plain hybrid": PLAIN,
    "+ community boost (default)": {},
    "+ score-aware fusion": {**PLAIN, "search.fusion": "score-aware"},
    "+ dedupe": {**PLAIN, "search.dedupe": True},
    "+ near-duplicates 0.85": {**PLAIN, "search.near_duplicate": 0.85},
    "+ semantic duplicates 0.95": {**PLAIN, "search.semantic_duplicate": 0.95},
    "+ MMR 0.9": {**PLAIN, "search.mmr_lambda": 0.9},
    "+ graph lane, neighbours, w 0.1": {**PLAIN, "search.graph_weight": 0.1},
    "+ graph lane, PageRank, w 0.1": {
        **PLAIN,
        "search.graph_weight": 0.1,
        "search.graph_method": "ppr",
    },
    "+ query expansion 3": {**PLAIN, "search.expansion_terms": 3},
    "every stage but re-ranking": {
        "search.fusion": "score-aware",
        "search.graph_weight": 0.1,
        "search.dedupe": True,
        "search.near_duplicate": 0.85,
        "search.semantic_duplicate": 0.95,
        "search.mmr_lambda": 0.9,
        "search.expansion_terms": 3,
        "search.max_per_document": 3,
    },
}


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--index-root", type=Path, required=True)
    ap.add_argument("--dataset", action="append", default=None, help="name=folder")
    ap.add_argument("--queries", type=int, default=200)
    args = ap.parse_args()
    pairs = args.dataset or [
        f"hugo-docs-kis-bge-small-en={DATA / 'hugo-docs-kis'}",
        f"scifact-dev-bge-small-en={DATA / 'scifact-dev'}",
    ]
    table: dict[str, dict[str, tuple[float, float]]] = {name: {} for name in CONFIGS}
    names = []
    for pair in pairs:
        name, _, folder = pair.partition("=")
        names.append(name)
        engines = {}
        for label, flags in CONFIGS.items():
            ds, engine = eval_engine(Path(folder), args.index_root / name, flags=flags)
            if not engine.index_exists:
                raise SystemExit(f"{args.index_root / name}: run noteseek eval first")
            if engine.settings.search.expansion_terms:
                engine.concept_vocabulary()
            engine.search(SearchRequest("warm up", top_k=10, mode="hybrid"))
            engines[label] = engine
        times: dict[str, list[float]] = {label: [] for label in CONFIGS}
        for text in list(ds.queries.values())[: args.queries]:
            for label, engine in engines.items():
                started = time.perf_counter()
                engine.search(SearchRequest(text, top_k=10, mode="hybrid"))
                times[label].append((time.perf_counter() - started) * 1000)
        for label, engine in engines.items():
            engine.close()
            values = times[label]
            table[label][name] = (
                float(np.percentile(values, 50)),
                float(np.percentile(values, 95)),
            )
    print("| configuration | " + " | ".join(f"{n} p50 / p95 ms" for n in names) + " |")
    print("|---|" + "---|" * len(names))
    for label, row in table.items():
        cells = [f"{row[n][0]:.1f} / {row[n][1]:.1f}" for n in names]
        print(f"| {label} | " + " | ".join(cells) + " |")
    return 0


if __name__ == "__main__":
    sys.exit(main())
