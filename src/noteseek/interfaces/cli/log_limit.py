"""Repeated log records at a bounded rate, so no client can flood a server's log.

A long-running command logs what clients make it do: a malformed request, a refused Host, a
failed accept when files run out, a bug hit again and again. Each is worth a line, not one
per attempt: at ~2,000 accept tracebacks a second the log grows by megabytes a second and
buries everything else. :class:`LogLimit` lets the first warning or error of a kind through,
then at most one per ``interval`` seconds, and says how many it held back; and it passes at
most ``budget`` warnings and errors per interval in all, since a message can vary (a Host
header, a path). Records below WARNING pass: noteseek's own INFO lines come at a pace it sets.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable

INTERVAL = 10.0
BUDGET = 50


Kind = tuple[str, int, str, str]


def _kind(record: logging.LogRecord) -> Kind:
    """What makes two records "the same": the logger, the level, the message before its
    arguments are filled in (its first line), and the exception's type and message."""
    template = record.msg if isinstance(record.msg, str) else repr(record.msg)
    error = ""
    if record.exc_info and record.exc_info[1] is not None:
        exc = record.exc_info[1]
        error = f"{type(exc).__name__}: {str(exc).partition(chr(10))[0][:200]}"
    return (record.name, record.levelno, template.partition("\n")[0][:200], error)


class LogLimit(logging.Filter):
    """A handler filter: repeated warnings and errors at most once per interval each."""

    def __init__(
        self,
        interval: float = INTERVAL,
        budget: int = BUDGET,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        super().__init__()
        self.interval = interval
        self.budget = budget
        self.clock = clock
        self._last: dict[Kind, float] = {}
        self._held: dict[Kind, int] = {}
        self._window = clock()
        self._passed = 0
        self._dropped = 0

    def filter(self, record: logging.LogRecord) -> bool:
        if record.levelno < logging.WARNING:
            return True
        now = self.clock()
        if now - self._window >= self.interval:
            self._window, self._passed = now, 0
            if len(self._last) > 10_000:  # kinds seen long ago, so the table stays small
                self._last = {k: t for k, t in self._last.items() if now - t < self.interval}
                self._held = {k: n for k, n in self._held.items() if k in self._last}
        kind = _kind(record)
        last = self._last.get(kind)
        if last is not None and now - last < self.interval:
            self._held[kind] = self._held.get(kind, 0) + 1
            return False
        if self._passed >= self.budget:
            self._dropped += 1
            return False
        self._last[kind] = now
        self._passed += 1
        notes = []
        if held := self._held.pop(kind, 0):
            notes.append(f"{held} more like this in the last {self.interval:g} s not logged")
        if self._dropped:
            notes.append(f"{self._dropped} other warnings not logged")
            self._dropped = 0
        if notes:
            record.msg = f"{record.getMessage()} ({'; '.join(notes)})"
            record.args = None
        return True


def limit_log_rate(logger: logging.Logger | None = None) -> None:
    """Put a :class:`LogLimit` on every handler of ``logger`` (the root logger by default)."""
    target = logger or logging.getLogger()
    for handler in target.handlers:
        if not any(isinstance(f, LogLimit) for f in handler.filters):
            handler.addFilter(LogLimit())
