"""Exact nearest rows of a vector matrix, and the numbers that identify its rows."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np
import numpy.typing as npt


def members(values: npt.NDArray[np.int64], sorted_ids: npt.NDArray[np.int64]) -> Any:
    """Which of ``values`` are in ``sorted_ids`` (a boolean array), by binary search."""
    if not sorted_ids.size:
        return np.zeros(values.shape, dtype=bool)
    at = np.searchsorted(sorted_ids, values)
    at[at >= sorted_ids.size] = 0
    return sorted_ids[at] == values


def exact_top(
    matrix: npt.NDArray[Any], q: npt.NDArray[np.float32], k: int
) -> list[tuple[int, float]]:
    """The ``k`` rows of ``matrix`` with the highest dot product with ``q``: (row, score).

    float32 goes through numpy's matrix product (BLAS); float16 through usearch's exact SIMD
    search, since numpy has no fast float16 product (measured at 50,000 rows: 4.9 ms against
    38 ms converting blocks to float32).
    """
    n = matrix.shape[0]
    k = min(k, n)
    if k <= 0:
        return []
    if matrix.dtype == np.float16:
        usearch = usearch_module()
        found = usearch.search(
            matrix, q.astype(np.float16), k, usearch.MetricKind.IP, exact=True, threads=1
        )
        return [
            (int(row), 1.0 - float(distance))
            for row, distance in zip(found.keys, found.distances, strict=True)
        ]
    return top_scores(np.asarray(matrix @ q, dtype=np.float32), k)


def top_scores(scores: npt.NDArray[np.float32], k: int) -> list[tuple[int, float]]:
    """The ``k`` highest of ``scores`` (at most as many as are finite): (position, score)."""
    k = min(k, int(np.isfinite(scores).sum()))
    if k <= 0:
        return []
    top = np.argpartition(-scores, k - 1)[:k]
    top = top[np.argsort(-scores[top], kind="stable")]
    return [(int(i), float(scores[i])) for i in top]


def row_idents(rows: Sequence[tuple[Any, ...]]) -> npt.NDArray[np.int64]:
    """A 63-bit number per (rowid, embedding key, ...) row; equal rows, equal numbers."""
    return np.fromiter(
        (
            (int(key[:15], 16) ^ (rowid * 0x9E3779B97F4A7C15)) & 0x7FFF_FFFF_FFFF_FFFF
            for rowid, key, *_ in rows
        ),
        dtype=np.int64,
        count=len(rows),
    )


def usearch_module() -> Any:
    """``usearch.index``, imported after ONNX Runtime.

    Importing onnxruntime after usearch's SIMD library is loaded crashes the process with a
    segmentation fault (onnxruntime 1.31, usearch 2.26; reproduced here); the other order is
    fine, so ONNX Runtime is loaded first whenever usearch is needed.
    """
    import onnxruntime  # noqa: F401  # must precede usearch
    import usearch.index

    return usearch.index
