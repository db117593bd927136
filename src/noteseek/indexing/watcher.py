"""Watch the roots for changes and hand them over in batches (watchfiles).

Events are grouped by watchfiles (a batch ends after 50 ms without events, or after
``debounce_ms`` at most) and reduced to the set of changed paths per root: what happened to a
path does not matter, since the indexer looks at the file as it is now. That makes the last
event win and handles atomic saves (a temporary file renamed over the note), renames (one
path gone, one new) and deletions alike. Rules (include/exclude, hidden files, .gitignore) are
applied by the indexer, so the watcher only drops events inside the index folder, whose
writes would otherwise wake it endlessly.

Errors in the watch loop are counted, logged and followed by a restart with exponential
backoff (1 s up to 60 s); once the watch is back, every root is handed over as ``.`` (judge it
whole), since the failed batch and what changed meanwhile are lost. One file name that is not
valid UTF-8 is such an error: watchfiles cannot decode it and fails its whole batch. Roots that
do not exist yet are watched once they appear.
"""

from __future__ import annotations

import logging
import os
import threading
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

log = logging.getLogger(__name__)

Batch = dict[str, set[str]]
"""Root name -> changed paths relative to the root (POSIX)."""

STEP_MS = 50
# How often the loop wakes without events, to notice roots that appeared or a stop request.
IDLE_WAKE_MS = 2000
BACKOFF_MAX = 60.0


@dataclass
class WatcherState:
    running: bool = False
    watched: list[str] = field(default_factory=list)
    events: int = 0
    batches: int = 0
    errors: int = 0
    restarts: int = 0
    last_error: str | None = None
    last_batch_at: float | None = None

    def to_dict(self) -> dict[str, Any]:
        return {
            "running": self.running,
            "watched_roots": list(self.watched),
            "events": self.events,
            "batches": self.batches,
            "errors": self.errors,
            "restarts": self.restarts,
            "last_error": self.last_error,
            "last_batch_at": self.last_batch_at,
        }


class Watcher:
    """A background thread that calls ``on_batch`` with the paths that changed under roots."""

    def __init__(
        self,
        roots: Mapping[str, Path],
        on_batch: Callable[[Batch], None],
        *,
        debounce_ms: int = 500,
        ignore_dirs: tuple[Path, ...] = (),
    ) -> None:
        self.roots = {name: os.path.realpath(Path(p).expanduser()) for name, p in roots.items()}
        self.on_batch = on_batch
        self.debounce_ms = max(STEP_MS, debounce_ms)
        self.ignore = tuple(os.path.realpath(p) for p in ignore_dirs)
        self.state = WatcherState()
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None
        self._lifecycle = threading.Lock()
        self._resync = False
        """Set after the watch failed: its lost events are made up by full scans."""

    def start(self) -> None:
        # Under the lock, so a stop() from another thread sees no thread, or a started one.
        with self._lifecycle:
            if self._thread is not None:
                return
            self._stop.clear()
            thread = threading.Thread(target=self._run, name="noteseek-watcher", daemon=True)
            thread.start()
            self._thread = thread

    def stop(self, timeout: float = 5.0) -> None:
        with self._lifecycle:
            self._stop.set()
            thread, self._thread = self._thread, None
        if thread is not None:
            thread.join(timeout)
        self.state.running = False

    # -- the loop --------------------------------------------------------------------------

    def _run(self) -> None:
        backoff = 1.0
        while not self._stop.is_set():
            existing = sorted(p for p in set(self.roots.values()) if os.path.isdir(p))
            if not existing:
                self.state.running = False
                self._stop.wait(backoff)
                backoff = min(backoff * 2, BACKOFF_MAX)
                continue
            try:
                self._watch(existing)
                backoff = 1.0
            except Exception as exc:  # the watcher must outlive any error
                self.state.errors += 1
                self.state.last_error = f"{type(exc).__name__}: {exc}"
                log.warning("watcher error (restarting in %.0f s): %s", backoff, exc)
                self.state.running = False
                self.state.restarts += 1
                # The batch that failed (one name watchfiles cannot decode fails all of it)
                # and whatever changes until the watch is back are lost: ask for whole roots.
                self._resync = True
                self._stop.wait(backoff)
                backoff = min(backoff * 2, BACKOFF_MAX)
        self.state.running = False

    def _watch(self, paths: list[str]) -> None:
        from watchfiles import watch

        self.state.watched = sorted(n for n, p in self.roots.items() if p in paths)
        self.state.running = True
        for changes in watch(
            *paths,
            watch_filter=self._keep,
            debounce=self.debounce_ms,
            step=STEP_MS,
            stop_event=self._stop,
            rust_timeout=IDLE_WAKE_MS,
            yield_on_timeout=True,
            raise_interrupt=False,
            ignore_permission_denied=True,
        ):
            if self._resync:
                # The watch is back: only a full scan knows what changed while it was down.
                self._resync = False
                self.on_batch({name: {"."} for name in self.state.watched})
            if changes:
                self.state.events += len(changes)
                batch = self.group(path for _, path in changes)
                if batch:
                    self.state.batches += 1
                    self.state.last_batch_at = time.time()
                    self.on_batch(batch)
            now_existing = sorted(p for p in set(self.roots.values()) if os.path.isdir(p))
            if now_existing != paths:
                return  # a root appeared or vanished: watch the new set

    def _keep(self, _change: Any, path: str) -> bool:
        return not any(path == d or path.startswith(d + os.sep) for d in self.ignore)

    def group(self, paths: Any) -> Batch:
        """Changed absolute paths -> {root: {relative paths}} (a path may be in nested roots)."""
        batch: Batch = {}
        for path in paths:
            for name, root in self.roots.items():
                if path.startswith(root + os.sep):
                    rel = os.path.relpath(path, root).replace(os.sep, "/")
                    batch.setdefault(name, set()).add(rel)
        return batch
