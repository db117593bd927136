"""The facade every door calls: index, search, get, status.

The CLI, the MCP server and the HTTP API only translate arguments and format what these methods
return; SQL, analysis and ranking stay behind this class. The work is done by small services
over one opened index, and :class:`Engine` only hands each call to the one that does it:

- ``state.py``: the opened index (store, embedder) and every value derived from it, each kept
  in step with the store's change token (``derived.py``);
- ``indexing.py``: bringing the index up to date with the roots, embedding, adding and
  removing a root;
- ``searching.py``: the query pipeline with its lanes, boosts and re-ranker;
- ``reading.py``: chunks, sections, documents and their links;
- ``status.py``: what the index holds and how far its vectors are;
- ``checking.py``: the full check for damage no read has met, and its record;
- ``memory.py``: agent memory folders, memory filters and linked memories;
- ``commits.py``: commit search (one result per commit) and documents' last change;
- ``opening.py``: which index a command opens, and the index used last;
- ``live.py`` (imported by the doors that keep an index fresh, never here): the writer role,
  the watcher and background jobs.
"""

from __future__ import annotations

import functools
import threading
import types
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import (
    TYPE_CHECKING,
    Any,
    Concatenate,
    Generic,
    ParamSpec,
    Self,
    TypeVar,
    cast,
    overload,
)

from noteseek.config import LoadedConfig, load_settings
from noteseek.engine.checking import check_due, full_check
from noteseek.engine.opening import choose_index, named_config
from noteseek.engine.reading import Reading
from noteseek.engine.results import Ambiguous, GetResult, NotFound, SearchResponse
from noteseek.engine.state import IndexState
from noteseek.engine.status import status
from noteseek.engine.values import IndexValues
from noteseek.lazy import LazyAttribute, LazyClass
from noteseek.search.ask import Filter, SearchRequest
from noteseek.store.base import Store

if TYPE_CHECKING:
    from noteseek.engine.commits import Commits
    from noteseek.engine.indexing import Indexing
    from noteseek.engine.live import IndexService
    from noteseek.engine.memory import Memories
    from noteseek.engine.searching import Searching
else:
    # Services loaded with their first call: ``noteseek status`` or ``get`` never imports the
    # indexer, the query pipeline or the memory folder (tests/test_cli_starts.py).
    Commits = LazyClass("noteseek.engine.commits", "Commits")
    Indexing = LazyClass("noteseek.engine.indexing", "Indexing")
    Memories = LazyClass("noteseek.engine.memory", "Memories")
    Searching = LazyClass("noteseek.engine.searching", "Searching")

__all__ = [
    "Ambiguous",
    "Engine",
    "Filter",
    "GetResult",
    "NotFound",
    "SearchRequest",
    "SearchResponse",
    "open_engine",
]

P = ParamSpec("P")
R = TypeVar("R")
S = TypeVar("S")


class _Delegate(Generic[P, R]):
    # A facade method that is ``function`` called with one of the engine's services first.
    # The signature and the docstring are the service's, written once; type checkers see the
    # facade method with that signature. A service loaded lazily hands a LazyAttribute,
    # resolved (its module imported) on the first call.

    def __init__(self, service: str, function: Callable[Concatenate[Any, P], R]) -> None:
        self.service = service
        self._function: Any = function

    @functools.cached_property
    def function(self) -> Callable[Concatenate[Any, P], R]:
        found = self._function
        return cast(
            "Callable[Concatenate[Any, P], R]",
            found.resolve() if isinstance(found, LazyAttribute) else found,
        )

    @property
    def __wrapped__(self) -> Callable[Concatenate[Any, P], R]:
        return self.function

    @property
    def __doc__(self) -> str | None:  # type: ignore[override]
        return self.function.__doc__

    @overload
    def __get__(self, engine: None, owner: type[Any] | None = None) -> Self: ...
    @overload
    def __get__(self, engine: object, owner: type[Any] | None = None) -> Callable[P, R]: ...
    def __get__(self, engine: object | None, owner: type[Any] | None = None) -> Any:
        if engine is None:
            return self
        return types.MethodType(self.function, getattr(engine, self.service))


class Engine:
    """One index: its settings, its store and every operation on it."""

    def __init__(self, config: LoadedConfig) -> None:
        self.config = config
        self.settings = config.settings
        self.index_dir = config.index_dir
        self._state = IndexState(config)
        self._values = self._state.values
        self.notices = self._state.notices
        self._reading = Reading(self._state)
        self._services: dict[str, Any] = {}
        self._services_lock = threading.RLock()  # a service may make another (commits: searching)
        self.live: IndexService | None = None
        """This process's live index (writer role, watcher), when it runs one: memory writes
        hand their paths to it (``engine/handoff.py``)."""

    # -- the services loaded with their first use -------------------------------------------

    def _service(self, name: str, make: Callable[[], S]) -> S:
        """The service ``name``, made once (the first of several threads makes it)."""
        found = self._services.get(name)
        if found is None:
            with self._services_lock:
                found = self._services.get(name)
                if found is None:
                    found = self._services[name] = make()
        return cast(S, found)

    @property
    def _indexing(self) -> Indexing:
        return self._service("indexing", lambda: Indexing(self._state))

    @property
    def _searching(self) -> Searching:
        return self._service("searching", lambda: Searching(self._state))

    @property
    def _memories(self) -> Memories:
        return self._service(
            "memories",
            lambda: Memories(self._state, self._reading, lambda: self, lambda: self.live),
        )

    @property
    def _commits(self) -> Commits:
        return self._service("commits", lambda: Commits(self._state, self._searching))

    # -- the opened index (state.py) -------------------------------------------------------

    @property
    def store(self) -> Store:
        return self._state.store

    @property
    def index_exists(self) -> bool:
        return self._state.index_exists

    @property
    def location(self) -> str | None:
        """Where the index is when it is kept outside its folder (Milvus: ``Milvus at URI
        (collections PREFIX_*)``, without secrets); None for the embedded index, which is
        its folder ``index_dir``."""
        backend = self._state.backend
        return backend.location if backend.folder is None else None

    @property
    def model_id(self) -> str:
        """The id of the configured embedding model (without loading it)."""
        return self._state.model_id

    close = _Delegate("_state", IndexState.close)
    settle_vectors = _Delegate("_values", IndexValues.settle_vectors)
    damaged = _Delegate("_state", IndexState.damaged)
    refresh = _Delegate("_state", IndexState.refresh)
    roots = _Delegate("_state", IndexState.roots)
    kinds = _Delegate("_state", IndexState.kinds)
    naming_roots = _Delegate("_state", IndexState.naming_roots)
    source = _Delegate("_state", IndexState.source)
    embedder = _Delegate("_state", IndexState.embedder)
    embedding_progress = _Delegate("_values", IndexValues.embedding_progress)
    keyword_only = _Delegate("_state", IndexState.keyword_only)
    wants_vectors = _Delegate("_state", IndexState.wants_vectors)
    vector_index = _Delegate("_values", IndexValues.vector_index)
    analyzer = _Delegate("_values", IndexValues.analyzer)
    link_graph = _Delegate("_values", IndexValues.link_graph)
    communities = _Delegate("_values", IndexValues.communities)
    concept_vocabulary = _Delegate("_values", IndexValues.concept_vocabulary)
    status = _Delegate("_state", status)
    full_check = _Delegate("_state", full_check)
    check_due = _Delegate("_state", check_due)

    def __enter__(self) -> Engine:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    # -- indexing (indexing.py) ------------------------------------------------------------

    index = _Delegate("_indexing", Indexing.index)
    update_paths = _Delegate("_indexing", Indexing.update_paths)
    update_graph = _Delegate("_indexing", Indexing.update_graph)
    rebuild = _Delegate("_indexing", Indexing.rebuild)
    embed = _Delegate("_indexing", Indexing.embed)
    add_root = _Delegate("_indexing", Indexing.add_root)
    remove_root = _Delegate("_indexing", Indexing.remove_root)

    # -- searching (searching.py) ----------------------------------------------------------

    search = _Delegate("_searching", Searching.search)
    embed_query = _Delegate("_searching", Searching.embed_query)
    embed_hypothesis = _Delegate("_searching", Searching.embed_hypothesis)

    # -- reading (reading.py) --------------------------------------------------------------

    get = _Delegate("_reading", Reading.get)
    section = _Delegate("_reading", Reading.section)
    read_document = _Delegate("_reading", Reading.read_document)
    links = _Delegate("_reading", Reading.links)

    # -- memory (memory.py) ----------------------------------------------------------------

    @property
    def memories(self) -> Memories:
        """The memory folder: ``create``, ``append``, ``update``, ``delete``, ``restore``."""
        return self._memories

    memory_roots = _Delegate("_memories", Memories.memory_roots)
    memory_root = _Delegate("_memories", Memories.memory_root)
    memory_folder = _Delegate("_memories", Memories.memory_folder)
    memory_files = _Delegate("_memories", Memories.memory_files)
    memory_selection = _Delegate("_memories", Memories.memory_selection)
    memory_links = _Delegate("_memories", Memories.memory_links)
    flush_memories = _Delegate("_memories", Memories.flush_memories)

    # -- git history (commits.py) ----------------------------------------------------------

    search_commits = _Delegate("_commits", Commits.search_commits)
    last_changes = _Delegate("_commits", Commits.last_changes)


def open_engine(
    cwd: Path | None = None,
    config_file: Path | None = None,
    flags: Mapping[str, Any] | None = None,
    *,
    roots: Sequence[str] = (),
    environ: Mapping[str, str] | None = None,
    name: str | None = None,
) -> Engine:
    """An engine for the configuration found from ``cwd`` (or ``config_file``).

    ``roots`` are folders (or root names) the caller is about to index: folders that are not
    configured roots become roots of this index, and without a project file they choose which
    index (one per set of roots, in the user data dir). Without a project file, configured
    roots or ``roots``, the index used last is opened, so ``noteseek index ~/notes`` followed
    by ``noteseek search ...`` just works.

    ``name`` opens the index registered under it instead, with its own roots and settings
    whatever ``cwd`` is (``engine/opening.py``: ``named_config``; ConfigError when no index
    has that name).
    """
    if name is not None:
        return Engine(named_config(name, cwd, config_file, flags, environ))
    config = load_settings(cwd, config_file, flags, environ)
    choose_index(config, roots, cwd)
    return Engine(config)
