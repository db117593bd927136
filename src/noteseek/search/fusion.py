"""Weighted Reciprocal Rank Fusion of ranked lists.

fused(d) = sum over lanes l of  w_l / (k + rank_l(d)),  rank 1-based; a lane that did not
return d adds nothing. The score shown to users is fused(d) divided by the best score a
result can get from the lanes that ran (first in every one of them: sum of w_l / (k + 1)),
so it lies in [0, 1]: 1.0 means "ranked first by every retriever", and it falls as a result
ranks lower in a lane or is missing from one. It ranks results of one query; it is not a
probability and does not compare across queries.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field


@dataclass(slots=True)
class Fused:
    rowid: int
    fused: float
    score: float
    """``fused`` normalised to [0, 1] (see the module docstring)."""
    ranks: dict[str, int] = field(default_factory=dict)
    raw: dict[str, float] = field(default_factory=dict)
    """Each lane's own score: BM25 for keyword, cosine similarity for semantic."""


def rrf(
    lanes: Mapping[str, Sequence[tuple[int, float]]],
    weights: Mapping[str, float],
    k: float,
) -> list[Fused]:
    """Fuse ranked ``(rowid, raw score)`` lists; best first, ties broken by lane order."""
    by_id: dict[int, Fused] = {}
    for lane, ranked in lanes.items():
        w = weights.get(lane, 1.0)
        for rank, (rowid, raw) in enumerate(ranked, start=1):
            item = by_id.get(rowid)
            if item is None:
                item = by_id[rowid] = Fused(rowid, 0.0, 0.0)
            item.fused += w / (k + rank)
            item.ranks[lane] = rank
            item.raw[lane] = raw
    return rescore(list(by_id.values()), best_score(lanes, weights, k), list(lanes))


def best_score(
    lanes: Mapping[str, Sequence[tuple[int, float]]], weights: Mapping[str, float], k: float
) -> float:
    """The fused value of a result ranked first by every lane that ran."""
    return sum(weights.get(lane, 1.0) / (k + 1) for lane in lanes) or 1.0


def rescore(items: list[Fused], best: float, order: Sequence[str]) -> list[Fused]:
    """Sort by fused value (ties: better rank in the first lanes) and set the [0, 1] score."""

    def tiebreak(item: Fused) -> tuple[float, ...]:
        return (-item.fused, *(item.ranks.get(lane, 1 << 30) for lane in order))

    ranked = sorted(items, key=tiebreak)
    for item in ranked:
        item.score = min(1.0, item.fused / best)
    return ranked
