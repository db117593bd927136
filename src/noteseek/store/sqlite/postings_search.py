"""A keyword query scored over the postings, as FTS5 scores it: the keyword index's fast path.

:func:`score` answers what ``SELECT rowid, -bm25(...) ... WHERE MATCH ... ORDER BY 2 DESC,
rowid LIMIT ?`` answers, from one or more :class:`~noteseek.store.sqlite.postings.Postings`
(the saved ones and a patch of the files changed since): which rows match the query's clauses
is decided with array operations over each term's rows, and the score is FTS5's ``bm25()``
(``store/bm25.py``, the formula the Milvus backend scores with too), phrases summed in FTS5's
order. What it does not cover (prefixes) is left to FTS5 (:func:`supported`); a phrase of
several words matches the rows FTS5 names (the postings keep no positions).

Only rows that can reach the top k are ranked: of a whole-part array of scores, those at or
above the k-th best of a sample (:func:`_contenders`), and a query with required clauses is
scored over the rows of the rarest one only (``postings_topk.py``). Both give the top k that
ranking every matching row gives, to the bit (``tests/test_keyword_topk.py``).
"""

from __future__ import annotations

import threading
from collections import OrderedDict
from collections.abc import Callable, Hashable, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
import numpy.typing as npt

from noteseek.store import bm25
from noteseek.store.bm25 import Floats
from noteseek.store.sqlite import postings_topk
from noteseek.store.sqlite.postings import FIELDS, TF_MAX, Ints, Mask, Postings
from noteseek.store.sqlite.postings_topk import Scored, Shape
from noteseek.types import FTS_FIELDS, Clause, KeywordQuery


def supported(query: KeywordQuery) -> bool:
    """Whether :func:`score` answers ``query`` (no prefix clauses)."""
    return not any(c.prefix for c in (*query.clauses, *query.excluded))


PhraseRows = Callable[[tuple[str, ...], tuple[str, ...]], Ints]
"""The rowids of the rows holding a phrase of several words (in the given fields; empty: in
any): FTS5 answers, since the postings keep no positions."""


@dataclass
class Part:
    """One :class:`Postings` in a search, with the rows still live in it (None: all)."""

    postings: Postings
    alive: Mask | None = None
    _norm: Floats | None = None
    _norm_avgdl: float = -1.0
    _live: tuple[int, int] | None = None

    def live(self) -> tuple[int, int]:
        """(rows, tokens) live in this part."""
        if self._live is None:
            lengths = self.postings.lengths
            if self.alive is not None:
                lengths = lengths[self.alive]
            self._live = (len(lengths), int(lengths.sum(dtype=np.int64)))
        return self._live

    def norm(self, avgdl: float) -> Floats:
        """BM25's length part per row (``bm25.norms``), kept while ``avgdl`` holds."""
        if self._norm is None or self._norm_avgdl != avgdl:
            self._norm = bm25.norms(self.postings.lengths, avgdl)
            self._norm_avgdl = avgdl
        return self._norm


def score(
    parts: Sequence[Part],
    query: KeywordQuery,
    all_required: bool,
    weights: Sequence[float],
    limit: int,
    phrase_rows: PhraseRows,
    allowed: Sequence[Mask | None] = (),
    terms: TermCache | None = None,
) -> list[tuple[int, float]]:
    """The top ``limit`` (rowid, BM25) of the rows that match, best first, ties by rowid: what
    ``SELECT rowid, -bm25(...) ... WHERE MATCH ... ORDER BY 2 DESC, rowid LIMIT ?`` returns.

    ``all_required``: every clause must match (``all`` mode); otherwise required clauses must
    and at least one other clause must, when there are others. Rows holding an excluded
    word are left out, and rows ``allowed`` (per part; None: all) does not let through.

    A phrase of several words matches the rows ``phrase_rows`` names; its count in a field
    of such a row is taken as its least frequent word's count there (an upper bound of
    FTS5's, equal when the words occur only together, as in the parts of an identifier).

    ``terms`` keeps each phrase's rows and score parts for the next search over the same
    ``parts`` (they depend on the phrase, the columns and the weights only)."""
    n_rows = sum(p.live()[0] for p in parts)
    if n_rows == 0 or limit <= 0:
        return []
    avgdl = sum(p.live()[1] for p in parts) / n_rows
    cols = [FTS_FIELDS.index(f) for f in query.fields] if query.fields else list(range(FIELDS))
    w = bm25.field_weights(weights, cols, FIELDS)
    # FTS5's phrase order: the required clauses' alternatives, then the others'.
    ordered = [
        (clause, required)
        for required in (True, False)
        for clause in query.clauses
        if (all_required or clause.required) == required
    ]
    found: list[Scored] = []
    for clause, _ in ordered:
        for alt in clause.alternatives:
            if not alt:
                continue
            key = (alt, query.fields, tuple(w))
            got = terms.get(key) if terms is not None else None
            if got is None:
                per_part = _postings(parts, alt, cols, phrase_rows, query.fields)
                got = _gains(parts, per_part, w, n_rows, avgdl)
                if terms is not None:
                    terms.put(key, got)
            found.append(got)
    excluded_postings = [  # per excluded word or phrase, per part: its postings
        _postings(parts, alt, list(range(FIELDS)), phrase_rows, ())
        for clause in query.excluded
        for alt in clause.alternatives
        if alt
    ]
    # Every row holding a phrase scores above 0 when each column searched weighs something.
    positive = all(w[c] > 0 for c in cols)
    shape = _shape(ordered, parts, excluded_postings, allowed, positive)
    rowids = [part.postings.rows for part in parts]
    fewer = postings_topk.top(rowids, found, shape) if CANDIDATES else None
    if fewer is not None:
        picked, scores = fewer
        rows = [r[p] for r, p in zip(rowids, picked, strict=True)]
        return top(np.concatenate(rows), np.concatenate(scores), limit)
    return top(*exhaustive(rowids, found, shape, limit), limit)


CANDIDATES = True
"""Whether a query with required clauses is scored over the rows of the rarest one only
(``postings_topk``); off, every row is (for comparing the two)."""


def _shape(
    ordered: list[tuple[Clause, bool]],
    parts: Sequence[Part],
    excluded_postings: list[list[tuple[npt.NDArray[np.int32], npt.NDArray[Any]]]],
    allowed: Sequence[Mask | None],
    positive: bool,
) -> Shape:
    """The query's clauses as numbers of its phrases (in FTS5's order, empty alternatives
    left out) and, per part, the rows excluded and the rows a filter lets through."""
    required: list[list[int]] = []
    optional: list[list[int]] = []
    i = 0
    for clause, is_required in ordered:
        numbers = []
        for alt in clause.alternatives:
            if alt:
                numbers.append(i)
                i += 1
        (required if is_required else optional).append(numbers)
    excluded: list[npt.NDArray[np.int32] | None] = []
    for k in range(len(parts)):
        held = [per_part[k][0] for per_part in excluded_postings]
        excluded.append(np.concatenate(held) if held else None)
    masks = [allowed[k] if k < len(allowed) else None for k in range(len(parts))]
    return Shape(required, optional, excluded, masks, positive)


def exhaustive(
    rowids: Sequence[Ints], found: Sequence[Scored], shape: Shape, limit: int
) -> tuple[Ints, Floats]:
    """The matching rows (their rowids) and their scores, every row of the top ``limit``
    among them: each part's rows holding a phrase summed into arrays, whole-part arrays when
    the postings are many (``SPARSE``), of which only the rows that can reach the top k are
    kept (:func:`_contenders`)."""
    out_rows: list[Ints] = []
    out_scores: list[Floats] = []
    for k, rows_of in enumerate(rowids):
        size = len(rows_of)
        rows_in = [phrase.parts[k][0] for phrase in found]
        gains = [phrase.parts[k][1] for phrase in found]
        clause_rows: list[list[npt.NDArray[np.int32]]] = [[], []]
        for n, clauses in enumerate((shape.required, shape.optional)):
            for clause in clauses:
                held = [rows_in[i] for i in clause]
                if len(held) > 1:  # rows holding any alternative, each once
                    held = [np.unique(np.concatenate(held))]
                clause_rows[n].extend(held)
        # A required clause with no words is counted, never held: nothing matches.
        counts = (len(shape.required), bool(shape.optional))
        excluded, mask = shape.excluded[k], shape.allowed[k]
        if sum(len(r) for r in rows_in) * SPARSE >= size:
            total = _sums(rows_in, gains, size)
            # What decides the top k: a row's score where it matches and may be shown, less
            # than every score elsewhere (where it does not: 0 when every matching row has a
            # positive score, else -1).
            if not shape.required and shape.positive:
                filtered = excluded is not None or mask is not None
                keyed, floor = (total.copy() if filtered else total), 0.0
            else:
                match = _match(clause_rows, counts, size)
                keyed, floor = np.where(match, total, -1.0), -1.0
            if excluded is not None:
                keyed[excluded] = floor
            if mask is not None:
                keyed[~mask] = floor
            picked = _contenders(keyed, floor, limit)
            out_rows.append(rows_of[picked])
            out_scores.append(total[picked])
            continue
        picked, scores = _matches(size, rows_in, gains, clause_rows[0], clause_rows[1], counts)
        if excluded is not None:
            keep = ~np.isin(picked, excluded)
            picked, scores = picked[keep], scores[keep]
        if mask is not None:
            keep = mask[picked]
            picked, scores = picked[keep], scores[keep]
        out_rows.append(rows_of[picked])
        out_scores.append(scores)
    return np.concatenate(out_rows), np.concatenate(out_scores)


SPARSE = 8
"""Postings fewer than a part's rows / this are scored over the rows they hold, not over
arrays as long as the part (of which most stay zero)."""
SAMPLE = 16
"""A whole-part array of scores is sampled at this many times the rows asked for (below:
every matching row is kept)."""


def _match(
    clause_rows: list[list[npt.NDArray[np.int32]]], counts: tuple[int, bool], size: int
) -> Mask:
    """Over a whole part: the rows holding every required clause and, when there are others,
    one of them."""
    n_required, has_optional = counts
    match = np.ones(size, dtype=bool)
    if n_required:
        match = _counts(clause_rows[0], size) == n_required
    if has_optional:
        match &= _counts(clause_rows[1], size) > 0
    return match


def _contenders(keyed: Floats, floor: float, limit: int) -> Ints:
    """The rows (ascending) of a whole-part array of scores (``floor`` where a row is not a
    match) that can be among its best ``limit``: those at or above the ``limit``-th best of an
    evenly spaced sample, when the sample holds that many matches (a subset's ``limit``-th
    best is at most the whole's, so no row below it can reach the top k, nor tie with it).
    Partitioning the sample and a few hundred rows costs less than partitioning every match."""
    step = len(keyed) // (SAMPLE * limit)
    if step >= 2:
        sample = keyed[::step]
        n = int(np.count_nonzero(sample > floor))
        if n >= limit:
            least = float(np.partition(sample, len(sample) - limit)[len(sample) - limit])
            return np.flatnonzero(keyed >= least)
    return np.flatnonzero(keyed > floor)


def _matches(
    size: int,
    rows_in: list[npt.NDArray[np.int32]],
    gains: list[Floats],
    required_rows: list[npt.NDArray[np.int32]],
    optional_rows: list[npt.NDArray[np.int32]],
    shape: tuple[int, bool],
) -> tuple[Ints, Floats]:
    """The row numbers that match (every required clause and, when there are others, one of
    them) in ascending order, and their scores: each row's gains summed one after another in
    the order given (FTS5's phrase order), the same sums whichever way they are counted. Over
    the rows the postings hold (few postings)."""
    n_required, has_optional = shape
    held = sum(len(r) for r in rows_in)
    if not held:
        return np.zeros(0, dtype=np.int64), np.zeros(0, dtype=np.float64)
    rows, at = np.unique(np.concatenate(rows_in), return_inverse=True)
    total = np.bincount(at, np.concatenate(gains), minlength=len(rows)).astype(np.float64)
    match = np.ones(len(rows), dtype=bool)
    if n_required:
        match = _counts_of(rows, required_rows) == n_required
    if has_optional:
        match &= _counts_of(rows, optional_rows) > 0
    return rows[match].astype(np.int64), total[match]


def _counts_of(rows: npt.NDArray[np.int32], held: list[npt.NDArray[np.int32]]) -> Ints:
    """How many of ``held`` (each with distinct rows, all among ``rows``) hold each row."""
    if not held:
        return np.zeros(len(rows), dtype=np.int64)
    return np.bincount(np.searchsorted(rows, np.concatenate(held)), minlength=len(rows))


def _gains(
    parts: Sequence[Part],
    per_part: list[tuple[npt.NDArray[np.int32], npt.NDArray[Any]]],
    w: Floats,
    n_rows: int,
    avgdl: float,
) -> Scored:
    """A phrase's gain in each live row holding it, per part."""
    idf = bm25.idf(n_rows, sum(len(rows) for rows, _ in per_part))
    out = [
        (rows, bm25.gains(idf, bm25.frequencies(tf, w), part.norm(avgdl)[rows]))
        for part, (rows, tf) in zip(parts, per_part, strict=True)
    ]
    return Scored(out)


class TermCache:
    """Phrases scored over one set of parts (:class:`~.postings_topk.Scored`), the most recent
    kept, up to a number of postings (a phrase most rows hold is the costly one to score
    again). Thread-safe."""

    def __init__(self, max_postings: int) -> None:
        self.max_postings = max_postings
        self._kept: OrderedDict[Hashable, Scored] = OrderedDict()
        self._size = 0
        self._lock = threading.Lock()

    def get(self, key: Hashable) -> Scored | None:
        with self._lock:
            found = self._kept.get(key)
            if found is not None:
                self._kept.move_to_end(key)
            return found

    def put(self, key: Hashable, scored: Scored) -> None:
        size = scored.held
        with self._lock:
            if size > self.max_postings or key in self._kept:
                return
            self._kept[key] = scored
            self._size += size
            while self._size > self.max_postings:
                _, old = self._kept.popitem(last=False)
                self._size -= old.held


def _sums(rows: list[npt.NDArray[np.int32]], values: list[Floats], size: int) -> Floats:
    if not rows:
        return np.zeros(size, dtype=np.float64)
    summed = np.bincount(np.concatenate(rows), np.concatenate(values), minlength=size)
    return np.asarray(summed, dtype=np.float64)


def _counts(rows: list[npt.NDArray[np.int32]], size: int) -> Ints:
    if not rows:
        return np.zeros(size, dtype=np.int64)
    return np.bincount(np.concatenate(rows), minlength=size).astype(np.int64, copy=False)


def count(parts: Sequence[Part], clause: Clause, phrase_rows: PhraseRows) -> int:
    """The live rows holding any alternative of ``clause``."""
    per_alt = [
        _postings(parts, alt, list(range(FIELDS)), phrase_rows, ())
        for alt in clause.alternatives
        if alt
    ]
    total = 0
    for k in range(len(parts)):
        held = [per_part[k][0] for per_part in per_alt]
        total += len(np.unique(np.concatenate(held))) if len(held) > 1 else sum(map(len, held))
    return total


def reaches(parts: Sequence[Part], clause: Clause, phrase_rows: PhraseRows, limit: int) -> bool:
    """Whether :func:`count` is at least ``limit``; no postings (nor a phrase's rows) are read
    when the rows holding each word, live or not, say it cannot be: a phrase is in no more
    rows than its rarest word, and a clause in no more than its alternatives together."""
    bound = 0
    for alt in clause.alternatives:
        if alt:
            bound += min(sum(_held(part.postings, word) for part in parts) for word in alt)
    return bound >= limit and count(parts, clause, phrase_rows) >= limit


def _held(postings: Postings, term: str) -> int:
    """Rows holding ``term`` in ``postings``, live or not (from the term offsets alone)."""
    t = postings.term(term)
    return 0 if t < 0 else int(postings.starts[t + 1] - postings.starts[t])


def documents(parts: Sequence[Part], terms: Sequence[str]) -> dict[str, int]:
    """The live rows holding each of ``terms`` (those held by none are left out): what
    FTS5's ``fts5vocab`` table of type ``row`` says in its ``doc`` column. A part with no
    deleted rows answers from its term offsets alone, without reading any postings."""
    out: dict[str, int] = {}
    for term in dict.fromkeys(terms):
        n = 0
        for part in parts:
            postings = part.postings
            if part.alive is None:
                n += _held(postings, term)
            else:
                rows, _ = postings.postings(term)
                n += int(np.count_nonzero(part.alive[rows]))
        if n:
            out[term] = n
    return out


def _postings(
    parts: Sequence[Part],
    words: tuple[str, ...],
    cols: list[int],
    phrase_rows: PhraseRows,
    fields: tuple[str, ...],
) -> list[tuple[npt.NDArray[np.int32], npt.NDArray[Any]]]:
    """Per part, the live rows holding a word or phrase in ``cols``, and its counts there."""
    if len(words) == 1:
        return [_live(p, words[0], cols) for p in parts]
    return _phrase(parts, words, cols, phrase_rows(words, fields))


def _live(part: Part, term: str, cols: list[int]) -> tuple[npt.NDArray[np.int32], npt.NDArray[Any]]:
    """A term's postings in ``part`` that are live and hold it in one of ``cols``."""
    rows, tf = part.postings.postings(term)
    keep: Mask | None = None
    if len(cols) < FIELDS:
        keep = np.asarray((tf[:, cols] > 0).any(axis=1))
    if part.alive is not None:
        live = part.alive[rows]
        keep = live if keep is None else keep & live
    if keep is not None:
        rows, tf = rows[keep], tf[keep]
    return rows, tf


def _phrase(
    parts: Sequence[Part], words: tuple[str, ...], cols: list[int], rowids: Ints
) -> list[tuple[npt.NDArray[np.int32], npt.NDArray[Any]]]:
    """Per part, the rows (of ``rowids``) holding a phrase and its estimated counts per
    field: each field's least count among its words, in the filtered fields only."""
    rowids = np.unique(np.asarray(rowids, dtype=np.int64))  # ascending, as a term's rows
    out = []
    for part in parts:
        rows_of = part.postings.rows
        at = np.searchsorted(rows_of, rowids)
        inside = at < len(rows_of)
        inside[inside] = rows_of[at[inside]] == rowids[inside]
        rows = at[inside].astype(np.int32)
        if part.alive is not None:
            rows = rows[part.alive[rows]]
        tf = np.full((len(rows), FIELDS), TF_MAX, dtype=np.uint16)
        for word in words:
            w_rows, w_tf = part.postings.postings(word)
            pos = np.searchsorted(w_rows, rows)
            pos = np.minimum(pos, max(len(w_rows) - 1, 0))
            if len(w_rows):
                held = w_tf[pos]
                held[w_rows[pos] != rows] = 0
            else:
                held = np.zeros_like(tf)
            np.minimum(tf, held, out=tf)
        if len(cols) < FIELDS:
            tf[:, [c for c in range(FIELDS) if c not in cols]] = 0
        out.append((rows, tf))
    return out


def top(rowids: Ints, scores: Floats, limit: int) -> list[tuple[int, float]]:
    """The ``limit`` best (rowid, score), by score descending, then rowid ascending."""
    if len(rowids) > limit:
        cut = np.partition(scores, len(scores) - limit)[len(scores) - limit]
        keep = scores >= cut
        rowids, scores = rowids[keep], scores[keep]
    order = np.lexsort((rowids, -scores))[:limit]
    return list(zip(rowids[order].tolist(), scores[order].tolist(), strict=True))


def files_of(parts: Sequence[Part], rowids: Sequence[int]) -> dict[int, int]:
    """The file id of each of ``rowids`` that one of ``parts`` holds live, by rowid."""
    want = np.asarray(rowids, dtype=np.int64)
    out: dict[int, int] = {}
    for part in parts:
        rows = part.postings.rows
        if not len(rows) or not len(want):
            continue
        at = np.minimum(np.searchsorted(rows, want), len(rows) - 1)
        held = rows[at] == want
        if part.alive is not None:
            held &= part.alive[at]
        out.update(zip(want[held].tolist(), part.postings.files[at[held]].tolist(), strict=True))
    return out
