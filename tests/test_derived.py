"""Derived values: keyed by a change token, refreshed inline when cheap, in the background when
expensive (throttled, the previous value answering meanwhile)."""

from __future__ import annotations

import threading

from noteseek.engine.derived import Derived


def test_first_get_computes_then_changes_refresh_in_the_background() -> None:
    token = [0]
    calls: list[int] = []
    gate = threading.Event()

    def compute() -> int:
        calls.append(token[0])
        if len(calls) > 1:
            gate.wait(5)
        return token[0] * 10

    d = Derived("test", compute, lambda: token[0], background=compute, throttle=0.0)
    assert d.cached is None
    assert d.get() == 0 and calls == [0]
    assert d.get() == 0 and calls == [0]  # unchanged: no recomputation
    token[0] = 1
    assert d.get() == 0  # the old value answers while the new one is computed
    assert d.computing
    assert d.get() == 0  # one refresh at a time
    gate.set()
    d.join(5)
    assert d.get() == 10 and calls == [0, 1]


def test_throttle_and_background_first_compute() -> None:
    token = [0]
    d = Derived(
        "test", lambda: token[0], lambda: token[0], background=lambda: token[0], throttle=3600.0
    )
    assert d.get(wait=False) is None  # computing in the background
    d.join(5)
    assert d.cached == 0
    token[0] = 1
    assert d.get() == 0 and not d.computing  # changed, but within the throttle


def test_a_failing_refresh_keeps_the_previous_value() -> None:
    token = [0]

    def compute() -> int:
        if token[0]:
            raise RuntimeError("store closed")
        return 7

    d = Derived("test", compute, lambda: token[0], background=compute, throttle=0.0)
    assert d.get() == 7
    token[0] = 1
    d.get()
    d.join(5)
    assert d.get() == 7


def test_refreshes_use_the_background_function() -> None:
    token = [0]
    d = Derived("test", lambda: "first", lambda: token[0], background=lambda: "apart")
    assert d.get() == "first"  # the first value is computed in the caller's thread
    token[0] = 1
    d.get()
    d.join(5)
    assert d.get() == "apart"


def test_a_cheap_value_is_recomputed_inline_when_the_token_moves() -> None:
    token = [0]
    calls: list[int] = []

    def compute() -> int:
        calls.append(token[0])
        return token[0] * 10

    d = Derived("test", compute, lambda: token[0])
    assert d.get() == 0 and d.get() == 0 and calls == [0]
    token[0] = 1
    assert d.get() == 10 and calls == [0, 1]  # the caller gets the fresh value
    assert not d.computing


def test_only_an_expensive_refresh_goes_to_the_background_and_only_if_stale_is_allowed() -> None:
    token = [0]
    cost = [0.0]
    d = Derived(
        "test",
        lambda: token[0],
        lambda: token[0],
        background=lambda: token[0] + 100,
        expensive=lambda _value, seconds: seconds + cost[0] >= 1.0,
    )
    assert d.get() == 0
    token[0] = 1
    assert d.get() == 1 and not d.computing  # the last computation was cheap: inline
    cost[0] = 5.0  # as if it had taken seconds
    token[0] = 2
    assert d.get(stale=False) == 2 and not d.computing  # this caller needs the current value
    token[0] = 3
    assert d.get() == 2  # the last value answers at once
    d.join(5)
    assert d.get() == 103  # computed apart


def test_reset_forgets_the_value_and_drops_a_refresh_under_way() -> None:
    token = [0]
    gate = threading.Event()

    def slow() -> int:
        gate.wait(5)
        return -1

    d = Derived("test", lambda: token[0], lambda: token[0], background=slow)
    assert d.get() == 0
    token[0] = 1
    assert d.get() == 0 and d.computing
    d.reset()
    assert d.cached is None
    gate.set()
    d.join(5)
    assert d.cached is None  # the refresh started before the reset is not kept
    assert d.get() == 1
