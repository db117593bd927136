"""What a store backend provides, by role, and the rows it hands back.

A backend is one object that plays every role (:class:`Store`); each consumer is typed against
the roles it uses, so what a second backend must provide, and what each caller depends on, is
written down here rather than discovered in the SQLite class:

* :class:`Catalog`: roots, files and their states, problems, runs, the manifest and meta values.
* :class:`Chunks`: chunk rows (by rowid, id, file), chunk texts, link rows, filtered rowids.
* :class:`KeywordIndex`: BM25 over the weighted fields, with filters applied inside the match.
* :class:`VectorStore`: vectors keyed by (model, embedding key), embedding progress, pending
  texts, and the :class:`VectorIndex` that searches them.
* :class:`Versioned`: the change token that every derived value is keyed by.
* :class:`GraphStore`: the resolved link graph and its communities, kept with the index and
  brought up to date after writes (``graph/sync.py``); writes mark what they change.
* :class:`Portable`: the index read and written as it is, ids included, so ``noteseek migrate``
  copies it to another backend (``store/migrate.py``) without parsing or embedding again.

Writes go inside :meth:`Store.transaction`; a reader never sees half of one. The conformance
suite (``tests/store_conformance/``) runs every method of every role against each backend.
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from contextlib import AbstractContextManager
from typing import TYPE_CHECKING, Any, Literal, Protocol, TypeAlias

from noteseek.store.rows import (  # the rows the roles return
    ChunkRow,
    EdgeRow,
    FileRow,
    FileState,
    LinkRow,
    NamedFile,
    Problem,
    StoredFile,
)
from noteseek.types import Clause, Filters, KeywordQuery, PreparedFile

if TYPE_CHECKING:  # the protocols name numpy's types; opening a store does not load numpy
    import numpy as np
    import numpy.typing as npt

MatchMode = Literal["all", "any"]
VectorDType = Literal["float32", "float16"]

RowIds: TypeAlias = "Sequence[int] | npt.NDArray[np.int64]"
"""Chunk rowids: a list, or an array (sorted when it comes from ``search/allowed.py``)."""

ChangeToken = tuple[int, int]
"""Equal tokens mean nothing was committed in between (by this handle or any other)."""


# -- roles --------------------------------------------------------------------------------------


class Versioned(Protocol):
    """The change token: derived values (vector index, link graph, counts) are keyed by it."""

    def change_token(self) -> ChangeToken:
        """Moves on every committed write, by this handle or another; stable otherwise."""
        ...


class Meta(Protocol):
    """Small named values kept with the index: the manifest it was built with, the model."""

    def manifest(self) -> dict[str, Any]: ...
    def set_manifest(self, manifest: Mapping[str, Any]) -> None: ...
    def meta(self, key: str) -> str | None: ...
    def set_meta(self, key: str, value: str) -> None: ...


class Catalog(Meta, Protocol):
    """Roots, files, problems and runs: what the indexer compares and the reader looks up."""

    # roots
    def roots(self) -> dict[str, str]:
        """Root name -> the folder it was indexed from."""
        ...

    def root_kinds(self) -> dict[str, str]:
        """Root name -> the kind of source it was indexed from (``files``, ``memory``, ...)."""
        ...

    def ensure_root(self, name: str, path: str, kind: str = "files") -> int:
        """Add a root, or move it or change its kind (its files are dropped: they were
        indexed from elsewhere)."""
        ...

    def remove_root(self, name: str) -> None:
        """Forget root ``name`` and everything indexed from it: each of its files goes as
        :meth:`delete_file` takes one (chunks, keyword entries, tags, links; the graph marks
        it changed), then its problems and its record. Vectors stay, keyed by text
        (:meth:`~VectorStore.prune_vectors` drops those no chunk uses). KeyError when the
        index has no such root."""
        ...

    # files
    def file_states(self, root: str) -> dict[str, FileState]: ...
    def write_file(self, prepared: PreparedFile, indexed_at: float, file_id: int | None) -> int:
        """Replace one file's rows (metadata, chunks, keyword fields, tags, links).

        ``file_id`` reuses an existing row (a changed or renamed file) so its identity stays.
        Raises :class:`WriteRejected` when the rows break a constraint.
        """
        ...

    def update_file_stat(self, file_id: int, mtime_ns: int, size: int) -> None: ...
    def delete_file(self, file_id: int) -> None: ...
    def clear(self) -> None:
        """Drop every file, chunk and problem (a rebuild); vectors, roots and meta stay."""
        ...

    def find_files(self, path: str, root: str | None = None) -> list[FileRow]:
        """Files whose root-relative path, or ``root/path`` doc id, is ``path``."""
        ...

    def file_row(self, file_id: int) -> FileRow | None: ...
    def iter_files(self, root: str | None = None) -> Iterator[FileRow]:
        """Every file (of one root, when given), by root name then path."""
        ...

    def document_dates(self, exclude_kinds: Sequence[str] = ()) -> list[float]:
        """Every document's date (``modified``), leaving out roots of ``exclude_kinds``."""
        ...

    # problems and runs
    def set_problems(
        self,
        root: str,
        path: str,
        problems: Iterable[tuple[str, str]],
        mtime_ns: int = 0,
        size: int = 0,
    ) -> None:
        """Replace one path's problems with ``(severity, reason)`` pairs, keeping its stat."""
        ...

    def skipped_states(self, root: str) -> dict[str, tuple[int, int]]:
        """(mtime_ns, size) of the paths skipped last time, by path."""
        ...

    def problem_paths(self, root: str) -> set[str]: ...
    def clear_problems(self, root: str, paths: Iterable[str] | None = None) -> None: ...
    def problems(self) -> list[Problem]: ...
    def record_run(self, started: float, finished: float, summary: Mapping[str, Any]) -> None: ...
    def last_run(self) -> dict[str, Any] | None: ...
    def stats(self) -> dict[str, Any]:
        """Roots (name, path, files, chunks), total files, chunks, links and index bytes."""
        ...


class Chunks(Protocol):
    """The stored chunks and links, by rowid, chunk id or file."""

    def chunk_rows(self, rowids: Sequence[int]) -> list[ChunkRow]:
        """The rows of ``rowids`` that exist, in the order asked."""
        ...

    def chunk_by_id(self, chunk_id: str) -> ChunkRow | None: ...
    def file_chunks(self, file_id: int) -> list[ChunkRow]:
        """A file's chunks in document order."""
        ...

    def file_chunk_rowids(self, file_id: int) -> list[int]: ...
    def chunk_files(self, rowids: Sequence[int]) -> dict[int, int]:
        """Chunk rowid -> file id."""
        ...

    def chunk_modified(self, rowids: Sequence[int]) -> dict[int, float]:
        """Chunk rowid -> its document's date."""
        ...

    def iter_chunk_texts(self, batch: int = 2000) -> Iterator[str]:
        """Every chunk's text, read in batches (never the whole index at once)."""
        ...

    def link_rows(
        self, max_per_document: int = 0, file_ids: Sequence[int] | None = None
    ) -> list[LinkRow]:
        """Every stored link (of the files ``file_ids``, when given), by source doc_id then
        line; with ``max_per_document``, only the first that many of each document (by
        line). In time linear in the links."""
        ...

    def filtered_chunk_ids(self, filters: Filters) -> list[int]:
        """Rowids of the chunks the filters let through (the allowed set of a vector search)."""
        ...


class KeywordIndex(Protocol):
    """BM25 over the analyzed fields (``types.FTS_FIELDS``), one weight per field."""

    @property
    def scores_every_match(self) -> bool:
        """Whether a search scores every matching row whatever its limit (FTS5): then rows
        fetched ahead for a search's later, wider passes cost nothing more, and a query of
        common words is worth narrowing first (the keyword lane's common-words tier). False
        for an engine that ranks on its side and sends each row it returns."""
        ...

    def keyword_search(
        self,
        query: KeywordQuery,
        mode: MatchMode,
        filters: Filters,
        limit: int,
        weights: Sequence[float],
    ) -> list[tuple[int, float]]:
        """Top ``limit`` (chunk rowid, score) pairs, best first and ties by rowid (a smaller
        ``limit`` returns a prefix of a larger one), filters applied before the cut (a
        filtered query is never starved of results)."""
        ...

    def document_scores(
        self, query: KeywordQuery, filters: Filters, limit: int, weights: Sequence[float]
    ) -> dict[int, float]:
        """BM25 of the top ``limit`` whole documents (file id -> score) for the query's
        any-word match, chosen best first and ties by file id."""
        ...

    def field_scores(
        self, query: KeywordQuery, mode: MatchMode, rowids: Sequence[int], weights: Sequence[float]
    ) -> dict[int, list[float]]:
        """Each field's share of the score of the given chunks (``--explain``)."""
        ...

    def is_common(self, clause: Clause, threshold_fraction: float, floor: int) -> bool:
        """Whether a clause matches at least ``max(floor, fraction x chunks)`` chunks."""
        ...

    def term_documents(self, terms: Sequence[str]) -> dict[str, int]:
        """Documents holding each of ``terms``; a term no document holds is left out."""
        ...

    def vocabulary(self) -> dict[str, int]:
        """Every term of the index with the number of documents holding it (typo
        tolerance's alternatives come from here)."""
        ...

    def matching_rowids(self, query: KeywordQuery, rowids: Sequence[int]) -> set[int]:
        """Which of ``rowids`` match any clause of ``query`` (exclusions on vector results)."""
        ...


class VectorIndex(Protocol):
    """Nearest-neighbour search over one model's vectors in one store.

    What the search needs from it and nothing more, so a backend with its own ANN index (a
    server that filters inside retrieval) plugs in by implementing these six members.
    """

    @property
    def size(self) -> int:
        """Vectors it searches (as of its last sync)."""
        ...

    def sync(self) -> None:
        """Catch up with the store's committed writes (may finish in the background)."""
        ...

    def search(
        self,
        query: npt.NDArray[np.float32],
        k: int,
        allowed: RowIds | None = None,
    ) -> list[tuple[int, float]]:
        """Top ``k`` (chunk rowid, cosine) pairs, best first; only ``allowed`` rowids if given,
        and never fewer than ``min(k, allowed)`` because of the restriction."""
        ...

    def vectors_for(self, rowids: Sequence[int]) -> dict[int, npt.NDArray[np.float32]]:
        """The unit vectors of the given chunks that have one (MMR, semantic duplicates)."""
        ...

    def settle(self, timeout: float | None = None) -> None:
        """Catch up with the store and finish background work (a graph being built, saving
        it for other processes); at once for a backend that has none."""
        ...

    def close(self) -> None:
        """Release memory and background work; the index is not used afterwards."""
        ...


class VectorStore(Protocol):
    """Vectors keyed by (model, embedding key), shared by every chunk with that key."""

    def put_vectors(self, model: str, items: Iterable[tuple[str, bytes]]) -> None:
        """Store float32 vectors (raw bytes) by embedding key."""
        ...

    def pending_embeddings(self, model: str) -> list[tuple[str, int]]:
        """(embedding key, a chunk rowid with that key) lacking a vector, shortest text first."""
        ...

    def vector_progress(self, model: str) -> tuple[int, int]:
        """(chunks that have a vector of ``model``, chunks that want one: a chunk without an
        embedding key is never embedded)."""
        ...

    def vector_models(self) -> dict[str, int]:
        """Model -> vectors stored."""
        ...

    def drop_vectors(self, keep_model: str | None = None) -> int:
        """Delete the vectors of every model but ``keep_model``; returns how many."""
        ...

    def prune_vectors(self, model: str) -> int:
        """Delete vectors no chunk uses any more; returns how many."""
        ...

    def vector_chunk_keys(self, model: str) -> list[tuple[int, str]]:
        """(rowid, embedding key) of the chunks that have a vector of ``model``, by rowid."""
        ...

    def chunk_vectors(self, model: str, rowids: Sequence[int]) -> list[tuple[int, str, bytes]]:
        """(rowid, embedding key, vector) of the given chunks that have one."""
        ...

    def all_chunk_vectors(self, model: str) -> list[tuple[int, str, bytes]]:
        """(rowid, embedding key, vector) of every chunk that has one, by rowid."""
        ...

    def vector_index(
        self,
        model: str,
        dimension: int,
        *,
        dtype: VectorDType = "float32",
        hnsw_threshold: int = 0,
        may_save: Callable[[], bool] | None = None,
    ) -> VectorIndex:
        """A new searchable index over ``model``'s vectors (the caller keeps and closes it).

        ``dtype`` and ``hnsw_threshold`` tune an in-process index; a backend with its own ANN
        index may ignore them. ``may_save`` says whether this process may save the index in
        the index folder now (it holds the writer role); without it, a saved one is only read.
        """
        ...


class GraphStore(Protocol):
    """The link graph kept with the index: edges, the keys links looked up, what the graph
    knew of each document, the files changed since, and communities.

    A write of a file (added, changed, renamed, deleted) marks it in the same transaction, so
    no change is missed, even by a process killed before bringing the graph up to date.
    """

    def graph_dirty(self) -> list[int]:
        """File ids written or deleted since the graph last took them in, ascending."""
        ...

    def named_files(self, exclude_kinds: Sequence[str] = ()) -> list[NamedFile]:
        """Every file's names (of roots not of ``exclude_kinds``), by root name then path;
        cheaper than :meth:`Catalog.iter_files` (no frontmatter is decoded)."""
        ...

    def graph_nodes(self, file_ids: Sequence[int]) -> dict[int, str]:
        """What :meth:`write_graph` recorded of these files (their ``names``), by file id."""
        ...

    def graph_sources(self, keys: Iterable[str]) -> set[int]:
        """Files with a link that looked up any of ``keys`` (``graph.links.fold_key``)."""
        ...

    def write_graph(
        self,
        edges: Mapping[int, Sequence[EdgeRow]],
        keys: Mapping[int, Iterable[str]],
        nodes: Mapping[int, str | None],
        taken: Sequence[int],
    ) -> None:
        """Replace the edges and keys of each file in ``edges`` (files no longer indexed are
        left out), record ``nodes`` (None forgets one), and unmark the ``taken`` files."""
        ...

    def reset_graph(self) -> None:
        """Drop every edge, key and node and mark every file changed (built again next)."""
        ...

    def graph_edges(self) -> list[EdgeRow]:
        """Every edge, by the linking file's doc_id, then line, then order in the file."""
        ...

    def document_edges(self, file_id: int, doc_id: str) -> list[EdgeRow]:
        """The edges of one document, in :meth:`graph_edges`'s order: those of the file
        ``file_id`` and those that resolved to ``doc_id`` (its backlinks)."""
        ...

    def stored_communities(self) -> dict[int, int] | None:
        """File id -> community, as last set; None if never set."""
        ...

    def community_sizes(self) -> tuple[int, int] | None:
        """(communities, files in them) as last set, counted by the store; None if never set."""
        ...

    def set_communities(self, by_file: Mapping[int, int]) -> None:
        """Replace the communities (files no longer indexed are left out)."""
        ...


class Portable(Protocol):
    """The index read and written as it is stored, ids included (``noteseek migrate``).

    A copy through this role keeps file ids and chunk rowids, so the target ranks exactly as
    the source (ties included) and the graph and communities, keyed by file id, carry over.
    """

    def file_ids(self) -> list[int]:
        """Every indexed file's id, ascending."""
        ...

    def export_files(self, file_ids: Sequence[int]) -> list[StoredFile]:
        """The given files as stored (those that exist), in the order asked."""
        ...

    def import_files(self, files: Sequence[StoredFile]) -> None:
        """Write files with their ids (none of them may exist yet; their roots must), their
        chunks with their rowids, and their edges and keys; the files are then not marked
        changed for the graph (but those not ``taken``). Ids handed out later
        are above every id written here."""
        ...

    def meta_values(self) -> dict[str, str]:
        """Every value set with :meth:`Meta.set_meta` (not the manifest, not what a backend
        keeps for itself)."""
        ...

    def vector_dimensions(self) -> dict[str, int]:
        """Model -> the dimension of its stored vectors."""
        ...

    def wipe(self) -> None:
        """Delete everything the index holds: roots, files, problems, runs, meta values,
        vectors and the graph (``migrate --replace``)."""
        ...


class Store(Catalog, Chunks, KeywordIndex, VectorStore, GraphStore, Portable, Versioned, Protocol):
    """Every role in one handle: what a backend implements and its ``Backend.open`` returns.

    A handle may be shared between threads. Other handles (other processes) may open the same
    index at once: one writes, any number read, and a reader sees only committed writes.
    """

    def transaction(self) -> AbstractContextManager[None]:
        """A write transaction; nested calls join it (a failing inner block rolls back alone)."""
        ...

    def check(self) -> str | None:
        """A full check of the stored structures: None when sound, else what is wrong.

        Reads the whole index (seconds on a large one): for ``rebuild``, which decides from it
        whether the index can be cleared in place or must be deleted and created again.
        """
        ...

    def verify(self, stop: threading.Event | None = None) -> str | None:
        """The thorough check, for damage no read has met yet: None when sound, else what is
        wrong, recorded as damage in the index folder for every process. Reads the whole
        index (seconds on a large one): the live writer runs it in the background on a
        reader of its own, ``noteseek status --check`` on demand. ``stop`` set
        interrupts it (then None). A backend that keeps no file of its own checks nothing."""
        ...

    def close(self) -> None: ...


# -- what the consumers that need two roles read ---------------------------------------------


class KeywordSource(KeywordIndex, Chunks, Protocol):
    """The keyword lane: the keyword index, and which document each chunk is in."""


class DocumentSource(Catalog, Chunks, Protocol):
    """Files with their chunks and links: reading a document, building the link graph."""


class GraphSource(DocumentSource, GraphStore, Versioned, Protocol):
    """Bringing the kept link graph up to date (``graph/sync.py``): files, links, the graph."""

    def transaction(self) -> AbstractContextManager[None]: ...


class SearchSource(DocumentSource, KeywordIndex, Versioned, Protocol):
    """The query pipeline: the keyword lane plus chunk and file rows for the results."""


class EmbeddingTarget(VectorStore, Chunks, Meta, Protocol):
    """The embedding phase: pending texts, the chunks they come from, the vectors, the model."""


class VectorSource(VectorStore, Versioned, Protocol):
    """What an in-process vector index reads: the stored vectors and when they changed."""


class VectorReader(VectorSource, Protocol):
    """A separate read-only handle for background reads of the vectors."""

    def close(self) -> None: ...
