"""Score-aware fusion (optional, ``search.fusion = "score-aware"``): a lane whose raw scores
are flat for this query counts less (``search/fusion.py``, :func:`score_aware_weights`)."""

from __future__ import annotations

from noteseek.config import SearchSettings
from noteseek.search.fusion import score_aware_weights
from noteseek.search.request import SearchResources
from noteseek.search.stages.registry import Lane, WeightStage, register


@register
class ScoreAware(WeightStage):
    name = "score-aware"
    setting = "search.fusion"

    @classmethod
    def named(cls, resources: SearchResources) -> ScoreAware | None:
        return cls() if resources.settings.fusion == "score-aware" else None

    def weights(
        self, lanes: dict[str, Lane], weights: dict[str, float], settings: SearchSettings
    ) -> dict[str, float]:
        if len(lanes) < 2:
            return weights
        return score_aware_weights(lanes, weights, settings.flat_lane_z)
