"""Every value derived from an opened index, each kept in step with the store's change token.

============== =============================== ===============================================
value          computed from                   refreshed
============== =============================== ===============================================
analyzer       the manifest the index was      inline (reads one row)
               built with
link graph     the graph kept with the index   inline; read as kept (graph/sync.py), or
               (files and links otherwise)     resolved here while the kept one lags a write
graph view     the link graph over file ids    inline
dates trusted  every document's date           inline the first time; after a change in
                                               the background, at most every 10 s
vector index   the model's vectors             kept once per model; it follows the change
                                               token itself, incrementally (store/ann.py)
embedding      counting vectors per chunk      inline, or in the background for searches and
progress                                       status when the last count was expensive
communities    kept with the index (Louvain,   inline (read as kept); computed here only for
               run by the writer)              an index that has none yet, then in the
                                               background, at most once a minute
concepts       every chunk's words, embedded   in the background, at most once an hour
spelling       the keyword index's terms and   inline, on the first search with a word that
               their document counts           matches nothing; after a change in the
                                               background, at most every 30 s
============== =============================== ===============================================

Each is a :class:`~noteseek.engine.derived.Derived`. Background refreshes read the index on
their own read-only connection (``IndexState.reader``), at a lower priority.
"""

from __future__ import annotations

import contextlib
from collections.abc import Callable, Hashable
from pathlib import Path
from typing import TYPE_CHECKING, Any, Protocol, TypeVar

from noteseek.config import Settings
from noteseek.embed.base import Embedder
from noteseek.engine.derived import Derived
from noteseek.graph.links import LinkGraph
from noteseek.graph.sync import build_link_graph, load_document_graph, load_graph
from noteseek.priority import yield_cpu
from noteseek.search import recency
from noteseek.sources.registry import specs
from noteseek.store.base import Store, VectorIndex

T = TypeVar("T")

if TYPE_CHECKING:  # numpy's users load with the first search, not with `noteseek status`
    from noteseek.analysis import Analyzer
    from noteseek.search.concepts import ConceptVocabulary
    from noteseek.search.graph_lane import GraphView
    from noteseek.search.spelling import Spelling

COMMUNITY_THROTTLE = 60.0
"""Seconds between recomputations of the link-graph communities while the index changes."""
SPELLING_THROTTLE = 30.0
"""Seconds between re-reads of the vocabulary for typo tolerance while the index changes: a
server taking memory writes would otherwise read every term again on the next search with a
word that matches nothing after each write. A term the last read missed is not offered for at
most this long; a term since gone is offered and matches nothing."""
DATES_THROTTLE = 10.0
"""Seconds between re-reads of every document's date (whether recency can trust them) while
the index changes: a server taking memory writes re-read them all on each search after each
write (a third of a search's time on the 992-page Hugo docs). The verdict turns only when a
bulk copy or checkout gives most documents one time; it follows at most this much later."""
CONCEPT_THROTTLE = 3600.0
"""Seconds between rebuilds of the concept vocabulary (every vocabulary word is embedded)."""
Communities = dict[int, int]
"""Community per file id (for the community boost)."""
COMPUTED_HERE = 0.5
"""Seconds above which communities computed in this process (an index that keeps none yet)
are recomputed in the background; communities read as kept are read again inline."""


class OpenedIndex(Protocol):
    """What the values are derived from: the opened index (``engine/state.py``)."""

    settings: Settings
    index_dir: Path

    @property
    def store(self) -> Store: ...

    @property
    def model_id(self) -> str: ...

    @property
    def index_exists(self) -> bool: ...

    def token(self) -> Hashable: ...

    def embedder(self) -> Embedder: ...

    def reader(self) -> contextlib.AbstractContextManager[Store]: ...

    def wants_vectors(self) -> bool: ...


class IndexValues:
    """The values derived from one opened index (see the module docstring)."""

    def __init__(self, state: OpenedIndex) -> None:
        self.state = state
        self.settings = state.settings
        token = state.token
        self._analyzer = Derived("analyzer", self._read_analyzer, token)
        self._link_graph = Derived(
            "links", lambda: current_link_graph(self.state.store, self.cap), token
        )
        self._graph_view = Derived("graph-view", self._build_graph_view, token)
        self._dates_trusted = Derived(
            "dates",
            lambda: self._check_dates(self.state.store),
            token,
            background=self._apart(self._check_dates),
            throttle=DATES_THROTTLE,
        )
        self._vectors = Derived("vectors", self._open_vector_index, lambda: state.model_id)
        self._progress = Derived(
            "count",
            lambda: self.state.store.vector_progress(self.state.model_id),
            token,
            background=self._apart(lambda store: store.vector_progress(self.state.model_id)),
            expensive=lambda counts, seconds: _in_background(counts[1], seconds),
        )
        self._communities = Derived(
            "communities",
            lambda: communities_of(self.state.store, self.link_graph),
            token,
            background=self._apart(
                lambda store: communities_of(store, lambda: current_link_graph(store, self.cap))
            ),
            throttle=COMMUNITY_THROTTLE,
            expensive=lambda _, seconds: seconds > COMPUTED_HERE,
        )
        self._concepts = Derived(
            "concepts",
            self._build_concepts,
            token,
            background=self._build_concepts_apart,
            throttle=CONCEPT_THROTTLE,
        )
        self._spelling = Derived(
            "spelling",
            lambda: self._spelling_of(self.state.store),
            token,
            background=self._apart(self._spelling_of),
            throttle=SPELLING_THROTTLE,
        )
        self._derived: tuple[Derived[Any], ...] = (
            self._analyzer,
            self._link_graph,
            self._graph_view,
            self._dates_trusted,
            self._vectors,
            self._progress,
            self._communities,
            self._concepts,
            self._spelling,
        )

    def reset(self) -> None:
        """Forget every value (the store's connection is closing: its change tokens end with
        it); the vector index is closed first."""
        vectors = self._vectors.cached
        if vectors is not None:
            vectors.close()
        for derived in self._derived:
            derived.reset()

    def analyzer(self) -> Analyzer:
        """The analyzer the index was built with (queries must be analyzed the same way)."""
        return self._analyzer.get()

    def spelling(self) -> Spelling:
        """The index's vocabulary for typo tolerance (``search/spelling.py``): read when a
        search first meets a word that matches nothing, again after the index changed."""
        return self._spelling.get()

    @property
    def cap(self) -> int:
        """Links of each document the link graph keeps (``search.max_links_per_document``)."""
        return self.settings.search.max_links_per_document

    def link_graph(self) -> LinkGraph:
        """The resolved link graph of the index, read again when the index changed."""
        return self._link_graph.get()

    def document_graph(self, file_id: int, doc_id: str) -> LinkGraph:
        """The link graph around one document: the whole graph when this process holds it
        already, else only that document's part of the kept graph (else the whole graph)."""
        if self._link_graph.cached is None:
            part = load_document_graph(self.state.store, self.cap, file_id, doc_id)
            if part is not None:
                return part
        return self.link_graph()

    def graph_view(self) -> GraphView:
        """The link graph over file ids, for the graph lane; rebuilt when the index changed."""
        return self._graph_view.get()

    def dates_trusted(self) -> bool:
        """Whether the documents' dates say when they were written (recency, ``auto``);
        after a change, the last verdict answers while a new one is read in the background
        (:data:`DATES_THROTTLE`)."""
        return self._dates_trusted.get()

    def vector_index(self) -> VectorIndex:
        """The vectors of the configured model (loads the embedder for its dimension)."""
        return self._vectors.get()

    def settle_vectors(self) -> None:
        """After an index run, as the writer: save the vectors (and build and save the HNSW
        graph, above its threshold) beside the index when there are enough for loading them to
        be slow (store/ann_saved.py: the next process maps them)."""
        have = self.state.store.vector_models().get(self.state.model_id, 0)
        if not have or not self.state.wants_vectors():
            return  # no vectors: the vector index (numpy) is not loaded for nothing
        from noteseek.store.ann import save_from

        if have >= save_from(self.settings.vectors.hnsw_threshold):
            self.vector_index().settle()

    def embedding_progress(self, *, allow_stale: bool = False) -> tuple[int, int]:
        """(chunks with a vector of the configured model, all chunks); cached per index change.

        Counting joins every chunk with its vector: milliseconds on small indexes, seconds on
        large ones while they are being written. With ``allow_stale`` (searches and status,
        not the indexer deciding what to embed), an expensive count on a large index
        (``store.ann.in_background``) is redone on a background thread, as the vector
        index is, and the last one answers meanwhile.
        """
        return self._progress.get(stale=allow_stale)

    def communities(self) -> dict[str, int]:
        """doc_id -> link-graph community (Louvain), for documents with resolved links."""
        by_file = self.file_communities()
        return {
            f.doc_id: by_file[f.file_id]
            for f in self.state.store.iter_files()
            if f.file_id in by_file
        }

    def file_communities(self) -> dict[int, int]:
        """The communities by file id (for the community boost).

        Read as the writer kept them with the index (``graph/sync.py``: recomputed after
        the graph changed enough). An index that keeps none yet (built by an older version
        and not indexed since, or in a folder this process cannot write) has them computed
        here on first use, then on a background thread at most once a minute after a change,
        the previous ones answering meanwhile.
        """
        return self._communities.get()

    def community_sizes(self) -> tuple[int, int] | None:
        """How many communities and how many documents in them, if known without running
        Louvain (status): as computed here, else as kept with the index (counted there)."""
        cached = self._communities.cached
        if cached is not None:
            return len(set(cached.values())), len(cached)
        return self.state.store.community_sizes()

    def concept_vocabulary(self, *, wait: bool = True) -> ConceptVocabulary | None:
        """The index's concept vocabulary for query expansion (``search/concepts.py``).

        Built on first use (seconds: every vocabulary word is embedded), then rebuilt in the
        background at most hourly after the index changed. ``wait=False`` starts the build
        and returns None until it is ready.
        """
        return self._concepts.get(wait=wait)

    # -- computing them --------------------------------------------------------------------

    def _read_analyzer(self) -> Analyzer:
        from noteseek.analysis import get_analyzer  # the stemmer loads with a search

        """The analyzer the index was built with (queries must be analyzed the same way)."""
        built = self.state.store.manifest().get("analyzer") if self.state.index_exists else None
        if isinstance(built, dict):
            return get_analyzer(
                str(built.get("language", "english")), bool(built.get("stopwords", False))
            )
        a = self.settings.analysis
        return get_analyzer(a.language, a.stopwords)

    def _build_graph_view(self) -> GraphView:
        ids = {f.doc_id: f.file_id for f in self.state.store.iter_files()}
        from noteseek.search.graph_lane import GraphView

        return GraphView.build(self.link_graph(), ids)

    def _check_dates(self, store: Store) -> bool:
        # Kinds whose dates are always real (commits) say nothing of whether the notes' are.
        real = [spec.name for spec in specs() if not spec.judges_dates]
        return recency.dates_trustworthy(store.document_dates(exclude_kinds=real))

    def _open_vector_index(self) -> VectorIndex:
        v = self.settings.vectors
        return self.state.store.vector_index(
            self.state.model_id,
            self.state.embedder().dimension,
            dtype=v.dtype,
            hnsw_threshold=v.hnsw_threshold,
            may_save=lambda: _holds_writer(self.state.index_dir),
        )

    def _apart(self, read: Callable[[Store], T]) -> Callable[[], T]:
        """``read`` as background work: after searches (``yield_cpu``), on a reader
        connection of its own."""

        def run() -> T:
            yield_cpu()
            with self.state.reader() as store:
                return read(store)

        return run

    def _spelling_of(self, store: Store) -> Spelling:
        from noteseek.search.spelling import Spelling

        return Spelling(store.vocabulary(), self.analyzer())

    def _build_concepts(self) -> ConceptVocabulary:
        from noteseek.search.concepts import ConceptVocabulary

        return ConceptVocabulary.build(
            self.state.store.iter_chunk_texts(),
            self.analyzer(),
            self.state.embedder().embed_documents,
        )

    def _build_concepts_apart(self) -> ConceptVocabulary:
        yield_cpu()  # searches come first
        return self._build_concepts()


def _holds_writer(index_dir: Path) -> bool:
    from noteseek.indexing.lock import holds_writer  # filelock: with vectors only

    return holds_writer(index_dir)


def _in_background(vectors: int, seconds: float) -> bool:
    from noteseek.store.ann import in_background

    return in_background(vectors, seconds)


def current_link_graph(store: Store, max_links_per_document: int) -> LinkGraph:
    """The graph kept with the index when it holds every write, else resolved now."""
    kept = load_graph(store, max_links_per_document)
    return kept if kept is not None else build_link_graph(store, max_links_per_document)


def communities_of(store: Store, graph: Callable[[], LinkGraph]) -> Communities:
    """The communities kept with the index, else those of ``graph()`` (Louvain, here)."""
    kept = store.stored_communities()
    if kept is not None:
        return kept
    from noteseek.graph.communities import communities

    by_doc = communities(graph())
    return {f.file_id: by_doc[f.doc_id] for f in store.iter_files() if f.doc_id in by_doc}
