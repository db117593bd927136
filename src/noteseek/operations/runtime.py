"""Running operations: one call at a time per engine, errors as operation errors.

:func:`execute` runs one operation on a context (the CLI's way). :class:`Runtime` is what the
servers hold: it opens the index and the live service on a background thread once serving
started (importing the engine and opening the index take a few hundred milliseconds, and the
MCP handshake and ``tools/list`` need neither), then serves calls from any thread, one at a
time on each of its engines: :data:`READ_ENGINES` for reads, one for writes.
"""

from __future__ import annotations

import gc
import logging
import threading
from collections import deque
from collections.abc import Callable, Iterator, Mapping
from contextlib import contextmanager
from typing import TYPE_CHECKING, Any, Generic, TypeVar

from noteseek.heap import tune_for_server
from noteseek.operations.context import AGENT_LIMITS, Context, Limits
from noteseek.operations.errors import OperationError, Unavailable, as_operation_error
from noteseek.operations.params import Params, parse_arguments
from noteseek.operations.table import Operation, operation

if TYPE_CHECKING:
    from noteseek.config import LoadedConfig
    from noteseek.engine import Engine

log = logging.getLogger(__name__)

NOT_BUILT = "the index is still being built; try again shortly"
READ_ENGINES = 1
"""Engines a server answers reads with, each one call at a time, callers served in turn
(:class:`FairPool`); writes (memories, jobs) have one more of their own, so no search waits
behind a write's file I/O (an fsync per file and per folder) and no write behind a search.
Each engine has its own SQLite connection, reading the index as last committed (the live
writer commits on its own), and its own derived values. A second read engine answered 10-25 %
more searches under 16 searching and 4 writing clients (a search spends about half its time
in SQLite, when other threads can run Python), but took that time from the writes (p95 about
800 ms instead of 620) and cost its own page cache and derived values
(``bench/serve_mixed_load.py``)."""


def parse(name: str, arguments: Mapping[str, Any] | None) -> tuple[Operation, Params]:
    """The operation and its validated parameters (Invalid with a precise message)."""
    op = operation(name)
    return op, parse_arguments(name, op.params, arguments)


def execute(op: Operation, ctx: Context, params: Params, **options: Any) -> dict[str, Any]:
    """Run ``op``; the engine's exceptions come out as :class:`OperationError` of their kind.

    ``options`` go to the run function as keywords (progress callbacks of a one-shot index).
    Anything else is a bug and propagates for the door to log.
    """
    return finish(op, run_on_engine(op, ctx, params, **options))


def finish(op: Operation, result: dict[str, Any]) -> dict[str, Any]:
    """The operation's work that needs no engine (``Operation.finish``), done on ``result``."""
    return result if op.finish is None else op.finish(result)


def run_on_engine(op: Operation, ctx: Context, params: Params, **options: Any) -> dict[str, Any]:
    """The part of :func:`execute` that needs the engine (a runtime holds its lock for it)."""
    if op.needs_index and not ctx.engine.index_exists:
        raise Unavailable(NOT_BUILT)
    with operation_errors():
        ctx.engine.refresh()  # a rebuild elsewhere replaced the index's file: open the new one
        if op.needs_index or op.reads_index:
            damaged = ctx.engine.damaged()
            if damaged is not None:
                raise Unavailable(damaged)
        return op.run(ctx, params, **options)


@contextmanager
def operation_errors() -> Iterator[None]:
    """The engine's exceptions inside the block come out as operation errors of their kind;
    anything else is a bug and propagates for the door to log."""
    try:
        yield
    except OperationError:
        raise
    except Exception as exc:
        mapped = as_operation_error(exc)
        if mapped is None:
            raise
        raise mapped from None


YOUNG_OBJECTS = 10_000
"""Allocations between two collections of the youngest generation in a settled process."""


def settle_heap() -> None:
    """Keep the heap a process holds from its start out of the garbage collector's passes.

    A server holds tens of thousands of objects from its start (modules, settings, the opened
    index) for as long as it runs, and each full collection walked them all: about 25 ms,
    once every 30 or so searches (the slowest 5 % of top-100 keyword searches on the 14k-file
    PowerShell docs). ``gc.freeze`` moves them to a generation the collector skips. An object
    frozen and later left in a reference cycle is not reclaimed, so this is done once, when
    the process has started. A search then allocates tens of thousands of objects that
    reference counting frees, so the youngest generation is collected every
    :data:`YOUNG_OBJECTS` allocations instead of every 700. Measured over 500 top-100 searches
    (``bench/powershell_latency.py``, ``--no-settle`` for before): 17 full collections taking
    436 ms and young ones 131 ms before; none and 43 ms settled.
    """
    gc.collect()
    gc.freeze()
    young, older, oldest = gc.get_threshold()
    gc.set_threshold(max(young, YOUNG_OBJECTS), older, oldest)


T = TypeVar("T")


class FairPool(Generic[T]):
    """Items handed out one caller at a time each, to waiting callers in the order they came.

    A plain lock (or queue) lets any waiter in when it is released, so under 16 clients some
    searches waited for many others to pass: the slowest 5 % took twice as long as with
    callers served in turn (``bench/serve_mixed_load.py``)."""

    def __init__(self) -> None:
        self._mutex = threading.Lock()
        self._free: deque[T] = deque()
        self._waiting: deque[tuple[threading.Event, list[T]]] = deque()

    def take(self) -> T:
        with self._mutex:
            if self._free and not self._waiting:
                return self._free.popleft()
            ready, slot = threading.Event(), list[T]()
            self._waiting.append((ready, slot))
        ready.wait()
        return slot[0]

    def give(self, item: T) -> None:
        with self._mutex:
            if self._waiting:
                ready, slot = self._waiting.popleft()
                slot.append(item)
                ready.set()
            else:
                self._free.append(item)


class Runtime:
    """The index as the servers hold it: engine and live service, opened in the background."""

    def __init__(
        self,
        load_config: Callable[[], LoadedConfig],
        *,
        watch: bool = True,
        limits: Limits = AGENT_LIMITS,
        command: str | None = None,
        settle: bool = False,
    ) -> None:
        """``command`` (``serve``, ``mcp``) is recorded with the writer role, so a one-shot
        ``noteseek index`` beside it can say which process to ask. ``settle``: the process
        is a server, whose threads share two malloc arenas (``noteseek/heap.py``) and whose
        heap is settled (:func:`settle_heap`) once the index is open."""
        if settle:
            tune_for_server()  # before the server's threads start (noteseek/heap.py)
        self.load_config = load_config
        self.watch = watch
        self.command = command
        self.limits = limits
        self.settle = settle
        self.context: Context | None = None
        self.writing: Context | None = None
        """The context writes run in: an engine of their own (see :meth:`run`)."""
        self.error: str | None = None
        self._ready = threading.Event()
        self._started = False
        self._start_lock = threading.Lock()
        self._readers: FairPool[Context] = FairPool()
        """The read contexts (:data:`READ_ENGINES`), handed out first come, first served."""
        self._writers: FairPool[Context] = FairPool()
        """The write context, likewise."""

    def start(self) -> None:
        """Open the index in the background (once: later calls do nothing)."""
        with self._start_lock:
            if self._started:
                return
            self._started = True
        threading.Thread(target=self._open, name="noteseek-start", daemon=True).start()

    def _open(self) -> None:
        try:
            from noteseek.engine import Engine
            from noteseek.engine.live import IndexService

            config = self.load_config()
            service = IndexService(config, watch=self.watch, command=self.command)
            contexts = []
            for _ in range(READ_ENGINES + 1):
                engine = Engine(config)  # opens its store and derived values on first use
                engine.live = service
                contexts.append(Context(engine, service, self.limits))
            self.context, self.writing = contexts[0], contexts[-1]
            for ctx in contexts[:-1]:
                self._readers.give(ctx)
            self._writers.give(self.writing)
            service.start()
            if self.settle:
                settle_heap()
        except Exception as exc:
            log.error("cannot open the index: %s", exc)
            self.error = f"cannot open the index: {exc}"
        finally:
            self._ready.set()

    def opened(self, timeout: float | None = None) -> Context | None:
        """A read context once the index is open; None if it could not be opened (or was not
        within ``timeout`` seconds)."""
        if not self._ready.wait(timeout):
            return None
        return self.context

    def _context(self, timeout: float) -> Context:
        if not self._ready.wait(timeout):
            raise Unavailable("the index is still opening; try again shortly")
        if self.context is None:
            raise Unavailable(self.error or "the index could not be opened")
        return self.context

    def call(self, name: str, arguments: Mapping[str, Any] | None) -> dict[str, Any]:
        """Validate and run; bad arguments fail fast, even while the index opens."""
        op, params = parse(name, arguments)
        return self.run(op, params)

    def run(self, op: Operation, params: Params, *, timeout: float = 120.0) -> dict[str, Any]:
        """Run ``op``: one call at a time per engine (:data:`READ_ENGINES`)."""
        self._context(timeout)
        with self._using(self._readers if op.read_only else self._writers) as ctx:
            result = run_on_engine(op, ctx, params)
        return finish(op, result)

    @contextmanager
    def _using(self, pool: FairPool[Context]) -> Iterator[Context]:
        """A context of ``pool`` for one call (waiting for one to be free, in turn)."""
        ctx = pool.take()
        try:
            yield ctx
        finally:
            pool.give(ctx)

    @contextmanager
    def using_engine(self, timeout: float = 30.0) -> Iterator[Engine]:
        """The engine for one caller at a time, as operations hold it (the page's renderer).

        Unavailable while the index opens or when no index exists yet; the engine's
        exceptions inside come out as operation errors.
        """
        self._context(timeout)
        with self._using(self._readers) as ctx:
            if not ctx.engine.index_exists:
                raise Unavailable(NOT_BUILT)
            with operation_errors():
                ctx.engine.refresh()
                damaged = ctx.engine.damaged()
                if damaged is not None:
                    raise Unavailable(damaged)
                yield ctx.engine

    def damaged(self) -> str | None:
        """What is wrong with the index, when it is damaged (for ``/health``); never waits for
        the index to open or for a running operation."""
        ctx = self.context
        return None if ctx is None else ctx.engine.damaged()

    def shutdown(self) -> None:
        """Stop the watcher and the worker (after its current batch), release the role."""
        with self._start_lock:
            started, self._started = self._started, True  # and never start after this
        if not started:
            return  # the index was never opened (a client that left before listing tools)
        self._ready.wait(30)
        ctx = self.context
        if ctx is None:
            return
        if ctx.service is not None:
            ctx.service.stop()
        for _ in range(READ_ENGINES):  # each once its call is done
            self._readers.take().engine.close()
        if self.writing is not None:
            self._writers.take().engine.close()
