"""The full check of an index: damage no read has met yet, found within a bounded time.

SQLite reports a damaged page only when a statement reads it, and most commands read a small
part of a large index (a search reads the saved keyword postings and a few dozen sections), so
a page nobody reads can be damaged for months unnoticed. Three checks bound that:

* every page a process reads is checked as it is read (``PRAGMA cell_size_check``), and the
  small tables every command reads are checked when a process opens the index (the open
  check, ``SQLiteCore.open_check``: about 4 ms on the 165k-chunk PowerShell index);
* the live writer (``serve``, ``mcp``, ``watch``) runs the full check (``PRAGMA
  integrity_check``, about 1.2 s on that index) on a thread of its own at a lower CPU
  priority, on a read-only connection of its own, when the index file was never checked
  through or its last check is older than ``watch.check_interval`` (an hour);
* ``noteseek status --check`` runs it on demand.

Damage a check finds is recorded in the index folder like any other (``store/folder.py``):
``status``, ``/health`` and ``index_status`` report it, searches are refused with the
message saying what rebuilds it, and the live writer rebuilds the index from the files. Each
finished check is recorded too (``checked.json``), so ``status`` says when the index was last
checked through and a writer that starts again does not check a file checked a minute ago.
"""

from __future__ import annotations

import threading
import time
from dataclasses import dataclass

from noteseek.engine.state import IndexState
from noteseek.store import folder as index_folder
from noteseek.store.errors import IndexCorrupt
from noteseek.store.factory import index_file


@dataclass(frozen=True)
class Checked:
    """One full check of one index file."""

    at: float
    """When it finished (seconds since the epoch)."""
    seconds: float
    found: str | None
    """What was wrong (recorded as damage), or None: sound."""

    def to_dict(self) -> dict[str, object]:
        return {"at": self.at, "seconds": self.seconds, "found": self.found}


def full_check(state: IndexState, stop: threading.Event | None = None) -> Checked | None:
    """Check the whole index through on a read-only connection of its own, and record it.

    Returns what was found, or None when there is no index or ``stop`` was set (the check
    interrupted). Damage is recorded for every process by the store as it finds it (a page
    that cannot be read as well as a structure found wrong). Other store errors (the index
    busy, a Milvus server down) are raised: nothing was checked.
    """
    if not state.index_exists:
        return None
    file = index_file(state.index_dir)
    started = time.monotonic()
    try:
        with state.reader() as store:
            found = store.verify(stop)
    except IndexCorrupt as exc:  # a page the check could not read at all
        found = exc.reason
    if stop is not None and stop.is_set():
        return None
    seconds = time.monotonic() - started
    index_folder.record_check(state.index_dir, file, found, seconds)
    return Checked(time.time(), round(seconds, 3), found)


def last_check(state: IndexState) -> Checked | None:
    """The last full check of the index's current file, or None (never checked through)."""
    record = index_folder.last_check(state.index_dir, index_file(state.index_dir))
    if record is None:
        return None
    found = record["found"]
    return Checked(
        float(str(record["at"])),
        float(str(record["seconds"])),
        None if found is None else str(found),
    )


def check_due(state: IndexState, interval: float) -> float:
    """Seconds until the index is due a full check (0: now): its file was never checked
    through, or ``interval`` seconds have passed since. ``interval`` 0 means never (inf)."""
    if interval <= 0:
        return float("inf")
    last = last_check(state)
    if last is None:
        return 0.0
    return max(0.0, last.at + interval - time.time())
