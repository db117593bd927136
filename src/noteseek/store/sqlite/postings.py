"""The keyword postings: one FTS table's rows and terms as arrays, built from its rows.

FTS5 ranks an OR query by visiting and scoring every row that holds any of its words, one
row at a time, and counts each phrase's matching rows again on every query; over 165k chunks
with words most chunks hold, that took 10 to 60 ms a query (docs/benchmarks.md, issue 17).
:class:`Postings` holds the same information as a table's FTS5 index, laid out for array
arithmetic: per term, the rows that hold it (ascending) and how often in each field, and per
row its tokens. A query is scored over them in a few vector operations per term
(``postings_search.py``); they are saved beside the index (``postings_file.py``) and kept in
step with it (``postings_state.py``).

Counts in one field of one row are held up to the postings' count type's maximum (255 for
chunks, 65,535 for whole documents: ``postings_state.TF_TYPES``).
"""

from __future__ import annotations

import functools
import threading
import zlib
from array import array
from collections import OrderedDict
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
import numpy.typing as npt

from noteseek.types import FTS_FIELDS

FIELDS = len(FTS_FIELDS)
TF_MAX = 65535
"""The most occurrences of a term per field and row any postings hold (FTS5 counts on; long
before this BM25's term frequency part has saturated)."""
TERMS_KEPT = 100_000
"""Term numbers a :class:`Postings` keeps once looked up (a few MB at most)."""
BATCH_ROWS = 4096
BATCH_CHARS = 2_000_000
"""Rows, and characters of text, tokenised per step of a build at most (bounds the build's
working memory: whole documents are long)."""

Ints = npt.NDArray[np.int64]
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
    (``postings_file.FileRows``): use them through :meth:`postings` only."""
    post_tf: npt.NDArray[Any]
    """Occurrences per posting and field, shape (postings, fields), unsigned integers."""

    @property
    def size(self) -> int:
        return int(self.rows.shape[0])

    @functools.cached_property
    def _numbers(self) -> dict[str, int]:
        """Term -> its number (or -1), for the terms looked up so far (not a field: neither
        saved nor compared)."""
        return {}

    def term(self, term: str) -> int:
        """The term's number, -1 when no row holds it (kept for the next look-up: a query's
        words come back in the next queries, and each look-up is two binary searches)."""
        numbers = self._numbers
        found = numbers.get(term)
        if found is None:
            found = self._find(term)
            if len(numbers) < TERMS_KEPT:
                numbers[term] = found
        return found

    def _find(self, term: str) -> int:
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

    @functools.cached_property
    def _read(self) -> _Kept | None:
        """The postings read from the file lately (None: they are in memory, nothing to keep)."""
        return None if isinstance(self.post_rows, np.ndarray) else _Kept(KEPT_BYTES)

    def postings(self, term: str) -> tuple[npt.NDArray[np.int32], npt.NDArray[Any]]:
        t = self.term(term)
        if t < 0:
            return EMPTY_ROWS, EMPTY_TF
        kept = self._read
        found = None if kept is None else kept.get(t)
        if found is None:
            a, b = int(self.starts[t]), int(self.starts[t + 1])
            found = self.post_rows[a:b], self.post_tf[a:b]
            if kept is not None:
                kept.put(t, found)
        return found


KEPT_BYTES = 16 * 2**20
"""Bytes of postings read from a saved file kept for the next searches, the most recently used
terms' (a query's words come back: of 500 held-out queries' term look-ups, most were of terms
read before). Bounded, unlike a memory map of the file, whose touched pages stay resident."""


class _Kept:
    """Term number -> its postings, least recently used dropped past ``limit`` bytes."""

    def __init__(self, limit: int) -> None:
        self.limit = limit
        self.size = 0
        self._items: OrderedDict[int, tuple[npt.NDArray[np.int32], npt.NDArray[Any]]] = (
            OrderedDict()
        )
        self._lock = threading.Lock()

    def get(self, term: int) -> tuple[npt.NDArray[np.int32], npt.NDArray[Any]] | None:
        with self._lock:
            found = self._items.get(term)
            if found is not None:
                self._items.move_to_end(term)
            return found

    def put(self, term: int, value: tuple[npt.NDArray[np.int32], npt.NDArray[Any]]) -> None:
        size = value[0].nbytes + value[1].nbytes
        if size > self.limit // 4:  # one term's postings never push out most of the others
            return
        with self._lock:
            if term in self._items:
                return
            self._items[term] = value
            self.size += size
            while self.size > self.limit:
                _, (rows, tf) = self._items.popitem(last=False)
                self.size -= rows.nbytes + tf.nbytes


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
    ids = array("q")  # term numbers of every token, in order (C longs: no boxed list)
    per_slot = [0] * (len(batch) * FIELDS)  # tokens per row x field
    lookup = vocab.__getitem__
    for n, (_, _, fields) in enumerate(batch):
        total = 0
        for c, text in enumerate(fields):
            if not text:
                continue
            before = len(ids)
            ids.extend(map(lookup, text.split()))
            count = len(ids) - before
            per_slot[n * FIELDS + c] = count
            total += count
        lengths.append(total)
    slots = np.repeat(np.arange(len(per_slot), dtype=np.int64), per_slot)
    if not ids:
        empty = np.zeros(0, np.int32)
        return empty, empty, np.zeros((0, FIELDS), dtype=tf_dtype)
    span = len(batch) * FIELDS
    keys = np.frombuffer(ids, dtype=np.int64) * span + slots
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
