"""Run a dataset's queries through an engine and score the rankings."""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from noteseek.engine import Engine
from noteseek.eval.datasets import Dataset
from noteseek.eval.metrics import mrr_at_k, ndcg_at_k, percentile, recall_at_k
from noteseek.types import Hit

Search = Callable[[str, int], list[Hit]]


@dataclass
class EvalResult:
    queries: int
    ndcg10: float
    recall10: float
    recall100: float
    mrr10: float
    p50_ms: float
    p95_ms: float
    per_query: dict[str, dict[str, float]] = field(default_factory=dict)

    def to_dict(self) -> dict[str, Any]:
        return {
            "ndcg@10": round(self.ndcg10, 4),
            "recall@10": round(self.recall10, 4),
            "recall@100": round(self.recall100, 4),
            "mrr@10": round(self.mrr10, 4),
            "p50_ms": round(self.p50_ms, 2),
            "p95_ms": round(self.p95_ms, 2),
        }


def ranked_documents(hits: list[Hit], dataset: Dataset) -> list[str]:
    """Document ids in order of their best chunk (a document counts once)."""
    seen: dict[str, None] = {}
    for hit in hits:
        seen.setdefault(dataset.doc_id_of(hit.path), None)
    return list(seen)


def evaluate(engine: Engine, dataset: Dataset, search: Search | None = None) -> EvalResult:
    """Score every query; ``search(text, k)`` defaults to the engine's keyword search."""

    def default_search(text: str, k: int) -> list[Hit]:
        return engine.search(text, top_k=k, snippets=False).hits

    run = search or default_search
    per_query: dict[str, dict[str, float]] = {}
    latencies: list[float] = []
    for qid, text in dataset.queries.items():
        started = time.perf_counter()
        hits = run(text, 300)
        latencies.append((time.perf_counter() - started) * 1000)
        ranked = ranked_documents(hits, dataset)
        judged = dataset.qrels.get(qid, {})
        per_query[qid] = {
            "ndcg@10": ndcg_at_k(ranked, judged, 10),
            "recall@10": recall_at_k(ranked, judged, 10),
            "recall@100": recall_at_k(ranked, judged, 100),
            "mrr@10": mrr_at_k(ranked, judged, 10),
        }
    n = max(1, len(per_query))

    def mean(key: str) -> float:
        return sum(m[key] for m in per_query.values()) / n

    return EvalResult(
        len(per_query),
        mean("ndcg@10"),
        mean("recall@10"),
        mean("recall@100"),
        mean("mrr@10"),
        percentile(latencies, 50),
        percentile(latencies, 95),
        per_query,
    )
