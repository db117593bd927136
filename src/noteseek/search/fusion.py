"""Weighted Reciprocal Rank Fusion of ranked lists.

fused(d) = sum over lanes l of  w_l / (k + rank_l(d)),  rank 1-based; a lane that did not
return d adds nothing. The score shown to users is fused(d) divided by the best score a
result can get from the lanes that ran (first in every one of them: sum of w_l / (k + 1)),
so it lies in [0, 1]: 1.0 means "ranked first by every retriever", and it falls as a result
ranks lower in a lane or is missing from one. It ranks results of one query; it is not a
probability and does not compare across queries.

Score-aware weights (``search.fusion = "score-aware"``): before fusing, each lane's weight is
multiplied by ``min(1, z / z0)``, where ``z = (s_1 - mean(s)) / std(s)`` over the lane's raw
scores of its first 50 results: how many deviations its best result stands above the rest. A
lane whose scores are flat (nothing stands out; it is guessing) counts less. When every lane is
flat the plain weights are kept. ``z0`` is ``search.flat_lane_z``.

Partial vectors (``search.partial_vectors``): while embedding is incomplete, the semantic lane
can only rank the sections that have a vector, and every other candidate misses its
contribution. With ``impute`` a keyword candidate that has no vector yet is given the semantic
contribution its keyword rank would earn (``w_semantic / (k + rank_keyword)``), as if the
semantic lane agreed with the keyword lane about it: at 0% coverage hybrid ranks as keyword, at
100% nothing is imputed, in between the sections with vectors compete on equal terms.
``rescale`` (the default) also reads the semantic lane's ranks as estimates over the whole
index: a lane that saw a share ``c`` of the chunks ranks its n-th result where about ``n / c``
would stand, so its rank is divided by ``c`` before fusing. ``scale`` multiplies the semantic
weight by ``c`` instead.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any


@dataclass(slots=True)
class Fused:
    rowid: int
    fused: float
    score: float
    """``fused`` normalised to [0, 1] (see the module docstring)."""
    ranks: dict[str, int] = field(default_factory=dict)
    raw: dict[str, float] = field(default_factory=dict)
    """Each lane's own score: BM25 for keyword, cosine similarity for semantic."""
    imputed: dict[str, int] = field(default_factory=dict)
    """Lane -> the rank standing in for it (a section the lane could not judge yet)."""


def rrf(
    lanes: Mapping[str, Sequence[tuple[int, float]]],
    weights: Mapping[str, float],
    k: float,
    rank_scale: Mapping[str, float] | None = None,
) -> list[Fused]:
    """Fuse ranked ``(rowid, raw score)`` lists; best first, ties broken by lane order.

    ``rank_scale``: a lane's ranks are multiplied by this before fusing (a lane that saw only
    a share ``c`` of the index ranks its results about ``1 / c`` times too high).
    """
    by_id: dict[int, Fused] = {}
    for lane, ranked in lanes.items():
        w = weights.get(lane, 1.0)
        scale = (rank_scale or {}).get(lane, 1.0)
        for rank, (rowid, raw) in enumerate(ranked, start=1):
            item = by_id.get(rowid)
            if item is None:
                item = by_id[rowid] = Fused(rowid, 0.0, 0.0)
            item.fused += w / (k + rank * scale)
            item.ranks[lane] = rank
            item.raw[lane] = raw
    return rescore(list(by_id.values()), best_score(lanes, weights, k), list(lanes))


def impute_missing(
    items: list[Fused],
    *,
    source: str,
    target: str,
    weight: float,
    k: float,
    missing: set[int],
    best: float,
    order: Sequence[str],
) -> list[Fused]:
    """Give each item of ``missing`` that ``source`` ranked and ``target`` could not judge the
    contribution of ``target`` at its ``source`` rank; re-sorted (module docstring)."""
    changed = False
    for item in items:
        rank = item.ranks.get(source)
        if rank is not None and target not in item.ranks and item.rowid in missing:
            item.fused += weight / (k + rank)
            item.imputed[target] = rank
            changed = True
    return rescore(items, best, order) if changed else items


def lane_confidence(ranked: Sequence[tuple[int, float]], depth: int = 50) -> float:
    """How many standard deviations the best raw score stands above the mean of the first
    ``depth``; 0 for fewer than three results or identical scores."""
    scores = [raw for _, raw in ranked[:depth]]
    if len(scores) < 3:
        return 0.0
    mean = sum(scores) / len(scores)
    spread = (sum((x - mean) ** 2 for x in scores) / len(scores)) ** 0.5
    return (scores[0] - mean) / spread if spread > 0 else 0.0


def score_aware_weights(
    lanes: Mapping[str, Sequence[tuple[int, float]]],
    weights: Mapping[str, float],
    z0: float,
) -> dict[str, float]:
    """Lane weights scaled by ``min(1, confidence / z0)`` (the module docstring)."""
    scaled = {
        lane: weights.get(lane, 1.0) * min(1.0, max(0.0, lane_confidence(ranked)) / z0)
        for lane, ranked in lanes.items()
    }
    if not any(scaled.values()):
        return {lane: weights.get(lane, 1.0) for lane in lanes}
    return scaled


def best_score(
    lanes: Mapping[str, Sequence[tuple[int, float]]], weights: Mapping[str, float], k: float
) -> float:
    """The fused value of a result ranked first by every lane that ran."""
    return sum(weights.get(lane, 1.0) / (k + 1) for lane in lanes) or 1.0


def rescore(items: list[Fused], best: float, order: Sequence[str]) -> list[Fused]:
    """Sort by fused value (ties: better rank in the first lanes) and set the [0, 1] score."""

    far = 1 << 30
    key: Callable[[Fused], tuple[Any, ...]]
    # The key is built for every candidate (thousands in a widened pass): no generator.
    if len(order) == 1:
        (a,) = order
        key = lambda item: (-item.fused, item.ranks.get(a, far))  # noqa: E731
    elif len(order) == 2:
        a, b = order
        key = lambda item: (-item.fused, item.ranks.get(a, far), item.ranks.get(b, far))  # noqa: E731
    else:
        key = lambda item: (-item.fused, [item.ranks.get(lane, far) for lane in order])  # noqa: E731
    ranked = sorted(items, key=key)
    for item in ranked:
        item.score = min(1.0, item.fused / best)
    return ranked
