"""The keyword index in SQLite: FTS5 tables of analyzed terms, ranked by BM25.

``chunks_fts`` holds one row per chunk (rowid = ``chunks.id``), ``docs_fts`` one per file
(rowid = ``files.id``), each with the weighted fields of ``types.FTS_FIELDS``. Ranking is
FTS5's BM25 with one weight per field. Filters are SQL conditions in the same statement as the
MATCH, so they apply before the ``LIMIT`` and never starve a filtered query of results. Over
large indexes the same BM25 is computed from saved postings instead (``postings_search.py``,
the postings kept in step with the index by ``postings_state.py``).
"""

from __future__ import annotations

import sqlite3
import threading
from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

from noteseek.store.base import MatchMode
from noteseek.store.sqlite.core import SQLiteCore
from noteseek.store.sqlite.sql import filter_sql
from noteseek.types import Clause, Filters, KeywordQuery, PreparedFile

# The saved postings (numpy) load with the first search: `noteseek status`, `get` and `links`
# open the store without them.
if TYPE_CHECKING:
    from noteseek.store.sqlite import postings_search
    from noteseek.store.sqlite.postings import Ints
    from noteseek.store.sqlite.postings_state import PostingsState, Searchable
else:
    from noteseek.lazy import LazyModule

    postings_search = LazyModule("noteseek.store.sqlite.postings_search")

PHRASES_KEPT = 256
"""Phrases whose rows a handle keeps until the index changes (a search asks for the same ones
in each of its passes)."""


class SQLiteKeywordIndex(SQLiteCore):
    """:class:`noteseek.store.base.KeywordIndex` over ``chunks_fts`` and ``docs_fts``."""

    scores_every_match = True
    """FTS5 and the postings score every match whatever the limit."""

    def __init__(self, path: Path | str, *, readonly: bool = False) -> None:
        # is_common answers from a cache that lives until the index changes.
        self._common_cache: dict[tuple[str, int], bool] = {}
        self._common_version = -1
        self._common_writes = -1
        self._chunk_estimate = 0
        self._postings_folder = Path(path).parent
        self._postings_kept: PostingsState | None = None
        super().__init__(path, readonly=readonly)

    @property
    def _postings_state(self) -> PostingsState:
        """The saved postings' state of this handle, made with its first use."""
        if self._postings_kept is None:
            from noteseek.store.sqlite.postings_state import PostingsState

            self._postings_kept = PostingsState(self._postings_folder)
        return self._postings_kept

    @_postings_state.setter
    def _postings_state(self, state: PostingsState) -> None:
        self._postings_kept = state  # tests and benches swap in another folder's

    def _postings_current(self) -> bool:
        """Whether the saved postings hold every keyword change: the keyword log (the changes
        since they were saved) is empty and the file is this index's, by its header. Asked
        before anything loads them: an index run that changed nothing (most re-indexes) needs
        neither their arrays nor numpy. A file whose checksum fails is not current: searches
        ignore it (``postings_file.load``) and this run saves it again."""
        from noteseek.store.sqlite import postings_file

        if self._conn.execute("SELECT 1 FROM keyword_log LIMIT 1").fetchone() is not None:
            return False
        path = self._postings_folder / postings_file.NAME
        saved = postings_file.header(path)
        return (
            saved is not None
            and postings_file.current(self._conn, saved)
            and postings_file.damage(path) is None
        )

    def verify(self, stop: threading.Event | None = None) -> str | None:
        """The whole file's check (:meth:`SQLiteCore.verify`), then the saved keyword
        postings' checksum: their damage is reported, not recorded as the index's (searches
        keep to FTS5 meanwhile, and the next index run saves them again)."""
        found = super().verify(stop)
        if found is not None or (stop is not None and stop.is_set()):
            return found
        from noteseek.store.sqlite import postings_file

        return postings_file.damage(self._postings_folder / postings_file.NAME)

    def _postings(self, table: str, query: KeywordQuery, filters: Filters) -> Searchable | None:
        """The saved keyword postings to answer ``query`` with, or None (FTS5 answers)."""
        if not postings_search.supported(query):
            return None
        with self._lock:
            return self._postings_state.parts(self._conn, self.change_token(), table, filters)

    def _posted_files(self, rowids: Sequence[int]) -> dict[int, int]:
        """Chunk rowid -> file id from the saved postings' rows, for those they hold."""
        with self._lock:
            found = self._postings_state.parts(self._conn, self.change_token(), "chunks", Filters())
        return {} if found is None else postings_search.files_of(found.parts, rowids)

    def _phrase_rows(self, table: str) -> postings_search.PhraseRows:
        """FTS5's rows for a phrase of several words, kept while the index stays as it is."""
        import numpy as np

        kept = self._postings_state.phrases

        def rows(words: tuple[str, ...], fields: tuple[str, ...]) -> Ints:
            key = (table, words, fields)
            found = kept.get(key)
            if found is None:
                expr = clause_expression(Clause((words,)))
                if fields:
                    expr = "{" + " ".join(fields) + "} : " + expr
                sql = f"SELECT rowid FROM {table} WHERE {table} MATCH ?"
                found = np.asarray([r[0] for r in self._q(sql, (expr,))], dtype=np.int64)
                if len(kept) >= PHRASES_KEPT:
                    kept.clear()
                kept[key] = found
            return found

        return rows

    def close(self) -> None:
        with self._lock:
            if self._postings_kept is not None:
                self._postings_kept.discard()
        super().close()

    def _after_run(self) -> None:
        """Save the keyword postings when they are missing or far behind (the writer), then
        merge FTS5's segments (:func:`merge_segments`). The build reads through a connection of
        its own: searches on this handle go on meanwhile."""
        if self.readonly:
            return
        with self._lock:
            if self._postings_current() or not self._postings_state.needs_save(self._conn):
                return
        reader = sqlite3.connect(f"file:{self.path}?mode=ro", uri=True)
        try:
            reader.execute("PRAGMA busy_timeout = 10000")
            seq = self._postings_state.save(reader)
        finally:
            reader.close()
        with self.transaction():
            self._postings_state.saved(self._conn, seq)
        try:
            with self.transaction():
                merge_segments(self._conn)
        except sqlite3.OperationalError:
            pass  # a full disk mid-merge: the merge only speeds phrases up, the index is whole

    def keyword_search(
        self,
        query: KeywordQuery,
        mode: MatchMode,
        filters: Filters,
        limit: int,
        weights: Sequence[float],
    ) -> list[tuple[int, float]]:
        """Top ``limit`` (chunk rowid, BM25 score) pairs, best first (ties by rowid, so a
        smaller limit returns a prefix of a larger one), filters applied inside."""
        expr = fts_expression(query, mode)
        if expr is None:
            return []
        found = self._postings("chunks", query, filters)
        if found is not None:
            phrases = self._phrase_rows("chunks_fts")
            return postings_search.score(
                found.parts,
                query,
                mode == "all",
                weights,
                limit,
                phrases,
                found.allowed,
                found.terms,
            )
        where, params = filter_sql(filters)
        if where:
            sql = (
                "SELECT c.id, -bm25(chunks_fts, ?, ?, ?, ?, ?, ?) AS score "
                "FROM chunks_fts JOIN chunks c ON c.id = chunks_fts.rowid "
                "JOIN files f ON f.id = c.file_id "
                f"WHERE chunks_fts MATCH ? {where} ORDER BY score DESC, c.id LIMIT ?"
            )
        else:
            # No filter: no join, so rows that will not make the top k cost no lookups.
            sql = (
                "SELECT rowid, -bm25(chunks_fts, ?, ?, ?, ?, ?, ?) AS score FROM chunks_fts "
                "WHERE chunks_fts MATCH ? ORDER BY score DESC, rowid LIMIT ?"
            )
        rows = self._q(sql, (*weights, expr, *params, limit))
        return [(int(r[0]), float(r[1])) for r in rows]

    def document_scores(
        self, query: KeywordQuery, filters: Filters, limit: int, weights: Sequence[float]
    ) -> dict[int, float]:
        """BM25 of whole documents (file id -> score) for the query's any-word match."""
        expr = fts_expression(query, "any")
        if expr is None:
            return {}
        found = self._postings("docs", query, filters)
        if found is not None:
            phrases = self._phrase_rows("docs_fts")
            return dict(
                postings_search.score(
                    found.parts, query, False, weights, limit, phrases, found.allowed, found.terms
                )
            )
        where, params = filter_sql(filters)
        sql = (
            "SELECT docs_fts.rowid, -bm25(docs_fts, ?, ?, ?, ?, ?, ?) AS score FROM docs_fts "
            + ("JOIN files f ON f.id = docs_fts.rowid " if where else "")
            + f"WHERE docs_fts MATCH ? {where} ORDER BY score DESC, docs_fts.rowid LIMIT ?"
        )
        rows = self._q(sql, (*weights, expr, *params, limit))
        return {int(r[0]): float(r[1]) for r in rows}

    def matching_rowids(self, query: KeywordQuery, rowids: Sequence[int]) -> set[int]:
        """Which of ``rowids`` match any clause of ``query`` (exclusions for vector results)."""
        expr = fts_expression(query, "any")
        if expr is None or not rowids:
            return set()
        marks = ",".join("?" * len(rowids))
        rows = self._q(
            f"SELECT rowid FROM chunks_fts WHERE chunks_fts MATCH ? AND rowid IN ({marks})",
            (expr, *rowids),
        )
        return {int(r[0]) for r in rows}

    def term_documents(self, terms: Sequence[str]) -> dict[str, int]:
        """Documents holding each of ``terms`` (those held by none are left out)."""
        if not terms:
            return {}
        with self._lock:
            found = self._postings_state.parts(self._conn, self.change_token(), "docs", Filters())
        if found is not None:  # from the saved postings' term offsets: no doclist is read
            return postings_search.documents(found.parts, terms)
        marks = ",".join("?" * len(terms))
        rows = self._vocabulary_rows(f"WHERE term IN ({marks})", tuple(terms))
        return {str(r[0]): int(r[1]) for r in rows}

    def vocabulary(self) -> dict[str, int]:
        """Every term of the index with the number of documents holding it."""
        return {str(r[0]): int(r[1]) for r in self._vocabulary_rows("", ())}

    def _vocabulary_rows(self, where: str, params: tuple[str, ...]) -> list[Any]:
        """Rows (term, documents) of FTS5's own vocabulary of ``docs_fts`` (a table of the
        connection's temporary schema, so a read-only handle can make it too)."""
        with self._lock:
            self._conn.execute(
                "CREATE VIRTUAL TABLE IF NOT EXISTS temp.docs_vocabulary "
                "USING fts5vocab(main, docs_fts, row)"
            )
            sql = f"SELECT term, doc FROM temp.docs_vocabulary {where}"
            return self._conn.execute(sql, params).fetchall()

    def is_common(self, clause: Clause, threshold_fraction: float, floor: int) -> bool:
        """Whether a clause matches at least ``max(floor, fraction x chunks)`` chunks.

        Counting stops at the threshold, so the check costs at most that many row visits; the
        answer is cached until the index changes (``PRAGMA data_version`` or our own writes).
        """
        with self._lock:
            version = self._conn.execute("PRAGMA data_version").fetchone()[0]
            if version != self._common_version or self._writes != self._common_writes:
                self._common_cache.clear()
                self._common_version, self._common_writes = version, self._writes
                # Once per index change; max(id) would drift upwards as chunks are rewritten.
                row = self._conn.execute("SELECT count(*) FROM chunks").fetchone()
                self._chunk_estimate = int(row[0] or 0)
            limit = max(floor, int(self._chunk_estimate * threshold_fraction))
            if self._chunk_estimate < limit:
                return False
            expr = clause_expression(clause)
            key = (expr, limit)
            cached = self._common_cache.get(key)
            if cached is None:
                found = self._postings("chunks", KeywordQuery((clause,)), Filters())
                if found is not None:
                    phrases = self._phrase_rows("chunks_fts")
                    cached = postings_search.reaches(found.parts, clause, phrases, limit)
                else:
                    n = self._conn.execute(
                        "SELECT count(*) FROM (SELECT 1 FROM chunks_fts WHERE chunks_fts "
                        "MATCH ? LIMIT ?)",
                        (expr, limit),
                    ).fetchone()[0]
                    cached = n >= limit
                self._common_cache[key] = cached
            return cached

    def field_scores(
        self, query: KeywordQuery, mode: MatchMode, rowids: Sequence[int], weights: Sequence[float]
    ) -> dict[int, list[float]]:
        """BM25 of each field alone (the others weighted 0) for the given chunks: --explain."""
        expr = fts_expression(query, mode)
        if expr is None or not rowids:
            return {}
        n = len(weights)
        cols = []
        params: list[Any] = []
        for i in range(n):
            cols.append(f"-bm25(chunks_fts, {', '.join('?' * n)})")
            params.extend(w if j == i else 0.0 for j, w in enumerate(weights))
        marks = ",".join("?" * len(rowids))
        sql = (
            f"SELECT rowid, {', '.join(cols)} FROM chunks_fts "
            f"WHERE chunks_fts MATCH ? AND rowid IN ({marks})"
        )
        rows = self._q(sql, (*params, expr, *rowids))
        return {int(r[0]): [float(x) for x in r[1:]] for r in rows}


FTS_TABLES = ("chunks_fts", "docs_fts")


def merge_segments(conn: sqlite3.Connection) -> None:
    """Merge each FTS table's segments into one (FTS5's ``optimize``), when the writer has
    just saved the keyword postings (a large index after a build or many changes).

    The saved postings answer most of a search, but a phrase of several words (an identifier's
    parts: ``Get-DnsServerZone``) still asks FTS5 for its rows, and FTS5 reads each word's
    list in every segment: on the 14k-page corpus's index as built (63k chunks), a phrase's
    rows took 0.49 ms at the median, 0.18 ms after the merge (docs_fts 0.31 -> 0.12 ms); the
    merge of both tables took 1.3 s. Rows and contents are unchanged, so are the saved
    postings (rowids)."""
    for table in FTS_TABLES:
        conn.execute(f"INSERT INTO {table}({table}) VALUES ('optimize')")


def document_row(prepared: PreparedFile) -> tuple[str, str, str, str, str, str]:
    """A file's document-level keyword fields, from its chunks' analyzed fields.

    Title, aliases and tags are the same in every chunk; headings are each distinct heading
    path once; body and code are every chunk's, so term frequencies are the document's.
    """
    chunks = prepared.chunks
    if not chunks:
        return ("", "", "", "", "", "")
    first = chunks[0].fields
    headings = list(dict.fromkeys(c.fields[2] for c in chunks if c.fields[2]))
    return (
        first[0],
        first[1],
        " ".join(headings),
        first[3],
        " ".join(c.fields[4] for c in chunks if c.fields[4]),
        " ".join(c.fields[5] for c in chunks if c.fields[5]),
    )


def fts_expression(query: KeywordQuery, mode: MatchMode) -> str | None:
    """The FTS5 MATCH string for an analyzed query, every term quoted (no syntax injection).

    ``all``: every clause must match. ``any``: quoted phrases must match, at least one of the
    other clauses must. Excluded clauses are subtracted with ``NOT``.
    """
    required = [clause_expression(c) for c in query.clauses if c.required or mode == "all"]
    optional = [clause_expression(c) for c in query.clauses if not (c.required or mode == "all")]
    parts = [p for p in required if p]
    opt = [p for p in optional if p]
    if opt:
        parts.append(opt[0] if len(opt) == 1 else "(" + " OR ".join(opt) + ")")
    if not parts:
        return None
    expr = " AND ".join(parts)
    if query.fields:
        expr = "{" + " ".join(query.fields) + "} : (" + expr + ")"
    excluded = [e for e in (clause_expression(c) for c in query.excluded) if e]
    if excluded:
        expr = f"({expr}) NOT ({' OR '.join(excluded)})"
    return expr


def clause_expression(clause: Clause) -> str:
    """One clause as FTS5 syntax: its alternatives as quoted phrases, ORed."""
    alts = []
    for alt in clause.alternatives:
        if not alt:
            continue
        phrase = '"' + " ".join(t.replace('"', '""') for t in alt) + '"'
        alts.append(phrase + ("*" if clause.prefix else ""))
    if not alts:
        return ""
    return alts[0] if len(alts) == 1 else "(" + " OR ".join(alts) + ")"
