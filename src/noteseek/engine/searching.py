"""Searching: the query pipeline with the lanes, boosts and re-ranker the settings ask for.

This module checks a search's arguments, decides which lanes can run (the vector lane needs
vectors of the configured model; it says so in a warning when it cannot run), gathers what the
pipeline needs from the opened index (analyzer, communities, link graph, recency tiers, concept
vocabulary) and shapes the pipeline's result into a :class:`SearchResponse`.
"""

from __future__ import annotations

import time
from collections.abc import Iterable
from typing import Any

from noteseek import deadline
from noteseek.analysis import unicode_text
from noteseek.embed.base import EmbeddingError
from noteseek.engine.results import SearchResponse
from noteseek.engine.state import KEYWORD_ONLY_NOTE, IndexState
from noteseek.indexing.embedding import MODEL_META_KEY
from noteseek.search import pipeline
from noteseek.search.allowed import AllowedRows
from noteseek.search.compress import compress
from noteseek.search.concepts import ConceptVocabulary
from noteseek.search.filters import build_filters, kinds_for
from noteseek.search.relevance import model_floor
from noteseek.search.request import MODES, Mode, SearchRequest, SearchResources, VectorLane
from noteseek.sources.registry import ensure_known, kinds_in_scope, shared_profile, spec_of
from noteseek.sources.spec import DOCS_SCOPE, Profile


class Searching:
    """``search`` and its HyDE variant over one opened index."""

    def __init__(self, state: IndexState) -> None:
        self.state = state
        self.settings = state.settings
        self._cross_encoder: Any = None
        self._allowed = AllowedRows()
        self._profiles: dict[str, Profile] = {}

    def search(
        self,
        query: str,
        *,
        top_k: int | None = None,
        paths: Iterable[str] = (),
        tags: Iterable[str] = (),
        roots: Iterable[str] = (),
        after: str | float | None = None,
        before: str | float | None = None,
        where: Iterable[str] = (),
        mode: str | None = None,
        explain: bool = False,
        with_text: bool = False,
        snippets: bool = True,
        exclude_paths: Iterable[str] = (),
        min_score: float = 0.0,
        compressed: bool = False,
        similarity_threshold: float = 0.85,
        hypothesis: bool = False,
        expand_chars: int | None = None,
        source: str = DOCS_SCOPE,
        doc_ids: Iterable[str] | None = None,
        authors: Iterable[str] = (),
        changed: Iterable[str] = (),
    ) -> SearchResponse:
        """Ranked sections for ``query``. Raises ValueError subclasses for bad arguments.

        ``mode``: ``hybrid`` (keyword and semantic lanes fused), ``keyword`` or ``semantic``;
        default ``search.mode``. Hybrid without vectors (embeddings off, or not built yet)
        returns keyword results with a warning saying so. ``min_score`` drops results below
        it; ``compressed`` also removes near-duplicate sections (``similarity_threshold``) and
        reports the tokens saved (``search/compress.py``). ``expand_chars``: each result's
        text grows to its whole section, then its neighbours, within that many characters
        (``search/expand.py``); None: as the scope's profile says. ``hypothesis``: the query is a
        hypothetical answer, embedded as a document would be (HyDE); see
        :meth:`search_with_hypothesis`. ``source``: the scope searched (``docs``, ``memory``,
        ``commits``, ``all``: the kinds' specs say which roots each holds); a search of one
        kind's documents ranks by that kind's profile (``sources/spec.py``), whichever door
        it came through. ``doc_ids``: only these
        documents. ``authors`` (any is part of the author's name or email) and ``changed``
        (globs over the files changed) filter commits.
        """
        started = time.perf_counter()
        query = unicode_text(query)  # bytes that were not UTF-8 would crash the tokenizer
        chosen = mode or self.settings.search.mode
        if chosen not in MODES:
            raise ValueError(f"mode must be one of {', '.join(MODES)}, got {chosen!r}")
        k = top_k or self.settings.search.top_k
        if k < 1 or k > 1000:
            raise ValueError(f"top_k must be between 1 and 1000, got {k}")
        for name, value in (
            ("min_score", min_score),
            ("similarity_threshold", similarity_threshold),
        ):
            if not 0.0 <= value <= 1.0:
                raise ValueError(f"{name} must be between 0 and 1, got {value}")
        # The kinds the index holds (one small query): a configured root not indexed yet has
        # no documents to keep apart, and a kind without roots does not count.
        kind_of = self.state.store.root_kinds() if self.state.index_exists else {}
        ensure_known(kind_of.values())
        wanted = kinds_in_scope(source)
        held = [k for k in wanted if k in kind_of.values()] or wanted
        profile = shared_profile(self._profile(k) for k in held)
        by_root: dict[str, int] = {}
        if expand_chars is None:
            # A search that mixes kinds (``all``) grows each root's results as its kind says.
            expand_chars = profile.expand_chars
            by_root = {
                root: chars
                for root, kind in kind_of.items()
                if kind in wanted and (chars := self._profile(kind).expand_chars) != expand_chars
            }
        if not 0 <= expand_chars <= 100_000:
            raise ValueError(f"expand_chars must be between 0 and 100000, got {expand_chars}")
        filters = build_filters(
            paths=paths,
            tags=tags,
            roots=roots,
            after=after,
            before=before,
            where=where,
            exclude_paths=exclude_paths,
            kinds=kinds_for(wanted, kind_of.values()),
            doc_ids=doc_ids,
            authors=authors,
            changed=changed,
        )
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
        request = SearchRequest(
            query,
            k,
            chosen,
            filters,
            explain=explain,
            with_text=with_text or compressed,
            snippets=snippets,
            min_score=min_score,
            compressed=compressed,
            similarity_threshold=similarity_threshold,
            hypothesis=hypothesis,
            expand_chars=expand_chars,
            expand_by_root=by_root,
        )
        resources = self._resources(request, warnings)
        self._apply(profile, resources)
        with deadline.limit(self.settings.search.time_limit):
            result = pipeline.run(request, resources)
        hits = [h for h in result.hits if h.score >= min_score] if min_score else result.hits
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
        )

    def _resources(self, request: SearchRequest, warnings: list[str]) -> SearchResources:
        """What the pipeline needs from the opened index for ``request``: lanes and stages
        whose setting is off get nothing, so they do not run."""
        search = self.settings.search
        lane = self._vector_lane(request.mode, warnings, hypothesis=request.hypothesis)
        return SearchResources(
            self.state.store,
            self.state.values.analyzer(),
            search,
            lane,
            reranker=self._reranker(warnings),
            rerank_top=self.settings.rerank.top_n,
            recency_tiers=self._recency_tiers(),
            communities=self.state.values.file_communities()
            if search.community_boost != 1.0
            else None,
            concepts=self._concepts_for(request.mode, lane, warnings),
            graph=self.state.values.graph_view() if search.graph_weight > 0 else None,
            allowed=self._allowed,
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
        update = {
            "document_weight": profile.document_weight,
            "max_per_document": profile.max_per_document,
        }
        update = {k: v for k, v in update.items() if v is not None}
        if update:
            resources.settings = resources.settings.model_copy(update=update)

    def search_with_hypothesis(
        self, /, hypothesis: str, top_k: int | None = None, **filters: Any
    ) -> SearchResponse:
        """HyDE: search the vector lane with the embedding of a hypothetical answer.

        The text is embedded as a document (no query instruction), since it is meant to look
        like the section it should find. With ``search.hypothesis_keyword`` (the default, as
        measured in docs/evaluation.md) the keyword lane runs on the hypothesis too and the two
        are fused as in hybrid search; without it, only the vector lane answers.
        """
        mode: Mode = "hybrid" if self.settings.search.hypothesis_keyword else "semantic"
        if mode == "hybrid" and not self.settings.embedding.enabled:
            mode = "semantic"  # the vector lane is the point: say so rather than go keyword-only
        return self.search(hypothesis, top_k=top_k, mode=mode, hypothesis=True, **filters)

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
