"""A server's heap (``noteseek/heap.py``): large blocks freed go back to the system.

Each case runs in a fresh interpreter, since glibc's settings last for the process. Large
blocks (512 KiB) are allocated between small ones that stay, then freed: with glibc's rising
threshold (one freed 4 MiB block lifts it) they came from the heap and stayed resident behind
the small ones; tuned, they were mapped apart and are gone once freed.
"""

from __future__ import annotations

import platform
import subprocess
import sys

import pytest

PROBE = """
import os, sys
from noteseek.heap import tune_for_server
if sys.argv[1] == "tuned":
    assert tune_for_server()
def resident():
    with open("/proc/self/statm") as f:
        return int(f.read().split()[1]) * os.sysconf("SC_PAGE_SIZE")
lift = bytearray(4 << 20)
del lift
before = resident()
large, small = [], []
for _ in range(200):
    large.append(bytearray(512 * 1024))
    small.append(bytearray(2000))
del large
print((resident() - before) >> 20)
"""

pytestmark = pytest.mark.skipif(
    sys.platform != "linux" or platform.libc_ver()[0] != "glibc", reason="glibc's malloc only"
)


def kept_mb(mode: str) -> int:
    done = subprocess.run(
        [sys.executable, "-c", PROBE, mode], capture_output=True, text=True, check=True
    )
    return int(done.stdout)


def test_freed_large_blocks_stay_resident_without_the_tuning() -> None:
    assert kept_mb("plain") >= 80  # the premise: 100 MB freed, still resident


def test_a_tuned_server_hands_freed_large_blocks_back() -> None:
    assert kept_mb("tuned") <= 10
