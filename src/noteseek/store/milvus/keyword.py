"""The keyword lane in Milvus: the server's own BM25, or sparse vectors noteseek scores.

A table made on a server with Milvus's BM25 function (``schema.create_keyword_table``)
holds each row's analyzed terms, repeated by their field's weight, in a text field the
function turns into a sparse vector; the server keeps the statistics, and a search is one
call that returns the best rows with their scores, the filters applied inside it. Rows are
checked against the query here only when it asks more than "any of these words" (required
words, phrases, exclusions, a field restriction): then the rows come with their fields, and
the search widens until enough of them match.

On a server without the function (Milvus Lite), every chunk (and every file, for whole-document
scores) stores its analyzed fields and a sparse vector of its terms' saturated, weighted
frequencies (``matching.sparse_row``). A query becomes a sparse vector of its terms' idf,
computed from the term statistics kept in the ``terms`` collection, and one sparse search with
the filter expression inside returns the rows holding any query term (all of them while they
number at most :data:`CANDIDATES`, else the best that many). The candidates are then matched as
the SQLite backend's FTS5 tables match them (``matching.py``) and scored with FTS5's BM25
(``store/bm25.py``), with the field weights of the call.
"""

from __future__ import annotations

import time
from collections import Counter
from collections.abc import Sequence
from typing import Any

from noteseek.store import bm25
from noteseek.store.base import MatchMode
from noteseek.store.milvus import matching, schema
from noteseek.store.milvus.chunks import MilvusChunks
from noteseek.store.milvus.core import lit
from noteseek.store.milvus.errors import milvus_errors
from noteseek.types import Clause, Filters, KeywordQuery

CANDIDATES = 16_384
"""Milvus's largest ``limit``: rows a search retrieves at most."""
POOL = 10
"""Candidates per result asked for (at least :data:`MIN_POOL`): the sparse search orders rows
by BM25 with the default field weights, so the exact scores of that many decide the top."""
MIN_POOL = 300
NAN_RETRIES, NAN_WAIT = 20, 0.05
"""Tries again, and seconds between them, of a BM25 search the engine fails with NaN."""
MIN_CHECKED = 50
"""Rows a search asks for at least when they are checked against the query here."""
EXPANSIONS = 1_000
"""Terms a prefix expands to at most (the most frequent)."""


class MilvusKeywordIndex(MilvusChunks):
    """:class:`noteseek.store.base.KeywordIndex` over the ``chunks`` and ``files`` sparse
    vectors and the ``terms`` statistics."""

    _common: dict[tuple[Any, ...], bool] | None = None

    @property
    def scores_every_match(self) -> bool:
        """No: the BM25 function's server ranks the matches, and each row it returns is sent
        and scored here (the sparse vectors' lane scores every candidate, as FTS5 does)."""
        return not self.bm25.get(schema.CHUNKS)

    def _frequencies(self, terms: frozenset[str]) -> tuple[dict[str, int], dict[str, int]]:
        """(chunks, documents) holding each of ``terms``, summed over the roots' rows; read
        once for both (a search asks for chunks, then for documents) and kept as the
        statistics are (``MilvusCore._kept``)."""

        def read() -> tuple[dict[str, int], dict[str, int]]:
            chunks: Counter[str] = Counter()
            docs: Counter[str] = Counter()
            for r in self._query_in(schema.TERMS, "term", terms, ["term", "cdf", "ddf"]):
                chunks[str(r["term"])] += int(r["cdf"])  # one row per root: summed
                docs[str(r["term"])] += int(r["ddf"])
            return dict(chunks), dict(docs)

        return self._kept("terms", terms, read)

    def _term_counts(
        self, plan: matching.Plan, doc: bool
    ) -> tuple[dict[str, int], dict[str, list[str]]]:
        """(term -> rows holding it, prefix -> its expansions) for every term of the plan."""
        column = "ddf" if doc else "cdf"
        terms = {t for ph in plan.phrases for t in ph.terms}
        prefixes = {ph.terms[-1] for ph in plan.phrases if ph.prefix}
        df = dict(self._frequencies(frozenset(terms))[1 if doc else 0])
        expansions: dict[str, list[str]] = {}
        for prefix in prefixes:
            pattern = prefix.replace("\\", "\\\\").replace("%", "\\%").replace("_", "\\_")
            found: Counter[str] = Counter()
            for r in self._query(
                schema.TERMS, f"term like {lit(pattern + '%')} and {column} > 0", ["term", column]
            ):
                found[str(r["term"])] += int(r[column])
            best = sorted(found, key=lambda t: (-found[t], t))[:EXPANSIONS]
            expansions[prefix] = best
            df.update({t: found[t] for t in best})
        return df, expansions

    def _candidates(
        self, plan: matching.Plan, filters: Filters, doc: bool, want: int = CANDIDATES
    ) -> tuple[list[dict[str, Any]], list[float], float]:
        """(matching candidate rows with their phrase instances as ``found``, the phrases'
        idf, the table's mean tokens per row)."""
        stats = self._stats()
        rows_total = stats["docs" if doc else "chunks"]
        tokens = stats["dtokens" if doc else "ctokens"]
        df, expansions = self._term_counts(plan, doc)
        idf = matching.idfs(plan, df, self._phrase_counts(plan, df, expansions, doc), rows_total)
        terms, prefixes = matching.query_terms(plan)
        for prefix in prefixes:
            terms.update(expansions.get(prefix, []))
        vector: dict[int, float] = {}
        for term in terms:
            hits = min(df.get(term, 0), rows_total)
            vector[matching.term_id(term)] = bm25.idf(rows_total, hits) if rows_total else 1.0
        if not vector:
            return [], idf, 0.0
        pool = max(POOL * want, MIN_POOL)
        limit = min(CANDIDATES, pool, sum(df.get(t, 0) for t in terms) + 16 * len(terms))
        # The statistics may lag the rows a reader sees (a writer applies them after flipping
        # its files): an answer filling ``limit`` may have been cut short, so it widens.
        widen = min(CANDIDATES, pool)
        found = self._sparse(vector, limit, self._filter_expr(filters), doc, widen)
        matched = []
        for row in found:
            hits_in_row = matching.evaluate(plan, matching.tokenize(row["kw"]))
            if hits_in_row is not None:
                row["found"] = hits_in_row
                matched.append(row)
        return matched, idf, (tokens / rows_total if rows_total else 0.0)

    def _sparse(
        self, vector: dict[int, float], limit: int, expr: str, doc: bool, widen: int = 0
    ) -> list[dict[str, Any]]:
        """The visible rows best for ``vector`` (at most ``limit``; at most ``widen`` when
        ``limit`` rows came back), with their fields."""
        key = "file_id" if doc else "rowid"
        fields = [key, "kw", "ntok"] if doc else [key, "file_id", "gen", "kw", "ntok"]
        while True:
            result = self.client.search(
                self._tables[schema.FILES if doc else schema.CHUNKS],
                data=[vector],
                anns_field="sp",
                limit=max(1, limit),
                filter=expr,
                output_fields=fields,
                search_params={"metric_type": "IP"},
                consistency_level="Strong",
            )
            found = [dict(hit["entity"]) for hit in result[0]] if result else []
            if len(found) < limit or widen <= limit:
                break
            limit = widen
        return found if doc else self._visible(found)

    def _holding(self, terms: list[str], limit: int, doc: bool) -> list[dict[str, Any]]:
        """Visible rows holding any of ``terms`` (at most ``limit``), with their fields."""
        if not self.bm25.get(schema.FILES if doc else schema.CHUNKS):
            return self._sparse({matching.term_id(t): 1.0 for t in terms}, limit, "", doc)
        key = "file_id" if doc else "rowid"
        fields = [key, "kw"] if doc else [key, "file_id", "gen", "kw"]
        table = schema.FILES if doc else schema.CHUNKS
        found = [
            dict(hit["entity"])
            for hit in self._bm25_search(table, " ".join(terms), limit, "", fields)
        ]
        return found if doc else self._visible(found)

    def _bm25_search(
        self, table: str, text: str, limit: int, expr: str, fields: list[str]
    ) -> list[dict[str, Any]]:
        """One search of ``table``'s BM25 function field: the hits, best first."""
        # Milvus's C++ engine fails a BM25 search ("Invalid sparse row: NaN or Inf value")
        # of a table no row was ever written to (its mean row length is 0/0), and now and then
        # while another process's first rows arrive (1 search in about 30 of a test that
        # reads while two processes write): no rows is no hits, the other is tried again.
        for attempt in range(NAN_RETRIES + 1):
            try:
                result = self.client.search(
                    self._tables[table],
                    data=[text],
                    anns_field=schema.BM25_FIELD,
                    limit=max(1, limit),
                    filter=expr,
                    output_fields=fields,
                    search_params={"metric_type": "BM25"},
                    consistency_level="Strong",
                )
                break
            except milvus_errors() as exc:
                if "NaN or Inf" not in str(exc):
                    raise
                if self._count(table) == 0:
                    return []
                if attempt == NAN_RETRIES:
                    raise
                time.sleep(NAN_WAIT)
        return list(result[0]) if result else []

    def _phrase_counts(
        self,
        plan: matching.Plan,
        df: dict[str, int],
        expansions: dict[str, list[str]],
        doc: bool,
    ) -> dict[int, int]:
        """Rows holding each phrase the term statistics do not count (phrase index -> rows):
        the rows holding its rarest term (or its prefix's expansions), matched."""
        out: dict[int, int] = {}
        for i, phrase in enumerate(plan.phrases):
            if matching.counted_by_statistics(phrase):
                continue
            head = list(phrase.terms[:-1] if phrase.prefix else phrase.terms)
            rarest = min(head, key=lambda t: df.get(t, 0)) if head else None
            if rarest is not None:
                terms, most = [rarest], df.get(rarest, 0)
            else:
                terms = expansions.get(phrase.terms[-1], [])
                most = sum(df.get(t, 0) for t in terms)
            if not terms or most == 0:
                out[i] = 0
                continue
            rows = self._holding(terms, min(CANDIDATES, most + 16), doc)
            alone = matching.Plan((phrase,), ((0,),), (), ())
            out[i] = sum(1 for r in rows if matching.evaluate(alone, matching.tokenize(r["kw"])))
        return out

    def _bm25_rows(
        self, plan: matching.Plan, filters: Filters, limit: int, doc: bool, exact: bool = False
    ) -> list[dict[str, Any]]:
        """The rows that match the plan, best first by the server's BM25 (their ``score``),
        at least ``limit`` of them when that many match. ``exact``: every row comes with its
        fields and tokens and its phrase instances (``found``), to be scored here."""
        terms, prefixes = matching.query_terms(plan)
        if prefixes:
            _, expansions = self._term_counts(plan, doc)
            for prefix in prefixes:
                terms.update(expansions.get(prefix, []))
        if not terms:
            return []
        key = "file_id" if doc else "rowid"
        check = exact or matching.needs_check(plan)
        fields = [key] if doc else [key, "file_id", "gen"]
        if check:
            fields += ["kw", "ntok"]
        expr = self._filter_expr(filters)
        want = min(CANDIDATES, max(1, limit if not check else max(2 * limit, MIN_CHECKED)))
        table = schema.FILES if doc else schema.CHUNKS
        while True:
            result = self._bm25_search(table, " ".join(sorted(terms)), want, expr, fields)
            found = [{**hit["entity"], "score": float(hit["distance"])} for hit in result]
            rows = found if doc else self._visible(found)
            if check:
                for r in rows:
                    r["found"] = matching.evaluate(plan, matching.tokenize(r["kw"]))
                rows = [r for r in rows if r["found"] is not None]
            if len(rows) >= limit or len(found) < want or want >= CANDIDATES:
                return rows
            want = min(CANDIDATES, want * 4)

    def _ranked(
        self, plan: matching.Plan, filters: Filters, limit: int, weights: Sequence[float], doc: bool
    ) -> list[tuple[int, float]]:
        key = "file_id" if doc else "rowid"
        if self.bm25.get(schema.FILES if doc else schema.CHUNKS):
            # The server's best rows for the query (its BM25 over the rows' weighted text, in
            # which a repeated title also lengthens the row), scored again here as FTS5 scores
            # them with the call's weights, from the fields the same call returned: the
            # server's order alone cost hugo-docs-kis 0.0155 nDCG@10 (docs/evaluation.md).
            rows = self._bm25_rows(plan, filters, limit, doc, exact=True)
            idf, avgdl = self._idf(plan, doc)
        else:
            rows, idf, avgdl = self._candidates(plan, filters, doc, limit)
        found = [r["found"] for r in rows]
        tokens = [int(r["ntok"]) for r in rows]
        points = matching.scores(found, idf, weights, tokens, avgdl)
        scored = [(int(r[key]), s) for r, s in zip(rows, points, strict=True)]
        scored.sort(key=lambda x: (-x[1], x[0]))
        return scored[:limit]

    def _idf(self, plan: matching.Plan, doc: bool) -> tuple[list[float], float]:
        """Each phrase's idf and the table's mean tokens per row, from the term statistics."""
        stats = self._stats()
        rows_total = stats["docs" if doc else "chunks"]
        tokens = stats["dtokens" if doc else "ctokens"]
        df, expansions = self._term_counts(plan, doc)
        counted = self._phrase_counts(plan, df, expansions, doc)
        idf = matching.idfs(plan, df, counted, rows_total)
        return idf, (tokens / rows_total if rows_total else 0.0)

    def keyword_search(
        self,
        query: KeywordQuery,
        mode: MatchMode,
        filters: Filters,
        limit: int,
        weights: Sequence[float],
    ) -> list[tuple[int, float]]:
        plan = matching.plan(query, mode)
        if plan is None or limit <= 0:
            return []
        return self._ranked(plan, filters, limit, weights, doc=False)

    def document_scores(
        self, query: KeywordQuery, filters: Filters, limit: int, weights: Sequence[float]
    ) -> dict[int, float]:
        plan = matching.plan(query, "any")
        if plan is None or limit <= 0:
            return {}
        return dict(self._ranked(plan, filters, limit, weights, doc=True))

    def _rows_matching(self, plan: matching.Plan, rowids: Sequence[int]) -> list[dict[str, Any]]:
        fields = ["rowid", "file_id", "gen", "kw", "ntok"]
        out = []
        for row in self._visible(self._query_in(schema.CHUNKS, "rowid", rowids, fields)):
            found = matching.evaluate(plan, matching.tokenize(row["kw"]))
            if found is not None:
                row["found"] = found
                out.append(row)
        return out

    def field_scores(
        self, query: KeywordQuery, mode: MatchMode, rowids: Sequence[int], weights: Sequence[float]
    ) -> dict[int, list[float]]:
        plan = matching.plan(query, mode)
        if plan is None or not rowids:
            return {}
        idf, avgdl = self._idf(plan, False)
        rows = self._rows_matching(plan, rowids)
        found = [r["found"] for r in rows]
        tokens = [int(r["ntok"]) for r in rows]
        per_field = [
            matching.scores(found, idf, weights, tokens, avgdl, fields=(i,))
            for i in range(len(weights))
        ]
        return {int(r["rowid"]): [s[n] for s in per_field] for n, r in enumerate(rows)}

    def matching_rowids(self, query: KeywordQuery, rowids: Sequence[int]) -> set[int]:
        plan = matching.plan(query, "any")
        if plan is None or not rowids:
            return set()
        return {int(r["rowid"]) for r in self._rows_matching(plan, rowids)}

    def term_documents(self, terms: Sequence[str]) -> dict[str, int]:
        """Documents holding each of ``terms``, from the term statistics (one row per root
        and term: summed); terms no document holds are left out."""
        counts: Counter[str] = Counter()
        for r in self._query_in(schema.TERMS, "term", set(terms), ["term", "ddf"]):
            counts[str(r["term"])] += int(r["ddf"])
        return {t: n for t, n in counts.items() if n > 0}

    def vocabulary(self) -> dict[str, int]:
        """Every term with the number of documents holding it (summed over roots)."""
        counts: Counter[str] = Counter()
        for r in self._scan(schema.TERMS, "ddf > 0", ["term", "ddf"]):
            counts[str(r["term"])] += int(r["ddf"])
        return dict(counts)

    def is_common(self, clause: Clause, threshold_fraction: float, floor: int) -> bool:
        """Whether the clause matches at least ``max(floor, fraction x chunks)`` chunks; the
        answer is kept until the index changes."""
        with self._lock:
            token = self.change_token()
            chunks = self._stats()["chunks"]
            limit = max(floor, int(chunks * threshold_fraction))
            if chunks < limit:
                return False
            key = (token, clause, limit)
            if self._common is None or next(iter(self._common), (token,))[0] != token:
                self._common = {}
            cached = self._common.get(key)
            if cached is None:
                cached = self._common[key] = self._matches_at_least(clause, limit)
            return cached

    def _matches_at_least(self, clause: Clause, limit: int) -> bool:
        """Whether ``limit`` chunks match the clause: from the term statistics when its
        alternatives are single words, else by counting the matching candidates."""
        plan = matching.plan(KeywordQuery((clause,)), "any")
        if plan is None:
            return False
        df, _ = self._term_counts(plan, False)
        simple = all(len(ph.terms) == 1 and not ph.prefix for ph in plan.phrases)
        counts = [df.get(ph.terms[0], 0) for ph in plan.phrases]
        if simple and max(counts, default=0) >= limit:
            return True
        if simple and sum(counts) < limit:
            return False
        if self.bm25.get(schema.CHUNKS):
            return len(self._bm25_rows(plan, Filters(), limit, False)) >= limit
        return len(self._candidates(plan, Filters(), False)[0]) >= limit
