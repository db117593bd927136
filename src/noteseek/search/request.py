"""One search as the engine resolved it for the query pipeline (:class:`PipelineRequest`),
and what the engine provides the pipeline (:class:`SearchResources`); the caller's request is
:class:`noteseek.search.ask.SearchRequest`.

The engine checks and fills in the arguments (defaults and bounds from settings, filters
through :func:`noteseek.search.filters.build_filters`); the pipeline and its stages read them
from here instead of from a long argument list.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Literal, Protocol

import numpy as np
import numpy.typing as npt

from noteseek.analysis import Analyzer
from noteseek.config import SearchSettings
from noteseek.search.allowed import AllowedRows
from noteseek.search.concepts import ConceptVocabulary
from noteseek.search.graph_lane import GraphView
from noteseek.search.spelling import Spelling
from noteseek.store.base import SearchSource, VectorIndex
from noteseek.types import Filters

Mode = Literal["hybrid", "keyword", "semantic"]
MODES: tuple[Mode, ...] = ("hybrid", "keyword", "semantic")
QueryEmbedder = Callable[[str], npt.NDArray[np.float32]]


@dataclass(frozen=True)
class PipelineRequest:
    """A :class:`~noteseek.search.ask.SearchRequest` as the engine resolved it for the
    pipeline: the settings filled in, the filters compiled, each root's expansion chosen."""

    text: str
    k: int
    mode: Mode
    filters: Filters = field(default_factory=Filters)
    explain: bool = False
    with_text: bool = False
    """Each hit carries its section's text (``compressed`` needs it too)."""
    snippets: bool = True
    expand_chars: int = 0
    expand_by_root: dict[str, int] = field(default_factory=dict)
    """Roots whose results grow by another budget than ``expand_chars`` (a search that mixes
    kinds: memories grow as their kind says, documents do not)."""


class Reranker(Protocol):
    def scores(self, query: str, passages: Sequence[str]) -> npt.NDArray[np.float32]: ...


@dataclass
class VectorLane:
    """What the semantic lane needs; absent when vectors are off or not built yet."""

    index: VectorIndex
    embed_query: QueryEmbedder
    coverage: float = 1.0
    """Share of the index's chunks that have a vector (below 1 while embedding runs)."""
    knows_word: Callable[[str], bool] | None = None
    """Whether the embedding model has ``word`` as a whole word (None: it cannot say)."""
    floor: float = 0.0
    """Least cosine of a semantic candidate: the model's calibrated floor (search/relevance.py)."""


@dataclass
class SearchResources:
    """What the engine provides to a search: the opened index and the derived values in force.

    An absent value (None, empty) turns its lane or stage off.
    """

    store: SearchSource
    analyzer: Analyzer
    settings: SearchSettings
    vectors: VectorLane | None = None
    reranker: Reranker | None = None
    rerank_top: int = 20
    recency_tiers: Sequence[tuple[float, float]] = ()
    communities: Mapping[int, int] | None = None
    """File id -> community, for the community boost."""
    concepts: ConceptVocabulary | None = None
    graph: GraphView | None = None
    allowed: AllowedRows | None = None
    """The rows each filter lets through, kept by the engine across searches."""
    spelling: Callable[[], Spelling | None] | None = None
    """The index's vocabulary for typo tolerance, read on first need (None: tolerance off)."""
