"""FTS5's BM25 from precomputed postings, in numpy: the keyword index's fast path.

FTS5 ranks an OR query by visiting and scoring every row that holds any of its words, one
row at a time, and counts each phrase's matching rows again on every query; over 165k chunks
with words most chunks hold, that took 10 to 60 ms a query (docs/benchmarks.md, issue 17).
:class:`Postings` holds the same information as a table's FTS5 index, laid out for array
arithmetic: per term, the rows that hold it (ascending) and how often in each field. Scoring
a query is a few vector operations per term.

The score is FTS5's ``bm25()``, reproduced term for term (``fts5_aux.c``)::

    idf(p)   = ln((N - n(p) + 0.5) / (n(p) + 0.5)), at least 1e-6
    f(p, r)  = sum over fields c of weight[c] x count of p in c (fields outside a column
               filter count 0)
    score(r) = sum over phrases p of idf(p) x f (k1 + 1) / (f + k1 (1 - b + b |r| / avgdl))

with N the rows, n(p) the rows holding p (in the filtered columns), |r| the row's tokens in
every field and avgdl their mean, k1 = 1.2, b = 0.75, phrases summed in query order. What it
does not cover (phrases of several words, prefixes) is left to FTS5 (:func:`supported`).
Counts in one field of one row are held up to the postings' count type's maximum (255 for
chunks, 65,535 for whole documents: ``impacts.TF_TYPES``).
"""

from __future__ import annotations

import threading
import zlib
from collections import OrderedDict
from collections.abc import Callable, Hashable, Iterable, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
import numpy.typing as npt

from noteseek.types import FTS_FIELDS, Clause, KeywordQuery

K1 = 1.2
B = 0.75
FIELDS = len(FTS_FIELDS)
TF_MAX = 65535
"""The most occurrences of a term per field and row any postings hold (FTS5 counts on; long
before this BM25's term frequency part has saturated)."""
BATCH_ROWS = 4096
BATCH_CHARS = 2_000_000
"""Rows, and characters of text, tokenised per step of a build at most (bounds the build's
working memory: whole documents are long)."""

Ints = npt.NDArray[np.int64]
Floats = npt.NDArray[np.float64]
Mask = npt.NDArray[np.bool_]
Row = tuple[int, int, Sequence[str]]
"""(rowid, file id, the six analyzed fields) of one FTS row."""


def term_hash(term: str) -> int:
    """A term's place in :attr:`Postings.hashes` (the same in every process)."""
    return zlib.crc32(term.encode("utf-8"))


@dataclass(frozen=True)
class Postings:
    """One FTS table's rows and postings, as arrays (built, or mapped from a saved file)."""

    rows: Ints
    """Rowid per row, ascending."""
    files: Ints
    """File id per row."""
    lengths: npt.NDArray[np.int32]
    """Tokens per row over every field (FTS5's column sizes summed)."""
    hashes: npt.NDArray[np.uint32]
    """:func:`term_hash` of every term, ascending (equal hashes are adjacent)."""
    hash_terms: npt.NDArray[np.int32]
    """The term number of each entry of :attr:`hashes`."""
    starts: Ints
    """Term ``t``'s postings are ``starts[t]:starts[t + 1]``."""
    vocab: npt.NDArray[np.uint8]
    """The terms' UTF-8 bytes, term after term."""
    vocab_starts: Ints
    post_rows: npt.NDArray[np.int32]
    """Row number (index into :attr:`rows`) per posting, ascending within a term. Loaded
    postings keep this and :attr:`post_tf` in their file and read the slices asked for
    (``impact_file.FileRows``): use them through :meth:`postings` only."""
    post_tf: npt.NDArray[Any]
    """Occurrences per posting and field, shape (postings, fields), unsigned integers."""

    @property
    def size(self) -> int:
        return int(self.rows.shape[0])

    def term(self, term: str) -> int:
        """The term's number, -1 when no row holds it."""
        h = term_hash(term)
        lo = int(np.searchsorted(self.hashes, h, "left"))
        hi = int(np.searchsorted(self.hashes, h, "right"))
        want = term.encode("utf-8")
        for i in range(lo, hi):
            t = int(self.hash_terms[i])
            a, b = int(self.vocab_starts[t]), int(self.vocab_starts[t + 1])
            if self.vocab[a:b].tobytes() == want:
                return t
        return -1

    def postings(self, term: str) -> tuple[npt.NDArray[np.int32], npt.NDArray[Any]]:
        t = self.term(term)
        if t < 0:
            return EMPTY_ROWS, EMPTY_TF
        a, b = int(self.starts[t]), int(self.starts[t + 1])
        return self.post_rows[a:b], self.post_tf[a:b]


EMPTY_ROWS = np.zeros(0, dtype=np.int32)
EMPTY_TF = np.zeros((0, FIELDS), dtype=np.uint16)


def build(rows: Iterable[Row], tf_dtype: type[np.unsignedinteger[Any]] = np.uint16) -> Postings:
    """Postings of ``rows`` (ascending rowids), tokenised as FTS5's tokenizer does the
    analyzed fields (tokens are separated by whitespace: ``migrations.FTS_TOKENIZER``).

    Counts per field are held in ``tf_dtype`` (a count above its maximum is held as that
    maximum). Batches are tokenised first, then placed term by term into the final arrays,
    so the build's memory stays near twice the postings' size."""
    tf_max = int(np.iinfo(tf_dtype).max)
    vocab = _Vocab()
    rowids: list[int] = []
    files: list[int] = []
    lengths: list[int] = []
    parts: list[tuple[npt.NDArray[np.int32], npt.NDArray[np.int32], npt.NDArray[Any]]] = []
    batch: list[Row] = []
    chars = 0

    def flush() -> None:
        if batch:
            first = len(rowids) - len(batch)
            parts.append(_tokenise(batch, first, vocab, lengths, tf_dtype, tf_max))
            batch.clear()

    for row in rows:
        rowids.append(row[0])
        files.append(row[1])
        batch.append(row)
        chars += sum(len(text) for text in row[2] if text)
        if len(batch) >= BATCH_ROWS or chars >= BATCH_CHARS:
            flush()
            chars = 0
    flush()
    counts = np.zeros(len(vocab), dtype=np.int64)
    for terms, _, _ in parts:
        counts += np.bincount(terms, minlength=len(vocab))
    starts = np.zeros(len(vocab) + 1, dtype=np.int64)
    np.cumsum(counts, out=starts[1:])
    total = int(starts[-1])
    post_rows = np.empty(total, dtype=np.int32)
    post_tf = np.empty((total, FIELDS), dtype=tf_dtype)
    cursor = starts[:-1].copy()
    while parts:  # batches in row order: rows stay ascending within each term
        terms, batch_rows, tf = parts.pop(0)
        edge = np.ones(len(terms), dtype=bool)
        edge[1:] = terms[1:] != terms[:-1]
        run_start = np.flatnonzero(edge)
        run_length = np.diff(np.append(run_start, len(terms)))
        where = cursor[terms] + np.arange(len(terms)) - np.repeat(run_start, run_length)
        post_rows[where] = batch_rows
        post_tf[where] = tf
        cursor[terms[run_start]] += run_length
    words = list(vocab)
    vocab.clear()
    encoded = [w.encode("utf-8") for w in words]
    del words
    vocab_starts = np.zeros(len(encoded) + 1, dtype=np.int64)
    np.cumsum([len(e) for e in encoded], out=vocab_starts[1:])
    hashes = np.fromiter((zlib.crc32(e) for e in encoded), dtype=np.uint32, count=len(encoded))
    by_hash = np.argsort(hashes, kind="stable")
    return Postings(
        rows=np.asarray(rowids, dtype=np.int64),
        files=np.asarray(files, dtype=np.int64),
        lengths=np.asarray(lengths, dtype=np.int32),
        hashes=hashes[by_hash],
        hash_terms=by_hash.astype(np.int32),
        starts=starts,
        vocab=np.frombuffer(b"".join(encoded), dtype=np.uint8),
        vocab_starts=vocab_starts,
        post_rows=post_rows,
        post_tf=post_tf,
    )


class _Vocab(dict[str, int]):
    """Term numbers, a new term numbered as it is first looked up."""

    def __missing__(self, term: str) -> int:
        number = self[term] = len(self)
        return number


def _tokenise(
    batch: list[Row],
    first: int,
    vocab: _Vocab,
    lengths: list[int],
    tf_dtype: type[np.unsignedinteger[Any]],
    tf_max: int,
) -> tuple[npt.NDArray[np.int32], npt.NDArray[np.int32], npt.NDArray[Any]]:
    """One batch's (term, row, per-field counts), sorted by term then row."""
    ids: list[int] = []
    slots: list[int] = []  # row in batch x FIELDS + field, per token
    for n, (_, _, fields) in enumerate(batch):
        total = 0
        for c, text in enumerate(fields):
            if not text:
                continue
            tokens = text.split()
            total += len(tokens)
            ids.extend(map(vocab.__getitem__, tokens))
            slots.extend([n * FIELDS + c] * len(tokens))
        lengths.append(total)
    if not ids:
        empty = np.zeros(0, np.int32)
        return empty, empty, np.zeros((0, FIELDS), dtype=tf_dtype)
    span = len(batch) * FIELDS
    keys = np.asarray(ids, dtype=np.int64) * span + np.asarray(slots, dtype=np.int64)
    del ids, slots
    keys, counts = np.unique(keys, return_counts=True)
    term, slot = np.divmod(keys, span)
    row, field = np.divmod(slot, FIELDS)
    edge = np.ones(len(keys), dtype=bool)
    edge[1:] = (term[1:] != term[:-1]) | (row[1:] != row[:-1])
    group = np.cumsum(edge) - 1
    tf = np.zeros((int(group[-1]) + 1, FIELDS), dtype=tf_dtype)
    tf[group, field] = np.minimum(counts, tf_max)
    return term[edge].astype(np.int32), (row[edge] + first).astype(np.int32), tf


# -- scoring -----------------------------------------------------------------------------------


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
        """``k1 (1 - b + b |r| / avgdl)`` per row, kept while ``avgdl`` holds."""
        if self._norm is None or self._norm_avgdl != avgdl:
            lengths = self.postings.lengths.astype(np.float64)
            self._norm = K1 * (1 - B + B * lengths / avgdl)
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
    w = np.zeros(FIELDS, dtype=np.float64)
    w[cols] = [float(weights[c]) for c in cols]
    # FTS5's phrase order: the required clauses' alternatives, then the others'.
    ordered = [
        (clause, required)
        for required in (True, False)
        for clause in query.clauses
        if (all_required or clause.required) == required
    ]
    found: list[Gains] = []
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
    n_required = sum(1 for _, required in ordered if required)
    has_optional = n_required < len(ordered)
    out_rows: list[Ints] = []
    out_scores: list[Floats] = []
    for k, part in enumerate(parts):
        size = part.postings.size
        rows_in: list[npt.NDArray[np.int32]] = []
        gains: list[Floats] = []
        required_rows: list[npt.NDArray[np.int32]] = []
        optional_rows: list[npt.NDArray[np.int32]] = []
        i = 0
        for clause, required in ordered:
            held: list[npt.NDArray[np.int32]] = []
            for alt in clause.alternatives:
                if not alt:
                    continue
                rows, gain = found[i][k]
                rows_in.append(rows)
                gains.append(gain)
                held.append(rows)
                i += 1
            if len(held) > 1:  # rows holding any alternative, each once
                held = [np.unique(np.concatenate(held))]
            if held:
                (required_rows if required else optional_rows).append(held[0])
        excluded = [per_part[k][0] for per_part in excluded_postings]
        mask = allowed[k] if k < len(allowed) else None
        shape = (n_required, has_optional)
        picked, scores = _matches(size, rows_in, gains, required_rows, optional_rows, shape)
        if excluded:
            keep = ~np.isin(picked, np.concatenate(excluded))
            picked, scores = picked[keep], scores[keep]
        if mask is not None:
            keep = mask[picked]
            picked, scores = picked[keep], scores[keep]
        out_rows.append(part.postings.rows[picked])
        out_scores.append(scores)
    return top(np.concatenate(out_rows), np.concatenate(out_scores), limit)


SPARSE = 8
"""Postings fewer than a part's rows / this are scored over the rows they hold, not over
arrays as long as the part (of which most stay zero)."""


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
    the order given (FTS5's phrase order), the same sums whichever way they are counted."""
    n_required, has_optional = shape
    held = sum(len(r) for r in rows_in)
    if held * SPARSE >= size:
        total = _sums(rows_in, gains, size)
        match = np.ones(size, dtype=bool)
        if n_required:
            match = _counts(required_rows, size) == n_required
        if has_optional:
            match &= _counts(optional_rows, size) > 0
        picked = np.flatnonzero(match)
        return picked, total[picked]
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


Gains = list[tuple[npt.NDArray[np.int32], Floats]]
"""Per part: the live rows holding a phrase, and what it adds to each row's score."""


def _gains(
    parts: Sequence[Part],
    per_part: list[tuple[npt.NDArray[np.int32], npt.NDArray[Any]]],
    w: Floats,
    n_rows: int,
    avgdl: float,
) -> Gains:
    hits = sum(len(rows) for rows, _ in per_part)
    idf = float(np.log((n_rows - hits + 0.5) / (hits + 0.5)))
    idf = idf if idf > 0 else 1e-6
    out: Gains = []
    for part, (rows, tf) in zip(parts, per_part, strict=True):
        f = tf @ w
        out.append((rows, idf * (f * (K1 + 1.0)) / (f + part.norm(avgdl)[rows])))
    return out


class TermCache:
    """Phrases' :data:`Gains` over one set of parts, the most recent kept, up to a number of
    postings (a phrase most rows hold is the costly one to score again). Thread-safe."""

    def __init__(self, max_postings: int) -> None:
        self.max_postings = max_postings
        self._kept: OrderedDict[Hashable, Gains] = OrderedDict()
        self._size = 0
        self._lock = threading.Lock()

    def get(self, key: Hashable) -> Gains | None:
        with self._lock:
            found = self._kept.get(key)
            if found is not None:
                self._kept.move_to_end(key)
            return found

    def put(self, key: Hashable, gains: Gains) -> None:
        size = sum(len(rows) for rows, _ in gains)
        with self._lock:
            if size > self.max_postings or key in self._kept:
                return
            self._kept[key] = gains
            self._size += size
            while self._size > self.max_postings:
                _, old = self._kept.popitem(last=False)
                self._size -= sum(len(rows) for rows, _ in old)


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
    rowids = np.asarray(rowids, dtype=np.int64)
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
