"""A long-running server's heap: how many malloc arenas its threads share, and where large
blocks come from.

glibc gives threads that allocate at the same time arenas of their own, up to eight per core,
and memory freed in one arena is rarely handed back to the system while the others hold it
apart. A server runs tens of threads (the HTTP worker threads, the live writer, the checks,
background refreshes), each allocating and freeing SQLite pages and query results, so its
resident memory climbed with every request mix it saw: 20 clients searching and writing
memories for 30 s grew ``noteseek serve`` by 74 MB with the default arenas and by 24 MB with
two (``bench/serve_mixed_load.py``, the Hugo documentation; throughput the same within noise).

glibc also serves a large block (128 KiB and up) from its own memory map, handed back the moment
it is freed, but raises that threshold each time such a block is freed, up to 32 MB: after a few
large query results and parsed daily logs, every large block came from the heap and left holes
there. With the threshold and the trim threshold fixed at 128 KiB, 90 s of that load grew the
server by 52 MB (peak 171 MB) instead of 98-149 MB (peak 216-267 MB), at the same throughput.
"""

from __future__ import annotations

import contextlib
import ctypes
import ctypes.util
import sys
import time

SERVER_ARENAS = 2
M_ARENA_MAX = -8
"""glibc's ``mallopt`` parameter number for the arena limit (``malloc.h``)."""
M_TRIM_THRESHOLD = -1
M_MMAP_THRESHOLD = -3
LARGE_BLOCK = 128 * 1024
"""Blocks from this size up are mapped apart (and unmapped when freed), and a heap top this
much free is handed back: glibc's defaults, fixed instead of rising with use."""
TRIM_EVERY = 10.0
"""Seconds at least between two hand-backs of freed heap memory (:func:`trim`)."""

_trimmed = [0.0]


def tune_for_server(arenas: int = SERVER_ARENAS, large: int = LARGE_BLOCK) -> bool:
    """Let this process's threads share at most ``arenas`` malloc arenas, and fix the
    thresholds for mapped blocks and trimming at ``large`` bytes (glibc only; call it before
    starting threads). True if glibc took all three."""
    if not sys.platform.startswith("linux"):
        return False
    with contextlib.suppress(OSError, AttributeError):
        libc = ctypes.CDLL(ctypes.util.find_library("c") or "libc.so.6")
        return all(
            libc.mallopt(parameter, value)
            for parameter, value in (
                (M_ARENA_MAX, arenas),
                (M_MMAP_THRESHOLD, large),
                (M_TRIM_THRESHOLD, large),
            )
        )
    return False


def trim(every: float = TRIM_EVERY) -> bool:
    """Hand the heap's freed pages back to the system (glibc's ``malloc_trim``), at most once
    per ``every`` seconds; True if it ran. glibc keeps what a burst of work freed, scattered
    among what stays: a server writing memories and answering searches kept 20 MB more a
    minute without this."""
    now = time.monotonic()
    if not sys.platform.startswith("linux") or now - _trimmed[0] < every:
        return False
    _trimmed[0] = now
    with contextlib.suppress(OSError, AttributeError):
        libc = ctypes.CDLL(ctypes.util.find_library("c") or "libc.so.6")
        libc.malloc_trim(0)
        return True
    return False
