"""Score-aware fusion against plain RRF, offline, on the eval sets (issue 4, item 4).

    .venv/bin/python bench/tune_fusion.py --index-root /tmp/evalix \
        [--dataset hugo-docs-kis=../shared/data/hugo-docs-kis ...]

For each dataset (indexed with vectors by ``noteseek eval --index <index-root>/<name>``, reused),
every query runs once per lane with 300 candidates, keeping each lane's raw scores (the keyword
lane's blended BM25, the semantic lane's cosine). Fusion variants are then computed offline:

* ``rrf``: weighted Reciprocal Rank Fusion, the shipped default (k 10, weights 1 : 1.5);
* ``convex-minmax a``: a * keyword + (1 - a) * semantic, each lane's scores min-max normalised
  over its own list (a result missing from a lane gets 0 there);
* ``convex-z a``: the same with z-scores (mean and deviation of the lane's list), missing = the
  lane's lowest z;
* ``rrf-conf z0``: RRF whose lane weights are multiplied by min(1, z1 / z0), where z1 is how
  many deviations the lane's best score stands above its list's mean; a flat lane (nothing
  stands out) counts less.

``rrf + graph`` adds a third, document-level lane to ``rrf``: the link-graph neighbours (both
directions, depth 1) of the top ``seeds`` documents, each scored 0.5 x the seed's reciprocal
rank, fused by RRF with weight ``w``. Prints nDCG@10 per variant and dataset with the paired
permutation p-value against ``rrf``.
"""

from __future__ import annotations

import argparse
import re
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np

from noteseek.eval.datasets import Dataset
from noteseek.eval.runner import eval_engine, paired_permutation_p, score_ranking
from noteseek.graph.communities import communities
from noteseek.graph.ppr import WalkGraph
from noteseek.search import keyword
from noteseek.search.fusion import rrf, score_aware_weights
from noteseek.search.query import parse_query, semantic_text
from noteseek.types import Filters

DATA = Path(__file__).resolve().parent.parent.parent / "shared" / "data"
DEPTH = 300
SHIPPED = {"keyword": 1.0, "semantic": 1.5}
"""The shipped lane weights."""
Lanes = dict[str, list[tuple[int, float]]]


Neighbours = dict[str, set[str]]
COMMUNITIES: dict[str, dict[str, int]] = {}
GRAPHS: dict[str, WalkGraph] = {}


def collect(
    name: str, folder: Path, index_root: Path
) -> tuple[Dataset, dict[str, Lanes], dict[int, str], Neighbours]:
    index_dir = index_root / name
    ds, engine = eval_engine(folder, index_dir)
    if not engine.index_exists:
        raise SystemExit(f"{index_dir}: run noteseek eval {folder} --index {index_dir} first")
    settings = engine.settings.search
    analyzer = engine.analyzer()
    vectors = engine.vector_index()
    per_query: dict[str, Lanes] = {}
    for qid, text in ds.queries.items():
        query = parse_query(text, analyzer)
        kw = keyword.retrieve(engine.store, query, Filters(), DEPTH, settings)
        sem = vectors.search(engine.embed_query(semantic_text(text)), DEPTH)
        per_query[qid] = {"keyword": [(r.rowid, r.blended) for r in kw.results], "semantic": sem}
    rowids = {r for lanes in per_query.values() for lane in lanes.values() for r, _ in lane}
    paths = {row.rowid: row.path for row in engine.store.chunk_rows(sorted(rowids))}
    graph = engine.link_graph()
    neighbours = {
        doc.path: {graph.docs[n].path for n in graph.neighbours(doc_id)}
        for doc_id, doc in graph.docs.items()
    }
    COMMUNITIES[name] = {graph.docs[d].path: c for d, c in communities(graph).items()}
    GRAPHS[name] = WalkGraph.build(
        (graph.docs[e.source].path, graph.docs[e.target].path)
        for e in graph.edges
        if e.resolved and e.source in graph.docs and e.target in graph.docs
    )
    engine.close()
    return ds, per_query, paths, neighbours


def normalised(lane: list[tuple[int, float]], how: str) -> tuple[dict[int, float], float]:
    """Per-rowid normalised scores and the value a missing result gets."""
    if not lane:
        return {}, 0.0
    s = np.array([x for _, x in lane], dtype=np.float64)
    if how == "minmax":
        lo, hi = s.min(), s.max()
        n = (s - lo) / (hi - lo) if hi > lo else np.ones_like(s)
        return {r: float(v) for (r, _), v in zip(lane, n, strict=True)}, 0.0
    mu, sd = s.mean(), s.std() or 1.0
    z = (s - mu) / sd
    return {r: float(v) for (r, _), v in zip(lane, z, strict=True)}, float(z.min())


def convex(lanes: Lanes, a: float, how: str) -> list[int]:
    kw, kw_missing = normalised(lanes["keyword"], how)
    sem, sem_missing = normalised(lanes["semantic"], how)
    ids = set(kw) | set(sem)
    scored = {r: a * kw.get(r, kw_missing) + (1 - a) * sem.get(r, sem_missing) for r in ids}
    return sorted(scored, key=lambda r: -scored[r])


def rrf_conf(lanes: Lanes, z0: float, k: float = 10.0) -> list[int]:
    """RRF; with ``z0`` > 0, the score-aware weights the engine uses (search/fusion.py)."""
    weights = {"keyword": 1.0, "semantic": 1.5}
    if z0 > 0:
        weights = score_aware_weights(lanes, weights, z0)
    return [f.rowid for f in rrf(lanes, weights, k)]


def with_graph(docs: list[str], neighbours: Neighbours, seeds: int, weight: float) -> list[str]:
    """Add a graph lane: neighbours of the top ``seeds`` documents, scored 0.5 x the seed's
    reciprocal rank, fused with the document ranking by RRF (k 10, graph weight ``weight``)."""
    if weight <= 0:
        return docs
    graph: dict[str, float] = {}
    for rank, doc in enumerate(docs[:seeds], start=1):
        for n in neighbours.get(doc, ()):
            graph[n] = graph.get(n, 0.0) + 0.5 / rank
    return fuse_documents(docs, sorted(graph, key=lambda d: -graph[d]), weight)


def fuse_documents(docs: list[str], lane: list[str], weight: float) -> list[str]:
    """RRF (k 10) of the document ranking (weight 1) and a graph lane (weight ``weight``)."""
    fused: dict[str, float] = {}
    for rank, doc in enumerate(docs, start=1):
        fused[doc] = fused.get(doc, 0.0) + 1.0 / (10 + rank)
    for rank, doc in enumerate(lane, start=1):
        fused[doc] = fused.get(doc, 0.0) + weight / (10 + rank)
    return sorted(fused, key=lambda d: -fused[d])


def ppr_lane(docs: list[str], graph: WalkGraph, seeds: int, weight: float) -> list[str]:
    """Add a personalised-PageRank lane: walks restarting at the top ``seeds`` documents
    (restart mass 1/rank) over the undirected link graph, alpha 0.85; the 100 most visited
    documents fused with the document ranking by RRF (k 10, weight ``weight``)."""
    start = {d: 1.0 / r for r, d in enumerate(docs[:seeds], start=1)}
    pr = graph.personalised(start) if weight > 0 else {}
    if not pr:
        return docs
    return fuse_documents(docs, sorted(pr, key=lambda d: -pr[d])[:100], weight)


_IDENT_RE = re.compile(r"[a-z][A-Z]|\w_\w|\w\.\w|::|\w\(\)|--\w|`")


def query_type(text: str) -> str:
    """identifier (camelCase, snake_case, dotted, code), quoted (a "phrase"), short (at most
    3 words), or question (everything else)."""
    if '"' in text:
        return "quoted"
    if _IDENT_RE.search(text):
        return "identifier"
    if len(text.split()) <= 3:
        return "short"
    return "question"


def by_query_type(
    ds: Dataset,
    per_query: dict[str, Lanes],
    paths: dict[int, str],
    weights_for: dict[str, dict[str, float]],
) -> dict[str, list[str]]:
    """Per query: RRF with the lane weights of its type (the shipped ones when not given)."""
    return with_weights(
        per_query, paths, lambda qid: weights_for.get(query_type(ds.queries[qid]), SHIPPED)
    )


def with_weights(
    per_query: dict[str, Lanes],
    paths: dict[int, str],
    weights_of: Callable[[str], dict[str, float]],
) -> dict[str, list[str]]:
    """Per query: documents in the order of RRF with the weights ``weights_of(qid)``."""
    out: dict[str, list[str]] = {}
    for qid, lanes in per_query.items():
        seen: dict[str, None] = {}
        for item in rrf(lanes, weights_of(qid), 10.0):
            seen.setdefault(paths[item.rowid], None)
        out[qid] = list(seen)
    return out


def community_boost(
    per_query: dict[str, Lanes],
    paths: dict[int, str],
    comm: dict[str, int],
    seeds: int,
    boost: float,
) -> dict[str, list[str]]:
    """Per query: documents by best fused chunk, those sharing a community with the top
    ``seeds`` documents multiplied by ``boost``."""
    out: dict[str, list[str]] = {}
    for qid, lanes in per_query.items():
        best: dict[str, float] = {}
        for item in rrf(lanes, {"keyword": 1.0, "semantic": 1.5}, 10.0):
            best.setdefault(paths[item.rowid], item.fused)
        docs = list(best)
        top = {comm[d] for d in docs[:seeds] if d in comm}
        scored = {d: v * (boost if comm.get(d) in top else 1.0) for d, v in best.items()}
        out[qid] = sorted(docs, key=lambda d: -scored[d])
    return out


def by_query_length(
    ds: Dataset,
    per_query: dict[str, Lanes],
    paths: dict[int, str],
    cutoff: int,
    short: dict[str, float],
) -> dict[str, list[str]]:
    """Per query: RRF with ``short`` lane weights for queries of at most ``cutoff`` words,
    the shipped weights otherwise."""
    return with_weights(
        per_query,
        paths,
        lambda qid: short if len(ds.queries[qid].split()) <= cutoff else SHIPPED,
    )


def score(
    ds: Dataset,
    per_query: dict[str, Lanes],
    paths: dict[int, str],
    fuse: Callable[[Lanes], list[int]],
    neighbours: Neighbours | None = None,
    seeds: int = 0,
    weight: float = 0.0,
    ranked_docs: dict[str, list[str]] | None = None,
    rerank_docs: Callable[[list[str]], list[str]] | None = None,
) -> dict[str, Any]:
    per: dict[str, float] = {}
    totals = {"ndcg@10": 0.0, "recall@10": 0.0, "mrr@10": 0.0}
    for qid, lanes in per_query.items():
        if ranked_docs is not None:
            ranked = ranked_docs[qid]
        else:
            seen: dict[str, None] = {}
            for rowid in fuse(lanes):
                seen.setdefault(paths[rowid], None)
            ranked = with_graph(list(seen), neighbours or {}, seeds, weight)
            if rerank_docs is not None:
                ranked = rerank_docs(ranked)
        m = score_ranking([ds.doc_id_of(p) for p in ranked], ds.qrels.get(qid, {}))
        per[qid] = m["ndcg@10"]
        for key in totals:
            totals[key] += m[key]
    n = max(1, len(per_query))
    return {**{k: v / n for k, v in totals.items()}, "per_query": per}


def variants() -> dict[str, Callable[[Lanes], list[int]]]:
    out: dict[str, Callable[[Lanes], list[int]]] = {"rrf": lambda lanes: rrf_conf(lanes, 0.0)}
    for a in (0.3, 0.4, 0.5, 0.6):
        out[f"convex-minmax {a}"] = lambda lanes, a=a: convex(lanes, a, "minmax")
        out[f"convex-z {a}"] = lambda lanes, a=a: convex(lanes, a, "z")
    for z0 in (2.0, 3.0, 4.0):
        out[f"rrf-conf {z0}"] = lambda lanes, z0=z0: rrf_conf(lanes, z0)
    return out


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--index-root", type=Path, required=True)
    ap.add_argument(
        "--dataset",
        action="append",
        default=None,
        help="name=folder (default: hugo-docs-kis and scifact-dev from the shared data)",
    )
    args = ap.parse_args()
    pairs = args.dataset or [
        f"hugo-docs-kis-bge-small-en={DATA / 'hugo-docs-kis'}",
        f"scifact-dev-bge-small-en={DATA / 'scifact-dev'}",
    ]
    results: dict[str, dict[str, Any]] = {}
    for pair in pairs:
        name, _, folder = pair.partition("=")
        ds, per_query, paths, neighbours = collect(name, Path(folder), args.index_root)
        results[name] = {v: score(ds, per_query, paths, f) for v, f in variants().items()}
        base = variants()["rrf"]
        for cutoff in (5, 8, 12):
            for short in ({"keyword": 1.5, "semantic": 1.0}, {"keyword": 1.0, "semantic": 1.0}):
                ranked = by_query_length(ds, per_query, paths, cutoff, short)
                label = f"{short['keyword']:g}:{short['semantic']:g}"
                results[name][f"rrf, queries <= {cutoff} words at {label}"] = score(
                    ds, per_query, paths, base, ranked_docs=ranked
                )
        for seeds in (1, 3):
            for boost in (1.05, 1.1, 1.2):
                ranked = community_boost(per_query, paths, COMMUNITIES[name], seeds, boost)
                results[name][f"rrf + community seeds {seeds} x{boost}"] = score(
                    ds, per_query, paths, base, ranked_docs=ranked
                )
        for seeds in (3, 5, 10):
            for weight in (0.1, 0.25, 0.5):
                results[name][f"rrf + graph seeds {seeds} w {weight}"] = score(
                    ds, per_query, paths, base, neighbours, seeds, weight
                )
        for seeds in (3, 5):
            for weight in (0.1, 0.25, 0.5):
                results[name][f"rrf + ppr seeds {seeds} w {weight}"] = score(
                    ds,
                    per_query,
                    paths,
                    base,
                    rerank_docs=lambda d, s=seeds, w=weight, n=name: ppr_lane(d, GRAPHS[n], s, w),
                )
        types = [query_type(q) for q in ds.queries.values()]
        print(name, {t: types.count(t) for t in sorted(set(types))}, file=sys.stderr)
        heavy = {"keyword": 1.5, "semantic": 1.0}
        even = {"keyword": 1.0, "semantic": 1.0}
        for label, table in (
            ("identifier+quoted 1.5:1", {"identifier": heavy, "quoted": heavy}),
            ("identifier+quoted 1:1", {"identifier": even, "quoted": even}),
            ("short 1.5:1", {"short": heavy}),
            ("ident+quoted+short 1.5:1", {"identifier": heavy, "quoted": heavy, "short": heavy}),
        ):
            ranked = by_query_type(ds, per_query, paths, table)
            results[name][f"rrf, by query type: {label}"] = score(
                ds, per_query, paths, base, ranked_docs=ranked
            )
    names = list(results)
    print("| variant | " + " | ".join(f"{n} nDCG@10 (p vs rrf)" for n in names) + " | mean |")
    print("|---|" + "---|" * (len(names) + 1))
    for variant in results[names[0]]:
        cells = []
        for n in names:
            r = results[n][variant]
            base = results[n]["rrf"]["per_query"]
            diffs = [r["per_query"][q] - base[q] for q in base]
            p = paired_permutation_p(diffs) if variant != "rrf" else 1.0
            cells.append(f"{r['ndcg@10']:.4f} ({p:.3f})")
        mean = sum(results[n][variant]["ndcg@10"] for n in names) / len(names)
        print(f"| {variant} | " + " | ".join(cells) + f" | {mean:.4f} |")
    return 0


if __name__ == "__main__":
    sys.exit(main())
