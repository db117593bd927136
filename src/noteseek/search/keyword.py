"""Keyword retrieval: BM25 over the weighted fields, all-words matches first for short queries.

A short query (up to ``search.all_terms_first`` words) first asks for chunks that hold every
word; when those are fewer than wanted, chunks holding any of the words follow, so a query
never comes back empty because one word is missing. Longer, natural-language queries rank by
BM25 over any word: requiring every word of a sentence would put chance matches first.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from noteseek.analysis import Analyzer
from noteseek.config import SearchSettings
from noteseek.search.query import parse_query
from noteseek.search.snippet import make_snippet
from noteseek.store.base import ChunkRow, MatchMode
from noteseek.store.sqlite import SQLiteStore
from noteseek.types import FTS_FIELDS, Clause, Filters, Hit, KeywordQuery


@dataclass(slots=True)
class KeywordResult:
    rowid: int
    score: float
    match: MatchMode


@dataclass(slots=True)
class KeywordResponse:
    query: KeywordQuery
    results: list[KeywordResult] = field(default_factory=list)


NAMING_FIELDS = ("title", "aliases", "tags")


def weights_of(settings: SearchSettings) -> tuple[float, ...]:
    w = settings.weights
    return tuple(float(getattr(w, name)) for name in FTS_FIELDS)


def retrieve(
    store: SQLiteStore,
    analyzer: Analyzer,
    text: str,
    filters: Filters,
    limit: int,
    settings: SearchSettings,
) -> KeywordResponse:
    """Ranked chunk rowids for a query string (raises QuerySyntaxError for unusable queries)."""
    query = parse_query(text, analyzer)
    response = KeywordResponse(query)
    if not query.clauses:
        return response
    weights = weights_of(settings)
    seen: set[int] = set()
    for attempt, mode in _attempts(store, query, settings):
        want = limit + len(seen)
        for rowid, score in store.keyword_search(attempt, mode, filters, want, weights):
            if rowid in seen:
                continue
            seen.add(rowid)
            response.results.append(KeywordResult(rowid, score, mode))
            if len(response.results) >= limit:
                return response
    return response


def _attempts(
    store: SQLiteStore, query: KeywordQuery, settings: SearchSettings
) -> list[tuple[KeywordQuery, MatchMode]]:
    """The queries to run in order; each adds results until the limit is reached.

    1. Short queries: chunks holding every word.
    2. Chunks holding any word. Words that most chunks contain carry almost no BM25 weight
       but make an OR query visit (and score) most of the index, so when the query also has
       rarer words, chunks matching those come first, ranked by them.
    3. When every word is that common (``of the``, ``parameters`` in a reference manual),
       sections of documents with the words in their title, aliases or tags come first; scoring
       every chunk of the index is the last resort.
    """
    optional = [c for c in query.clauses if not c.required]
    all_first = 1 < len(query.clauses) <= settings.all_terms_first and bool(optional)
    common: set[Clause] = set()
    if optional and settings.common_term_fraction > 0:
        common = {
            c
            for c in optional
            if store.is_common(c, settings.common_term_fraction, settings.common_term_min)
        }
    out: list[tuple[KeywordQuery, MatchMode]] = []
    if common and len(common) == len(optional):
        naming = KeywordQuery(query.clauses, query.excluded, NAMING_FIELDS)
        if all_first:
            out.append((naming, "all"))
        out.append((naming, "any"))
    if all_first:
        out.append((query, "all"))
    if common and len(common) < len(optional):
        rare = tuple(c for c in query.clauses if c not in common)
        out.append((KeywordQuery(rare, query.excluded), "any"))
    out.append((query, "any"))
    return out


def to_hits(
    store: SQLiteStore,
    analyzer: Analyzer,
    response: KeywordResponse,
    settings: SearchSettings,
    *,
    explain: bool = False,
    with_text: bool = False,
    snippets: bool = True,
) -> list[Hit]:
    """Rows, snippets and (optionally) per-field explanations for ranked results."""
    rowids = [r.rowid for r in response.results]
    rows = {row.rowid: row for row in store.chunk_rows(rowids)}
    terms = set(response.query.terms)
    prefixes = [
        alt[-1] for c in response.query.clauses if c.prefix for alt in c.alternatives if alt
    ]
    fields: dict[int, list[float]] = {}
    if explain:
        weights = weights_of(settings)
        for mode in ("all", "any"):
            ids = [r.rowid for r in response.results if r.match == mode]
            fields.update(store.field_scores(response.query, mode, ids, weights))
    hits: list[Hit] = []
    for rank, result in enumerate(response.results, start=1):
        row = rows.get(result.rowid)
        if row is None:  # deleted between the two statements
            continue
        snippet: str = ""
        matched: list[str] = []
        if snippets:
            snippet, matched = make_snippet(
                row.text, terms, prefixes, analyzer, settings.snippet_chars, settings.highlight
            )
        hit = _hit(row, rank, result.score, snippet)
        if with_text:
            hit.text = row.text
        if explain:
            hit.explain = _explain(result, matched, fields.get(result.rowid), terms, analyzer, row)
        hits.append(hit)
    return hits


def _hit(row: ChunkRow, rank: int, score: float, snippet: str) -> Hit:
    return Hit(
        chunk_id=row.chunk_id,
        doc_id=row.doc_id,
        root=row.root,
        path=row.path,
        title=row.title,
        heading_path=row.heading_path,
        start_line=row.start_line,
        end_line=row.end_line,
        score=score,
        snippet=snippet,
        rank=rank,
    )


def _explain(
    result: KeywordResult,
    matched: list[str],
    field_scores: list[float] | None,
    terms: set[str],
    analyzer: Analyzer,
    row: ChunkRow,
) -> dict[str, Any]:
    in_text = {t.term for t in analyzer.tokens(row.text)} & terms
    return {
        "keyword": {
            "bm25": round(result.score, 4),
            "match": "all words" if result.match == "all" else "any word",
            "matched_terms": sorted(in_text | set(matched)),
            "missing_terms": sorted(terms - in_text - set(matched)),
            "fields": (
                {name: round(s, 4) for name, s in zip(FTS_FIELDS, field_scores, strict=True)}
                if field_scores
                else {}
            ),
        }
    }
