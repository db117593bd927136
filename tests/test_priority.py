"""Background threads lower their own scheduling priority, never the searches'."""

from __future__ import annotations

import os
import sys
import threading

import pytest

from noteseek.priority import BACKGROUND_NICENESS, yield_cpu


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="per-thread nice is Linux's")
def test_a_background_thread_lowers_only_its_own_priority() -> None:
    before = os.getpriority(os.PRIO_PROCESS, threading.get_native_id())
    seen: dict[str, int | bool] = {}

    def work() -> None:
        seen["lowered"] = yield_cpu()
        seen["nice"] = os.getpriority(os.PRIO_PROCESS, threading.get_native_id())

    thread = threading.Thread(target=work)
    thread.start()
    thread.join()
    assert seen["lowered"] is True
    assert seen["nice"] == max(before, BACKGROUND_NICENESS)
    assert os.getpriority(os.PRIO_PROCESS, threading.get_native_id()) == before
