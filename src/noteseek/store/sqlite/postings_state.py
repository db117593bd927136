"""The keyword postings a store handle searches with: the saved file, kept in step with the index.

The writer builds :class:`~noteseek.store.sqlite.postings.Postings` of ``chunks_fts`` and
``docs_fts`` at the end of an index run over :data:`FROM_ROWS` chunks, when none is saved or
many files changed since, and saves them beside the index (``postings_file.py``). Every handle
maps that file and, whenever the index has changed, reads which files changed since it was
built (``keyword_log``, filled by triggers in the same transaction as each change): their rows
in the saved postings are set aside and their current rows are read and tokenised into a small
second set of postings, so a search sees exactly what FTS5 would. Until a file exists, or when
more files changed than :func:`delta_limit` allows, :meth:`PostingsState.parts` answers None and the
keyword index asks FTS5.
"""

from __future__ import annotations

import ctypes
import ctypes.util
import os
import sqlite3
from collections import OrderedDict
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from noteseek.store.base import ChangeToken
from noteseek.store.sqlite import postings_file
from noteseek.store.sqlite.postings import Ints, Mask, Postings, Row, build
from noteseek.store.sqlite.postings_search import Part, TermCache
from noteseek.store.sqlite.sql import IN_BATCH, filter_sql
from noteseek.types import Filters

FROM_ROWS = 20_000
"""Chunks from which the writer saves postings: below it FTS5 answers in a few milliseconds."""
KEPT_FILTERS = 8
TERM_POSTINGS_KEPT = 1_000_000
"""Postings whose score parts a handle keeps for the next search (12 bytes each): the terms
of a reference manual that most pages hold take most of a search's time to score."""

TABLES = ("chunks", "docs")
TF_TYPES: dict[str, type[np.unsignedinteger[Any]]] = {"chunks": np.uint8, "docs": np.uint16}
"""Counts per field held: a chunk's fields are a few hundred words, a document's can be long."""
FIELD_COLUMNS = "x.title, x.aliases, x.headings, x.tags, x.body, x.code"
READ_ALL = {
    "chunks": "SELECT c.id, c.file_id, {cols} FROM chunks c JOIN chunks_fts x ON x.rowid = c.id "
    "{where} ORDER BY c.id",
    "docs": "SELECT x.rowid, x.rowid, {cols} FROM docs_fts x {where} ORDER BY x.rowid",
}
WHERE_FILES = {"chunks": "WHERE c.file_id IN ({marks})", "docs": "WHERE x.rowid IN ({marks})"}


def delta_limit(files: int) -> int:
    """Changed files up to which a handle patches the saved postings (and the writer does not
    save them again): a patch reads and tokenises those files' rows once per index change."""
    return max(64, files // 50)


@dataclass(frozen=True)
class Searchable:
    """One table's postings for a search: the parts, the rows a filter lets through in each
    (None: all), and the scored phrases kept for searches over the same parts."""

    parts: list[Part]
    allowed: list[Mask | None]
    terms: TermCache


@dataclass
class _Saved:
    header: dict[str, Any]
    tables: dict[str, Postings]
    stamp: tuple[int, int, int]


class PostingsState:
    """Saved postings for one index folder, patched to the index's current state."""

    def __init__(self, folder: Path) -> None:
        self.path = folder / postings_file.NAME
        self._saved: _Saved | None = None
        self._token: ChangeToken | None = None
        self._parts: dict[str, list[Part]] | None = None
        self._allowed: OrderedDict[tuple[ChangeToken, str], dict[str, list[Mask]]] = OrderedDict()
        self.phrases: dict[tuple[str, tuple[str, ...], tuple[str, ...]], Ints] = {}
        """Rows of phrases of several words, by table, words and fields, for this token."""
        self._terms = {table: TermCache(TERM_POSTINGS_KEPT) for table in TABLES}

    # -- searching -----------------------------------------------------------------------------

    def parts(
        self, conn: sqlite3.Connection, token: ChangeToken, table: str, filters: Filters
    ) -> Searchable | None:
        """What to search ``table`` (``chunks`` or ``docs``) with, ``filters`` applied; None
        when FTS5 must answer. Call with the connection's lock held."""
        if token != self._token:
            self._parts = self._refresh(conn)
            self._token = token
            self._allowed.clear()
            # New caches, not cleared ones: a search still at work on the old state puts
            # into the old caches only.
            self.phrases = {}
            self._terms = {table: TermCache(TERM_POSTINGS_KEPT) for table in TABLES}
        if self._parts is None:
            return None
        parts = self._parts[table]
        if filters.is_empty():
            return Searchable(parts, [None] * len(parts), self._terms[table])
        key = (token, repr(filters))
        found = self._allowed.get(key)
        if found is None:
            where, params = filter_sql(filters)
            ids = np.asarray(
                [r[0] for r in conn.execute(f"SELECT f.id FROM files f WHERE 1 {where}", params)],
                dtype=np.int64,
            )
            found = {
                name: [np.isin(p.postings.files, ids) for p in table_parts]
                for name, table_parts in self._parts.items()
            }
            self._allowed[key] = found
            while len(self._allowed) > KEPT_FILTERS:
                self._allowed.popitem(last=False)
        return Searchable(parts, list(found[table]), self._terms[table])

    def _refresh(self, conn: sqlite3.Connection) -> dict[str, list[Part]] | None:
        with _reading(conn):
            saved = self._load()
            if saved is None or not postings_file.current(conn, saved.header):
                return None
            changed = [
                int(r[0])
                for r in conn.execute(
                    "SELECT DISTINCT file_id FROM keyword_log WHERE seq > ?",
                    (int(saved.header["seq"]),),
                )
            ]
            if len(changed) > delta_limit(int(saved.header["files"])):
                return None
            out: dict[str, list[Part]] = {}
            for table in TABLES:
                base = saved.tables[table]
                if not changed:
                    out[table] = [Part(base)]
                    continue
                ids = np.asarray(changed, dtype=np.int64)
                alive = ~np.isin(base.files, ids)
                delta = build(_read(conn, table, changed), TF_TYPES[table])
                out[table] = [Part(base, alive), Part(delta)]
            return out

    def _load(self) -> _Saved | None:
        try:
            st = os.stat(self.path)
        except OSError:
            self._saved = None
            return None
        stamp = (st.st_ino, st.st_mtime_ns, st.st_size)
        if self._saved is None or self._saved.stamp != stamp:
            loaded = postings_file.load(self.path)
            if loaded is None or set(loaded[1]) != set(TABLES):
                self._saved = None
                return None
            self._saved = _Saved(loaded[0], loaded[1], stamp)
        return self._saved

    # -- saving (the writer) -------------------------------------------------------------------

    def needs_save(self, conn: sqlite3.Connection) -> bool:
        """Whether the writer should build and save the postings: the index is large enough
        and the saved ones are missing, foreign, or more files behind than a patch takes.
        Call with the connection's lock held."""
        with _reading(conn):
            chunks = int(conn.execute("SELECT count(*) FROM chunks").fetchone()[0])
            if chunks < FROM_ROWS:
                return False
            saved = self._load()
            if saved is None or not postings_file.current(conn, saved.header):
                return True
            files = int(conn.execute("SELECT count(*) FROM files").fetchone()[0])
            behind = conn.execute(
                "SELECT count(DISTINCT file_id) FROM keyword_log WHERE seq > ?",
                (int(saved.header["seq"]),),
            ).fetchone()[0]
            return int(behind) > delta_limit(files)

    def save(self, reader: sqlite3.Connection) -> int:
        """Build the postings from ``reader`` (a connection of its own, so the handle's
        searches do not wait for the build) in one snapshot and save them; the log sequence
        number they include, whose rows the caller then drops."""
        with _reading(reader):
            # The log's counter, not its largest row: the rows up to the last save are gone.
            row = reader.execute(
                "SELECT seq FROM sqlite_sequence WHERE name = 'keyword_log'"
            ).fetchone()
            seq = int(row[0]) if row else 0
            files = int(reader.execute("SELECT count(*) FROM files").fetchone()[0])
            header = {"log": postings_file.log_id(reader), "seq": seq, "files": files}
            tables = {table: build(_read(reader, table, None), TF_TYPES[table]) for table in TABLES}
        postings_file.save(self.path, tables, header)
        del tables
        _return_freed_memory()
        return seq

    def saved(self, conn: sqlite3.Connection, seq: int) -> None:
        """Drop the log rows a save included (call with the connection's lock held, in a
        write transaction)."""
        conn.execute("DELETE FROM keyword_log WHERE seq <= ?", (seq,))
        conn.execute(
            "INSERT OR REPLACE INTO meta(key, value) VALUES ('keyword_log_floor', ?)", (str(seq),)
        )
        self._token = None

    def discard(self) -> None:
        """Forget the mapped file and what was built on it (the index is closing)."""
        self._saved = None
        self._parts = None
        self._token = None
        self._allowed.clear()
        self.phrases.clear()


def _return_freed_memory() -> None:
    """Hand the build's freed memory back to the system (glibc keeps freed heap pages, and
    raises its threshold for mapping large blocks once a large one is freed: after a build at
    165k chunks the writer held 70 MB more for the rest of its run, embedding included)."""
    try:
        libc = ctypes.CDLL(ctypes.util.find_library("c") or "libc.so.6")
        libc.malloc_trim(0)
    except (OSError, AttributeError):
        pass  # not glibc: nothing to ask


def _read(conn: sqlite3.Connection, table: str, files: Sequence[int] | None) -> Iterator[Row]:
    """``table``'s rows (rowid, file id, fields), all or those of ``files``, by rowid."""
    if files is None:
        sql = READ_ALL[table].format(cols=FIELD_COLUMNS, where="")
        for r in conn.execute(sql):
            yield (int(r[0]), int(r[1]), r[2:])
        return
    found: list[Row] = []
    for i in range(0, len(files), IN_BATCH):
        part = files[i : i + IN_BATCH]
        where = WHERE_FILES[table].format(marks=",".join("?" * len(part)))
        sql = READ_ALL[table].format(cols=FIELD_COLUMNS, where=where)
        found.extend((int(r[0]), int(r[1]), r[2:]) for r in conn.execute(sql, part))
    found.sort(key=lambda r: r[0])
    yield from found


class _reading:
    """A read transaction around several statements (one snapshot), unless one is open."""

    def __init__(self, conn: sqlite3.Connection) -> None:
        self.conn = conn
        self.began = False

    def __enter__(self) -> None:
        if not self.conn.in_transaction:
            self.conn.execute("BEGIN")
            self.began = True

    def __exit__(self, *exc: object) -> None:
        if self.began and self.conn.in_transaction:
            self.conn.execute("COMMIT")
