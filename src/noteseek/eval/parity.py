"""Ranking parity between two store backends: the same corpus indexed into each, the same
keyword queries, compared by top-10 document overlap and nDCG@10."""

from __future__ import annotations

import time
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from noteseek.engine import SearchRequest
from noteseek.eval.runner import eval_engine, ranked_documents, score_ranking

KEYWORD_ONLY = {"embedding.enabled": False, "search.time_limit": 600, "search.recency": "off"}


@dataclass(frozen=True)
class Parity:
    dataset: str
    queries: int
    ndcg: dict[str, float]
    overlap: float
    """Mean share of the first backend's top-10 documents that the second also returns."""
    worst_overlap: float
    index_seconds: dict[str, float]
    query_seconds: dict[str, float]
    """Mean seconds per keyword query, by backend."""

    @property
    def ndcg_difference(self) -> float:
        a, b = self.ndcg.values()
        return abs(a - b)

    def to_dict(self) -> dict[str, Any]:
        return {
            "dataset": self.dataset,
            "queries": self.queries,
            "ndcg@10": {k: round(v, 4) for k, v in self.ndcg.items()},
            "ndcg_difference": round(self.ndcg_difference, 4),
            "top10_overlap": round(self.overlap, 4),
            "worst_overlap": round(self.worst_overlap, 2),
            "index_seconds": {k: round(v, 1) for k, v in self.index_seconds.items()},
            "seconds_per_query": {k: round(v, 3) for k, v in self.query_seconds.items()},
        }


def keyword_parity(
    folder: Path, work: Path, backends: Mapping[str, Mapping[str, Any]], limit: int
) -> Parity:
    """Index ``folder`` (a BEIR or vault dataset) once per backend (``name -> flags``, e.g.
    ``{"milvus.uri": ...}``), keyword-only, and compare the first ``limit`` queries."""
    tops: dict[str, dict[str, list[str]]] = {}
    ndcg: dict[str, float] = {}
    seconds: dict[str, float] = {}
    per_query: dict[str, float] = {}
    for name, flags in backends.items():
        dataset, engine = eval_engine(folder, work / name, flags={**KEYWORD_ONLY, **flags})
        try:
            seconds[name] = engine.index().seconds
            runs: dict[str, list[str]] = {}
            started = time.perf_counter()
            for qid, text in list(dataset.queries.items())[:limit]:
                hits = engine.search(
                    SearchRequest(text, top_k=10, snippets=False, mode="keyword")
                ).hits
                runs[qid] = ranked_documents(hits, dataset)[:10]
            per_query[name] = (time.perf_counter() - started) / max(1, len(runs))
        finally:
            engine.close()
        tops[name] = runs
        scores = [score_ranking(r, dataset.qrels.get(q, {}))["ndcg@10"] for q, r in runs.items()]
        ndcg[name] = sum(scores) / max(1, len(scores))
    first, second = (tops[n] for n in backends)
    shares = [len(set(first[q]) & set(second[q])) / len(first[q]) for q in first if first[q]]
    return Parity(
        folder.name,
        len(first),
        ndcg,
        sum(shares) / max(1, len(shares)),
        min(shares, default=1.0),
        seconds,
        per_query,
    )
