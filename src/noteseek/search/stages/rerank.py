"""Re-ranking the top results with the cross-encoder (optional, ``rerank.enabled``: the engine
then hands out the model, ``search/rerank.py``)."""

from __future__ import annotations

from typing import Any

from noteseek.chunking import embedding_input
from noteseek.search.fusion import Fused
from noteseek.search.request import Reranker, SearchResources
from noteseek.search.rows import CandidateRows
from noteseek.search.stages.base import StageContext
from noteseek.search.stages.registry import PostStage, register


def rerank(
    rows: CandidateRows, reranker: Reranker, query: str, fused: list[Fused], top: int
) -> list[Fused]:
    """Re-order the first ``top`` results by the cross-encoder; the rest stay below them.

    Scores stay on the fused scale: each result takes the score of the position it moves to,
    so they still fall down the list. ``raw`` keeps the logit and the rank before re-ranking
    for --explain.
    """
    head = fused[:top]
    by_id = rows.get(f.rowid for f in fused)  # every candidate: the later stages share them
    for rank, item in enumerate(head, start=1):
        item.raw["fused_rank"] = rank
    kept = [f for f in head if f.rowid in by_id]
    # The section's Markdown after its context line (title > headings): the text alone often
    # does not say what it is about. (The embedding model reads it without link addresses and
    # most code, ``embedding.reads``; the cross-encoder was measured on it as written.)
    passages = [
        embedding_input(r.title, r.path, r.heading_path, r.text)
        for r in (by_id[f.rowid] for f in kept)
    ]
    logits = reranker.scores(query, passages)
    order = sorted(range(len(kept)), key=lambda i: -float(logits[i]))
    scores = [f.score for f in kept]
    out = []
    for position, i in enumerate(order):
        item = kept[i]
        item.raw["rerank"] = float(logits[i])
        item.score = scores[position]
        out.append(item)
    return out + fused[top:]


@register
class Rerank(PostStage):
    name = "rerank"
    setting = "rerank.enabled"
    full_rows = True

    @classmethod
    def named(cls, resources: SearchResources) -> Rerank | None:
        return cls() if resources.reranker is not None else None

    def enabled(self, candidates: list[Fused], context: StageContext) -> bool:
        return context.resources.reranker is not None and bool(candidates)

    def apply(self, candidates: list[Fused], context: StageContext) -> list[Fused]:
        resources = context.resources
        assert resources.reranker is not None  # enabled() checked it
        return rerank(
            context.rows,
            resources.reranker,
            context.request.text,
            candidates,
            resources.rerank_top,
        )

    def explain(self, item: Fused) -> dict[str, Any]:
        if "rerank" not in item.raw:
            return {}
        return {
            "rerank": {
                "model": "cross-encoder",
                "logit": round(item.raw["rerank"], 4),
                "rank_before": int(item.raw["fused_rank"]),
            }
        }
