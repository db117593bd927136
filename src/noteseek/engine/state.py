"""The opened index: its settings, store, embedder and every value derived from it.

Each derived value is a :class:`~noteseek.engine.derived.Derived` keyed by the store's change
token, so every one of them is refreshed the same way when the index changes:

============== =============================== ===============================================
value          computed from                   refreshed
============== =============================== ===============================================
analyzer       the manifest the index was      inline (reads one row)
               built with
link graph     the graph kept with the index   inline; read as kept (graph/sync.py), or
               (files and links otherwise)     resolved here while the kept one lags a write
graph view     the link graph over file ids    inline
dates trusted  every document's date           inline
vector index   the model's vectors             kept once per model; it follows the change
                                               token itself, incrementally (store/ann.py)
embedding      counting vectors per chunk      inline, or in the background for searches and
progress                                       status when the last count was expensive
communities    kept with the index (Louvain,   inline (read as kept); computed here only for
               run by the writer)              an index that has none yet, then in the
                                               background, at most once a minute
concepts       every chunk's words, embedded   in the background, at most once an hour
============== =============================== ===============================================

Background refreshes read the index on their own read-only connection, at a lower priority.
"""

from __future__ import annotations

import contextlib
from collections.abc import Callable, Hashable, Iterator, Mapping
from typing import Any

from noteseek.analysis import Analyzer, get_analyzer
from noteseek.config import LoadedConfig, RootConfig
from noteseek.embed.base import Embedder
from noteseek.embed.factory import acquire_embedder, configured_model_id, release_embedder
from noteseek.engine import model_choice
from noteseek.engine.derived import Derived
from noteseek.engine.roots import Roots
from noteseek.graph.links import LinkGraph
from noteseek.graph.sync import build_link_graph, load_graph
from noteseek.indexing.lock import holds_writer
from noteseek.priority import yield_cpu
from noteseek.search import recency
from noteseek.search.concepts import ConceptVocabulary
from noteseek.search.graph_lane import GraphView
from noteseek.sources.base import Source, SourceContext
from noteseek.sources.registry import specs
from noteseek.store import folder as index_folder
from noteseek.store.ann import in_background, save_from
from noteseek.store.base import Store, VectorIndex
from noteseek.store.errors import StoreError
from noteseek.store.factory import Backend, backend_for, damage, index_file
from noteseek.types import KEYWORD_ONLY_NOTE as KEYWORD_ONLY_NOTE

COMMUNITY_THROTTLE = 60.0
"""Seconds between recomputations of the link-graph communities while the index changes."""
CONCEPT_THROTTLE = 3600.0
"""Seconds between rebuilds of the concept vocabulary (every vocabulary word is embedded)."""

REBUILDING = "being rebuilt from the files; it was damaged: "
"""How a damaged index is recorded while it is rebuilt (searches are refused meanwhile)."""

KEYWORD_ONLY_META_KEY = "keyword_only"
"""Meta key: "1" when the user chose a keyword-only index (``noteseek index --keyword-only``)."""

Communities = dict[int, int]
"""Community per file id (for the community boost)."""
COMPUTED_HERE = 0.5
"""Seconds above which communities computed in this process (an index that keeps none yet)
are recomputed in the background; communities read as kept are read again inline."""


class IndexState:
    """One index opened by one engine: shared by its services, closed with it."""

    def __init__(self, config: LoadedConfig) -> None:
        self.config = config
        self.settings = config.settings
        self.index_dir = config.index_dir
        self.notices: list[str] = []
        """Things the user should know (vectors dropped, the index open read-only)."""
        self.read_only: str | None = None
        """Why the index is open read-only (its folder is not writable), when it is."""
        self._store: Store | None = None
        self._file: index_folder.FileIdentity | None = None
        self._embedder: Embedder | None = None
        self._roots = Roots(config, lambda: self.store, lambda: self.index_exists, self._foreign)
        token = self.token
        self._analyzer = Derived("analyzer", self._read_analyzer, token)
        self._link_graph = Derived("links", lambda: current_link_graph(self.store, self.cap), token)
        self._graph_view = Derived("graph-view", self._build_graph_view, token)
        self._dates_trusted = Derived("dates", self._check_dates, token)
        self._vectors = Derived("vectors", self._open_vector_index, lambda: self.model_id)
        self._progress = Derived(
            "count",
            lambda: self.store.vector_progress(self.model_id),
            token,
            background=self._count_apart,
            expensive=lambda counts, seconds: in_background(counts[1], seconds),
        )
        self._communities = Derived(
            "communities",
            lambda: communities_of(self.store, self.link_graph),
            token,
            background=self._communities_apart,
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
        self._derived: tuple[Derived[Any], ...] = (
            self._analyzer,
            self._link_graph,
            self._graph_view,
            self._dates_trusted,
            self._vectors,
            self._progress,
            self._communities,
            self._concepts,
        )

    # -- the store and the embedder --------------------------------------------------------

    @property
    def store(self) -> Store:
        """The index's store, opened (or created) on first use.

        Raises a ``StoreError`` when the index cannot be used (``IndexCorrupt``: damaged).
        """
        if self._store is None:
            store, self.read_only = self.backend.open()
            self._store = store
            self._file = index_file(self.index_dir)
            self._adopt_model(store)
        return self._store

    @property
    def backend(self) -> Backend:
        """Where the index is kept, as the settings choose (asked, never type-checked)."""
        return backend_for(self.settings, self.index_dir)

    def _adopt_model(self, store: Store) -> None:
        notice = model_choice.adopt(self.config, store)
        if notice:
            self.notices.append(notice)

    def record_model(self) -> None:
        """Remember the embedding provider and model this index's vectors are made with."""
        model_choice.record(self.settings, self.store)

    def damage(self) -> str | None:
        """Why the index is damaged (found by any process, recorded in its folder), or None.

        Cheap (a stat and, when damaged, a small read) and safe from any thread.
        """
        return damage(self.index_dir)

    def damaged(self) -> str | None:
        """What every door says while the index is damaged (where, why, what rebuilds it)."""
        reason = self.damage()
        return None if reason is None else index_folder.damaged_message(self.index_dir, reason)

    def refresh(self) -> None:
        """Open the index again when its file was deleted and created again (a rebuild of a
        damaged index, by another process or thread) since this handle opened it."""
        if self._store is not None and index_file(self.index_dir) != self._file:
            self._close_store()

    def recreate(self, reason: str) -> str:
        """Delete the damaged index's files and create an empty index; returns what was done.

        The new file is recorded as being rebuilt until :meth:`rebuilt`, so searches say so
        rather than answer from part of the index.
        """
        reason = reason.removeprefix(REBUILDING)  # a rebuild that was interrupted
        # Recorded before the files go, about whichever file is there: no search, here or in
        # another process, answers from the new index until it is complete.
        index_folder.mark_damaged(self.index_dir, REBUILDING + reason, None)
        self._close_store()
        removed = self.backend.remove()
        self.store.change_token()  # creates the new, empty index
        return (
            f"the index was damaged ({reason}): deleted {', '.join(removed) or 'its files'} "
            "and built it again from the files"
        )

    def rebuilt(self) -> None:
        """The index was built again from the files: nothing recorded against it holds."""
        index_folder.clear_damage(self.index_dir)
        self.remember_roots()

    def remember_roots(self) -> None:
        """Keep the index's roots beside it, so a rebuild of a damaged index knows them."""
        if self.read_only is None:
            index_folder.save_roots(self.index_dir, self._roots.stored())

    def store_info(self) -> dict[str, Any]:
        """The backend and where it is, without secrets (and, for Milvus once open, its
        server version and rows per collection)."""
        try:
            return self.backend.describe(lambda: self.store)
        except StoreError as exc:
            return {**self.backend.describe(), "error": str(exc)}

    @property
    def index_exists(self) -> bool:
        return self.backend.present()

    def token(self) -> Hashable:
        """The store's change token; None while there is no index (nothing to derive from)."""
        if self._store is None and not self.index_exists:
            return None
        return self.store.change_token()

    @contextlib.contextmanager
    def reader(self) -> Iterator[Store]:
        """A read-only connection of its own, for work on a background thread."""
        store = self.backend.reader()
        try:
            yield store
        finally:
            store.close()

    @property
    def model_id(self) -> str:
        """The id of the embedding model in use (without loading it): the configured one, or
        the one the index was built with when no setting chose one."""
        if self._store is None and self.index_exists:
            self.store  # noqa: B018 (opening the index adopts its model)
        return configured_model_id(self.settings.embedding)

    def embedder(self) -> Embedder:
        """The configured embedder, loaded on first use and shared by every state of this
        process with the same embedding settings (raises EmbeddingError)."""
        if self._embedder is None:
            self.model_id  # noqa: B018 (an existing index's model first: see model_choice)
            self._embedder = acquire_embedder(self.settings.embedding)
        return self._embedder

    def close(self) -> None:
        if self._embedder is not None:
            release_embedder(self._embedder)
            self._embedder = None
        self._close_store()

    def _close_store(self) -> None:
        vectors = self._vectors.cached
        if vectors is not None:
            vectors.close()
        # Change tokens are per connection: nothing derived from this one holds after it.
        for derived in self._derived:
            derived.reset()
        if self._store is not None:
            self._store.close()
            self._store = None

    def roots(self) -> dict[str, RootConfig]:
        """Every root of the index (``engine/roots.py``)."""
        return self._roots.all()

    def kinds(self) -> dict[str, str]:
        """Root name -> its source kind, for every root of :meth:`roots`."""
        return self._roots.kinds()

    def source(self, name: str, stored: str | None = None) -> Source:
        """The source of root ``name`` (``stored``: where the store says a root no longer
        configured is)."""
        return self._roots.source(name, stored)

    def source_context(self, roots: Mapping[str, RootConfig] | None = None) -> SourceContext:
        """What every source of this index is built with."""
        return self._roots.source_context(roots)

    def naming_roots(self) -> dict[str, str]:
        """The indexed roots that tell this index apart (name -> location)."""
        return self._roots.naming()

    def _foreign(self) -> set[str]:
        return self.backend.foreign_roots(lambda: self.store)

    # -- the derived values ----------------------------------------------------------------

    def analyzer(self) -> Analyzer:
        """The analyzer the index was built with (queries must be analyzed the same way)."""
        return self._analyzer.get()

    @property
    def cap(self) -> int:
        """Links of each document the link graph keeps (``search.max_links_per_document``)."""
        return self.settings.search.max_links_per_document

    def link_graph(self) -> LinkGraph:
        """The resolved link graph of the index, read again when the index changed."""
        return self._link_graph.get()

    def graph_view(self) -> GraphView:
        """The link graph over file ids, for the graph lane; rebuilt when the index changed."""
        return self._graph_view.get()

    def dates_trusted(self) -> bool:
        """Whether the documents' dates say when they were written (recency, ``auto``)."""
        return self._dates_trusted.get()

    def keyword_only(self) -> bool:
        """Whether the user chose a keyword-only index (remembered in the index, so later
        ``index`` runs, ``serve``, ``mcp`` and ``watch`` do not start embedding)."""
        if self._store is None and not self.index_exists:
            return False
        return self.store.meta(KEYWORD_ONLY_META_KEY) == "1"

    def choose_keyword_only(self, keyword_only: bool) -> None:
        """Remember (True) or drop (False) the choice of a keyword-only index."""
        self.store.set_meta(KEYWORD_ONLY_META_KEY, "1" if keyword_only else "0")

    def wants_vectors(self) -> bool:
        """Whether chunks should be embedded: embeddings on, and not a keyword-only index."""
        return self.settings.embedding.enabled and not self.keyword_only()

    def vector_index(self) -> VectorIndex:
        """The vectors of the configured model (loads the embedder for its dimension)."""
        return self._vectors.get()

    def settle_vectors(self) -> None:
        """After an index run, as the writer: save the vectors (and build and save the HNSW
        graph, above its threshold) beside the index when there are enough for loading them to
        be slow (store/ann_saved.py: the next process maps them)."""
        have = self.store.vector_models().get(self.model_id, 0)
        if have >= save_from(self.settings.vectors.hnsw_threshold) and self.wants_vectors():
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
            f.doc_id: by_file[f.file_id] for f in self.store.iter_files() if f.file_id in by_file
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

    def known_communities(self) -> dict[int, int] | None:
        """The communities by file id if known without running Louvain (status)."""
        cached = self._communities.cached
        return cached if cached is not None else self.store.stored_communities()

    def concept_vocabulary(self, *, wait: bool = True) -> ConceptVocabulary | None:
        """The index's concept vocabulary for query expansion (``search/concepts.py``).

        Built on first use (seconds: every vocabulary word is embedded), then rebuilt in the
        background at most hourly after the index changed. ``wait=False`` starts the build
        and returns None until it is ready.
        """
        return self._concepts.get(wait=wait)

    # -- computing them --------------------------------------------------------------------

    def _read_analyzer(self) -> Analyzer:
        """The analyzer the index was built with (queries must be analyzed the same way)."""
        built = self.store.manifest().get("analyzer") if self.index_exists else None
        if isinstance(built, dict):
            return get_analyzer(
                str(built.get("language", "english")), bool(built.get("stopwords", False))
            )
        a = self.settings.analysis
        return get_analyzer(a.language, a.stopwords)

    def _build_graph_view(self) -> GraphView:
        ids = {f.doc_id: f.file_id for f in self.store.iter_files()}
        return GraphView.build(self.link_graph(), ids)

    def _check_dates(self) -> bool:
        # Kinds whose dates are always real (commits) say nothing of whether the notes' are.
        real = [spec.name for spec in specs() if not spec.judges_dates]
        return recency.dates_trustworthy(self.store.document_dates(exclude_kinds=real))

    def _open_vector_index(self) -> VectorIndex:
        v = self.settings.vectors
        return self.store.vector_index(
            self.model_id,
            self.embedder().dimension,
            dtype=v.dtype,
            hnsw_threshold=v.hnsw_threshold,
            may_save=lambda: holds_writer(self.index_dir),
        )

    def _count_apart(self) -> tuple[int, int]:
        yield_cpu()
        with self.reader() as store:
            return store.vector_progress(self.model_id)

    def _communities_apart(self) -> Communities:
        yield_cpu()
        with self.reader() as store:
            return communities_of(store, lambda: current_link_graph(store, self.cap))

    def _build_concepts(self) -> ConceptVocabulary:
        return ConceptVocabulary.build(
            self.store.iter_chunk_texts(), self.analyzer(), self.embedder().embed_documents
        )

    def _build_concepts_apart(self) -> ConceptVocabulary:
        yield_cpu()  # searches come first
        return self._build_concepts()


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
