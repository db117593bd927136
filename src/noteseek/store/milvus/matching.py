"""The keyword lane's matching, the same as SQLite FTS5's: phrases, their rows and counts.

The Milvus backend stores each chunk's analyzed fields (``types.FTS_FIELDS``, terms joined by
spaces, as the SQLite backend's FTS5 tables hold them) and retrieves candidates with a sparse
vector search; this module decides which candidates match a :class:`KeywordQuery`, counts each
phrase's instances in each field of a candidate, and scores the candidates with FTS5's
``bm25()`` (``store/bm25.py``, the formula the SQLite backend's postings score with), so both
backends rank alike. Each instance of a phrase counts its column's weight; ``n(p)``, the rows
holding a phrase, comes from the term statistics kept in Milvus for a one-term phrase; a longer
phrase, a prefix or a phrase restricted to some fields is counted by matching the rows that
hold its rarest term (or the prefix's expansions).
"""

from __future__ import annotations

import hashlib
from collections import Counter
from collections.abc import Mapping, Sequence
from dataclasses import dataclass

import numpy as np

from noteseek.store import bm25
from noteseek.store.base import MatchMode
from noteseek.types import FTS_FIELDS, Clause, KeywordQuery


def _default_weights() -> tuple[float, ...]:
    from noteseek.config.search import ColumnWeights

    defaults = ColumnWeights()
    return tuple(float(getattr(defaults, name)) for name in FTS_FIELDS)


INDEX_WEIGHTS = _default_weights()
"""Field weights baked into the stored rows (the default ``[search.weights]``). In the sparse
vectors they only order the candidates (the final score uses the weights each query passes);
in the text of Milvus's BM25 function they are the weights a query with the defaults gets."""

Fields = tuple[tuple[str, ...], ...]
"""A row's analyzed fields, tokenized: one tuple of terms per field of ``FTS_FIELDS``."""


def tokenize(fields: Sequence[str]) -> Fields:
    """The stored field strings as the FTS5 tokenizer splits them (whitespace, case folded)."""
    return tuple(tuple(text.lower().split()) for text in fields)


def term_id(term: str) -> int:
    """The sparse dimension of ``term``: 1 .. 2^32 - 2 (0 is the empty row's placeholder)."""
    value = int.from_bytes(hashlib.blake2b(term.encode("utf-8"), digest_size=4).digest(), "big")
    return min(max(value, 1), 2**32 - 2)


def row_terms(fields: Fields) -> set[str]:
    return {t for field in fields for t in field}


def sparse_row(fields: Fields, avgdl: float) -> dict[int, float]:
    """The stored sparse vector of a row: each term's saturated weighted frequency."""
    total = sum(len(f) for f in fields)
    tf: dict[str, float] = {}
    for weight, field in zip(INDEX_WEIGHTS, fields, strict=False):
        for term in field:
            tf[term] = tf.get(term, 0.0) + weight
    if not tf:
        return {0: 1e-9}
    norm = bm25.norms(np.asarray([total]), max(avgdl, 1.0))
    saturated = bm25.gains(1.0, np.fromiter(tf.values(), np.float64, len(tf)), norm)
    return dict(zip(map(term_id, tf), saturated.tolist(), strict=True))


def bm25_text(fields: Fields, budget: int) -> str:
    """A row's text for Milvus's BM25 function: each field's terms repeated by its weight in
    :data:`INDEX_WEIGHTS`, so a term's frequency counts as FTS5's weighted columns count it
    (the row's length counts the repeats too); at most ``budget`` bytes, the naming fields
    first (a very long document loses the end of its body)."""
    out: list[str] = []
    size = 0
    for weight, field in zip(INDEX_WEIGHTS, fields, strict=False):
        if not field:
            continue
        part = " ".join(field)
        for _ in range(max(1, round(weight))):
            cost = len(part.encode("utf-8")) + 1
            if size + cost > budget:
                return " ".join(out) + _head(part, budget - size)
            out.append(part)
            size += cost
    return " ".join(out)


def _head(part: str, budget: int) -> str:
    """The whole terms of ``part`` that fit ``budget`` bytes, after a space."""
    if budget <= 1:
        return ""
    cut = part.encode("utf-8")[: budget - 1].decode("utf-8", "ignore")
    return " " + cut.rsplit(" ", 1)[0] if " " in cut else ""


@dataclass(frozen=True, slots=True)
class Phrase:
    terms: tuple[str, ...]
    prefix: bool
    columns: tuple[int, ...]


@dataclass(frozen=True, slots=True)
class Plan:
    """A query as phrases, in FTS5's order, and the clauses that decide a match."""

    phrases: tuple[Phrase, ...]
    required: tuple[tuple[int, ...], ...]
    """Each required clause as the indexes of its phrases (one must match)."""
    optional: tuple[tuple[int, ...], ...]
    """At least one of these clauses must match (when there are any)."""
    excluded: tuple[tuple[int, ...], ...]


def plan(query: KeywordQuery, mode: MatchMode) -> Plan | None:
    """The query's phrases and clauses as ``fts_expression`` builds them; None = no match."""
    columns = (
        tuple(i for i, f in enumerate(FTS_FIELDS) if f in query.fields)
        if query.fields
        else tuple(range(len(FTS_FIELDS)))
    )
    every = tuple(range(len(FTS_FIELDS)))
    phrases: list[Phrase] = []

    def add(clauses: Sequence[Clause], cols: tuple[int, ...]) -> list[tuple[int, ...]]:
        out = []
        for clause in clauses:
            alts = [a for a in clause.alternatives if a]
            if not alts:
                continue
            start = len(phrases)
            phrases.extend(Phrase(tuple(t.lower() for t in a), clause.prefix, cols) for a in alts)
            out.append(tuple(range(start, len(phrases))))
        return out

    required = add([c for c in query.clauses if c.required or mode == "all"], columns)
    optional = add([c for c in query.clauses if not (c.required or mode == "all")], columns)
    if not required and not optional:
        return None
    excluded = add(query.excluded, every)
    return Plan(tuple(phrases), tuple(required), tuple(optional), tuple(excluded))


def instances(
    phrase: Phrase, fields: Fields, counters: Sequence[Mapping[str, int]] | None = None
) -> list[int]:
    """How many times ``phrase`` occurs in each field (0 outside its columns); ``counters``
    (each field's term counts) answer a one-term phrase without a scan."""
    counts = [0] * len(fields)
    n = len(phrase.terms)
    if counters is not None:
        if n == 1 and not phrase.prefix:
            for c in phrase.columns:
                if c < len(counters):
                    counts[c] = counters[c].get(phrase.terms[0], 0)
            return counts
        whole = phrase.terms if not phrase.prefix else phrase.terms[:-1]
        if not all(any(t in counters[c] for c in phrase.columns) for t in whole):
            return counts  # a term of the phrase is in none of its fields
    head, last = phrase.terms[:-1], phrase.terms[-1]
    for c in phrase.columns:
        if c >= len(fields):
            continue
        tokens = fields[c]
        for i in range(len(tokens) - n + 1):
            end = tokens[i + n - 1]
            if not (end.startswith(last) if phrase.prefix else end == last):
                continue
            if all(tokens[i + j] == t for j, t in enumerate(head)):
                counts[c] += 1
    return counts


def evaluate(p: Plan, fields: Fields) -> list[list[int]] | None:
    """Each phrase's instances per field when the row matches the plan; None when not."""
    counters = [Counter(f) for f in fields]
    found = [instances(ph, fields, counters) for ph in p.phrases]
    hit = [any(f) for f in found]
    if not all(any(hit[i] for i in clause) for clause in p.required):
        return None
    if p.optional and not any(any(hit[i] for i in clause) for clause in p.optional):
        return None
    if any(any(hit[i] for i in clause) for clause in p.excluded):
        return None
    return found


def needs_check(p: Plan) -> bool:
    """Whether a row holding any of the plan's terms may still not match it: it has required
    clauses, exclusions, phrases of several terms or a field restriction (a prefix's
    expansions are whole terms, so holding one is matching it)."""
    every = len(FTS_FIELDS)
    return bool(
        p.required
        or p.excluded
        or any(len(ph.terms) > 1 or len(ph.columns) != every for ph in p.phrases)
    )


def counted_by_statistics(phrase: Phrase) -> bool:
    """Whether the term statistics give the rows holding ``phrase`` exactly: one whole
    term, searched in every field. Others (phrases, prefixes, a field restriction) are
    counted by matching the rows that hold their rarest term."""
    return len(phrase.terms) == 1 and not phrase.prefix and len(phrase.columns) == len(FTS_FIELDS)


def idfs(p: Plan, df: Mapping[str, int], counted: Mapping[int, int], rows: int) -> list[float]:
    """Each phrase's idf: from the term statistics, or ``counted`` (phrase index -> rows
    holding it) for the phrases the statistics do not answer."""
    return [
        bm25.idf(rows, min(counted[i] if i in counted else df.get(ph.terms[0], 0), rows))
        for i, ph in enumerate(p.phrases)
    ]


def scores(
    found: Sequence[list[list[int]]],
    idf: Sequence[float],
    weights: Sequence[float],
    tokens: Sequence[int],
    avgdl: float,
    fields: Sequence[int] | None = None,
) -> list[float]:
    """FTS5's BM25 (positive: higher is better) of matching rows, from each row's phrase
    instances per field (:func:`evaluate`) and its tokens; ``fields``: only these fields
    weigh (the others 0), as for a per-field score."""
    if not found:
        return []
    n = len(FTS_FIELDS)
    counts = np.asarray(found, dtype=np.int64).reshape(len(found), len(idf), n)
    per_phrase = np.ascontiguousarray(counts.transpose(1, 0, 2))
    w = bm25.field_weights(weights, range(n) if fields is None else fields, n)
    norm = bm25.norms(np.asarray(tokens), avgdl) if avgdl > 0 else np.full(len(found), bm25.K1)
    points: list[float] = bm25.scores(per_phrase, idf, w, norm).tolist()
    return points


def query_terms(p: Plan) -> tuple[set[str], set[str]]:
    """(whole terms, prefixes) a candidate must hold one of; excluded ones are not searched."""
    skip = {i for clause in p.excluded for i in clause}
    terms: set[str] = set()
    prefixes: set[str] = set()
    for i, ph in enumerate(p.phrases):
        if i in skip:
            continue
        terms.update(ph.terms[:-1])
        (prefixes if ph.prefix else terms).add(ph.terms[-1])
    return terms, prefixes
