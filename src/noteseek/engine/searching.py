"""Searching: the query pipeline with the lanes, boosts and re-ranker the settings ask for.

This module checks a search's arguments, decides which lanes can run (the vector lane needs
vectors of the configured model; it says so in a warning when it cannot run), gathers what the
pipeline needs from the opened index (analyzer, communities, link graph, recency tiers, concept
vocabulary) and shapes the pipeline's result into a :class:`SearchResponse`.
"""

from __future__ import annotations

import time
from typing import Any

from noteseek import deadline
from noteseek.analysis import unicode_text
from noteseek.config.ranges import EXPAND_CHARS, SCORE, SIMILARITY, TOP_K
from noteseek.embed.base import MODEL_META_KEY, EmbeddingError
from noteseek.engine.results import SearchResponse
from noteseek.engine.state import KEYWORD_ONLY_NOTE, IndexState
from noteseek.search import pipeline
from noteseek.search.allowed import AllowedRows
from noteseek.search.ask import SearchRequest
from noteseek.search.compress import compress
from noteseek.search.concepts import ConceptVocabulary
from noteseek.search.filters import build_filters, kinds_for
from noteseek.search.relevance import model_floor
from noteseek.search.request import (
    MODES,
    Mode,
    PipelineRequest,
    SearchResources,
    VectorLane,
)
from noteseek.sources.registry import ensure_known, kinds_in_scope, shared_profile, spec_of
from noteseek.sources.spec import Profile


class Searching:
    """``search`` over one opened index."""

    def __init__(self, state: IndexState) -> None:
        self.state = state
        self.settings = state.settings
        self._cross_encoder: Any = None
        self._allowed = AllowedRows()
        self._profiles: dict[str, Profile] = {}

    def search(self, request: SearchRequest) -> SearchResponse:
        """Ranked sections for ``request`` (see :class:`SearchRequest`). Raises ValueError
        subclasses naming a bad argument (bounds: ``config/ranges.py``).

        Hybrid without vectors (embeddings off, or not built yet) returns keyword results with
        a warning saying so. A search of one kind's documents ranks by that kind's profile
        (``sources/spec.py``), whichever door it came through.
        """
        if request.top_k is not None:
            TOP_K.check(request.top_k)
        return self.ranked(request, request.top_k or self.settings.search.top_k)

    def ranked(self, request: SearchRequest, k: int) -> SearchResponse:
        """:meth:`search` for ``k`` results, any number (commit search asks for several
        sections per commit)."""
        started = time.perf_counter()
        query = unicode_text(request.query)  # bytes that were not UTF-8 crash the tokenizer
        chosen = request.mode or self._default_mode(request.hypothesis)
        if chosen not in MODES:
            raise ValueError(f"mode must be one of {', '.join(MODES)}, got {chosen!r}")
        SCORE.check(request.min_score)
        SIMILARITY.check(request.similarity_threshold)
        # The kinds the index holds (one small query): a configured root not indexed yet has
        # no documents to keep apart, and a kind without roots does not count.
        kind_of = self.state.store.root_kinds() if self.state.index_exists else {}
        ensure_known(kind_of.values())
        wanted = kinds_in_scope(request.source)
        held = [k for k in wanted if k in kind_of.values()] or wanted
        profile = shared_profile(self._profile(k) for k in held)
        expand_chars = request.expand_chars
        by_root: dict[str, int] = {}
        if expand_chars is None:
            # A search that mixes kinds (``all``) grows each root's results as its kind says.
            expand_chars = self._expansion(profile)
            by_root = {
                root: chars
                for root, kind in kind_of.items()
                if kind in wanted
                and (chars := self._expansion(self._profile(kind))) != expand_chars
            }
        EXPAND_CHARS.check(expand_chars)
        filters = build_filters(request.filter, kinds_for(wanted, kind_of.values()))
        warnings: list[str] = []
        if not self.state.index_exists:
            return SearchResponse(query, [], 0.0, 0, ["the index is empty: run noteseek index"])
        if filters.roots:
            indexed = self.state.store.roots()
            unknown = [r for r in filters.roots if r not in indexed]
            if unknown:
                raise ValueError(
                    f"unknown root {unknown[0]!r}; indexed roots: {', '.join(indexed)}"
                )
        resolved = PipelineRequest(
            query,
            k,
            chosen,
            filters,
            explain=request.explain,
            with_text=request.with_text or request.compressed,
            snippets=request.snippets,
            expand_chars=expand_chars,
            expand_by_root=by_root,
        )
        resources = self._resources(resolved, warnings, hypothesis=request.hypothesis)
        self._apply(profile, resources)
        with deadline.limit(self.settings.search.time_limit):
            result = pipeline.run(resolved, resources)
        hits = result.hits
        if request.min_score:
            hits = [h for h in hits if h.score >= request.min_score]
        compression = None
        if request.compressed:
            hits, info = compress(
                result.hits,
                min_score=request.min_score,
                similarity_threshold=request.similarity_threshold,
            )
            compression = info.to_dict()
        took = (time.perf_counter() - started) * 1000
        return SearchResponse(
            query,
            hits,
            took,
            result.candidates,
            warnings + result.warnings,
            chosen,
            result.lanes,
            result.timings_ms,
            compression,
            result.expansion,
            max([expand_chars, *by_root.values()]),
            result.corrections,
        )

    def _default_mode(self, hypothesis: bool) -> str:
        """``search.mode``; for a hypothesis (HyDE) the vector lane is the point: hybrid with
        ``search.hypothesis_keyword`` (as measured in docs/evaluation.md), else semantic
        alone (also when embeddings are off: it says so rather than go keyword-only)."""
        search = self.settings.search
        if not hypothesis:
            return search.mode
        keyword = search.hypothesis_keyword and self.settings.embedding.enabled
        return "hybrid" if keyword else "semantic"

    def _expansion(self, profile: Profile) -> int:
        """How far a kind's results grow when the search does not say."""
        if profile.expand_chars is None:
            return self.settings.search.expand_chars
        return profile.expand_chars

    def _resources(
        self, request: PipelineRequest, warnings: list[str], *, hypothesis: bool
    ) -> SearchResources:
        """What the pipeline needs from the opened index for ``request``: lanes and stages
        whose setting is off get nothing, so they do not run."""
        search = self.settings.search
        lane = self._vector_lane(request.mode, warnings, hypothesis=hypothesis)
        return SearchResources(
            self.state.store,
            self.state.values.analyzer(),
            search,
            lane,
            reranker=self._reranker(warnings),
            rerank_top=self.settings.rerank.depth,
            recency_tiers=self._recency_tiers(),
            communities=self.state.values.file_communities()
            if search.community_boost != 1.0
            else None,
            concepts=self._concepts_for(request.mode, lane, warnings),
            graph=self.state.values.graph_view() if search.graph_weight > 0 else None,
            allowed=self._allowed,
            spelling=self.state.values.spelling if search.typo_tolerance else None,
        )

    def _profile(self, kind: str) -> Profile:
        """``kind``'s profile under this engine's settings (they never change: kept)."""
        profile = self._profiles.get(kind)
        if profile is None:
            profile = self._profiles[kind] = spec_of(kind).profile(self.settings)
        return profile

    def _apply(self, profile: Profile, resources: SearchResources) -> None:
        """Rank by ``profile`` (the searched kinds' own: ``sources/spec.py``)."""
        if profile.recency is not None:
            resources.recency_tiers = list(profile.recency)
        update: dict[str, Any] = {
            "document_weight": profile.document_weight,
            "max_per_document": profile.max_per_document,
            "semantic_weight": profile.semantic_weight,
            "all_terms_bonus": profile.all_terms_bonus,
        }
        if profile.field_weights:
            fields = resources.settings.weights
            update["weights"] = fields.model_copy(update=dict(profile.field_weights))
        update = {k: v for k, v in update.items() if v is not None}
        if update:
            resources.settings = resources.settings.model_copy(update=update)

    def embed_query(self, text: str) -> Any:
        return self.state.embedder().embed_query(text)

    def embed_hypothesis(self, text: str) -> Any:
        """A hypothetical answer embedded like a document (HyDE), not like a query."""
        return self.state.embedder().embed_documents([text])[0]

    def _vector_lane(
        self, mode: Mode, warnings: list[str], *, hypothesis: bool = False
    ) -> VectorLane | None:
        """The semantic lane, or None (with a warning) when it cannot run."""
        if mode == "keyword":
            return None
        if not self.settings.embedding.enabled:
            if mode == "semantic":
                raise ValueError(
                    "semantic search is off (embedding.enabled = false); use --mode keyword"
                )
            return None
        if self.state.keyword_only():
            # The user chose a keyword-only index: keyword results are the answer, not a fault.
            if mode == "semantic":
                raise ValueError(f"this index is {KEYWORD_ONLY_NOTE}")
            warnings.append(f"{KEYWORD_ONLY_NOTE}; showing keyword results")
            return None
        embedded, total = self.state.values.embedding_progress(allow_stale=True)
        if embedded == 0:
            stored_model = self.state.store.meta(MODEL_META_KEY)
            note = (
                f"the index has no vectors of {self.state.model_id} yet"
                + (
                    f" (it has {stored_model}'s)"
                    if stored_model and stored_model != self.state.model_id
                    else ""
                )
                + ": run noteseek index"
            )
            if mode == "semantic":
                raise ValueError(note)
            warnings.append(note + "; showing keyword results only")
            return None
        if embedded < total:
            warnings.append(
                f"embedding in progress: {embedded:,} of {total:,} chunks have vectors; "
                "the semantic lane covers those"
            )
        try:
            embed = self.embed_hypothesis if hypothesis else self.embed_query
            return VectorLane(
                self.state.values.vector_index(),
                embed,
                knows_word=getattr(self.state.embedder(), "knows_word", None),
                coverage=embedded / total if total else 1.0,
                floor=model_floor(self.state.model_id),
            )
        except EmbeddingError as exc:
            if mode == "semantic":
                raise ValueError(str(exc)) from exc
            warnings.append(f"semantic lane unavailable: {exc}; showing keyword results only")
            return None

    def _concepts_for(
        self, mode: str, lane: VectorLane | None, warnings: list[str]
    ) -> ConceptVocabulary | None:
        if not self.settings.search.expansion_terms or mode != "hybrid" or lane is None:
            return None
        vocabulary = self.state.values.concept_vocabulary(wait=False)
        if vocabulary is None:
            warnings.append("query expansion: the concept vocabulary is being built")
        return vocabulary

    def _recency_tiers(self) -> list[tuple[float, float]]:
        """The recency tiers in force: none when off, or in auto mode with untrustworthy dates."""
        mode = self.settings.search.recency
        if mode == "off":
            return []
        if mode == "auto" and not self.state.values.dates_trusted():
            return []
        return list(self.settings.search.recency_tiers)

    def _reranker(self, warnings: list[str]) -> Any:
        """The cross-encoder when ``rerank.enabled`` (loaded once), else None."""
        r = self.settings.rerank
        if not r.enabled:
            return None
        if self._cross_encoder is None:
            from noteseek.search.rerank import CrossEncoder

            try:
                self._cross_encoder = CrossEncoder(threads=r.threads, max_tokens=r.max_tokens)
            except EmbeddingError as exc:
                warnings.append(f"re-ranking unavailable: {exc}")
                return None
        return self._cross_encoder
