"""What every post-fusion stage is: a name, when it runs, what it does, what it explains.

The pipeline runs the stages in order on the fused candidates; a stage's name keys its timing
(``<name>_ms``) and its part of ``--explain``.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Protocol

from noteseek.config import SearchSettings
from noteseek.search.fusion import Fused, best_score
from noteseek.search.request import PipelineRequest, SearchResources
from noteseek.search.rows import CandidateRows


@dataclass
class StageContext:
    """One query's state after fusion, shared by the stages."""

    request: PipelineRequest
    resources: SearchResources
    rows: CandidateRows
    """The candidates' chunk rows: one store lookup for every stage and the hits."""
    lanes: dict[str, list[tuple[int, float]]]
    weights: dict[str, float]
    also: dict[int, list[int]] = field(default_factory=dict)
    """A result's rowid -> rowids of more sections of its document that matched but were
    left out by the per-document limit, best first (the hits list them under the result)."""

    @property
    def settings(self) -> SearchSettings:
        return self.resources.settings

    def best(self) -> float:
        """The best fused value a result can get from the lanes that ran (scores' scale)."""
        return best_score(self.lanes, self.weights, self.settings.rrf_k)


class Stage(Protocol):
    name: str
    """Keys the stage's timing (``<name>_ms``) and names it in ``--explain``."""
    full_rows: bool
    """It reads whole chunk rows (text included) of every candidate: then every stage shares
    that one lookup instead of reading file ids or dates on their own."""

    def enabled(self, candidates: list[Fused], context: StageContext) -> bool:
        """Whether the stage runs: its setting is on and what it needs is there."""
        ...

    def apply(self, candidates: list[Fused], context: StageContext) -> list[Fused]:
        """The candidates re-ordered, re-scored or thinned out."""
        ...

    def explain(self, item: Fused) -> dict[str, Any]:
        """What the stage did to ``item`` for ``--explain``: top-level entries, and entries
        under ``fusion`` for a factor on the fused value (empty when it did nothing)."""
        ...
