"""``search.pipeline.beside``: the query embedding's thread beside the keyword lane."""

from __future__ import annotations

import threading

import pytest

from noteseek.search.pipeline import beside


def test_the_work_runs_on_a_daemon_thread_and_its_result_comes_back() -> None:
    seen: list[threading.Thread] = []

    def work(text: str) -> str:
        seen.append(threading.current_thread())
        return text.upper()

    assert beside(work, "cache").result(timeout=10) == "CACHE"
    assert seen[0] is not threading.main_thread()
    assert seen[0].daemon


def test_an_error_reaches_the_caller() -> None:
    def work(text: str) -> str:
        raise ValueError(f"no model for {text}")

    with pytest.raises(ValueError, match="no model for cache"):
        beside(work, "cache").result(timeout=10)
