"""Optional stages: the ones measured as no gain over the default pipeline, off by default.

``docs/evaluation.md`` (the ablation against plain hybrid) measured these as never beating the
default significantly: query expansion, score-aware fusion, the graph lane, MMR, cross-encoder
re-ranking and the removal of exact, near and semantic duplicates. They stay available for
vaults where they may help, but outside the default path: each module registers its stage here
by name (:func:`register`), and a stage takes part in a search only when a setting names it
(:meth:`OptionalStage.named`). The pipeline asks :func:`chosen` for the stages of one search
and runs each at its point:

* ``QueryStage`` rewrites the keyword lane's query (before the keyword lane runs);
* ``WeightStage`` changes the lanes' fusion weights (before fusion);
* ``LaneStage`` adds a ranked list after fusion, and the lanes are fused again;
* ``PostStage`` re-orders the fused candidates (after the boosts, before diversity);
* ``DuplicateRule`` drops a result that repeats a better one (inside the diversity stage).

Within a point, stages run in the order they registered (the order ``stages/__init__.py``
imports their modules).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, ClassVar, TypeVar

import numpy as np
import numpy.typing as npt

from noteseek.config import SearchSettings
from noteseek.search.fusion import Fused
from noteseek.search.request import SearchResources
from noteseek.search.stages.base import StageContext
from noteseek.types import KeywordQuery

if TYPE_CHECKING:
    from noteseek.store.base import Catalog, VectorIndex
    from noteseek.store.rows import ChunkRow

Lane = list[tuple[int, float]]


class OptionalStage:
    """A stage outside the default pipeline, keyed by ``name``."""

    name: str
    setting: ClassVar[str]
    """The setting that turns it on (``docs/evaluation.md`` measured it)."""

    @classmethod
    def named(cls, resources: SearchResources) -> OptionalStage | None:
        """The stage for one search when its setting names it (and what it needs is there),
        else None: then it does not run at all."""
        raise NotImplementedError


class QueryStage(OptionalStage):
    """Rewrites the keyword lane's query before that lane runs."""

    needs_query_vector: ClassVar[bool] = False
    """The query's embedding is needed first (the lanes then do not overlap)."""

    def __init__(self) -> None:
        self.words: list[str] = []
        """Words it added to the query (the response's ``expansion``)."""

    def rewrite(
        self,
        keyword_query: KeywordQuery,
        query: KeywordQuery,
        query_vector: npt.NDArray[np.float32] | None,
        resources: SearchResources,
    ) -> KeywordQuery:
        """``keyword_query`` (what the keyword lane will search, function words dropped)
        rewritten; ``query`` is the query as written."""
        raise NotImplementedError


class WeightStage(OptionalStage):
    """Changes the lanes' fusion weights for this query."""

    def weights(
        self, lanes: dict[str, Lane], weights: dict[str, float], settings: SearchSettings
    ) -> dict[str, float]:
        raise NotImplementedError


class LaneStage(OptionalStage):
    """A ranked list built from the fused candidates; the lanes are then fused again with it."""

    def weight(self, settings: SearchSettings) -> float:
        """Its RRF weight."""
        raise NotImplementedError

    def retrieve(
        self,
        fused: list[Fused],
        resources: SearchResources,
        query_vector: npt.NDArray[np.float32] | None,
    ) -> Lane:
        """The lane as (chunk rowid, score), best first (empty: nothing to add)."""
        raise NotImplementedError

    def explain(self, item: Fused, store: Catalog) -> dict[str, Any]:
        """Its entry in ``--explain`` for a result."""
        raise NotImplementedError


class PostStage(OptionalStage):
    """A post-fusion stage (``stages/base.py``'s protocol) outside the default list."""

    full_rows: bool = False

    def enabled(self, candidates: list[Fused], context: StageContext) -> bool:
        raise NotImplementedError

    def apply(self, candidates: list[Fused], context: StageContext) -> list[Fused]:
        raise NotImplementedError

    def explain(self, item: Fused) -> dict[str, Any]:
        return {}


class DuplicateRule(OptionalStage):
    """Whether a result repeats one kept before it (the diversity stage asks every rule)."""

    @classmethod
    def named(cls, resources: SearchResources) -> DuplicateRule | None:
        vectors = resources.vectors
        return cls.for_settings(resources.settings, vectors.index if vectors else None)

    @classmethod
    def for_settings(
        cls, settings: SearchSettings, vectors: VectorIndex | None
    ) -> DuplicateRule | None:
        raise NotImplementedError

    def window(self, rowids: Sequence[int]) -> None:
        """The next rows the diversity stage reads (a rule may read what it needs at once)."""

    def duplicate(self, rowid: int, row: ChunkRow) -> bool:
        raise NotImplementedError

    def keep(self, rowid: int, row: ChunkRow) -> None:
        """``row`` is a result now: later ones are compared with it."""


S = TypeVar("S", bound=type[OptionalStage])

_REGISTRY: dict[str, type[OptionalStage]] = {}


def register(cls: S) -> S:
    """Class decorator: the stage can be named by its setting."""
    if cls.name in _REGISTRY:
        raise ValueError(f"an optional stage named {cls.name!r} is registered already")
    _REGISTRY[cls.name] = cls
    return cls


def registered() -> dict[str, type[OptionalStage]]:
    """Every optional stage by name, in the order they registered."""
    return dict(_REGISTRY)


@dataclass
class Chosen:
    """The optional stages one search runs, by the point where they run."""

    query: list[QueryStage] = field(default_factory=list)
    weights: list[WeightStage] = field(default_factory=list)
    lanes: list[LaneStage] = field(default_factory=list)
    post: list[PostStage] = field(default_factory=list)
    duplicates: list[DuplicateRule] = field(default_factory=list)

    @property
    def needs_query_vector(self) -> bool:
        return any(stage.needs_query_vector for stage in self.query)


def chosen(resources: SearchResources) -> Chosen:
    """The optional stages the settings name for one search (none by default)."""
    out = Chosen()
    for cls in _REGISTRY.values():
        stage = cls.named(resources)
        if isinstance(stage, QueryStage):
            out.query.append(stage)
        elif isinstance(stage, WeightStage):
            out.weights.append(stage)
        elif isinstance(stage, LaneStage):
            out.lanes.append(stage)
        elif isinstance(stage, PostStage):
            out.post.append(stage)
        elif isinstance(stage, DuplicateRule):
            out.duplicates.append(stage)
    return out


def duplicate_rules(settings: SearchSettings, vectors: VectorIndex | None) -> list[DuplicateRule]:
    """The duplicate rules ``settings`` name (for a diversity pass run on its own)."""
    rules = []
    for cls in _REGISTRY.values():
        if issubclass(cls, DuplicateRule):
            rule = cls.for_settings(settings, vectors)
            if rule is not None:
                rules.append(rule)
    return rules
