"""A time budget for one request, which long loops and SQLite statements check.

The store's connection is shared and serialised by a lock, so one long statement holds every
other query of the process behind it. A search sets a deadline for its thread
(:func:`limit`); the pipeline checks it between stages (:func:`check`), and SQLite calls
:func:`sqlite_progress` every few thousand virtual-machine steps of any statement, which
interrupts the statement once the deadline has passed. Threads without a deadline (indexing,
the writer, derived values shared by every query) are never interrupted.
"""

from __future__ import annotations

import time
from collections.abc import Iterator
from contextlib import contextmanager
from contextvars import ContextVar

from noteseek.store.errors import is_interrupt

SQLITE_PROGRESS_STEPS = 10_000
"""SQLite virtual-machine steps between checks: about 0.1 ms of work, under 1 % overhead."""

_deadline: ContextVar[tuple[float, float] | None] = ContextVar("noteseek_deadline", default=None)
"""This thread's deadline (a time.monotonic value) and the budget it came from, in seconds."""


class DeadlineExceeded(Exception):
    """The request ran past its time budget and was stopped (not a ValueError: the request
    was well formed)."""

    def __init__(self, seconds: float) -> None:
        super().__init__(
            f"the request took longer than its time limit ({seconds:g} s, search.time_limit) "
            "and was stopped; narrow it (fewer words, a filter) or raise the limit"
        )
        self.seconds = seconds


@contextmanager
def limit(seconds: float) -> Iterator[None]:
    """Run the block with a deadline ``seconds`` from now in this thread (0: none). A deadline
    already set outside is kept when it comes sooner. A statement SQLite interrupted for it
    comes out as :class:`DeadlineExceeded`, never as a database error (the index is fine)."""
    if seconds <= 0:
        yield
        return
    outer = _deadline.get()
    mine = (time.monotonic() + seconds, seconds)
    chosen = mine if outer is None else min(outer, mine)
    token = _deadline.set(chosen)
    try:
        yield
    except Exception as exc:
        if is_interrupt(exc) and time.monotonic() >= chosen[0]:
            raise DeadlineExceeded(chosen[1]) from None
        raise
    finally:
        _deadline.reset(token)


def expired() -> bool:
    """Whether this thread's deadline has passed."""
    current = _deadline.get()
    return current is not None and time.monotonic() >= current[0]


def check() -> None:
    """Raise :class:`DeadlineExceeded` once this thread's deadline has passed."""
    current = _deadline.get()
    if current is not None and time.monotonic() >= current[0]:
        raise DeadlineExceeded(current[1])


def sqlite_progress() -> int:
    """SQLite's progress handler: non-zero interrupts the running statement."""
    return 1 if expired() else 0
