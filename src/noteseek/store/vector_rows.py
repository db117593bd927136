"""The rows an in-memory vector index holds: one per chunk, each pointing into a matrix of
distinct vectors.

Documentation repeats itself: chunks with the same text share a vector, and so do chunks the
model cannot tell apart (the 14,145-file PowerShell tree: 164,926 chunks, 35,632 distinct
vectors). Holding each distinct vector once, by a hash of its bytes, makes the matrix every
exact search reads 4.6 times smaller there (253 MB to 55 MB), and keeps duplicates out of the
HNSW graph, whose recall they lowered (``bench/ann_distinct.py``). A search scores distinct
vectors, then hands out the chunks that share each one, in rowid order.

A :class:`VectorRows` is never changed: an update makes a new one (:func:`updated`), so a
search or a background build can go on reading the one it started with.
"""

from __future__ import annotations

import hashlib
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import numpy.typing as npt

from noteseek.store.exact import members, row_idents

Fetch = Callable[[Sequence[int]], Sequence[tuple[int, str, bytes]]]
"""(chunk rowid, embedding key, vector blob) of the given chunk rowids that have a vector."""


@dataclass(frozen=True)
class VectorRows:
    """``ids``/``idents``/``rows``: per chunk (rowid, identity of rowid and embedding key,
    row of ``matrix``); ``matrix``/``vkeys``: per distinct vector (the unit vector, a 63-bit
    hash of its bytes: its key in the HNSW graph)."""

    ids: npt.NDArray[np.int64]
    idents: npt.NDArray[np.int64]
    rows: npt.NDArray[np.int64]
    matrix: npt.NDArray[Any]
    vkeys: npt.NDArray[np.int64]
    _groups: list[Any] = field(default_factory=list, compare=False, repr=False)

    @property
    def size(self) -> int:
        """Chunks with a vector."""
        return int(self.ids.size)

    @property
    def distinct(self) -> int:
        return int(self.matrix.shape[0])

    def _grouped(self) -> tuple[npt.NDArray[np.int64], npt.NDArray[np.int64], Any]:
        """(chunk positions grouped by matrix row then rowid, each row's first position, the
        vkeys sorted with their rows); made on first use, then kept."""
        if not self._groups:
            order = np.lexsort((self.ids, self.rows))
            starts = np.searchsorted(self.rows[order], np.arange(self.distinct + 1))
            by_key = np.argsort(self.vkeys, kind="stable")
            self._groups.append((order, starts, (self.vkeys[by_key], by_key)))
        return self._groups[0]  # type: ignore[no-any-return]

    def rows_of(self, vkeys: npt.NDArray[np.int64]) -> npt.NDArray[np.int64]:
        """The matrix row of each vkey, -1 for one not held."""
        _, _, (sorted_keys, positions) = self._grouped()
        if not sorted_keys.size:
            return np.full(vkeys.size, -1, dtype=np.int64)
        at = np.searchsorted(sorted_keys, vkeys)
        at[at >= sorted_keys.size] = 0
        found = sorted_keys[at] == vkeys
        return np.where(found, positions[at], -1).astype(np.int64)

    def distinct_mask(self, mask: npt.NDArray[np.bool_]) -> npt.NDArray[np.bool_]:
        """The matrix rows at least one chunk that ``mask`` lets through points at."""
        out = np.zeros(self.distinct, dtype=bool)
        out[self.rows[mask]] = True
        return out

    def expand(
        self,
        top: Sequence[tuple[int, float]],
        k: int,
        *,
        mask: npt.NDArray[np.bool_] | None = None,
        allowed: npt.NDArray[np.int64] | None = None,
    ) -> list[tuple[int, float]]:
        """The first ``k`` (chunk rowid, score) of the chunks of the matrix rows ``top`` (best
        first), each row's chunks in rowid order; only chunks ``mask`` (by position) or
        ``allowed`` (sorted rowids) lets through."""
        order, starts, _ = self._grouped()
        out: list[tuple[int, float]] = []
        for row, score in top:
            positions = order[starts[row] : starts[row + 1]]
            if mask is not None:
                positions = positions[mask[positions]]
            elif allowed is not None:
                positions = positions[members(self.ids[positions], allowed)]
            for rowid in self.ids[positions[: k - len(out)]]:
                out.append((int(rowid), score))
            if len(out) >= k:
                break
        return out

    def vectors_for(self, rowids: Sequence[int]) -> dict[int, npt.NDArray[np.float32]]:
        positions = np.flatnonzero(np.isin(self.ids, np.asarray(rowids, dtype=np.int64)))
        return {
            int(self.ids[i]): np.asarray(self.matrix[self.rows[i]], dtype=np.float32)
            for i in positions
        }


def empty(dimension: int, dtype: Any) -> VectorRows:
    none = np.empty(0, dtype=np.int64)
    return VectorRows(none, none, none, np.empty((0, dimension), dtype=dtype), none)


def content_keys(blobs: Sequence[bytes]) -> npt.NDArray[np.int64]:
    """A 63-bit hash of each vector's bytes: equal vectors, equal keys."""
    return np.fromiter(
        (int.from_bytes(hashlib.blake2b(b, digest_size=8).digest(), "little") >> 1 for b in blobs),
        dtype=np.int64,
        count=len(blobs),
    )


def decode(blobs: Sequence[bytes], dimension: int, dtype: Any) -> npt.NDArray[Any]:
    if not blobs:
        return np.empty((0, dimension), dtype=dtype)
    flat = np.frombuffer(b"".join(blobs), dtype=np.float32)
    return flat.reshape(len(blobs), -1).astype(dtype, copy=False)


def _distinct(
    blobs: Sequence[bytes], dimension: int, dtype: Any
) -> tuple[npt.NDArray[np.int64], npt.NDArray[Any], npt.NDArray[np.int64]]:
    """(vkey of each distinct vector in first-seen order, their matrix, each blob's row)."""
    keys = content_keys(blobs)
    unique, first, inverse = np.unique(keys, return_index=True, return_inverse=True)
    seen = np.argsort(first, kind="stable")
    rank = np.empty_like(seen)
    rank[seen] = np.arange(seen.size)
    matrix = decode([blobs[i] for i in first[seen]], dimension, dtype)
    return unique[seen], matrix, rank[inverse.reshape(-1)].astype(np.int64)


def from_stored(stored: Sequence[tuple[int, str, bytes]], dimension: int, dtype: Any) -> VectorRows:
    """The rows of every (chunk rowid, embedding key, vector blob) the store holds."""
    vkeys, matrix, rows = _distinct([r[2] for r in stored], dimension, dtype)
    ids = np.fromiter((r[0] for r in stored), dtype=np.int64, count=len(stored))
    return VectorRows(ids, row_idents(stored), rows, matrix, vkeys)


@dataclass(frozen=True)
class Update:
    """The rows after an update; the distinct vectors that went and came (for the graph);
    how many chunks changed."""

    state: VectorRows
    gone: npt.NDArray[np.int64]
    added: npt.NDArray[np.int64]
    added_matrix: npt.NDArray[Any]
    changed: int


def updated(
    state: VectorRows,
    current: Sequence[tuple[int, str]],
    fetch: Fetch,
    dimension: int,
    dtype: Any,
) -> Update:
    """``state`` brought to the chunks ``current`` (rowid, embedding key) the store holds now;
    the vectors of chunks it did not hold are read with ``fetch``."""
    current_idents = row_idents(current)
    gone_mask = ~np.isin(state.idents, current_idents)
    new_positions = np.flatnonzero(~np.isin(current_idents, state.idents))
    fetched = fetch([current[int(i)][0] for i in new_positions]) if new_positions.size else []
    nothing = np.empty(0, dtype=np.int64)
    if not gone_mask.any() and not fetched:
        return Update(state, nothing, nothing, decode([], dimension, dtype), 0)
    keep = ~gone_mask
    blobs = [r[2] for r in fetched]
    found = state.rows_of(content_keys(blobs))
    fresh = np.flatnonzero(found < 0)
    new_vkeys, new_matrix, new_rows = _distinct([blobs[i] for i in fresh], dimension, dtype)
    old = state.distinct
    found[fresh] = old + new_rows
    rows = np.concatenate([state.rows[keep], found])
    used = np.zeros(old + new_vkeys.size, dtype=bool)
    used[rows] = True
    gone = state.vkeys[~used[:old]]
    if new_vkeys.size or not used.all():
        vkeys = np.concatenate([state.vkeys, new_vkeys])[used]
        matrix = np.concatenate([state.matrix, new_matrix])[used]
        rows = (np.cumsum(used) - 1)[rows]
    else:
        vkeys, matrix = state.vkeys, state.matrix
    ids = np.concatenate(
        [state.ids[keep], np.fromiter((r[0] for r in fetched), np.int64, len(fetched))]
    )
    idents = np.concatenate([state.idents[keep], row_idents(fetched)])
    after = VectorRows(ids, idents, rows.astype(np.int64), matrix, vkeys)
    return Update(after, gone, new_vkeys, new_matrix, int(gone_mask.sum()) + len(fetched))
