"""Vector retrieval: exact search over an in-memory matrix, HNSW (usearch) above a size.

The matrix holds one unit-length row per chunk that has a vector of the index's model, loaded
lazily on the first semantic query and kept in step with the store incrementally: when the
store reports a write (its change token moves), only the chunks that appeared or disappeared
are fetched or dropped. Filters become a set of allowed chunk rowids; exact search scores only
those rows, and HNSW results are over-fetched and filtered, falling back to exact search over
the allowed rows when the graph returns too few, so a filter never starves the results.
"""

from __future__ import annotations

import threading
from collections.abc import Sequence
from typing import Any, Literal

import numpy as np
import numpy.typing as npt

from noteseek.store.sqlite import SQLiteStore

DType = Literal["float32", "float16"]
# Rows converted to float32 at a time when the matrix is stored as float16.
_BLOCK = 16384


class VectorIndex:
    """The vectors of one model in one store, searchable by cosine similarity."""

    def __init__(
        self,
        store: SQLiteStore,
        model: str,
        dimension: int,
        *,
        dtype: DType = "float32",
        hnsw_threshold: int = 0,
    ) -> None:
        self.store = store
        self.model = model
        self.dimension = dimension
        self.dtype = np.float16 if dtype == "float16" else np.float32
        self.hnsw_threshold = hnsw_threshold
        self._ids: npt.NDArray[np.int64] = np.empty(0, dtype=np.int64)
        self._matrix: npt.NDArray[Any] = np.empty((0, dimension), dtype=self.dtype)
        self._token: tuple[int, int] | None = None
        self._hnsw: Any = None
        self._lock = threading.RLock()

    @property
    def size(self) -> int:
        return int(self._ids.size)

    @property
    def uses_hnsw(self) -> bool:
        return self._hnsw is not None

    # -- keeping in step with the store ---------------------------------------------------------

    def sync(self) -> None:
        """Load or update the matrix if the store changed since the last call."""
        with self._lock:
            token = self.store.change_token()
            if token == self._token:
                return
            if self._token is None:
                self._load_all()
            else:
                self._apply_changes()
            self._token = token
            self._sync_hnsw()

    def _load_all(self) -> None:
        rows = self.store.all_chunk_vectors(self.model)
        self._ids = np.fromiter((r[0] for r in rows), dtype=np.int64, count=len(rows))
        self._matrix = self._decode([r[1] for r in rows])

    def _apply_changes(self) -> None:
        current = np.asarray(self.store.vector_chunk_ids(self.model), dtype=np.int64)
        gone_mask = ~np.isin(self._ids, current, assume_unique=True)
        new = np.setdiff1d(current, self._ids, assume_unique=True)
        if gone_mask.any():
            gone = self._ids[gone_mask]
            keep = ~gone_mask
            self._ids = self._ids[keep]
            self._matrix = self._matrix[keep]
            if self._hnsw is not None:
                self._hnsw.remove(gone.astype(np.uint64))
        if new.size:
            rows = self.store.chunk_vectors(self.model, [int(i) for i in new])
            ids = np.fromiter((r[0] for r in rows), dtype=np.int64, count=len(rows))
            matrix = self._decode([r[1] for r in rows])
            self._ids = np.concatenate([self._ids, ids])
            self._matrix = np.concatenate([self._matrix, matrix])
            if self._hnsw is not None and ids.size:
                self._hnsw.add(
                    ids.astype(np.uint64),
                    matrix.astype(np.float32),
                    threads=_insert_threads(ids.size),
                )

    def _decode(self, blobs: Sequence[bytes]) -> npt.NDArray[Any]:
        if not blobs:
            return np.empty((0, self.dimension), dtype=self.dtype)
        flat = np.frombuffer(b"".join(blobs), dtype=np.float32)
        return flat.reshape(len(blobs), -1).astype(self.dtype, copy=False)

    def _sync_hnsw(self) -> None:
        wanted = self.hnsw_threshold > 0 and self.size >= self.hnsw_threshold
        if not wanted:
            self._hnsw = None
            return
        if self._hnsw is None:
            self._hnsw = build_hnsw(self._ids, self._matrix, self.dimension)

    # -- search ---------------------------------------------------------------------------------

    def search(
        self,
        query: npt.NDArray[np.float32],
        k: int,
        allowed: Sequence[int] | None = None,
    ) -> list[tuple[int, float]]:
        """Top ``k`` (chunk rowid, cosine) pairs, best first; only ``allowed`` rowids if given."""
        self.sync()
        with self._lock:
            if self.size == 0 or k <= 0:
                return []
            q = np.asarray(query, dtype=np.float32).reshape(-1)
            if allowed is not None:
                allowed_ids = np.asarray(allowed, dtype=np.int64)
                if allowed_ids.size == 0:
                    return []
                rows = np.flatnonzero(np.isin(self._ids, allowed_ids))
                if self._hnsw is not None and rows.size > self.size // 4:
                    hits = self._hnsw_search(q, k, set(allowed_ids.tolist()))
                    if len(hits) >= min(k, rows.size):
                        return hits
                return self._exact(q, k, rows)
            if self._hnsw is not None:
                hits = self._hnsw_search(q, k, None)
                if len(hits) >= min(k, self.size):
                    return hits
            return self._exact(q, k, None)

    def _exact(
        self, q: npt.NDArray[np.float32], k: int, rows: npt.NDArray[np.intp] | None
    ) -> list[tuple[int, float]]:
        matrix = self._matrix if rows is None else self._matrix[rows]
        ids = self._ids if rows is None else self._ids[rows]
        if matrix.shape[0] == 0:
            return []
        scores = _dot(matrix, q)
        k = min(k, scores.size)
        top = np.argpartition(-scores, k - 1)[:k]
        top = top[np.argsort(-scores[top], kind="stable")]
        return [(int(ids[i]), float(scores[i])) for i in top]

    def _hnsw_search(
        self, q: npt.NDArray[np.float32], k: int, allowed: set[int] | None
    ) -> list[tuple[int, float]]:
        want = k if allowed is None else k * 4
        matches = self._hnsw.search(q, min(want, self.size))
        out: list[tuple[int, float]] = []
        for key, distance in zip(matches.keys, matches.distances, strict=True):
            rowid = int(key)
            if allowed is not None and rowid not in allowed:
                continue
            out.append((rowid, 1.0 - float(distance)))
            if len(out) >= k:
                break
        return out


def _dot(matrix: npt.NDArray[Any], q: npt.NDArray[np.float32]) -> npt.NDArray[np.float32]:
    if matrix.dtype == np.float32:
        return np.asarray(matrix @ q, dtype=np.float32)
    # numpy has no fast float16 matrix product: convert a block at a time.
    out = np.empty(matrix.shape[0], dtype=np.float32)
    for start in range(0, matrix.shape[0], _BLOCK):
        block = matrix[start : start + _BLOCK].astype(np.float32)
        out[start : start + block.shape[0]] = block @ q
    return out


def build_hnsw(
    ids: npt.NDArray[np.int64],
    matrix: npt.NDArray[Any],
    dimension: int,
    *,
    connectivity: int = 16,
    expansion_add: int = 128,
    expansion_search: int = 96,
) -> Any:
    """An in-memory usearch HNSW graph over the rows (cosine metric)."""
    from usearch.index import Index

    index = Index(
        ndim=dimension,
        metric="cos",
        dtype="f32",
        connectivity=connectivity,
        expansion_add=expansion_add,
        expansion_search=expansion_search,
    )
    if ids.size:
        index.add(
            ids.astype(np.uint64),
            np.asarray(matrix, dtype=np.float32),
            threads=_insert_threads(ids.size),
        )
    return index


# Parallel insertion races on the graph's links (measured: recall@10 0.996 instead of 1.0 on
# small graphs, and different on every build); below this many vectors one thread is fast
# enough, so the graph is exact-as-built and the same every time.
PARALLEL_INSERT_MIN = 10_000


def _insert_threads(n: int) -> int:
    return 0 if n >= PARALLEL_INSERT_MIN else 1
