"""FTS5's BM25, the one formula both backends score keyword matches with.

SQLite FTS5 ranks with ``bm25()`` (``fts5_aux.c``); the SQLite backend's saved postings
(``sqlite/postings_search.py``) and the Milvus backend's candidate scorer
(``milvus/matching.py``) compute the same score outside FTS5, both through these functions, in
numpy, so they give the same floating-point results for the same counts::

    idf(p)   = ln((N - n(p) + 0.5) / (n(p) + 0.5)), at least 1e-6
    f(p, r)  = sum over fields c of weight[c] x count of p in c (fields outside a column
               filter weigh 0)
    score(r) = sum over phrases p of idf(p) x f (k1 + 1) / (f + k1 (1 - b + b |r| / avgdl))

with N the rows of the table, n(p) the rows holding p, |r| the row's tokens in every field and
avgdl their mean, k1 = 1.2, b = 0.75, the phrases' parts summed in query order (FTS5's). Which
rows match, and how a phrase is counted, is each backend's business.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np
import numpy.typing as npt

K1 = 1.2
B = 0.75
IDF_FLOOR = 1e-6
"""FTS5's idf of a phrase at least half the rows hold (whose log is not positive)."""

Floats = npt.NDArray[np.float64]


def idf(rows: int, hits: int) -> float:
    """The idf of a phrase ``hits`` of ``rows`` rows hold."""
    value = float(np.log((rows - hits + 0.5) / (hits + 0.5)))
    return value if value > 0 else IDF_FLOOR


def field_weights(weights: Sequence[float], columns: Sequence[int], fields: int) -> Floats:
    """The weight of each of ``fields`` fields, 0 outside ``columns`` (a query's column
    filter, or the one field of a per-field score)."""
    out = np.zeros(fields, dtype=np.float64)
    out[list(columns)] = [float(weights[c]) for c in columns]
    return out


def frequencies(counts: npt.NDArray[Any], weights: Floats) -> Floats:
    """A phrase's weighted frequency in each row: ``counts`` (rows x fields) by ``weights``."""
    return np.asarray(counts @ weights, dtype=np.float64)


def norms(lengths: npt.NDArray[Any], avgdl: float) -> Floats:
    """``k1 (1 - b + b |r| / avgdl)`` for each row's tokens ``|r|``."""
    return np.asarray(K1 * (1 - B + B * lengths.astype(np.float64) / avgdl), dtype=np.float64)


def gains(phrase_idf: float, freq: Floats, norm: Floats) -> Floats:
    """What a phrase adds to each row's score, from its weighted frequency in the row and the
    row's :func:`norms` (0 where the row does not hold it)."""
    return np.asarray(phrase_idf * (freq * (K1 + 1.0)) / (freq + norm), dtype=np.float64)


def scores(
    counts: npt.NDArray[Any], idfs: Sequence[float], weights: Floats, norm: Floats
) -> Floats:
    """The score of each row from its phrases' counts (phrases x rows x fields): each
    phrase's :func:`gains` summed in phrase order."""
    total = np.zeros(counts.shape[1], dtype=np.float64)
    for phrase_counts, phrase_idf in zip(counts, idfs, strict=True):
        total += gains(phrase_idf, frequencies(phrase_counts, weights), norm)
    return total
