"""The Milvus connection every role shares: collections, buffered transactions, the version.

Milvus has no multi-statement transactions, so a handle buffers its writes: inside
:meth:`MilvusCore.transaction` nothing reaches Milvus (other handles see nothing), and the
outermost commit applies the buffer in an order that keeps every file whole for readers:

1. the new chunks of rewritten files, under a new generation (no file row points at it yet);
2. deleted files' rows go (their chunks stop being visible);
3. the file rows, each naming its new generation (the flip: a reader sees the new chunks);
4. the old chunks; then term statistics, meta values, problems and vectors;
5. the version in ``meta`` moves, so every handle's change token moves.

A chunk is visible when its file row exists and names the chunk's generation, so a reader
sees a file's old chunks or its new ones, never a mix, and never a file half written. Nested
transactions are savepoints over the buffer (a failing inner block drops its writes alone).

Several writers may commit at once (``leases.py`` says how they share the index): ids come
from blocks each writer claims for itself (so generations are unique too, and a file's flip
stays whole whoever else commits), each root's keyword statistics are rows of their own that
only the root's lease holder writes (summed when read), and the version is a new random
number at every commit (never read, added to and written back), so every commit moves every
handle's change token. A handle holding leases checks them before each commit.
"""

from __future__ import annotations

import json
import secrets
import threading
import time
from collections.abc import Callable, Hashable, Iterable, Iterator, Sequence
from contextlib import AbstractContextManager, contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any, TypeVar, cast

from noteseek.store.base import ChangeToken
from noteseek.store.milvus import schema
from noteseek.store.milvus.capabilities import (
    VectorIndex,
    essential,
    server_version,
    vector_index_of,
)
from noteseek.store.milvus.errors import (
    milvus_errors,
    reason_of,
    redact,
    unavailable,
    version_error,
)
from noteseek.store.milvus.leases import LeaseLost, Leases
from noteseek.store.milvus.logs import route_client_logs

IN_BATCH = 1000
"""Values per ``in [...]`` list."""
SCAN_BATCH = 4000
QUERY_MAX = 16_384
"""The most rows one Milvus query returns."""
VISIBLE_WAIT = 0.5
"""Seconds a commit waits for its version row to read back (:meth:`_await_visible`)."""
EMPTY_SPARSE = "Growing segment loss raw data"
"""The C++ engine's answer to a query for a sparse vector field of a collection never written."""
STATS = ("chunks", "ctokens", "docs", "dtokens")
T = TypeVar("T")
STATS_TTL = 1.0
"""Seconds a reader keeps the keyword statistics it read (``MilvusCore._stats``)."""
"""The keyword statistics: chunk rows and their tokens, file rows and their tokens."""

Op = tuple[Any, ...]

OPENING = threading.Lock()
"""Handles of one process open the index one at a time: two threads starting Milvus Lite's
in-process server for one file at once collide on its lock (one fails as if another process
held the file), and two handles creating the collections of a new index at once collide too."""

LITE_SEAL_ROWS = 2000
"""Milvus Lite searches rows it has not flushed yet (its memtable, up to 128 MB) by building
an index over all of them again for every search, in Python: at 50k unflushed chunks a
keyword query took tens of seconds. Flushed rows sit in segments whose indexes are built
once. So a Lite handle flushes a collection once this many rows are written to it since its
last flush, and flushes everything at the end of an index run (``record_run``). Milvus
Server seals segments itself; frequent manual flushes there only make small segments."""

LITE_CHANNEL = {"grpc_options": {"grpc.keepalive_time_ms": 2**31 - 1}}
"""Milvus Lite's in-process server answers pymilvus's keepalive pings (every 10 s, idle or
not) with "too many pings" and drops the connection: the first call after a minute idle
failed. The channel to it is in the same process, so it is never pinged."""


@dataclass(frozen=True, slots=True)
class MilvusConfig:
    """Where the index is: what ``[milvus]`` says (the token already revealed)."""

    uri: str
    token: str = ""
    db_name: str = ""
    prefix: str = "noteseek"
    timeout: float = 10.0

    @property
    def lite(self) -> bool:
        return "://" not in self.uri


def lit(value: Any) -> str:
    """A value as a Milvus expression literal."""
    if isinstance(value, str):
        return json.dumps(value, ensure_ascii=False)
    return json.dumps(value)


def in_list(values: Iterable[Any]) -> str:
    return "[" + ",".join(lit(v) for v in values) + "]"


class MilvusCore:
    """The client, the collections and the transaction that the role classes build on."""

    def __init__(self, config: MilvusConfig, *, readonly: bool = False) -> None:
        self.config = config
        self.uri = config.uri
        self.readonly = readonly
        self.prefix = config.prefix
        self._lock = threading.RLock()
        self._depth = 0
        self._writes = 0
        self._ops: list[Op] = []
        self._overlay: dict[str, str | None] = {}
        self._read: dict[str, str | None] = {}
        self._owner = 0
        self._loaded: set[str] = set()
        """Vector collections this handle has loaded for searching."""
        self._tables = {t: schema.name(self.prefix, t) for t in schema.TABLES}
        self._ids = (0, 0)
        """The rest of this handle's id block: (next, end)."""
        self._stamp = 0
        """The version the commit being applied sets."""
        self._unflushed: dict[str, int] = {}
        """Rows written to each collection since this handle last flushed it (Milvus Lite)."""
        self.leases = Leases(lambda: self.client, self._tables[schema.LEASES])
        self.server_version: str | None = None
        """What the server reports of itself (None: it does not implement GetVersion)."""
        self._safe_keys = True
        """Whether the keyed tables' primary keys go through ``schema.safe_key``."""
        self._searching: dict[str, tuple[VectorIndex, dict[str, Any]]] = {}
        self._held: dict[str, tuple[Hashable, int, float, Any]] = {}
        """What :meth:`_kept` keeps, by slot: (key, this handle's writes, when read, value)."""
        self.bm25: dict[str, bool] = {}
        """Whether the files and chunks tables carry Milvus's BM25 function (the server
        scores keywords) or the sparse vectors noteseek scores itself (``schema.py``)."""
        """Each vector collection's index as the server describes it (``capabilities``)."""
        errors = milvus_errors()
        try:
            with OPENING:
                self.client = self._connect()
                existing = set(self.client.list_collections())
                self._create_tables(existing)
                if self._tables[schema.META] not in existing:
                    # A new index: its first write tells whether the server offers upsert
                    # (every write of the index is one). It is known to use safe keys, so
                    # that is not read back: Milvus's C++ engine does not always return a row
                    # just upserted, and an index taken for an old one wrote raw keys (a
                    # quote in one failed the commit with "internal error").
                    row = [meta_row("version", "0"), meta_row(schema.SAFE_KEYS, "1")]
                    meta = self._tables[schema.META]
                    essential(self.uri, "upsert", lambda: self.client.upsert(meta, row))
                    self._await_safe_keys()  # then another process opening it sees them
                else:
                    self._safe_keys = bool(
                        self._query(schema.META, f"key == {lit(schema.SAFE_KEYS)}", ["key"])
                    )
                why = schema.outdated(self.client, self.prefix)
        except errors as exc:
            raise unavailable(self.uri, reason_of(exc), config.token) from exc
        if why is not None:
            self.client.close()
            raise unavailable(self.uri, why)

    def _create_tables(self, existing: set[str]) -> None:
        """Create the tables not in ``existing``, load the others (``schema.open_tables``)."""
        self.bm25 = schema.open_tables(self.client, self.prefix, self.uri, existing)

    def _connect(self) -> Any:
        try:
            from pymilvus import MilvusClient
        except ImportError as exc:
            raise unavailable(self.uri, str(exc)) from None
        # Their log lines (a traceback per failed call, a warning per scan) would reach the
        # terminal; what went wrong leaves as one store error instead (``logs.py``).
        route_client_logs()
        if self.config.lite:
            try:
                Path(self.uri).expanduser().parent.mkdir(parents=True, exist_ok=True)
            except OSError as exc:
                raise unavailable(self.uri, f"cannot create its folder: {exc}") from None
        client = MilvusClient(
            uri=self.uri,
            token=self.config.token,
            db_name=self.config.db_name,
            timeout=self.config.timeout,
            # pymilvus 3 shares one connection per address among its clients, whatever their
            # options, and checks an idle shared one with GetVersion (which some engines lack,
            # so it was torn down and re-dialled): a handle owns its connection instead.
            dedicated=True,
            **(LITE_CHANNEL if self.config.lite else {}),
        )
        try:
            self.server_version = server_version(client)
            error = (
                None
                if self.server_version is None
                else version_error(self.uri, self.server_version)
            )
        except BaseException:
            client.close()
            raise
        if error is not None:
            client.close()
            raise error
        return client

    def details(self) -> dict[str, Any]:
        """The server's identity (its version, or that it reports none), the vector index
        each model's collection got (``capabilities.py``) and the rows of each collection."""
        with self._lock:
            names = sorted(
                c for c in self.client.list_collections() if c.startswith(self.prefix + "_")
            )
            for collection in names:
                schema.load(self.client, collection)
            sizes = {c: self._count(c) for c in names}
            indexes = {
                c: vector_index_of(self.client, c, "vector")[0].kind
                for c in names
                if c.startswith(schema.name(self.prefix, "vec_"))
            }
            version = self.server_version
            return {
                "keyword": (
                    "Milvus's BM25 function"
                    if self.bm25.get(schema.CHUNKS)
                    else "sparse vectors scored by noteseek: tables made on a server without "
                    "the BM25 function, or by an earlier release (noteseek migrate --collection "
                    "NEW moves them to the function)"
                ),
                "server_version": version if version is not None else "not reported",
                "server": server_identity(self.uri, version),
                "vector_index": indexes,
                "collections": sizes,
            }

    def close(self) -> None:
        with self._lock:
            self.leases.close()
            self.client.close()

    # -- reading ----------------------------------------------------------------------------

    def _query(self, table: str, expr: str, fields: Sequence[str], limit: int = 0) -> list[Any]:
        kwargs: dict[str, Any] = {"limit": limit} if limit else {}
        collection = self._tables.get(table, table)
        try:
            return list(
                self.client.query(
                    collection,
                    filter=expr,
                    output_fields=list(fields),
                    consistency_level="Strong",
                    **kwargs,
                )
            )
        except milvus_errors() as exc:
            if EMPTY_SPARSE not in reason_of(exc):
                raise
            # Milvus's C++ engine (2.5) cannot return a sparse vector field from a collection
            # that never held a row: nothing matches there, so the answer is no rows.
            if self.client.query(collection, filter=expr, output_fields=["count(*)"])[0][
                "count(*)"
            ]:
                raise
            return []

    def _scan(self, table: str, expr: str, fields: Sequence[str]) -> Iterator[dict[str, Any]]:
        """Every row matching ``expr``, read in batches."""
        it = self.client.query_iterator(
            self._tables.get(table, table),
            batch_size=SCAN_BATCH,
            filter=expr,
            output_fields=list(fields),
            consistency_level="Strong",
        )
        try:
            while True:
                rows = it.next()
                if not rows:
                    return
                yield from rows
        finally:
            it.close()

    def _query_in(
        self, table: str, field: str, values: Iterable[Any], fields: Sequence[str], extra: str = ""
    ) -> list[dict[str, Any]]:
        """Rows whose ``field`` is one of ``values`` (batched), with ``extra`` conditions."""
        unique = list(dict.fromkeys(values))
        out: list[dict[str, Any]] = []
        for start in range(0, len(unique), IN_BATCH):
            part = unique[start : start + IN_BATCH]
            expr = f"{field} in {in_list(part)}" + (f" and ({extra})" if extra else "")
            found = self._query(table, expr, fields, limit=QUERY_MAX)
            # A server answers at most QUERY_MAX rows a query: more are read in batches.
            out.extend(self._scan(table, expr, fields) if len(found) >= QUERY_MAX else found)
        return out

    def _count(self, table: str, expr: str = "") -> int:
        rows = self._query(table, expr, ["count(*)"])
        return int(rows[0]["count(*)"]) if rows else 0

    def _file_gens(self, file_ids: Iterable[int]) -> dict[int, int]:
        """File id -> the generation its visible chunks carry (only existing files)."""
        rows = self._query_in(schema.FILES, "file_id", file_ids, ["file_id", "gen"])
        return {int(r["file_id"]): int(r["gen"]) for r in rows}

    def _visible(self, rows: list[dict[str, Any]]) -> list[dict[str, Any]]:
        """The chunk rows whose file names their generation (no half-written file)."""
        gens = self._file_gens({int(r["file_id"]) for r in rows})
        return [r for r in rows if gens.get(int(r["file_id"])) == int(r["gen"])]

    # -- meta values --------------------------------------------------------------------------

    def _meta(self, key: str) -> str | None:
        """A meta value: inside a transaction, as this transaction left it (values read once
        are kept until it ends, so a batch of file writes reads the roots once)."""
        mine = self._depth > 0 and self._owner == threading.get_ident()
        if mine:
            if key in self._overlay:
                return self._overlay[key]
            if key in self._read:
                return self._read[key]
        rows = self._query(schema.META, f"key == {lit(key)}", ["value"])
        value = str(rows[0]["value"]) if rows else None
        if mine:
            self._read[key] = value
        return value

    def _meta_json(self, key: str, default: Any) -> Any:
        value = self._meta(key)
        return default if value is None else json.loads(value)

    def _meta_prefix(self, prefix: str) -> dict[str, str]:
        """Every meta value whose key starts with ``prefix`` (key without it -> value), as
        :meth:`_meta` reads one (the transaction's own writes included)."""
        mine = self._depth > 0 and self._owner == threading.get_ident()
        cached = self._read.get("\x00" + prefix) if mine else None
        if cached is not None:
            found: dict[str, str] = json.loads(cached)
        else:
            escaped = prefix.replace("\\", "\\\\").replace("%", "\\%").replace("_", "\\_")
            rows = self._query(schema.META, f"key like {lit(escaped + '%')}", ["key", "value"])
            found = {str(r["key"])[len(prefix) :]: str(r["value"]) for r in rows}
            if mine:
                self._read["\x00" + prefix] = json.dumps(found)
        if mine:
            for key, value in self._overlay.items():
                if key.startswith(prefix):
                    if value is None:
                        found.pop(key[len(prefix) :], None)
                    else:
                        found[key[len(prefix) :]] = value
        return found

    def _root_stats(self, root: str) -> dict[str, int]:
        found = self._meta_json("stats:" + root, {})
        return {k: int(found.get(k, 0)) for k in STATS}

    def _kept(self, slot: str, key: Hashable, read: Callable[[], T]) -> T:
        """``read()`` for ``key``, kept in ``slot`` (one value each) for :data:`STATS_TTL`
        seconds until this handle writes; inside this handle's own transaction always read
        (its writes must show). For the keyword statistics a search reads for chunks and
        again for documents: another process's write reaches them within the second, which
        moves an idf by a hair, as a reader's statistics lag a writer's rows anyway."""
        if self._depth > 0 and self._owner == threading.get_ident():
            return read()
        now = time.monotonic()
        held = self._held.get(slot)
        if held is not None and held[:2] == (key, self._writes) and now - held[2] < STATS_TTL:
            return cast(T, held[3])
        value = read()
        self._held[slot] = (key, self._writes, now, value)
        return value

    def _stats(self) -> dict[str, int]:
        """The keyword statistics: the sum of every root's row (kept: :meth:`_kept`)."""

        def read() -> dict[str, int]:
            total = dict.fromkeys(STATS, 0)
            for value in self._meta_prefix("stats:").values():
                found = json.loads(value)
                for k in STATS:
                    total[k] += int(found.get(k, 0))
            return total

        return dict(self._kept("stats", None, read))

    def _put_meta(self, key: str, value: str | None) -> None:
        with self.transaction():
            self._overlay[key] = value
            self._ops.append(("meta", key, value))

    def _new_ids(self, n: int) -> int:
        """The first of ``n`` new ids (file ids, chunk rowids and generations share them):
        from this handle's block, a new block claimed when it runs out (``leases.py``). A
        ``next_id`` meta value (an index copied in) is a floor for new blocks."""
        first, end = self._ids
        if first + n > end:
            rows = self._query(schema.META, 'key == "next_id"', ["value"])
            floor = int(rows[0]["value"]) if rows else 1
            first, end = self.leases.claim_block(n, floor)
        self._ids = (first + n, end)
        return first

    # -- leases -------------------------------------------------------------------------------

    def hold_roots(self, names: Iterable[str], wait: float = 0.0) -> None:
        """Hold the lease of each root (``leases.py``) until this handle closes; raises
        :class:`~noteseek.store.milvus.leases.LeaseHeld` naming the holder of one another
        writer holds (after waiting up to ``wait`` seconds), holding none of them then."""
        taken: list[str] = []
        try:
            for name in names:
                resource = "root:" + name
                if resource not in self.leases.held:
                    self.leases.acquire(resource, "root", wait)
                    taken.append(resource)
        except BaseException:
            self.leases.release(taken)
            raise

    def writing_graph(self, wait: float) -> AbstractContextManager[None]:
        """Hold the ``graph`` lease for a block: one writer brings the kept graph up to date
        at a time (the others wait up to ``wait`` seconds)."""
        return self.leases.holding("graph", "graph", wait)

    def lease_holders(self) -> list[dict[str, Any]]:
        """Who holds which lease now (for ``status``)."""
        return [h.to_dict() for h in self.leases.holders()]

    def _require_root(self, root: str) -> None:
        """A handle that holds leases writes only the roots it holds."""
        if self.leases.held and "root:" + root not in self.leases.held:
            raise LeaseLost(f"this writer does not hold the lease on root {root!r}")

    def change_token(self) -> ChangeToken:
        """Moves whenever any handle commits (the version in ``meta``) or this one does."""
        with self._lock:
            return int(self._version() or 0), self._writes

    def _version(self) -> str | None:
        """The version row's value as the server answers now (None: no row)."""
        rows = self._query(schema.META, 'key == "version"', ["value"])
        return str(rows[0]["value"]) if rows else None

    # -- transactions -------------------------------------------------------------------------

    @contextmanager
    def transaction(self) -> Iterator[None]:
        """A write transaction (nested calls are savepoints over the buffered writes)."""
        with self._lock:
            mark, overlay = len(self._ops), dict(self._overlay)
            self._owner = threading.get_ident()  # other threads read only what is committed
            self._depth += 1
            try:
                yield
            except BaseException:
                del self._ops[mark:]
                self._overlay = overlay
                self._rolled_back()
                raise
            finally:
                self._depth -= 1
                if not self._depth:
                    self._read = {}
            if self._depth:
                return
            ops, self._ops, self._overlay = self._ops, [], {}
            if ops:
                try:
                    self._commit(ops)
                except milvus_errors() as exc:
                    # The commit runs as the block ends, outside the public method that
                    # opened the transaction: its errors are translated here.
                    raise unavailable(self.uri, reason_of(exc), self.config.token) from exc
                self._writes += 1

    def _rolled_back(self) -> None:
        """Hook for roles that keep state derived from the buffer."""

    def _commit(self, ops: list[Op]) -> None:
        self.leases.check()  # a writer that lost a lease writes nothing more
        self._stamp = secrets.randbits(62) + 1
        segment: list[Op] = []
        for op in ops:
            if op[0] == "clear":
                self._apply(segment)
                self._clear_documents()
                segment = []
            else:
                segment.append(op)
        self._apply(segment)
        self._upsert(schema.META, [meta_row("version", str(self._stamp))])
        self._seal(LITE_SEAL_ROWS)
        self._await_visible()

    def _await_visible(self) -> None:
        """Return once the commit's version row reads back (up to :data:`VISIBLE_WAIT`).

        Milvus's C++ engine (2.5) answers a strongly consistent query that follows an upsert
        at once without that upsert about one time in ten (measured: 36 of 300 queries for
        the row just upserted); once the row reads back, every later query sees it. Waiting
        here makes a commit visible to every reader as it returns. Milvus Lite (in process)
        reads its own writes and needs no wait. Another writer committing in between
        replaces the row: the wait then ends at its bound, a rare half second."""
        stamp = str(self._stamp)
        self._await(lambda: self._version() == stamp)

    def _await_safe_keys(self) -> None:
        """Return once a new index's ``safe_keys`` row reads back (see :meth:`_await_visible`)."""
        expr = f"key == {lit(schema.SAFE_KEYS)}"
        self._await(lambda: bool(self._query(schema.META, expr, ["key"])))

    def _await(self, seen: Callable[[], bool]) -> None:
        """Return once ``seen()`` (a row just upserted reads back), at most :data:`VISIBLE_WAIT`
        seconds; at once on Milvus Lite, which reads its own writes."""
        if self.config.lite:
            return
        deadline = time.monotonic() + VISIBLE_WAIT
        while time.monotonic() < deadline and not seen():
            time.sleep(0.005)

    def _seal(self, least: int) -> None:
        """On Milvus Lite, flush every collection with at least ``least`` unflushed rows
        (:data:`LITE_SEAL_ROWS`); nothing on Milvus Server."""
        if not self.config.lite:
            return
        for collection, rows in list(self._unflushed.items()):
            if rows >= least:
                self.client.flush(collection)
                del self._unflushed[collection]

    def _apply(self, ops: list[Op]) -> None:
        raise NotImplementedError  # the catalog applies its buffered writes

    def _clear_documents(self) -> None:
        raise NotImplementedError

    def _key(self, table: str, value: str) -> str:
        """The primary key ``value`` as stored in ``table`` (``schema.safe_key``)."""
        return schema.safe_key(value) if self._safe_keys and table in schema.KEYED else value

    def _upsert(self, table: str, rows: list[dict[str, Any]]) -> None:
        if self._safe_keys and table in schema.KEYED:
            rows = [{**r, "pk": schema.safe_key(str(r["pk"]))} for r in rows]
        collection = self._tables.get(table, table)
        for start in range(0, len(rows), 2000):
            self.client.upsert(collection, rows[start : start + 2000])
        self._unflushed[collection] = self._unflushed.get(collection, 0) + len(rows)

    def _delete_ids(self, table: str, ids: Iterable[Any]) -> None:
        unique = list(dict.fromkeys(self._key(table, i) if isinstance(i, str) else i for i in ids))
        for start in range(0, len(unique), IN_BATCH):
            self.client.delete(self._tables.get(table, table), ids=unique[start : start + IN_BATCH])

    def verify(self, stop: threading.Event | None = None) -> str | None:
        """Nothing to check here: the server (or Milvus Lite) keeps its own data, and a
        missing collection is what :meth:`check` finds."""
        return None

    def check(self) -> str | None:
        """None when every collection is there; else which are missing."""
        with self._lock:
            existing = set(self.client.list_collections())
        missing = [c for c in self._tables.values() if c not in existing]
        return f"missing collections: {', '.join(missing)}" if missing else None


def server_identity(uri: str, version: str | None) -> str:
    """Which server the index is on, as ``status`` shows it (no secrets)."""
    where = redact(uri)
    if version is None:
        return f"Milvus at {where} (no version reported: the server does not implement GetVersion)"
    if version.startswith("milvus_lite"):
        return f"Milvus Lite {version.removeprefix('milvus_lite').strip()} at {where}"
    return f"Milvus {version} at {where}"


def meta_row(key: str, value: str) -> dict[str, Any]:
    return {"key": key, "value": value, "_v": schema.PLACEHOLDER}
