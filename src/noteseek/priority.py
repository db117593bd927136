"""Background work yields the CPU to searches.

A live index does its heavy work on background threads of the serving process (indexing and
its parser processes, keeping the vector index in step, counting, link-graph communities).
On a laptop with two cores that work would otherwise take the CPU from the searches it exists
to serve: while a forced re-index of 14,145 pages ran, a server answered 1.2 requests/s instead
of 9 (bench/serve_load.py). Linux keeps a nice value per thread, and processes a thread starts
inherit it, so each background thread lowers its own.
"""

from __future__ import annotations

import contextlib
import os
import sys
import threading

BACKGROUND_NICENESS = 10


def yield_cpu(niceness: int = BACKGROUND_NICENESS) -> bool:
    """Lower the calling thread's scheduling priority (Linux only); True if it was lowered."""
    # Elsewhere a thread id is not a process id, and setpriority would target another process.
    if not sys.platform.startswith("linux"):
        return False
    tid = threading.get_native_id()
    with contextlib.suppress(OSError):
        current = os.getpriority(os.PRIO_PROCESS, tid)
        if current < niceness:
            os.setpriority(os.PRIO_PROCESS, tid, niceness)
        return True
    return False
