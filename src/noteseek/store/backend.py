"""Where an index is kept, as one object the engine asks: what ``store.factory`` returns.

The engine never tests which backend it has: it asks a :class:`Backend` to open the index
(writable, read-only, or a reader for background work), whether there is one, to delete it,
to describe it for ``status``, and how writers share it. Two implementations:

============== ============================== ==============================================
               :class:`SQLiteBackend`         :class:`MilvusBackend`
============== ============================== ==============================================
where          ``index.db`` in the index       the collections ``PREFIX_*`` at the URI (Lite,
               folder                          Server, Zilliz Cloud)
present        when the file exists            always (created on first use)
remove         deletes the files (a damaged    nothing (never damaged in that sense: cleared
               index is built again)           and written again)
shared         no: one machine                 yes: every machine with the same settings
writers        one, by the index folder's      root by root, each root's lease; the kept
               lock: nothing to take per root  graph under the ``graph`` lease
============== ============================== ==============================================

The Milvus package is imported only by a Milvus backend's methods, so the embedded index never
loads the client (nor ``pymilvus``).
"""

from __future__ import annotations

import socket
from collections.abc import Callable, Iterable
from contextlib import AbstractContextManager, nullcontext
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any, Protocol

from noteseek.store import folder as index_folder
from noteseek.store.base import Store
from noteseek.store.errors import StoreError

if TYPE_CHECKING:
    from noteseek.store.milvus import MilvusStore
    from noteseek.store.milvus.core import MilvusConfig
    from noteseek.store.sqlite import SQLiteStore

INDEX_FILE = "index.db"
"""The embedded index's file in the index folder (with its ``-wal`` and ``-shm``)."""
GRAPH_WAIT = 300.0
"""Seconds a writer waits for another one's link graph update (a large one takes minutes)."""
EXTRA = "pip install 'noteseek[milvus]'"

StoreOpener = Callable[[], Store]
"""Opens (or returns the open) store of the index: called only by a backend that needs it, so
one with nothing to ask (the embedded index's damaged file) is never opened for nothing."""


class Backend(Protocol):
    """An index's backend: opening it, its presence, its removal, its description, and how
    several writers share it. Compared by :meth:`identity`, never by type."""

    @property
    def name(self) -> str:
        """``sqlite``, ``milvus-lite`` or ``milvus`` (what ``status`` shows as the backend)."""
        ...

    @property
    def location(self) -> str:
        """Where the index is, as a user reads it (no secrets)."""
        ...

    @property
    def shared(self) -> bool:
        """Whether several machines may write the index at once (they coordinate through
        :meth:`hold_roots` and :meth:`writing_graph`; one may see another's roots)."""
        ...

    @property
    def checkable(self) -> bool:
        """Whether a full check (``Store.verify``) reads anything: SQLite's file, checked page
        by page; a Milvus index is kept, and checked, by Milvus itself."""
        ...

    @property
    def folder(self) -> Path | None:
        """The folder the index's files are in (it is that folder's writer lock that guards
        it), or None for an index kept elsewhere."""
        ...

    @property
    def file(self) -> Path | None:
        """The local file holding the index (two backends on one file would clash), if any."""
        ...

    def identity(self) -> tuple[str, ...]:
        """Equal for two backends that are the same index."""
        ...

    def open(self, *, readonly: bool = False) -> tuple[Store, str | None]:
        """Open (or create) the index; returns (store, notice). The notice says why a
        writable open gave a read-only store (a folder this process cannot write). An index
        that cannot be used raises a ``StoreError`` saying why and what to do."""
        ...

    def reader(self) -> Store:
        """Another read-only handle on an existing index, for background work (a long scan on
        it holds nothing that the shared handle's searches wait for)."""
        ...

    def present(self) -> bool:
        """Whether there is an index to open (a Milvus index is created on first use)."""
        ...

    def remove(self) -> list[str]:
        """Delete the index's files (a damaged index is rebuilt, never repaired); returns the
        names deleted. The damage record stays: the rebuild clears it when done."""
        ...

    def describe(self, store: StoreOpener | None = None) -> dict[str, Any]:
        """What ``status`` shows: the backend's name and where it is (no secrets); given the
        ``store``, what it tells of itself (a server's version, rows, leases)."""
        ...

    def hold_roots(self, store: StoreOpener, names: Iterable[str]) -> dict[str, StoreError]:
        """Take the right to write the roots ``names`` for as long as the store stays open;
        returns those another writer holds, each with the error naming that writer."""
        ...

    def writing_graph(self, store: Store) -> AbstractContextManager[None]:
        """Hold the right to bring the kept link graph up to date (one writer at a time)."""
        ...

    def foreign_roots(self, store: StoreOpener) -> set[str]:
        """The roots another machine added: folders a writer here neither indexes nor watches
        unless configured to."""
        ...

    def open_target(self, option: str) -> Store:
        """Open (creating) the index as the target of a copy; an unusable one says what to
        check about ``option``, where the user named it (not about the settings)."""
        ...

    def usage(self) -> str:
        """The settings that open this index (said after a copy into it)."""
        ...

    def missing(self) -> str | None:
        """What this backend needs that is not installed ("Milvus needs ..."), or None."""
        ...


@dataclass(frozen=True)
class SQLiteBackend:
    """The embedded index: one SQLite file in the index folder, one writer (the folder's
    lock), nothing shared with other machines."""

    folder: Path
    name = "sqlite"
    shared = False
    checkable = True

    @property
    def file(self) -> Path:
        return self.folder / INDEX_FILE

    @property
    def location(self) -> str:
        return f"the SQLite index in {self.folder}"

    def identity(self) -> tuple[str, ...]:
        return ("sqlite", str(self.folder))

    def open(self, *, readonly: bool = False) -> tuple[Store, str | None]:
        """Also opens an existing index read-only in a folder this process cannot write (a
        read-only mount, another user's folder): searching works, the notice says why writing
        will not. A damaged index raises ``IndexCorrupt``, recorded in the folder for
        ``index`` and ``rebuild`` to rebuild it from the files."""
        from noteseek.store.sqlite import SQLiteStore

        path = self.file
        if (
            not readonly
            and path.exists()
            and not (index_folder.writable(self.folder) and index_folder.writable(path))
        ):
            notice = (
                f"the index folder {self.folder} is not writable: the index is open read-only "
                "(searching works; indexing needs a writable folder)"
            )
            return _checked(SQLiteStore(path, readonly=True)), notice
        return _checked(SQLiteStore(path, readonly=readonly)), None

    def reader(self) -> Store:
        from noteseek.store.sqlite import SQLiteStore

        return SQLiteStore(self.file, readonly=True)

    def present(self) -> bool:
        return self.file.exists()

    def remove(self) -> list[str]:
        from noteseek.store.sqlite import INDEX_SUFFIXES

        removed = []
        for suffix in INDEX_SUFFIXES:
            target = self.folder / f"{INDEX_FILE}{suffix}"
            try:
                target.unlink()
            except FileNotFoundError:
                continue
            except OSError as exc:
                raise index_folder.folder_error(self.folder, exc) from None
            removed.append(target.name)
        return removed

    def describe(self, store: StoreOpener | None = None) -> dict[str, Any]:
        """The name alone: the index folder is in ``status`` already; the store is not opened."""
        return {"backend": self.name}

    def hold_roots(self, store: StoreOpener, names: Iterable[str]) -> dict[str, StoreError]:
        """Nothing to take: the one writer holds the index folder's lock, and the store is
        not opened here (a damaged one is rebuilt without being opened)."""
        return {}

    def writing_graph(self, store: Store) -> AbstractContextManager[None]:
        return nullcontext()

    def foreign_roots(self, store: StoreOpener) -> set[str]:
        return set()

    def open_target(self, option: str) -> Store:
        return self.open()[0]

    def usage(self) -> str:
        return f"leave milvus.uri empty and give --index-dir {self.folder} (or set index.dir)"

    def missing(self) -> str | None:
        return None

    def copy_to(self, target: Path, keep: Callable[[list[str]], Iterable[str]]) -> None:
        """Copy the index file into folder ``target`` (a consistent copy, even while it is
        written), keeping the vectors of only the embedding keys ``keep`` picks from all
        of them, sorted (``noteseek eval --coverage``: an index part embedded)."""
        from noteseek.store.sqlite.transfer import copy_keeping_vectors

        copy_keeping_vectors(self.file, target / INDEX_FILE, keep)


@dataclass(frozen=True)
class MilvusBackend:
    """The whole index in Milvus at a URI, shared by every machine with the same settings:
    writers take each root's lease, and the kept graph's, before writing them."""

    config: MilvusConfig
    shared = True
    checkable = False
    folder = None

    @property
    def name(self) -> str:
        return "milvus-lite" if self.config.lite else "milvus"

    @property
    def file(self) -> Path | None:
        """Milvus Lite's file; a server's index is no local file."""
        return Path(self.config.uri).expanduser().resolve() if self.config.lite else None

    @property
    def location(self) -> str:
        from noteseek.store.milvus.errors import redact

        kind = "Milvus Lite" if self.config.lite else "Milvus"
        return f"{kind} at {redact(self.config.uri)} (collections {self.config.prefix}_*)"

    def identity(self) -> tuple[str, ...]:
        where = str(self.file) if self.file is not None else self.config.uri.rstrip("/")
        return ("milvus", where, self.config.db_name, self.config.prefix)

    def open(self, *, readonly: bool = False) -> tuple[Store, str | None]:
        return self._store(readonly), None

    def reader(self) -> Store:
        return self._store(True)

    def present(self) -> bool:
        return True

    def remove(self) -> list[str]:
        return []

    def describe(self, store: StoreOpener | None = None) -> dict[str, Any]:
        """With the ``store``: the server's version, rows per collection and the leases."""
        from noteseek.store.milvus import MilvusStore, redact

        out: dict[str, Any] = {
            "backend": self.name,
            "uri": redact(self.config.uri),
            "collection": self.config.prefix,
            "location": self.location,
        }
        opened = None if store is None else store()
        if isinstance(opened, MilvusStore):
            out.update(opened.details())
            out["leases"] = opened.lease_holders()
        return out

    def hold_roots(self, store: StoreOpener, names: Iterable[str]) -> dict[str, StoreError]:
        """Each root's lease (``store/milvus/leases.py``), held until the handle closes."""
        handle = _milvus(store())
        busy: dict[str, StoreError] = {}
        for name in names:
            try:
                handle.hold_roots([name])
            except StoreError as exc:
                busy[name] = exc
        return busy

    def writing_graph(self, store: Store) -> AbstractContextManager[None]:
        """The ``graph`` lease, waiting up to :data:`GRAPH_WAIT` seconds for another writer."""
        return _milvus(store).writing_graph(GRAPH_WAIT)

    def foreign_roots(self, store: StoreOpener) -> set[str]:
        """The roots whose recorded host is another machine."""
        here = socket.gethostname()
        hosts = _milvus(store()).root_hosts()
        return {name for name, host in hosts.items() if host and host != here}

    def open_target(self, option: str) -> Store:
        try:
            return self._store(False)
        except StoreError as exc:
            from noteseek.store.milvus.errors import hint

            raise StoreError(
                f"the migration target {self.location} cannot be used: {exc.reason}; "
                f"{hint(exc.reason, option)}",
                exc.reason,
            ) from None

    def usage(self) -> str:
        from noteseek.store.milvus.errors import redact

        return (
            f"set milvus.uri = {redact(self.config.uri)} (NOTESEEK_MILVUS__URI) and "
            f"milvus.collection = {self.config.prefix}"
        )

    def missing(self) -> str | None:
        try:
            import pymilvus  # noqa: F401
        except ImportError:
            return f"Milvus needs the Milvus client: {EXTRA}"
        return None

    def _store(self, readonly: bool) -> Store:
        from noteseek.store.milvus import MilvusStore

        store: Store = MilvusStore(self.config, readonly=readonly)
        return store


def _checked(store: SQLiteStore) -> SQLiteStore:
    """``store`` once its open check passed (``SQLiteCore.open_check``: the small tables
    every command reads); closed when it did not."""
    try:
        store.open_check()
    except BaseException:
        store.close()
        raise
    return store


def _milvus(store: Store) -> MilvusStore:
    """The Milvus handle a Milvus backend opened (its leases are not in the protocol)."""
    from noteseek.store.milvus import MilvusStore

    if not isinstance(store, MilvusStore):  # pragma: no cover - a Milvus backend opens one
        raise TypeError(f"a Milvus backend was given another store: {type(store).__name__}")
    return store
