"""A request's time budget: SQLite statements and the pipeline stop at it; nothing else does."""

from __future__ import annotations

import threading
import time
from pathlib import Path

import pytest

from noteseek import deadline
from noteseek.deadline import DeadlineExceeded
from noteseek.operations.errors import as_operation_error
from noteseek.store.sqlite import SQLiteStore

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
