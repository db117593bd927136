"""A request's time budget: SQLite statements and the pipeline stop at it; nothing else does."""

from __future__ import annotations

import signal
import sqlite3
import threading
import time
from pathlib import Path

import pytest

from noteseek import deadline
from noteseek.deadline import DeadlineExceeded
from noteseek.operations.errors import as_operation_error
from noteseek.store.sqlite import SQLiteStore
from noteseek.store.sqlite.errors import store_error

SLOW = (
    "WITH RECURSIVE c(x) AS (SELECT 1 UNION ALL SELECT x + 1 FROM c WHERE x < ?) "
    "SELECT count(*) FROM c"
)
"""One statement that runs for as long as asked (about a second per 3 million rows)."""


@pytest.fixture
def store(tmp_path: Path) -> SQLiteStore:
    return SQLiteStore(tmp_path / "index.db")


def test_a_statement_past_the_deadline_is_interrupted(store: SQLiteStore) -> None:
    started = time.perf_counter()
    with pytest.raises(DeadlineExceeded) as caught, deadline.limit(0.2):
        store._q(SLOW, (10**9,))
    assert time.perf_counter() - started < 1.0
    assert "search.time_limit" in str(caught.value) and caught.value.seconds == 0.2
    # As an operation error: unavailable (the request was well formed).
    mapped = as_operation_error(caught.value)
    assert mapped is not None and mapped.kind == "unavailable"
    # The connection is fine afterwards.
    assert store._q(SLOW, (10,)) == [(10,)]


def test_without_a_deadline_nothing_is_interrupted(store: SQLiteStore) -> None:
    with deadline.limit(0):  # 0: no limit
        assert store._q(SLOW, (300_000,)) == [(300_000,)]
    # A deadline in one thread does not reach another thread's statements.
    done: list[object] = []
    other = threading.Thread(target=lambda: done.append(store._q(SLOW, (600_000,))))
    with deadline.limit(0.01):
        other.start()
        other.join()
    assert done == [[(600_000,)]]


def test_check_raises_once_the_deadline_passed() -> None:
    deadline.check()  # no deadline: nothing happens
    with deadline.limit(0.05):
        deadline.check()
        time.sleep(0.06)
        assert deadline.expired()
        with pytest.raises(DeadlineExceeded):
            deadline.check()
    assert not deadline.expired()
    with deadline.limit(10), deadline.limit(0.01):  # the sooner of nested deadlines holds
        time.sleep(0.02)
        assert deadline.expired()


def test_a_signal_inside_a_statement_stays_a_keyboard_interrupt(store: SQLiteStore) -> None:
    """Ctrl-C (and SIGTERM, which the CLI turns into the same) lands in SQLite's progress
    handler during a long statement; sqlite3 swallows the handler's KeyboardInterrupt and
    reports "interrupted". The store gives it back as an interrupt (the command then stops
    with exit 130), never as a database error; past a deadline it stays the deadline's."""

    def on_alarm(signum: int, frame: object) -> None:
        raise KeyboardInterrupt

    previous = signal.signal(signal.SIGALRM, on_alarm)
    signal.setitimer(signal.ITIMER_REAL, 0.1)
    try:
        with pytest.raises(sqlite3.OperationalError) as caught:
            store._q(SLOW, (10**9,))
    finally:
        signal.setitimer(signal.ITIMER_REAL, 0)
        signal.signal(signal.SIGALRM, previous)
    assert "interrupted" in str(caught.value)
    assert isinstance(store_error(caught.value, Path(store.path), None), KeyboardInterrupt)
    with deadline.limit(0.01):
        time.sleep(0.02)
        assert not isinstance(store_error(caught.value, Path(store.path), None), KeyboardInterrupt)
    assert store._q(SLOW, (10,)) == [(10,)]
