"""The stages after fusion: the default ones, and the optional ones of ``registry.py``.

The default pipeline runs :data:`BOOSTS` then diversity (:class:`Diversify`, grouping by
document). The optional stages, measured as no gain (``docs/evaluation.md``), register
themselves by name when their modules are imported here, in this order, and run only when a
setting names them (``registry.chosen``).
"""

from __future__ import annotations

# Importing the optional stages' modules registers them (search/stages/registry.py).
import noteseek.search.stages.duplicates
import noteseek.search.stages.expansion
import noteseek.search.stages.graph
import noteseek.search.stages.score_aware  # noqa: F401
from noteseek.search.stages.base import Stage, StageContext
from noteseek.search.stages.boosts import CommunityBoost, RecencyBoost
from noteseek.search.stages.diversify import Diversify
from noteseek.search.stages.mmr import Mmr
from noteseek.search.stages.registry import Chosen, chosen, registered
from noteseek.search.stages.rerank import Rerank

BOOSTS: tuple[Stage, ...] = (CommunityBoost(), RecencyBoost())
"""The default boosts on the fused value, in the order they run."""

POST_FUSION: tuple[Stage, ...] = (*BOOSTS, Mmr(), Rerank(), Diversify())
"""Every post-fusion stage in the order they would run: the boosts, the optional re-orderings
(MMR, re-ranking: only when named) and diversity."""

__all__ = [
    "BOOSTS",
    "POST_FUSION",
    "Chosen",
    "Diversify",
    "Stage",
    "StageContext",
    "chosen",
    "duplicates",
    "expansion",
    "graph",
    "registered",
    "score_aware",
]
