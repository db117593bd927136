"""A query with required clauses scored over the rows that can match it, not every row.

Every row an ``all``-words query (or one with a quoted phrase) matches holds each of its
required clauses, so the rows of the required clause held by fewest rows are the only
candidates: :func:`top` scores those (a few hundred when one word is rare) where the
exhaustive sum (``postings_search.exhaustive``) adds every phrase's gains into arrays as long
as the part (the rows of ``get`` or ``server`` in a reference manual: tens of thousands). A
candidate's score is each phrase's gain in that row summed in the query's phrase order,
FTS5's order, as the exhaustive sum does, so both give the same float: the same rows, scores
and order, whichever answers. When that clause is held by many rows, :func:`top` answers None
and every row is scored.

(Any-word queries are scored exhaustively: MaxScore, bounding each phrase's gain by its best
and scoring only rows holding the phrases those bounds leave in, was measured on the
PowerShell corpus's queries (docs/benchmarks.md) and cost more than it saved: for a top 200
with every field's BM25 saturating in the title, the bounds leave most phrases in.)
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np
import numpy.typing as npt

from noteseek.store.bm25 import Floats
from noteseek.store.sqlite.postings import Ints, Mask

Rows = npt.NDArray[np.int32]

CANDIDATES_SHARE = 8
"""A required clause held by more than a part's rows / this: every row is scored instead
(one pass over arrays as long as the part costs less than looking that many rows up)."""


@dataclass(frozen=True)
class Scored:
    """One phrase of a search: per part, the live rows holding it (ascending) and what it adds
    to each of their scores."""

    parts: list[tuple[Rows, Floats]]

    @property
    def held(self) -> int:
        return sum(len(rows) for rows, _ in self.parts)


@dataclass(frozen=True)
class Shape:
    """Which rows match: the query's clauses as phrase numbers (into the phrases, which are
    in FTS5's order), and per part the rows an exclusion or a filter leaves out."""

    required: list[list[int]]
    """Per required clause, its phrases: a match holds one of each."""
    optional: list[list[int]]
    """Per other clause, its phrases: a match holds one of one of them, when there are any."""
    excluded: list[Rows | None]
    """Per part, the rows holding an excluded word (None: none)."""
    allowed: list[Mask | None]
    """Per part, the rows a filter lets through (None: all)."""
    positive: bool = False
    """Whether every row holding a phrase scores above 0 (no column searched weighs 0)."""


def top(
    rowids: Sequence[Ints], phrases: Sequence[Scored], shape: Shape
) -> tuple[list[Ints], list[Floats]] | None:
    """Per part (``rowids``: each part's rowid per row), every matching row and its score,
    from the rows of the required clause held by fewest rows; None when the query has no
    required clause, or that clause is held by too many rows (:data:`CANDIDATES_SHARE`)."""
    if not shape.required:
        return None
    clause = min(shape.required, key=lambda c: sum(phrases[i].held for i in c))
    out_rows: list[Ints] = []
    out_scores: list[Floats] = []
    for k, rowids_of in enumerate(rowids):
        held = [phrases[i].parts[k][0] for i in clause]
        if sum(len(r) for r in held) * CANDIDATES_SHARE > len(rowids_of):
            return None
        if len(held) > 1:  # rows holding any alternative, each once
            candidates = np.unique(np.concatenate(held))
        else:  # a clause with no words is held by no row
            candidates = held[0] if held else np.zeros(0, dtype=np.int32)
        rows, scores = _scored(phrases, shape, candidates, k)
        out_rows.append(rows)
        out_scores.append(scores)
    return out_rows, out_scores


def _scored(phrases: Sequence[Scored], shape: Shape, rows: Rows, k: int) -> tuple[Ints, Floats]:
    """Of the candidate rows (ascending) of part ``k``, those that match (not excluded,
    allowed, holding every required clause and, when there are others, one of them), and
    their scores."""
    excluded, allowed = shape.excluded[k], shape.allowed[k]
    if excluded is not None and len(excluded) and len(rows):
        rows = rows[~np.isin(rows, excluded)]
    if allowed is not None and len(rows):
        rows = rows[allowed[rows]]
    n = len(rows)
    total = np.zeros(n, dtype=np.float64)
    holds: list[Mask] = []
    for phrase in phrases:  # FTS5's order: the sums are the exhaustive ones
        at, gains = _lookup(*phrase.parts[k], rows)
        total[at] += gains
        held = np.zeros(n, dtype=bool)
        held[at] = True
        holds.append(held)
    match = np.ones(n, dtype=bool)
    for clause in shape.required:
        match &= _any(holds, clause, n)
    if shape.optional:
        match &= _any(holds, [i for c in shape.optional for i in c], n)
    return rows[match].astype(np.int64), total[match]


def _any(holds: list[Mask], phrases: list[int], n: int) -> Mask:
    """Which candidates hold one of ``phrases``."""
    found = np.zeros(n, dtype=bool)
    for i in phrases:
        found |= holds[i]
    return found


def _lookup(held: Rows, gains: Floats, rows: Rows) -> tuple[Ints, Floats]:
    """Where a phrase's rows (``held``, ascending) are among ``rows`` (ascending), and the
    phrase's gains there: the shorter list is looked up in the longer one."""
    if not len(held) or not len(rows):
        return np.zeros(0, np.int64), np.zeros(0)
    if len(rows) < len(held):
        at = np.searchsorted(held, rows)
        np.minimum(at, len(held) - 1, out=at)
        hit = held[at] == rows
        return np.flatnonzero(hit), gains[at[hit]]
    at = np.searchsorted(rows, held)
    np.minimum(at, len(rows) - 1, out=at)
    hit = rows[at] == held
    return at[hit], gains[hit]
