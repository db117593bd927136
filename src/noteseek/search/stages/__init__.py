"""The stages that run after fusion, in the order they run (see ``stages/base.py``)."""

from __future__ import annotations

from noteseek.search.stages.base import Stage, StageContext
from noteseek.search.stages.boosts import CommunityBoost, RecencyBoost
from noteseek.search.stages.diversify import Diversify
from noteseek.search.stages.mmr import Mmr
from noteseek.search.stages.rerank import Rerank

POST_FUSION: tuple[Stage, ...] = (CommunityBoost(), RecencyBoost(), Mmr(), Rerank(), Diversify())

__all__ = ["POST_FUSION", "Stage", "StageContext"]
