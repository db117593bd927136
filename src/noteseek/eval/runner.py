"""Run a dataset's queries through an engine, per search mode, and score the rankings."""

from __future__ import annotations

import time
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from noteseek.engine import Engine, SearchRequest, open_engine
from noteseek.eval.coverage import partial_index
from noteseek.eval.datasets import Dataset, load_dataset, materialise_corpus
from noteseek.eval.metrics import mrr_at_k, ndcg_at_k, percentile, recall_at_k
from noteseek.indexing.indexer import Progress
from noteseek.types import Hit

Search = Callable[[str, int], list[Hit]]
METRICS = ("ndcg@10", "recall@10", "recall@100", "mrr@10")
# Chunks fetched per query: enough distinct documents for Recall@100.
FETCH = 300


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


def score_ranking(ranked: Sequence[str], judged: Mapping[str, int]) -> dict[str, float]:
    return {
        "ndcg@10": ndcg_at_k(ranked, judged, 10),
        "recall@10": recall_at_k(ranked, judged, 10),
        "recall@100": recall_at_k(ranked, judged, 100),
        "mrr@10": mrr_at_k(ranked, judged, 10),
    }


def evaluate(
    engine: Engine,
    dataset: Dataset,
    search: Search | None = None,
    *,
    mode: str = "keyword",
    limit: int | None = None,
) -> EvalResult:
    """Score every query (the first ``limit``); ``search(text, k)`` defaults to the engine."""

    def default_search(text: str, k: int) -> list[Hit]:
        if mode == "hypothesis":
            return engine.search(SearchRequest(text, hypothesis=True, top_k=k, snippets=False)).hits
        return engine.search(SearchRequest(text, top_k=k, snippets=False, mode=mode)).hits

    run = search or default_search
    per_query: dict[str, dict[str, float]] = {}
    latencies: list[float] = []
    items = list(dataset.queries.items())[:limit] if limit else dataset.queries.items()
    for qid, text in items:
        started = time.perf_counter()
        hits = run(text, FETCH)
        latencies.append((time.perf_counter() - started) * 1000)
        per_query[qid] = score_ranking(ranked_documents(hits, dataset), dataset.qrels.get(qid, {}))
    return summarise(per_query, latencies)


def summarise(per_query: dict[str, dict[str, float]], latencies: Sequence[float]) -> EvalResult:
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


# -- a whole evaluation run: index the dataset, then every mode ---------------------------------


@dataclass
class EvalRun:
    dataset: str
    split: str
    results: dict[str, EvalResult]
    index: dict[str, Any] = field(default_factory=dict)
    settings: dict[str, Any] = field(default_factory=dict)

    def to_dict(self, per_query: bool = False) -> dict[str, Any]:
        out: dict[str, Any] = {
            "dataset": self.dataset,
            "split": self.split,
            "queries": max((r.queries for r in self.results.values()), default=0),
            "modes": {mode: r.to_dict() for mode, r in self.results.items()},
            "index": self.index,
            "settings": self.settings,
        }
        if per_query:
            out["per_query"] = {mode: r.per_query for mode, r in self.results.items()}
        return out


def eval_engine(
    folder: Path,
    index_dir: Path,
    *,
    split: str | None = None,
    flags: Mapping[str, Any] | None = None,
) -> tuple[Dataset, Engine]:
    """The dataset and an engine over its index in ``index_dir`` (not indexed here).

    A BEIR corpus is written as Markdown under ``index_dir/corpus`` once, so a second run over
    the same folder finds the files unchanged and the vectors cached.
    """
    folder = Path(folder).resolve()
    index_dir = Path(index_dir).resolve()
    dataset = load_dataset(folder, split)
    docs = dataset.vault
    if docs is None:
        if dataset.corpus_file is None:
            raise FileNotFoundError(f"{folder}: neither vault/ nor corpus.jsonl")
        docs = index_dir / "corpus"
        marker = docs / ".complete"
        if not marker.exists():
            materialise_corpus(dataset.corpus_file, docs)
            marker.write_text(str(dataset.corpus_file), encoding="utf-8")
    all_flags = {
        "index.dir": str(index_dir / "index"),
        "roots.corpus.path": str(docs),
        **(flags or {}),
    }
    return dataset, open_engine(index_dir, flags=all_flags, environ={})


def run_eval(
    folder: Path,
    index_dir: Path,
    *,
    split: str | None = None,
    modes: Iterable[str] = ("keyword", "semantic", "hybrid"),
    flags: Mapping[str, Any] | None = None,
    limit: int | None = None,
    progress: Progress | None = None,
    embed_progress: Progress | None = None,
    coverage: float | None = None,
) -> EvalRun:
    """Index a BEIR or vault dataset into ``index_dir`` (reused when it exists), run each mode.

    ``coverage``: after indexing, search a copy of the index whose vectors cover only this
    share of the chunks (``eval/coverage.py``), as while embedding is in progress.
    """
    modes = list(modes)
    extra = dict(flags or {})
    if not {"semantic", "hybrid", "hypothesis"} & set(modes):
        extra.setdefault("embedding.enabled", False)
    dataset, engine = eval_engine(folder, index_dir, split=split, flags=extra)
    try:
        report = engine.index(progress=progress, embed_progress=embed_progress)
        if report.embedding and report.embedding.get("error"):
            raise RuntimeError(f"embedding failed: {report.embedding['error']}")
        if coverage is not None and coverage < 1.0:
            engine.close()
            index = Path(extra.get("index.dir", Path(index_dir).resolve() / "index"))
            copy = partial_index(index, coverage)
            dataset, engine = eval_engine(
                folder, index_dir, split=split, flags={**extra, "index.dir": str(copy)}
            )
        if engine.settings.search.expansion_terms and engine.settings.embedding.enabled:
            engine.concept_vocabulary()  # built before timing the queries
        results = {mode: evaluate(engine, dataset, mode=mode, limit=limit) for mode in modes}
        status = engine.status()
        s = engine.settings
        return EvalRun(
            dataset.name,
            dataset.split,
            results,
            index={
                "documents": status["files"],
                "chunks": status["chunks"],
                "embedding": status.get("embedding"),
                "index_seconds": round(report.seconds, 2),
                "embedding_run": report.embedding,
            },
            settings={
                "embedding_model": engine.model_id if s.embedding.enabled else None,
                "rrf_k": s.search.rrf_k,
                "keyword_weight": s.search.keyword_weight,
                "semantic_weight": s.search.semantic_weight,
                "candidates": s.search.candidates,
                "coverage": coverage,
            },
        )
    finally:
        engine.close()


# -- comparing two runs -------------------------------------------------------------------------


def paired_permutation_p(diffs: Sequence[float], rounds: int = 10_000, seed: int = 7) -> float:
    """Two-sided p-value of a mean paired difference by random sign flips (exact under H0).

    Under the null hypothesis that both systems are exchangeable per query, each difference is
    as likely to have either sign; the p-value is the share of sign assignments whose mean is
    at least as far from 0 as the observed one (+1 smoothing, so never exactly 0).
    """
    d = np.asarray(diffs, dtype=np.float64)
    if d.size == 0 or not np.any(d):
        return 1.0
    observed = abs(d.mean())
    rng = np.random.default_rng(seed)
    hits = 0
    done = 0
    step = max(1, min(rounds, 2_000_000 // max(1, d.size)))
    while done < rounds:
        n = min(step, rounds - done)
        signs = rng.integers(0, 2, size=(n, d.size), dtype=np.int8) * 2 - 1
        means = np.abs((signs * d).mean(axis=1))
        hits += int(np.count_nonzero(means >= observed - 1e-12))
        done += n
    return (hits + 1) / (rounds + 1)


def compare_runs(new: Mapping[str, Any], old: Mapping[str, Any]) -> dict[str, Any]:
    """Per mode and metric: old and new means over the shared queries, difference, p-value."""
    if "per_query" not in old:
        raise ValueError(
            "the old run has no per-query scores: save it with noteseek eval --save FILE"
        )
    out: dict[str, Any] = {}
    for mode, scores in new["per_query"].items():
        before = old["per_query"].get(mode)
        if not before:
            continue
        shared = sorted(set(scores) & set(before))
        if not shared:
            continue
        per_metric: dict[str, Any] = {}
        for metric in METRICS:
            a = [before[q][metric] for q in shared]
            b = [scores[q][metric] for q in shared]
            diffs = [y - x for x, y in zip(a, b, strict=True)]
            per_metric[metric] = {
                "old": round(sum(a) / len(a), 4),
                "new": round(sum(b) / len(b), 4),
                "diff": round(sum(diffs) / len(diffs), 4),
                "p_value": round(paired_permutation_p(diffs), 4),
            }
        out[mode] = {"queries": len(shared), "metrics": per_metric}
    return out
