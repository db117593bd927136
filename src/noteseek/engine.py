"""The facade every interface calls: index, search, get, status.

The CLI (and later MCP and HTTP) only translate arguments and format what these methods return;
SQL, analysis and ranking stay behind this class.
"""

from __future__ import annotations

import contextlib
import logging
import os
import re
import threading
import time
from collections.abc import Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from noteseek.analysis import Analyzer, get_analyzer
from noteseek.config import (
    ConfigError,
    LoadedConfig,
    RootConfig,
    ad_hoc_root,
    data_dir,
    default_index_dir,
    load_settings,
)
from noteseek.derived import Derived
from noteseek.embed.base import Embedder, EmbeddingError
from noteseek.embed.factory import configured_model_id, create_embedder
from noteseek.graph.links import DocInfo, Edge, LinkGraph, RawLink
from noteseek.indexing.embedding import MODEL_META_KEY, EmbedReport, embed_pending
from noteseek.indexing.indexer import Indexer, IndexReport, Progress
from noteseek.indexing.manifest import build_manifest, manifest_changes
from noteseek.priority import yield_cpu
from noteseek.search import pipeline, recency
from noteseek.search.compress import compress
from noteseek.search.concepts import ConceptVocabulary
from noteseek.search.filters import build_filters
from noteseek.search.graph_lane import GraphView
from noteseek.search.pipeline import MODES, Mode, VectorLane
from noteseek.search.vector import VectorIndex, in_background
from noteseek.store.base import ChunkRow, FileRow
from noteseek.store.factory import INDEX_FILE, open_store
from noteseek.store.sqlite import SQLiteStore
from noteseek.types import Hit

log = logging.getLogger(__name__)

LAST_INDEX_FILE = "last-index"
COMMUNITY_THROTTLE = 60.0
CONCEPT_THROTTLE = 3600.0
"""Seconds between recomputations of the link-graph communities while the index changes."""
_CHUNK_ID_RE = re.compile(r"^[0-9a-f]{16}$")
_PATH_LINE_RE = re.compile(r"^(.*):(\d+)$")


class NotFound(LookupError):
    """The requested chunk, document or line does not exist in the index."""


class Ambiguous(LookupError):
    """A path names files in several roots; the message lists them."""


@dataclass
class SearchResponse:
    query: str
    hits: list[Hit]
    took_ms: float
    total_candidates: int
    warnings: list[str] = field(default_factory=list)
    mode: str = "keyword"
    """The mode asked for; ``lanes`` says which retrievers actually ran."""
    lanes: dict[str, int] = field(default_factory=dict)
    timings_ms: dict[str, float] = field(default_factory=dict)
    compression: dict[str, Any] | None = None
    """What ``compressed=True`` removed and the tokens it saved."""
    expansion: list[str] = field(default_factory=list)
    """Words query expansion added to the keyword lane (``search.expansion_terms``)."""

    def to_dict(self) -> dict[str, Any]:
        out = {
            "query": self.query,
            "mode": self.mode,
            "took_ms": round(self.took_ms, 2),
            "lanes": self.lanes,
            "timings_ms": self.timings_ms,
            "results": [h.to_dict() for h in self.hits],
            "warnings": self.warnings,
        }
        if self.compression is not None:
            out["compression"] = self.compression
        if self.expansion:
            out["expansion"] = self.expansion
        return out


@dataclass
class GetResult:
    kind: str
    """``chunk``, ``section`` or ``document``."""
    root: str
    path: str
    doc_id: str
    title: str
    heading_path: tuple[str, ...]
    start_line: int
    end_line: int
    text: str
    chunk_ids: list[str]
    stale: bool = False
    """The file changed since it was indexed (the text shown is what was indexed)."""

    def to_dict(self) -> dict[str, Any]:
        return {
            "kind": self.kind,
            "root": self.root,
            "path": self.path,
            "doc_id": self.doc_id,
            "title": self.title,
            "heading_path": list(self.heading_path),
            "start_line": self.start_line,
            "end_line": self.end_line,
            "chunk_ids": self.chunk_ids,
            "stale": self.stale,
            "text": self.text,
        }


class Engine:
    """One index: its settings, its store and every operation on it."""

    def __init__(self, config: LoadedConfig) -> None:
        self.config = config
        self.settings = config.settings
        self.index_dir = config.index_dir
        self._store: SQLiteStore | None = None
        self._analyzer: Analyzer | None = None
        self._embedder: Embedder | None = None
        self._vectors: VectorIndex | None = None
        self._vector_state: tuple[tuple[int, int], int, int, float] | None = None
        """(change token, embedded, total, seconds the count took)."""
        self._counter: threading.Thread | None = None
        self._count_lock = threading.Lock()
        self._graph: tuple[tuple[int, int], LinkGraph] | None = None
        self._graph_by_file: tuple[tuple[int, int], GraphView] | None = None
        self._cross_encoder: Any = None
        self._dates_trusted: tuple[tuple[int, int], bool] | None = None
        self._communities: Derived[tuple[dict[str, int], dict[int, int]]] = Derived(
            "communities",
            self._compute_communities,
            lambda: self.store.change_token(),
            COMMUNITY_THROTTLE,
            background=self._compute_communities_apart,
        )
        self._concepts: Derived[ConceptVocabulary] = Derived(
            "concepts",
            self._build_concepts,
            lambda: self.store.change_token(),
            CONCEPT_THROTTLE,
            background=self._build_concepts_apart,
        )
        self.notices: list[str] = []

    # -- lifecycle ---------------------------------------------------------------------------

    @property
    def store(self) -> SQLiteStore:
        if self._store is None:
            store, notice = open_store(self.index_dir)
            if notice:
                self.notices.append(notice)
            self._store = store
        return self._store

    @property
    def index_exists(self) -> bool:
        return (self.index_dir / INDEX_FILE).exists()

    def close(self) -> None:
        if self._embedder is not None:
            self._embedder.close()
            self._embedder = None
        self._vectors = None
        if self._store is not None:
            self._store.close()
            self._store = None

    # -- embeddings --------------------------------------------------------------------------

    @property
    def model_id(self) -> str:
        """The id of the configured embedding model (without loading it)."""
        return configured_model_id(self.settings.embedding)

    def embedder(self) -> Embedder:
        """The configured embedder, loaded on first use (raises EmbeddingError)."""
        if self._embedder is None:
            self._embedder = create_embedder(self.settings.embedding)
        return self._embedder

    def embed(
        self, progress: Progress | None = None, stop: threading.Event | None = None
    ) -> EmbedReport:
        """Embed every chunk that lacks a vector of the configured model."""
        report = embed_pending(self.store, self.embedder(), progress=progress, stop=stop)
        if report.notice:
            self.notices.append(report.notice)
        return report

    def embedding_progress(self, *, allow_stale: bool = False) -> tuple[int, int]:
        """(chunks with a vector of the configured model, all chunks); cached per index change.

        Counting joins every chunk with its vector: milliseconds on small indexes, seconds on
        large ones while they are being written. With ``allow_stale`` (searches and status,
        not the indexer deciding what to embed), an expensive count on a large index
        (``search.vector.in_background``) is redone on a background thread, as the vector
        index is, and the last one answers meanwhile.
        """
        token = self.store.change_token()
        state = self._vector_state
        if state is not None and state[0] == token:
            return state[1], state[2]
        if state is not None and allow_stale and in_background(state[2], state[3]):
            with self._count_lock:
                if self._counter is None:
                    self._counter = threading.Thread(
                        target=self._count_in_background,
                        args=(token,),
                        name="noteseek-count",
                        daemon=True,
                    )
                    self._counter.start()
            return state[1], state[2]
        started = time.monotonic()
        embedded, total = self.store.vector_progress(self.model_id)
        self._vector_state = (token, embedded, total, time.monotonic() - started)
        return embedded, total

    def _count_in_background(self, token: tuple[int, int]) -> None:
        yield_cpu()
        try:
            store = SQLiteStore(self.index_dir / INDEX_FILE, readonly=True)
            try:
                started = time.monotonic()
                embedded, total = store.vector_progress(self.model_id)
                self._vector_state = (token, embedded, total, time.monotonic() - started)
            finally:
                store.close()
        except Exception:  # the last count stays; the next call tries again
            log.debug("counting vectors failed", exc_info=True)
        finally:
            with self._count_lock:
                self._counter = None

    def vector_index(self) -> VectorIndex:
        if self._vectors is None:
            v = self.settings.vectors
            self._vectors = VectorIndex(
                self.store,
                self.model_id,
                self.embedder().dimension,
                dtype=v.dtype,
                hnsw_threshold=v.hnsw_threshold,
            )
        return self._vectors

    def embed_query(self, text: str) -> Any:
        return self.embedder().embed_query(text)

    def embed_hypothesis(self, text: str) -> Any:
        """A hypothetical answer embedded like a document (HyDE), not like a query."""
        return self.embedder().embed_documents([text])[0]

    def __enter__(self) -> Engine:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    # -- roots -------------------------------------------------------------------------------

    def roots(self) -> dict[str, RootConfig]:
        """Configured roots plus roots an earlier run added from the command line."""
        roots = dict(self.settings.roots)
        if self.index_exists:
            known = {str(Path(r.path).expanduser().resolve()) for r in roots.values()}
            for name, path in self.store.roots().items():
                if name not in roots and path not in known:
                    roots[name] = RootConfig(path=path)
        return roots

    def _select_roots(self, names: Sequence[str] | None) -> dict[str, RootConfig]:
        roots = self.roots()
        if not names:
            return roots
        selected: dict[str, RootConfig] = {}
        for name in names:
            if name in roots:
                selected[name] = roots[name]
                continue
            path = Path(name).expanduser()
            if path.is_dir():
                root_name, root = ad_hoc_root(path, roots)
                roots[root_name] = root
                selected[root_name] = root
                continue
            raise ConfigError(
                f"{name!r} is neither a configured root ({', '.join(sorted(roots)) or 'none'}) "
                "nor a folder"
            )
        return selected

    # -- indexing ----------------------------------------------------------------------------

    def index(
        self,
        roots: Sequence[str] | None = None,
        *,
        force: bool = False,
        progress: Progress | None = None,
        keyword_only: bool = False,
        embed_progress: Progress | None = None,
    ) -> IndexReport:
        """Bring the index up to date with the roots (all of them, or the named ones).

        Keyword rows are committed file by file; then, unless ``keyword_only`` or embeddings
        are off, the chunks without vectors are embedded (``embed_progress`` reports it).
        """
        selected = self._select_roots(roots)
        if not selected:
            raise ConfigError(
                "nothing to index: give a folder (noteseek index ~/notes) or configure a "
                "[roots.<name>] table (noteseek init)"
            )
        report = IndexReport()
        reasons = self._check_manifest()
        if reasons:
            report.rebuilt_because = "; ".join(reasons)
            selected = {**self.roots(), **selected}
        result = Indexer(self.store, self.settings, self.index_dir).run(
            selected, force=force, progress=progress, report=report
        )
        self._remember_index()
        self._embed_after_index(result, keyword_only, embed_progress)
        return result

    def update_paths(self, root_name: str, rels: Iterable[str]) -> IndexReport:
        """Index only the changed paths ``rels`` (relative to root ``root_name``).

        For a watcher's batches: cheaper than :meth:`index`, same outcome for those paths.
        Nothing is embedded here; the caller embeds when it sees fit. Settings that changed
        what the index holds (the manifest) need every root indexed again, so that is done.
        """
        roots = self.roots()
        if root_name not in roots:
            raise ConfigError(
                f"{root_name!r} is not a root of this index ({', '.join(sorted(roots)) or 'none'})"
            )
        reasons = self._check_manifest()
        if reasons:
            report = self.index(keyword_only=True)
            report.rebuilt_because = "; ".join(reasons)
            return report
        return Indexer(self.store, self.settings, self.index_dir).update_paths(
            root_name, roots[root_name], rels
        )

    def _embed_after_index(
        self, report: IndexReport, keyword_only: bool, progress: Progress | None
    ) -> None:
        if keyword_only or not self.settings.embedding.enabled:
            return
        try:
            report.embedding = self.embed(progress=progress).to_dict()
        except KeyboardInterrupt:
            report.interrupted = True
            raise
        except EmbeddingError as exc:
            report.embedding = {"model": self.model_id, "error": str(exc)}

    def rebuild(
        self,
        progress: Progress | None = None,
        *,
        keyword_only: bool = False,
        embed_progress: Progress | None = None,
    ) -> IndexReport:
        """Drop everything indexed and index every root again from the files."""
        roots = self.roots()
        self._analyzer = None
        self.store.clear()
        self.store.set_manifest(build_manifest(self.settings))
        report = IndexReport(rebuilt_because="requested")
        result = Indexer(self.store, self.settings, self.index_dir).run(
            roots, force=True, progress=progress, report=report
        )
        self._embed_after_index(result, keyword_only, embed_progress)
        return result

    def _check_manifest(self) -> list[str]:
        """Compare the index's manifest with the settings; clear the index when they differ."""
        current = build_manifest(self.settings)
        stored = self.store.manifest()
        if stored == current:
            return []
        self._analyzer = None
        reasons = manifest_changes(stored, current) if stored else []
        if stored:
            self.store.clear()
        self.store.set_manifest(current)
        return reasons

    def _remember_index(self) -> None:
        """Without a project file, later commands in any folder find this index."""
        if self.config.project_file is not None or self.settings.index.dir:
            return
        with contextlib.suppress(OSError):
            folder = data_dir()
            folder.mkdir(parents=True, exist_ok=True)
            (folder / LAST_INDEX_FILE).write_text(str(self.index_dir), encoding="utf-8")

    # -- search ------------------------------------------------------------------------------

    def analyzer(self) -> Analyzer:
        """The analyzer the index was built with (queries must be analyzed the same way)."""
        if self._analyzer is not None:
            return self._analyzer
        built = self.store.manifest().get("analyzer") if self.index_exists else None
        if isinstance(built, dict):
            analyzer = get_analyzer(
                str(built.get("language", "english")), bool(built.get("stopwords", False))
            )
        else:
            a = self.settings.analysis
            analyzer = get_analyzer(a.language, a.stopwords)
        # Read once, not per query; an index run of this engine resets it.
        self._analyzer = analyzer
        return analyzer

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
        expand_chars: int = 0,
    ) -> SearchResponse:
        """Ranked sections for ``query``. Raises ValueError subclasses for bad arguments.

        ``mode``: ``hybrid`` (keyword and semantic lanes fused), ``keyword`` or ``semantic``;
        default ``search.mode``. Hybrid without vectors (embeddings off, or not built yet)
        returns keyword results with a warning saying so. ``min_score`` drops results below
        it; ``compressed`` also removes near-duplicate sections (``similarity_threshold``) and
        reports the tokens saved (``search/compress.py``). ``expand_chars``: each result's
        text grows to its whole section, then its neighbours, within that many characters
        (``search/expand.py``). ``hypothesis``: the query is a
        hypothetical answer, embedded as a document would be (HyDE); see
        :meth:`search_with_hypothesis`.
        """
        started = time.perf_counter()
        chosen = mode or self.settings.search.mode
        if chosen not in MODES:
            raise ValueError(f"mode must be one of {', '.join(MODES)}, got {chosen!r}")
        k = top_k or self.settings.search.top_k
        if k < 1 or k > 1000:
            raise ValueError(f"top_k must be between 1 and 1000, got {k}")
        if not 0 <= expand_chars <= 100_000:
            raise ValueError(f"expand_chars must be between 0 and 100000, got {expand_chars}")
        for name, value in (
            ("min_score", min_score),
            ("similarity_threshold", similarity_threshold),
        ):
            if not 0.0 <= value <= 1.0:
                raise ValueError(f"{name} must be between 0 and 1, got {value}")
        filters = build_filters(
            paths=paths,
            tags=tags,
            roots=roots,
            after=after,
            before=before,
            where=where,
            exclude_paths=exclude_paths,
        )
        warnings: list[str] = []
        if not self.index_exists:
            return SearchResponse(query, [], 0.0, 0, ["the index is empty: run noteseek index"])
        if filters.roots:
            indexed = self.store.roots()
            unknown = [r for r in filters.roots if r not in indexed]
            if unknown:
                raise ValueError(
                    f"unknown root {unknown[0]!r}; indexed roots: {', '.join(indexed)}"
                )
        analyzer = self.analyzer()
        lane = self._vector_lane(chosen, warnings, hypothesis=hypothesis)
        result = pipeline.run(
            self.store,
            analyzer,
            query,
            filters,
            k,
            chosen,
            self.settings.search,
            lane,
            explain=explain,
            with_text=with_text or compressed,
            snippets=snippets,
            reranker=self._reranker(warnings),
            rerank_top=self.settings.rerank.top_n,
            recency_tiers=self._recency_tiers(),
            communities=self._file_communities()
            if self.settings.search.community_boost != 1.0
            else None,
            expand_chars=expand_chars,
            concepts=self._concepts_for(chosen, lane, warnings),
            graph=self._graph_view() if self.settings.search.graph_weight > 0 else None,
        )
        hits = [h for h in result.hits if h.score >= min_score] if min_score else result.hits
        compression = None
        if compressed:
            hits, info = compress(
                result.hits, min_score=min_score, similarity_threshold=similarity_threshold
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
        )

    def concept_vocabulary(self, *, wait: bool = True) -> ConceptVocabulary | None:
        """The index's concept vocabulary for query expansion (``search/concepts.py``).

        Built on first use (seconds: every vocabulary word is embedded), then rebuilt in the
        background at most hourly after the index changed. ``wait=False`` starts the build
        and returns None until it is ready.
        """
        return self._concepts.get(wait=wait)

    def _concepts_for(
        self, mode: str, lane: VectorLane | None, warnings: list[str]
    ) -> ConceptVocabulary | None:
        if not self.settings.search.expansion_terms or mode != "hybrid" or lane is None:
            return None
        vocabulary = self._concepts.get(wait=False)
        if vocabulary is None:
            warnings.append("query expansion: the concept vocabulary is being built")
        return vocabulary

    def _build_concepts_apart(self) -> ConceptVocabulary:
        yield_cpu()  # searches come first
        return self._build_concepts()

    def _build_concepts(self) -> ConceptVocabulary:
        return ConceptVocabulary.build(
            self.store.iter_chunk_texts(), self.analyzer(), self.embedder().embed_documents
        )

    def search_with_hypothesis(
        self, hypothesis: str, top_k: int | None = None, **filters: Any
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
        embedded, total = self.embedding_progress(allow_stale=True)
        if embedded == 0:
            stored_model = self.store.meta(MODEL_META_KEY)
            note = (
                f"the index has no vectors of {self.model_id} yet"
                + (
                    f" (it has {stored_model}'s)"
                    if stored_model and stored_model != self.model_id
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
            return VectorLane(self.vector_index(), embed)
        except EmbeddingError as exc:
            if mode == "semantic":
                raise ValueError(str(exc)) from exc
            warnings.append(f"semantic lane unavailable: {exc}; showing keyword results only")
            return None

    def communities(self) -> dict[str, int]:
        """doc_id -> link-graph community (Louvain), for documents with resolved links.

        Computed on first use. After the index changes, it is recomputed on a background
        thread, at most once a minute, and the previous communities answer meanwhile: a burst
        of edits does not run Louvain once per edit, and no query waits for a recomputation.
        """
        communities = self._communities.get()
        return dict(communities[0]) if communities else {}

    def _file_communities(self) -> dict[int, int]:
        communities = self._communities.get()
        return communities[1] if communities else {}

    def _compute_communities(self) -> tuple[dict[str, int], dict[int, int]]:
        return _communities_of(self.link_graph(), self.store.iter_files())

    def _compute_communities_apart(self) -> tuple[dict[str, int], dict[int, int]]:
        """The background recomputation: on its own connection (reading every file and link
        takes seconds on a large index, and the shared connection would hold the searches' SQL
        meanwhile) and at a lower CPU priority than searches."""
        yield_cpu()
        store = SQLiteStore(self.index_dir / INDEX_FILE, readonly=True)
        try:
            return _communities_of(_build_link_graph(store), store.iter_files())
        finally:
            store.close()

    def _recency_tiers(self) -> list[tuple[float, float]]:
        """The recency tiers in force: none when off, or in auto mode with untrustworthy dates."""
        mode = self.settings.search.recency
        if mode == "off":
            return []
        if mode == "auto":
            token = self.store.change_token()
            if self._dates_trusted is None or self._dates_trusted[0] != token:
                trusted = recency.dates_trustworthy(self.store.document_dates())
                self._dates_trusted = (token, trusted)
            if not self._dates_trusted[1]:
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

    # -- links -------------------------------------------------------------------------------

    def link_graph(self) -> LinkGraph:
        """The resolved link graph of the index, rebuilt when the index changed."""
        token = self.store.change_token()
        if self._graph is None or self._graph[0] != token:
            self._graph = (token, _build_link_graph(self.store))
        return self._graph[1]

    def _graph_view(self) -> GraphView:
        """The link graph over file ids, for the graph lane; rebuilt when the index changed."""
        token = self.store.change_token()
        if self._graph_by_file is None or self._graph_by_file[0] != token:
            ids = {f.doc_id: f.file_id for f in self.store.iter_files()}
            self._graph_by_file = (token, GraphView.build(self.link_graph(), ids))
        return self._graph_by_file[1]

    def links(self, ref: str) -> dict[str, Any]:
        """A document's outgoing links (resolved or not) and its backlinks, by path or doc id."""
        file = self._resolve_file(ref)
        graph = self.link_graph()

        def describe(edge: Edge, other: str) -> dict[str, Any]:
            doc = graph.docs.get(other)
            return {
                "doc_id": other if doc else None,
                "placeholder": None if doc else other[1:],
                "title": doc.title if doc else None,
                "type": edge.type,
                "line": edge.line,
                "anchor": edge.anchor,
            }

        return {
            "doc_id": file.doc_id,
            "outgoing": [describe(e, e.target) for e in graph.outgoing(file.doc_id)],
            "backlinks": [describe(e, e.source) for e in graph.backlinks(file.doc_id)],
        }

    # -- get ---------------------------------------------------------------------------------

    def get(self, ref: str) -> GetResult:
        """A chunk by id, the section holding ``path:line``, or a whole document by path."""
        ref = ref.strip()
        if not ref:
            raise ValueError("give a chunk id, a path, or path:line")
        if _CHUNK_ID_RE.match(ref):
            row = self.store.chunk_by_id(ref)
            if row is not None:
                return _from_chunks("chunk", [row], self._stale(row.file_id))
        m = _PATH_LINE_RE.match(ref)
        if m and not Path(ref).exists():
            file = self._resolve_file(m.group(1))
            line = int(m.group(2))
            return self._section_at(file, line)
        file = self._resolve_file(ref)
        chunks = self.store.file_chunks(file.file_id)
        text = self._read_document(file)
        stale = text is None or self._stale(file.file_id)
        lines = (text if text is not None else "\n".join(c.text for c in chunks)).split("\n")
        return GetResult(
            "document",
            file.root,
            file.path,
            file.doc_id,
            file.title,
            (),
            1,
            len(lines),
            "\n".join(lines),
            [c.chunk_id for c in chunks],
            stale,
        )

    def read_document(self, ref: str) -> tuple[FileRow, str]:
        """An indexed document and its current text, never from outside its root.

        ``ref`` is a root-relative path, a doc id, or an absolute path inside a root. ``..``
        is refused, and so is a file whose real path leads out of its root (a symbolic link).
        Raises NotFound or Ambiguous (LookupError) and ValueError with a precise message.
        """
        norm = ref.replace("\\", "/")
        if ".." in norm.split("/"):
            raise ValueError(f"{ref!r}: '..' is not allowed; give a path inside a root")
        if os.path.isabs(ref):
            try:
                file = self._resolve_file(ref)
            except NotFound:
                raise NotFound(f"{ref!r} is not a document inside the indexed roots") from None
        else:
            file = self._resolve_file(norm)
        root_real = Path(os.path.realpath(file.root_path))
        if not Path(os.path.realpath(Path(file.root_path) / file.path)).is_relative_to(root_real):
            raise NotFound(f"{ref!r} leads outside its root (symbolic link); not readable")
        text = self._read_document(file)
        if text is None:
            raise NotFound(f"cannot read {file.doc_id}: the file is gone or unreadable")
        return file, text

    def section(self, ref: str, line: int) -> GetResult:
        """The whole section (neighbouring pieces under one heading) holding ``line``."""
        return self._section_at(self._resolve_file(ref), line)

    @contextlib.contextmanager
    def writer_role(self, command: str) -> Iterator[None]:
        """Hold the index's writer role for a one-shot command, or raise WriterBusy."""
        from noteseek.indexing.lock import WriterLock, read_writer_info
        from noteseek.indexing.service import NotWriter

        lock = WriterLock(self.index_dir)
        if not lock.try_acquire():
            holder = read_writer_info(self.index_dir) or {}
            pid = f" (pid {holder['pid']})" if holder.get("pid") else ""
            raise NotWriter(
                f"another noteseek process{pid} is the writer of this index and keeps it fresh; "
                "ask it to re-index (MCP tool reindex, or POST /reindex) or stop it first"
            )
        try:
            yield
        finally:
            lock.release()

    def _section_at(self, file: FileRow, line: int) -> GetResult:
        chunks = self.store.file_chunks(file.file_id)
        if not chunks:
            raise NotFound(f"{file.doc_id} has no indexed text")
        last = max(c.end_line for c in chunks)
        if line < 1 or line > last:
            raise NotFound(f"{file.doc_id} has lines 1-{last} indexed; line {line} is outside")
        holding = [c for c in chunks if c.start_line <= line <= c.end_line]
        if not holding:
            # A blank line between chunks: take the chunk that starts after it.
            holding = [min((c for c in chunks if c.start_line > line), key=lambda c: c.start_line)]
        target = holding[0]
        # The whole section: neighbouring pieces of the same heading.
        i = chunks.index(target)
        lo = hi = i
        while lo > 0 and chunks[lo - 1].heading_path == target.heading_path:
            lo -= 1
        while hi + 1 < len(chunks) and chunks[hi + 1].heading_path == target.heading_path:
            hi += 1
        return _from_chunks("section", chunks[lo : hi + 1], self._stale(file.file_id))

    def _resolve_file(self, ref: str) -> FileRow:
        candidates = self.store.find_files(ref.replace(os.sep, "/"))
        if not candidates:
            # A path on disk (absolute, or relative to the working directory) inside a root.
            try:
                disk = Path(ref).expanduser()
            except RuntimeError:  # ~name of a user this system does not know
                disk = Path(ref)
            real = disk.resolve() if disk.exists() else None
            if real is not None:
                for name, root_path in self.store.roots().items():
                    try:
                        rel = real.relative_to(Path(root_path))
                    except ValueError:
                        continue
                    candidates = self.store.find_files(rel.as_posix(), root=name)
                    if candidates:
                        break
        if not candidates:
            raise NotFound(f"no indexed document at {ref!r}")
        if len(candidates) > 1:
            ids = ", ".join(c.doc_id for c in candidates)
            raise Ambiguous(f"{ref!r} is in several roots: {ids}; give one of these ids")
        return candidates[0]

    def _read_document(self, file: FileRow) -> str | None:
        try:
            data = (Path(file.root_path) / file.path).read_bytes()
        except OSError:
            return None
        text = data.decode("utf-8", errors="replace").lstrip("\ufeff")
        return text.replace("\r\n", "\n").replace("\r", "\n")

    def _stale(self, file_id: int) -> bool:
        file = self.store.file_row(file_id)
        if file is None:
            return True
        try:
            st = (Path(file.root_path) / file.path).stat()
        except OSError:
            return True
        return st.st_mtime_ns != file.mtime_ns or st.st_size != file.size

    # -- status ------------------------------------------------------------------------------

    def status(self) -> dict[str, Any]:
        out: dict[str, Any] = {
            "index_dir": str(self.index_dir),
            "index_dir_reason": self.config.index_dir_reason,
            "exists": self.index_exists,
            "config_files": [str(p) for p in self.config.files_read],
        }
        if not self.index_exists:
            out.update(
                roots=[
                    {"name": n, "path": r.path, "files": 0, "chunks": 0}
                    for n, r in sorted(self.roots().items())
                ],
                files=0,
                chunks=0,
                links=0,
                index_bytes=0,
                problems=[],
                last_run=None,
            )
            return out
        stats = self.store.stats()
        configured = self.settings.roots
        for root in stats["roots"]:
            root["configured"] = root["name"] in configured
        out.update(stats)
        out["problems"] = [
            {"root": p.root, "path": p.path, "severity": p.severity, "reason": p.reason}
            for p in self.store.problems()
        ]
        out["last_run"] = self.store.last_run()
        embedded, total = self.embedding_progress(allow_stale=True)
        emb = self.settings.embedding
        out["embedding"] = {
            "enabled": emb.enabled,
            "provider": emb.provider,
            "model": self.model_id,
            "index_model": self.store.meta(MODEL_META_KEY),
            "embedded": embedded,
            "total": total,
            "pending": total - embedded,
        }
        cached = self._communities.cached  # status never runs Louvain itself
        if cached is not None:
            groups = cached[0]
            out["communities"] = {
                "count": len(set(groups.values())),
                "documents": len(groups),
            }
        out["manifest"] = self.store.manifest()
        out["notices"] = list(self.notices)
        return out


def _communities_of(
    graph: LinkGraph, files: Iterable[FileRow]
) -> tuple[dict[str, int], dict[int, int]]:
    from noteseek.graph.communities import communities

    by_doc = communities(graph)
    ids = {f.doc_id: f.file_id for f in files}
    return by_doc, {ids[d]: c for d, c in by_doc.items() if d in ids}


def _build_link_graph(store: SQLiteStore) -> LinkGraph:
    docs = [
        DocInfo(f.doc_id, f.root, f.path, f.title, tuple(f.aliases)) for f in store.iter_files()
    ]
    return LinkGraph.build(docs, [RawLink(*row) for row in store.link_rows()])


def _from_chunks(kind: str, chunks: list[ChunkRow], stale: bool) -> GetResult:
    first, last = chunks[0], chunks[-1]
    return GetResult(
        kind,
        first.root,
        first.path,
        first.doc_id,
        first.title,
        first.heading_path,
        first.start_line,
        last.end_line,
        "\n".join(c.text for c in chunks),
        [c.chunk_id for c in chunks],
        stale,
    )


def open_engine(
    cwd: Path | None = None,
    config_file: Path | None = None,
    flags: Mapping[str, Any] | None = None,
    *,
    roots: Sequence[str] = (),
    environ: Mapping[str, str] | None = None,
) -> Engine:
    """An engine for the configuration found from ``cwd`` (or ``config_file``).

    ``roots`` are folders (or root names) the caller is about to index: folders that are not
    configured roots become roots of this index, and without a project file they choose which
    index (one per set of roots, in the user data dir). Without a project file, configured
    roots or ``roots``, the index used last is opened, so ``noteseek index ~/notes`` followed
    by ``noteseek search ...`` just works.
    """
    config = load_settings(cwd, config_file, flags, environ)
    settings = config.settings
    extra: dict[str, RootConfig] = {}
    for ref in roots:
        if ref in settings.roots:
            continue
        path = Path(ref).expanduser()
        if not path.is_absolute() and cwd is not None:
            path = cwd / path
        if path.is_dir():
            name, root = ad_hoc_root(path, {**settings.roots, **extra})
            extra[name] = root
    if extra and config.project_file is None and not settings.index.dir:
        config.index_dir = default_index_dir({**settings.roots, **extra})
        config.index_dir_reason = "user data dir, keyed by the roots"
    elif (
        not settings.roots and not extra and config.project_file is None and not settings.index.dir
    ):
        last = data_dir() / LAST_INDEX_FILE
        with contextlib.suppress(OSError):
            remembered = Path(last.read_text(encoding="utf-8").strip())
            if (remembered / INDEX_FILE).exists():
                config.index_dir = remembered
                config.index_dir_reason = "the index used last (no project file or roots)"
    return Engine(config)
