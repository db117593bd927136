"""Derived values: computed once, refreshed in the background after changes, throttled."""

from __future__ import annotations

import threading

from noteseek.derived import Derived


def test_first_get_computes_then_changes_refresh_in_the_background() -> None:
    token = [0]
    calls: list[int] = []
    gate = threading.Event()

    def compute() -> int:
        calls.append(token[0])
        if len(calls) > 1:
            gate.wait(5)
        return token[0] * 10

    d = Derived("test", compute, lambda: token[0], throttle=0.0)
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
    d = Derived("test", lambda: token[0], lambda: token[0], throttle=3600.0)
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

    d = Derived("test", compute, lambda: token[0], throttle=0.0)
    assert d.get() == 7
    token[0] = 1
    d.get()
    d.join(5)
    assert d.get() == 7


def test_refreshes_use_the_background_function() -> None:
    token = [0]
    d = Derived("test", lambda: "first", lambda: token[0], 0.0, background=lambda: "apart")
    assert d.get() == "first"  # the first value is computed in the caller's thread
    token[0] = 1
    d.get()
    d.join(5)
    assert d.get() == "apart"
