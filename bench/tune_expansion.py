"""Query expansion from the concept vocabulary, offline, on the eval sets (issue 4, item 9).

    .venv/bin/python bench/tune_expansion.py --index-root /tmp/evalix \
        [--dataset NAME=FOLDER ...]

Uses the indexes ``noteseek eval --index <index-root>/<name>`` built (with vectors). For each
dataset the vocabulary is built once from the index (``search/concepts.py``: words in 2 to 5% of
sections, one per stem, at most 20,000, embedded like documents) and its build time printed.
Per query, the keyword lane runs again on the query plus its nearest vocabulary words, and the
variants are fused offline: the expanded keyword lane in place of the plain one, or as a third
RRF lane at a lower weight. Prints nDCG@10 with the paired permutation p-value against plain
hybrid RRF, and the added query time (the vocabulary search plus the second keyword query).
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path
from typing import Any

import numpy as np

from noteseek.eval.runner import eval_engine, paired_permutation_p
from noteseek.search import keyword
from noteseek.search.concepts import ConceptVocabulary, expand_query
from noteseek.search.fusion import rrf
from noteseek.search.query import parse_query, semantic_text
from noteseek.types import Filters
from tune_fusion import DATA, DEPTH, Lanes, score

SETTINGS = [(3, 0.75), (3, 0.8), (5, 0.75), (5, 0.8)]
"""(words added, least cosine)."""


def run(name: str, folder: Path, index_root: Path) -> dict[str, Any]:
    ds, engine = eval_engine(folder, index_root / name)
    if not engine.index_exists:
        raise SystemExit(f"{index_root / name}: run noteseek eval {folder} --index ... first")
    settings = engine.settings.search
    analyzer = engine.analyzer()
    vectors = engine.vector_index()
    started = time.perf_counter()
    vocab = ConceptVocabulary.build(
        engine.store.iter_chunk_texts(), analyzer, engine.embedder().embed_documents
    )
    print(
        f"{name}: vocabulary of {len(vocab)} words built in {time.perf_counter() - started:.1f} s",
        file=sys.stderr,
    )
    per_query: dict[str, dict[str, Lanes]] = {}
    extra_ms: list[float] = []
    examples: list[str] = []
    for qid, text in ds.queries.items():
        query = parse_query(text, analyzer)
        qvec = engine.embed_query(semantic_text(text))
        kw = keyword.retrieve(engine.store, query, Filters(), DEPTH, settings)
        base = {
            "keyword": [(r.rowid, r.blended) for r in kw.results],
            "semantic": vectors.search(qvec, DEPTH),
        }
        per_query[qid] = {"base": base}
        for n, cos in SETTINGS:
            t0 = time.perf_counter()
            words = [w for w, _ in vocab.nearest(qvec, n, cos, query.terms)]
            expanded = keyword.retrieve(
                engine.store, expand_query(query, words, analyzer), Filters(), DEPTH, settings
            )
            if (n, cos) == SETTINGS[0]:
                extra_ms.append((time.perf_counter() - t0) * 1000)
                if words and len(examples) < 5:
                    examples.append(f"{text[:60]!r} + {words}")
            per_query[qid][f"{n}@{cos}"] = {
                **base,
                "expanded": [(r.rowid, r.blended) for r in expanded.results],
            }
    for line in examples:
        print("  ", line, file=sys.stderr)
    rowids = {
        r
        for lanes in per_query.values()
        for lane in lanes.values()
        for x in lane.values()
        for r, _ in x
    }
    paths = {row.rowid: row.path for row in engine.store.chunk_rows(sorted(rowids))}
    engine.close()
    weights = {"keyword": 1.0, "semantic": 1.5}

    def fused(lanes: Lanes, w: dict[str, float]) -> list[int]:
        return [f.rowid for f in rrf(lanes, w, 10.0)]

    out: dict[str, Any] = {}
    base_lanes = {q: v["base"] for q, v in per_query.items()}
    out["rrf"] = score(ds, base_lanes, paths, lambda lanes: fused(lanes, weights))
    for n, cos in SETTINGS:
        key = f"{n}@{cos}"
        lanes_of = {q: v[key] for q, v in per_query.items()}
        replaced = {
            q: {"keyword": v["expanded"], "semantic": v["semantic"]} for q, v in lanes_of.items()
        }
        out[f"expanded keyword lane, {n} words, cos >= {cos}"] = score(
            ds, replaced, paths, lambda lanes: fused(lanes, weights)
        )
        for w in (0.3, 0.6):
            out[f"third lane w {w}, {n} words, cos >= {cos}"] = score(
                ds, lanes_of, paths, lambda lanes, w=w: fused(lanes, {**weights, "expanded": w})
            )
    out["_extra_ms"] = float(np.median(extra_ms)) if extra_ms else 0.0
    return out


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--index-root", type=Path, required=True)
    ap.add_argument("--dataset", action="append", default=None, help="name=folder")
    args = ap.parse_args()
    pairs = args.dataset or [
        f"hugo-docs-kis-bge-small-en={DATA / 'hugo-docs-kis'}",
        f"scifact-dev-bge-small-en={DATA / 'scifact-dev'}",
    ]
    results = {}
    for pair in pairs:
        name, _, folder = pair.partition("=")
        results[name] = run(name, Path(folder), args.index_root)
    names = list(results)
    print("| variant | " + " | ".join(f"{n} nDCG@10 (p vs rrf)" for n in names) + " |")
    print("|---|" + "---|" * len(names))
    for variant in results[names[0]]:
        if variant.startswith("_"):
            continue
        cells = []
        for n in names:
            r, base = results[n][variant], results[n]["rrf"]["per_query"]
            diffs = [r["per_query"][q] - base[q] for q in base]
            p = paired_permutation_p(diffs) if variant != "rrf" else 1.0
            cells.append(f"{r['ndcg@10']:.4f} ({p:.3f})")
        print(f"| {variant} | " + " | ".join(cells) + " |")
    print(
        "median added query time (ms): "
        + ", ".join(f"{n} {results[n]['_extra_ms']:.1f}" for n in names)
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
