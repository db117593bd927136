"""Boosts on the fused value: the top result's link community and recently changed documents.

Both multiply ``Fused.fused`` and re-score on the fused scale (see ``search/fusion.py``), so
they show in ``--explain`` as factors under ``fusion``.
"""

from __future__ import annotations

import time
from collections.abc import Mapping, Sequence
from typing import Any

from noteseek.search import recency
from noteseek.search.fusion import Fused, rescore
from noteseek.search.rows import CandidateRows
from noteseek.search.stages.base import StageContext


def boost_community(
    rows: CandidateRows,
    fused: list[Fused],
    communities: Mapping[int, int],
    boost: float,
    best: float,
) -> list[Fused]:
    """Multiply the fused value of results in the top result's community (itself included)
    by ``boost``: order within the community stays, results outside it fall behind."""
    files = rows.file_ids(f.rowid for f in fused)
    top = communities.get(files.get(fused[0].rowid, -1))
    if top is None:
        return fused
    for item in fused:
        if communities.get(files.get(item.rowid, -1)) == top:
            item.fused *= boost
            item.raw["community"] = boost
    return rescore(fused, best, ["keyword", "semantic"])


def boost_recent(
    rows: CandidateRows,
    fused: list[Fused],
    tiers: Sequence[tuple[float, float]],
    best: float,
) -> list[Fused]:
    """Multiply each result's fused value by its document's recency factor, then re-sort."""
    dates = rows.dates(f.rowid for f in fused)
    now = time.time()
    for item in fused:
        when = dates.get(item.rowid)
        boost = recency.factor(when, now, tiers) if when is not None else 1.0
        if boost != 1.0:
            item.fused *= boost
            item.raw["recency"] = boost
    return rescore(fused, best, ["keyword", "semantic"])


class CommunityBoost:
    name = "community"
    full_rows = False

    def enabled(self, candidates: list[Fused], context: StageContext) -> bool:
        return bool(
            context.resources.communities and context.settings.community_boost != 1.0 and candidates
        )

    def apply(self, candidates: list[Fused], context: StageContext) -> list[Fused]:
        communities = context.resources.communities or {}
        boost = context.settings.community_boost
        return boost_community(context.rows, candidates, communities, boost, context.best())

    def explain(self, item: Fused) -> dict[str, Any]:
        if "community" not in item.raw:
            return {}
        return {"fusion": {"community_factor": item.raw["community"]}}


class RecencyBoost:
    name = "recency"
    full_rows = False

    def enabled(self, candidates: list[Fused], context: StageContext) -> bool:
        return bool(context.resources.recency_tiers and candidates)

    def apply(self, candidates: list[Fused], context: StageContext) -> list[Fused]:
        tiers = context.resources.recency_tiers
        return boost_recent(context.rows, candidates, tiers, context.best())

    def explain(self, item: Fused) -> dict[str, Any]:
        if "recency" not in item.raw:
            return {}
        return {"fusion": {"recency_factor": item.raw["recency"]}}
