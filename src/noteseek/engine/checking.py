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

import logging
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass

from noteseek.config import LoadedConfig
from noteseek.engine.state import IndexState
from noteseek.priority import yield_cpu
from noteseek.store import folder as index_folder
from noteseek.store.errors import IndexCorrupt, StoreError
from noteseek.store.factory import index_file

log = logging.getLogger(__name__)

CHECK_POLL = 60.0
"""Seconds between the writer's looks at whether a full check is due (a small file read)."""
CHECK_START_WAIT = 120.0
"""Seconds the first full check waits for the reconciliation at start (which it would slow)."""
DAMAGED_POLL = 2.0
"""Seconds between looks while the index is damaged (the worker rebuilds it)."""
RETRY = 60.0
"""Seconds before a check that could not run (the index busy, a server down) is tried again."""


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


class BackgroundCheck:
    """The live writer's full checks: on a thread of its own at a lower CPU priority, on a
    reader of its own, whenever one is due (:func:`check_due`), the first once the
    reconciliation at start is done (``reconciled``). Damage found is recorded by the store;
    ``found`` wakes the worker, which rebuilds the index. ``stop`` ends it, interrupting a
    check under way."""

    def __init__(
        self,
        config: LoadedConfig,
        stop: threading.Event,
        reconciled: Callable[[], bool],
        found: Callable[[], None],
    ) -> None:
        self.config = config
        self.interval = config.settings.watch.check_interval
        self.stop = stop
        self.reconciled = reconciled
        self.found = found
        self.running = False
        """True while a check runs."""

    def run(self) -> None:
        yield_cpu()
        state = IndexState(self.config)
        if not state.backend.checkable:  # Milvus keeps (and checks) its own data
            state.close()
            return
        started = time.monotonic()
        try:
            while not self.stop.is_set():
                if not self.reconciled() and time.monotonic() - started < CHECK_START_WAIT:
                    wait = DAMAGED_POLL
                elif state.damage() is not None:  # before the file is looked for: a rebuild
                    wait = DAMAGED_POLL  # deletes it; the new file is checked once built
                elif not state.index_exists:
                    wait = CHECK_POLL  # nothing to check before the first index run
                else:
                    wait = check_due(state, self.interval)
                if wait > 0:
                    self.stop.wait(min(wait, CHECK_POLL))
                    continue
                self._check(state)
        finally:
            state.close()

    def _check(self, state: IndexState) -> None:
        self.running = True
        try:
            checked = full_check(state, self.stop)
        except StoreError as exc:  # busy, unreachable: nothing checked, tried again later
            if state.damage() is not None:  # the file went under it (a rebuild began): the
                return  # new one is checked as soon as it is built, not a minute later
            log.warning("the full check of the index did not run: %s", exc)
            self.stop.wait(RETRY)
            return
        except Exception:  # keep serving; tried again after a while
            log.exception("the full check of the index failed")
            self.stop.wait(RETRY)
            return
        finally:
            self.running = False
        if checked is None:
            return
        if checked.found is None:
            log.info("checked the index through in %.1f s: sound", checked.seconds)
            return
        log.warning("the full check of the index (%.1f s): %s", checked.seconds, checked.found)
        self.found()
