"""Parser worker processes that never outlive, or hold the pipes of, the process that runs them.

Large runs parse in a :class:`~concurrent.futures.ProcessPoolExecutor`. Its workers used to
come from a fork server, and when ``noteseek index``, ``serve`` or ``mcp`` was killed while
parsing (SIGKILL, or SIGTERM, which ``index`` did not handle), the workers lived on: the fork
server, not the killed process, was their parent, and it waits for its workers. They also held
the caller's stdout and stderr, so ``$(noteseek index)`` never returned. Now:

* workers are spawned, so they are children of the process that runs the pool (and, as with
  a fork server, are never forked from a process with threads);
* on Linux each asks the kernel for SIGKILL when its parent dies (``prctl(PR_SET_PDEATHSIG)``),
  which works whatever killed the parent and even while the worker is busy in C code; a
  watchdog thread that exits when the parent changes covers other systems;
* their stdin, stdout and stderr are ``/dev/null``: they report through the pool, never
  through the caller's pipes (or the MCP server's protocol stream);
* they ignore SIGINT: Ctrl-C reaches the whole process group, and the runner stops the pool
  (:meth:`ParserPool.stop`) instead of each worker dying with a traceback;
* a stopped pool's workers finish the file in hand and skip the rest of their batch, so an
  interrupted run exits in a moment. They are not killed: a worker killed while sending a
  result leaves the executor's reader waiting forever for the rest of the message.
"""

from __future__ import annotations

import multiprocessing
import os
import signal
import sys
import threading
import time
from collections import deque
from collections.abc import Iterator, Sequence
from concurrent.futures import Future, ProcessPoolExecutor
from typing import Any

from noteseek.indexing.prepare import Outcome, PrepareSettings, init_worker, prepare_in_worker
from noteseek.sources.base import FoundFile

__all__ = [
    "BATCH_BYTES",
    "BATCH_FILES",
    "START_METHOD",
    "WATCHDOG_SECONDS",
    "ParserPool",
    "guard_worker",
    "prepared_in_order",
]

START_METHOD = "spawn"
"""How workers start: fresh interpreters, children of the process that runs the pool."""
WATCHDOG_SECONDS = 0.5
"""How often a worker checks that its parent is alive where the kernel cannot tell it."""
BATCH_FILES = 16
"""Files a worker prepares per round trip..."""
BATCH_BYTES = 1_000_000
"""...or fewer, when they add up to this many bytes: what a stopped worker may still have to
finish is about one batch."""
AHEAD = 4
"""Batches per worker handed out ahead of the one being written: every worker stays busy, and
prepared files cannot pile up in memory while the writer catches up."""

_PR_SET_PDEATHSIG = 1  # from <linux/prctl.h>
Job = tuple[FoundFile, str | None]


class ParserPool(ProcessPoolExecutor):
    """``workers`` parser processes, each set up by
    :func:`~noteseek.indexing.prepare.init_worker`, that die with this process."""

    def __init__(self, workers: int, settings: PrepareSettings) -> None:
        context = multiprocessing.get_context(START_METHOD)
        # A flag in shared memory (no lock, no semaphore): workers only read it.
        self._stopping: Any = context.RawValue("b", 0)
        super().__init__(
            max_workers=workers,
            mp_context=context,
            initializer=_start_worker,
            initargs=(os.getpid(), settings, self._stopping),
        )

    def stop(self) -> None:
        """Stop now, for a run that was interrupted or failed: queued batches are dropped and
        each worker returns after the file in hand. Nothing they prepare is written."""
        self._stopping.value = 1
        self.shutdown(wait=True, cancel_futures=True)


def prepared_in_order(pool: ParserPool, jobs: Sequence[Job], workers: int) -> Iterator[Outcome]:
    """The outcome of every job, prepared on ``pool``, in the order of ``jobs`` (so the write
    order, and with it the rowids, does not depend on scheduling).

    Unlike ``pool.map``, only a few batches per worker are handed out ahead of the one being
    read (:data:`AHEAD`).
    """
    pending: deque[Future[list[Outcome]]] = deque()
    for batch in _batches(jobs):
        pending.append(pool.submit(_prepare_batch, batch))
        while len(pending) > AHEAD * workers:
            yield from pending.popleft().result()
    while pending:
        yield from pending.popleft().result()


def _batches(jobs: Sequence[Job]) -> Iterator[list[Job]]:
    batch: list[Job] = []
    size = 0
    for job in jobs:
        if batch and (len(batch) == BATCH_FILES or size + job[0].size > BATCH_BYTES):
            yield batch
            batch, size = [], 0
        batch.append(job)
        size += job[0].size
    if batch:
        yield batch


# -- in the worker processes -------------------------------------------------------------------

_STOPPING: list[Any] = []


def _start_worker(owner: int, settings: PrepareSettings, stopping: Any) -> None:
    guard_worker(owner)
    _STOPPING.append(stopping)
    init_worker(settings)


def _prepare_batch(jobs: list[Job]) -> list[Outcome]:
    out = []
    for job in jobs:
        if _STOPPING and _STOPPING[0].value:
            break  # the run is over; nobody reads the rest
        out.append(prepare_in_worker(job))
    return out


def guard_worker(owner: int) -> None:
    """Make this worker process die with ``owner`` (its parent) and let go of its stdio."""
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    if sys.platform.startswith("linux"):
        _die_with_parent()
    if os.getppid() != owner:
        # The parent died before the worker got here: nothing will ever read its results.
        os._exit(1)
    watchdog = threading.Thread(target=_watch_parent, args=(owner,), name="parent-watchdog")
    watchdog.daemon = True
    watchdog.start()
    devnull = os.open(os.devnull, os.O_RDWR)
    for fd in (0, 1, 2):
        os.dup2(devnull, fd)
    os.close(devnull)


def _die_with_parent() -> None:
    import ctypes

    try:
        libc: Any = ctypes.CDLL(None, use_errno=True)
        libc.prctl(_PR_SET_PDEATHSIG, signal.SIGKILL, 0, 0, 0)
    except (OSError, AttributeError):  # no prctl (an unusual libc): the watchdog still works
        pass


def _watch_parent(owner: int) -> None:
    # An orphan is adopted by init or a subreaper, so its parent id changes.
    while os.getppid() == owner:
        time.sleep(WATCHDOG_SECONDS)
    os._exit(1)
