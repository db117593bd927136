"""Maximal marginal relevance (optional, ``search.mmr_lambda`` below 1): variety among the top
results, by their vectors."""

from __future__ import annotations

import numpy as np

from noteseek.search.fusion import Fused
from noteseek.search.request import SearchResources
from noteseek.search.stages.base import StageContext
from noteseek.search.stages.registry import PostStage, register
from noteseek.store.base import VectorIndex


def mmr(fused: list[Fused], index: VectorIndex, lam: float, depth: int) -> list[Fused]:
    """Maximal marginal relevance over the first ``depth`` results.

    Each next pick maximises ``lam * relevance - (1 - lam) * max cosine to the picks so far``,
    relevance being the fused score (in [0, 1]). Results without a vector count as unlike
    everything. Scores stay on the fused scale: each pick takes the score of its position.
    The cosines among the head are computed once (one matrix product); each pick updates every
    candidate's largest cosine to the picks in one vector operation.
    """
    head = fused[:depth]
    if len(head) < 2:
        return fused
    vectors = index.vectors_for([f.rowid for f in head])
    scores = [f.score for f in head]
    n = len(head)
    has = np.array([f.rowid in vectors for f in head])
    sims = np.zeros((n, n), dtype=np.float32)
    if has.any():
        dim = next(iter(vectors.values())).shape[0]
        mat = np.zeros((n, dim), dtype=np.float32)
        for i, f in enumerate(head):
            if has[i]:
                mat[i] = vectors[f.rowid]
        sims = mat @ mat.T
    relevance = np.array(scores, dtype=np.float64)
    closest = np.full(n, -np.inf)  # each candidate's largest cosine to the picks so far
    left = np.ones(n, dtype=bool)
    order: list[int] = []
    for _ in range(n):
        penalty = np.where(np.isneginf(closest), 0.0, closest)  # no pick with a vector yet
        value = np.where(left, lam * relevance - (1 - lam) * penalty, -np.inf)
        best = int(np.argmax(value))  # ties: the better-ranked (first) one
        order.append(best)
        left[best] = False
        if has[best]:
            row = np.where(has, sims[best], 0.0)  # a result without a vector is unlike all
            closest = np.maximum(closest, row)
    picked = [head[i] for i in order]
    for item, score in zip(picked, scores, strict=True):
        item.score = score
    return picked + fused[depth:]


@register
class Mmr(PostStage):
    name = "mmr"
    setting = "search.mmr_lambda"

    @classmethod
    def named(cls, resources: SearchResources) -> Mmr | None:
        return cls() if resources.settings.mmr_lambda < 1.0 else None

    def enabled(self, candidates: list[Fused], context: StageContext) -> bool:
        return (
            context.settings.mmr_lambda < 1.0
            and context.resources.vectors is not None
            and len(candidates) > 1
        )

    def apply(self, candidates: list[Fused], context: StageContext) -> list[Fused]:
        assert context.resources.vectors is not None  # enabled() checked it
        settings = context.settings
        index = context.resources.vectors.index
        return mmr(candidates, index, settings.mmr_lambda, settings.mmr_depth)
