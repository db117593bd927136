"""The in-process vector index: exact search over a matrix, HNSW (usearch) above a size.

It lives with the stores, not with the search code, because which ANN index serves a model is
the backend's choice: a backend that keeps raw vectors (SQLite) hands this one out from
``Store.vector_index``, and one with its own ANN index (Milvus) hands out its own behind the same
``base.VectorIndex`` protocol. It reads only through ``base.VectorSource``, so any backend that
stores raw vectors can use it.

It holds every chunk that has a vector of the index's model, each distinct vector once
(``vector_rows.py``), loaded lazily on the first semantic query (or mapped from the state the
writer saved, ``ann_saved.py``) and kept in step with the store incrementally: when the store
reports a write (its change token moves), only the chunks that appeared or disappeared are
fetched or dropped. Filters become a set of allowed chunk rowids; exact search scores only the
vectors of those chunks, and HNSW results are over-fetched and filtered, falling back to exact
search when the graph returns too few, so a filter never starves the results.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

import numpy as np
import numpy.typing as npt

from noteseek.priority import yield_cpu
from noteseek.store import ann_saved
from noteseek.store.base import ChangeToken, RowIds, VectorDType, VectorReader, VectorSource
from noteseek.store.exact import exact_top, members, row_idents, top_scores
from noteseek.store.hnsw import build_hnsw, insert_threads, stop_at_exit
from noteseek.store.vector_rows import Update, VectorRows, empty, from_stored, updated

THROTTLE_FROM = 0.05
BACKGROUND_FROM_ROWS = 20_000
"""Keeping in step costs a scan of every chunk's embedding key: milliseconds on small indexes,
a second or more at 300k chunks, and tens of seconds while a bulk change (a forced re-index, a
large pull) is being written. On an index of fewer rows than this, or when the last update
took less than THROTTLE_FROM seconds, an update runs inside the search that notices the
change, so small and medium indexes stay exactly in step. Otherwise updates run on a
background thread with their own connection, one at a time, each at least its own duration
after the last (so at most half the time goes to them); searches meanwhile use the last
complete state, and rows deleted since are skipped when results are read."""
REFRESH_COST_FACTOR = 1.0
SAVE_FROM_ROWS = BACKGROUND_FROM_ROWS
"""From this many rows on, the writer saves the matrix (and the HNSW graph, if there is one)
beside the index for other processes to map: below it, reading every vector from the store
takes well under a second; at 165k rows it took 5 s, the whole of a new process's first
semantic query."""


def in_background(rows: int, cost: float) -> bool:
    """Whether keeping ``rows`` in step (``cost`` seconds last time) is background work."""
    return rows >= BACKGROUND_FROM_ROWS and cost >= THROTTLE_FROM


def save_from(hnsw_threshold: int) -> int:
    """The rows from which the writer saves: :data:`SAVE_FROM_ROWS`, or fewer when an HNSW
    graph is built from fewer (a graph is always worth saving)."""
    return min(SAVE_FROM_ROWS, hnsw_threshold or SAVE_FROM_ROWS)


Mask = npt.NDArray[np.bool_]

UNCHECKED: ChangeToken = (-1, -1)
"""The token of a mapped saved state whose check against the store failed: never current."""

HNSW_REBUILD_SHARE = 0.05
HNSW_INPLACE_MAX = 1_000
"""A change to more rows than this, or than HNSW_REBUILD_SHARE of them, drops the HNSW graph
(searches go exact) instead of updating it in place: inserting vectors into the graph takes
about a second per thousand at 300k rows, and searches wait for the graph meanwhile."""
HNSW_QUIET_SECONDS = 30.0
"""After such a change, the graph is built again (in the background) once no other large
change has come for this long, so a long bulk write does not start build after build."""


class InMemoryVectorIndex:
    """The vectors of one model in one store, searchable by cosine similarity.

    ``open_reader`` opens a separate read-only handle on the same store: an update that runs
    in the background reads through it, so its long scan holds nothing that searches need.
    """

    def __init__(
        self,
        store: VectorSource,
        model: str,
        dimension: int,
        *,
        open_reader: Callable[[], VectorReader],
        dtype: VectorDType = "float32",
        hnsw_threshold: int = 0,
        clock: Callable[[], float] = time.monotonic,
        folder: Path | None = None,
        may_save: Callable[[], bool] = lambda: False,
    ) -> None:
        self.store = store
        self._open_reader = open_reader
        self.model = model
        self.dimension = dimension
        self.dtype = np.float16 if dtype == "float16" else np.float32
        self.hnsw_threshold = hnsw_threshold
        # Per chunk its rowid and one number for (rowid, embedding key) (a row whose text
        # changed may keep its rowid, and must still count as gone-and-new); each distinct
        # vector once (vector_rows.py). Replaced by updates, never changed.
        self._rows: VectorRows = empty(dimension, self.dtype)
        self._allowed_kept: tuple[Any, ...] | None = None
        self._token: ChangeToken | None = None
        self._hnsw: Any = None
        self._builder: threading.Thread | None = None
        self._generation = 0  # bumped when a graph in the making is no longer wanted
        self.hnsw_error: str | None = None
        self._lock = threading.RLock()
        self._clock = clock
        self._next_sync = 0.0
        self._cost = 0.0
        self._refresher: threading.Thread | None = None
        self.refresh_error: str | None = None
        self._last_bulk = float("-inf")
        self._closed = False
        # Saved in the index folder (ann_saved.py): mapped by every process, saved by the
        # writer only. ``_view`` is the saved state a mapped graph covers; ``_saved`` the key
        # checksum of the last state this process saved or mapped.
        self._folder = folder
        self._may_save = may_save
        self._view: ann_saved.Saved | None = None
        self._saved: str | None = None
        self._last_change = float("-inf")
        self._saver: threading.Thread | None = None
        self.loaded_saved = False
        """Whether the first load mapped a saved state instead of reading every vector."""
        self.save_error: str | None = None

    @property
    def size(self) -> int:
        return self._rows.size

    @property
    def uses_hnsw(self) -> bool:
        return self._hnsw is not None

    def wait_for_hnsw(self, timeout: float | None = None) -> bool:
        """Wait for a graph being built in the background; True when searches use HNSW."""
        builder = self._builder
        if builder is not None:
            builder.join(timeout)
        return self.uses_hnsw

    def close(self) -> None:
        """Drop the matrix and the graph; background work still running is thrown away."""
        with self._lock:
            self._closed = True
            self._drop_hnsw()
            self._rows = empty(self.dimension, self.dtype)

    # -- keeping in step with the store ---------------------------------------------------------

    def sync(self) -> None:
        """Load the matrix (first call), or bring it up to date if the store changed.

        Cheap updates happen here; expensive ones on a background thread (``in_background``).
        """
        with self._lock:
            if self._closed:
                return
            token = self.store.change_token()
            if token == self._token:
                if self._hnsw is None and self._builder is None:
                    self._sync_hnsw()  # a graph dropped by a bulk change, once it is quiet
                self._maybe_save()
                return
            started = self._clock()
            if self._token is None:
                unchecked = self._load_all()
                self._finish_update(token, started)
                if unchecked:  # a large saved state: checked against the store behind searches
                    self._start_refresher(token, started)
                return
            if self._refresher is not None:
                return
            if not in_background(self.size, self._cost):
                self._apply(self._changes(self.store, self._rows))
                self._finish_update(token, started)
                return
            if started < self._next_sync:
                return
            self._start_refresher(token, started)

    def _start_refresher(self, token: ChangeToken, started: float) -> None:
        # The token is taken before the rows are read, so a change that lands meanwhile
        # moves it again and is picked up by the next update.
        refresher = threading.Thread(
            target=self._refresh,
            args=(token, started, self._rows),
            name="noteseek-vectors",
            daemon=True,
        )
        self._refresher = refresher
        refresher.start()

    def wait_for_refresh(self, timeout: float | None = None) -> None:
        """Wait for an update running in the background (tests, benchmarks)."""
        refresher = self._refresher
        if refresher is not None:
            refresher.join(timeout)

    def _refresh(
        self,
        token: ChangeToken,
        started: float,
        rows: VectorRows,
    ) -> None:
        # ``rows``: the state when it started; only one update runs at a time, and an update
        # replaces the state rather than changing it, so it stays as it was.
        yield_cpu()
        try:
            # Its own connection: a long scan holds no lock that searches need. The new arrays
            # are built here too; under the lock they are only swapped in.
            store = self._open_reader()
            try:
                update = self._changes(store, rows)
            finally:
                store.close()
            with self._lock:
                if self._closed:
                    return
                self._apply(update)
                self._finish_update(token, started)
                self.refresh_error = None
        except Exception as exc:  # the last state stays usable; the next change retries
            with self._lock:
                self.refresh_error = f"{type(exc).__name__}: {exc}"
                self._next_sync = self._clock() + 1.0
                if self._token == token:  # not even checked once: the next sync tries again
                    self._token = UNCHECKED
        finally:
            with self._lock:
                self._refresher = None

    def _finish_update(self, token: ChangeToken, started: float) -> None:
        self._token = token
        self._sync_hnsw()
        finished = self._clock()
        self._cost = finished - started
        self._next_sync = finished + self._cost * REFRESH_COST_FACTOR

    def _load_all(self) -> bool:
        """Load every vector: map the saved state if it is sound, else read the store.

        A saved state of :data:`BACKGROUND_FROM_ROWS` rows or more is mapped without reading
        the store's rows first (reading them is most of a new process's first query: 0.5 s at
        165k rows); True then, and the caller checks it against the store in the background,
        as it keeps large indexes in step (rows gone since are skipped when results are read).
        A smaller one is checked here, before it answers anything.
        """
        saved_rows = ann_saved.saved_rows(self._folder, self.model) if self._folder else 0
        if self._folder is not None and saved_rows:
            later = saved_rows >= BACKGROUND_FROM_ROWS
            idents = None if later else row_idents(self.store.vector_chunk_keys(self.model))
            rows = saved_rows if idents is None else idents.size
            saved = ann_saved.load(
                self._folder,
                self.model,
                self.dimension,
                self.dtype,
                idents,
                want_graph=self.hnsw_threshold > 0 and rows >= self.hnsw_threshold,
            )
            if saved is not None:
                self._rows = saved.rows
                self._saved = ann_saved.key_checksum(saved.rows.idents)
                self.loaded_saved = True
                if saved.graph is not None:
                    self._hnsw, self._view = saved.graph, saved
                return later
        self._rows = from_stored(
            self.store.all_chunk_vectors(self.model), self.dimension, self.dtype
        )
        return False

    def _changes(self, store: VectorSource, rows: VectorRows) -> Update:
        """The state after the changes since ``rows`` (the state held), and what changed.
        It only reads ``rows``, so it may run outside the lock."""
        return updated(
            rows,
            store.vector_chunk_keys(self.model),
            lambda rowids: store.chunk_vectors(self.model, rowids),
            self.dimension,
            self.dtype,
        )

    def _apply(self, update: Update) -> None:
        """Swap in an update's state; a small change goes into the HNSW graph too."""
        if update.changed:
            self._last_change = self._clock()
        changed = update.gone.size + update.added.size  # distinct vectors: the graph's keys
        if self._too_big_for_graph(changed):
            self._drop_hnsw()
            self._last_bulk = self._clock()
        self._rows = update.state
        if changed and self._view is not None and self._hnsw is not None:
            # A mapped graph is read-only: an in-memory copy of it is made in the background
            # and brought up to date there (searches are exact meanwhile).
            view, self._hnsw = self._view, None
            self._start_builder(view.rows, view)
            return
        if self._hnsw is not None:
            if update.gone.size:
                self._hnsw.remove(update.gone.astype(np.uint64))
            if update.added.size:
                self._hnsw.add(
                    update.added.astype(np.uint64),
                    update.added_matrix.astype(np.float32),
                    threads=insert_threads(update.added.size),
                )

    def _sync_hnsw(self) -> None:
        """Start or drop the HNSW graph as the size crosses the threshold.

        The graph is built on a background thread from a snapshot of the rows (tens of seconds
        at 100,000 vectors); until it is ready, searches stay exact, so no query waits for it.
        """
        wanted = self.hnsw_threshold > 0 and self.size >= self.hnsw_threshold
        if not wanted:
            self._drop_hnsw()
            return
        quiet = self._clock() - self._last_bulk >= HNSW_QUIET_SECONDS
        if self._hnsw is None and self._builder is None and self.hnsw_error is None and quiet:
            self._start_builder(self._rows, None)

    def _start_builder(self, rows: VectorRows, view: ann_saved.Saved | None) -> None:
        self._view = None
        builder = threading.Thread(
            target=self._build_graph,
            args=(rows, self._generation, view),
            name="noteseek-hnsw",
            daemon=True,
        )
        self._builder = builder
        stop_at_exit(builder)
        builder.start()

    def _maybe_save(self) -> None:
        """The writer saves the state once writes are quiet (in the background)."""
        if (
            self._folder is None
            or self._saver is not None
            or self._builder is not None
            or self.size < save_from(self.hnsw_threshold)
            or self._clock() - self._last_change < HNSW_QUIET_SECONDS
            or not self._may_save()
        ):
            return
        checksum = ann_saved.key_checksum(self._rows.idents)
        if checksum == self._saved:
            return
        self._saved = checksum
        graph = None if self._hnsw is None or self._view is not None else self._hnsw.copy()
        self._saver = threading.Thread(target=self._save, args=(self._rows, graph), daemon=True)
        self._saver.start()

    def _save(self, rows: VectorRows, graph: Any) -> None:
        yield_cpu()
        try:
            if self._folder is not None:
                ann_saved.save(self._folder, self.model, self.dimension, rows, graph)
        except OSError as exc:  # a full disk: the next process builds the graph again
            self.save_error = f"{type(exc).__name__}: {exc}"
        finally:
            with self._lock:
                self._saver = None

    def settle(self, timeout: float | None = None) -> None:
        """Catch up, wait for the graph, save now if this process may (end of an index run)."""
        self.sync()
        self.wait_for_refresh(timeout)
        self.sync()
        self.wait_for_hnsw(timeout)
        with self._lock:
            self._last_change = float("-inf")
            self._maybe_save()
        self.wait_for_save(timeout)

    def wait_for_save(self, timeout: float | None = None) -> None:
        """Wait for a save running in the background (tests, benchmarks)."""
        saver = self._saver
        if saver is not None:
            saver.join(timeout)

    def _too_big_for_graph(self, changed: int) -> bool:
        """A change too large to insert into the HNSW graph while searches wait."""
        share = HNSW_REBUILD_SHARE * max(self._rows.distinct, 1)
        return changed > min(HNSW_INPLACE_MAX, share)

    def _drop_hnsw(self) -> None:
        if self._hnsw is not None or self._builder is not None:
            self._generation += 1  # a graph being built is no longer wanted
        self._hnsw = None
        self._builder = None
        self._view = None

    def _build_graph(
        self, rows: VectorRows, generation: int, view: ann_saved.Saved | None = None
    ) -> None:
        # ``rows`` is a snapshot: updates replace self._rows, never change it. The graph's
        # keys are the distinct vectors' keys. With ``view``, the graph is an in-memory copy
        # of the mapped one instead of a new one, read again from its file; when another
        # writer has saved a newer state since (deleting that file), it is built from the rows.
        yield_cpu()
        try:
            graph = None
            if view is not None and view.graph_path is not None:
                graph = ann_saved.restore_copy(view.graph_path)
            if graph is None:
                graph = build_hnsw(rows.vkeys, rows.matrix, self.dimension)
                if view is None and self._folder is not None and self._may_save():
                    self._save(rows, graph)
                    self._saved = ann_saved.key_checksum(rows.idents)
        except Exception as exc:  # a failed graph leaves exact search, which always works
            with self._lock:
                self.hnsw_error = f"{type(exc).__name__}: {exc}"
                self._builder = None
            return
        with self._lock:
            if generation != self._generation:
                return
            try:
                self._catch_up(graph, rows)
            finally:
                # Only now, with the graph in place: :meth:`wait_for_hnsw` reads the builder
                # without the lock, and must not find it gone before the graph is there.
                self._builder = None

    def _catch_up(self, graph: Any, rows: VectorRows) -> None:
        """Bring a graph built from ``rows`` up to the rows held now, and use it (call with
        the lock held)."""
        now = self._rows
        gone = rows.vkeys[~np.isin(rows.vkeys, now.vkeys)]
        new_rows = np.flatnonzero(~np.isin(now.vkeys, rows.vkeys))
        if self._too_big_for_graph(gone.size + new_rows.size):
            # Much changed while it was built: catching up would hold searches. Build again
            # once writes are quiet (exact search meanwhile).
            self._last_bulk = self._clock()
            return
        if gone.size:
            graph.remove(gone.astype(np.uint64))
        if new_rows.size:
            graph.add(
                now.vkeys[new_rows].astype(np.uint64),
                np.asarray(now.matrix[new_rows], dtype=np.float32),
                threads=insert_threads(new_rows.size),
            )
        self._hnsw = graph

    def vectors_for(self, rowids: Sequence[int]) -> dict[int, npt.NDArray[np.float32]]:
        """The stored unit vectors of the given chunks that have one (as float32)."""
        self.sync()
        with self._lock:
            if not self.size or not rowids:
                return {}
            return self._rows.vectors_for(rowids)

    # -- search ---------------------------------------------------------------------------------

    def search(
        self,
        query: npt.NDArray[np.float32],
        k: int,
        allowed: RowIds | None = None,
    ) -> list[tuple[int, float]]:
        """Top ``k`` (chunk rowid, cosine) pairs, best first; only ``allowed`` rowids if given."""
        self.sync()
        with self._lock:
            if self.size == 0 or k <= 0:
                return []
            q = np.asarray(query, dtype=np.float32).reshape(-1)
            if allowed is not None:
                ids, mask, through = self._allowed(allowed)
                if ids.size == 0:
                    return []
                if self._hnsw is not None and ids.size > self.size // 4:
                    hits = self._hnsw_search(q, k, ids)
                    if len(hits) >= min(k, ids.size):
                        return hits
                return self._exact(q, k, (mask, through))
            if self._hnsw is not None:
                hits = self._hnsw_search(q, k, None)
                if len(hits) >= min(k, self.size):
                    return hits
            return self._exact(q, k, None)

    def _allowed(self, allowed: RowIds) -> tuple[npt.NDArray[np.int64], Mask, Mask]:
        """``allowed`` sorted, which chunks it lets through, and which distinct vectors. Kept
        for the same ``allowed`` object and state: the engine hands out one array per filter
        until the index changes (search/allowed.py), and testing 165k chunks against it took
        4 ms a query."""
        kept = self._allowed_kept
        if kept is not None and kept[0] is allowed and kept[1] is self._rows:
            return kept[2], kept[3], kept[4]
        ids = np.asarray(allowed, dtype=np.int64)
        if ids.size > 1 and bool(np.any(ids[1:] < ids[:-1])):
            ids = np.sort(ids)
        mask = members(self._rows.ids, ids)
        through = self._rows.distinct_mask(mask)
        self._allowed_kept = (allowed, self._rows, ids, mask, through)
        return ids, mask, through

    def _exact(
        self, q: npt.NDArray[np.float32], k: int, masks: tuple[Mask, Mask] | None
    ) -> list[tuple[int, float]]:
        """Exact top ``k`` chunks, of those ``masks`` let through if given (by chunk, by
        distinct vector): the best distinct vectors (each has at least one such chunk, so
        ``k`` of them are enough), then their chunks. A mask that lets most vectors through
        scores every one and drops the others (float32): copying most of the matrix would
        cost more than the product."""
        state = self._rows
        if masks is None:
            return state.expand(exact_top(state.matrix, q, k), k)
        mask, through = masks
        rows = np.flatnonzero(through)
        if state.matrix.dtype == np.float32 and rows.size > state.distinct // 4:
            scores = np.asarray(state.matrix @ q, dtype=np.float32)
            scores[~through] = -np.inf
            return state.expand(top_scores(scores, k), k, mask=mask)
        found = exact_top(state.matrix[rows], q, k)
        return state.expand([(int(rows[i]), score) for i, score in found], k, mask=mask)

    def _hnsw_search(
        self, q: npt.NDArray[np.float32], k: int, allowed: npt.NDArray[np.int64] | None
    ) -> list[tuple[int, float]]:
        """From the graph (keyed by distinct vector); ``allowed`` (sorted rowids) filters the
        chunks of four times ``k`` vectors found."""
        state = self._rows
        want = k if allowed is None else k * 4
        matches = self._hnsw.search(q, min(want, state.distinct))
        rows = state.rows_of(np.asarray(matches.keys, dtype=np.int64))
        distances = np.asarray(matches.distances, dtype=np.float32)
        top = [(int(r), 1.0 - float(d)) for r, d in zip(rows, distances, strict=True) if r >= 0]
        return state.expand(top, k, allowed=allowed)
