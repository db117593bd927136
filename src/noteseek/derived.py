"""Values derived from the whole index (communities, the concept vocabulary), kept fresh cheaply.

A derived value is computed once, then recomputed on a background thread after the index
changed, at most once per ``throttle`` seconds; the previous value answers meanwhile, so a burst
of edits costs one recomputation and no query waits for one.
"""

from __future__ import annotations

import contextlib
import threading
import time
from collections.abc import Callable, Hashable
from typing import Generic, TypeVar

T = TypeVar("T")


class Derived(Generic[T]):
    def __init__(
        self,
        name: str,
        compute: Callable[[], T],
        token: Callable[[], Hashable],
        throttle: float,
        *,
        background: Callable[[], T] | None = None,
    ) -> None:
        """``background``, if given, computes the value on the background thread instead of
        ``compute`` (for example on its own connection, at a lower CPU priority)."""
        self.name = name
        self._compute = compute
        self._background = background or compute
        self._token = token
        self.throttle = throttle
        self._value: tuple[Hashable, float, T] | None = None
        self._thread: threading.Thread | None = None
        self._lock = threading.Lock()

    @property
    def cached(self) -> T | None:
        """The last computed value, never computing (for status pages)."""
        return self._value[2] if self._value is not None else None

    @property
    def computing(self) -> bool:
        return self._thread is not None and self._thread.is_alive()

    def get(self, *, wait: bool = True) -> T | None:
        """The value; the first time, computed now (``wait``) or in the background (None
        until it is ready). A stale value is refreshed in the background."""
        value = self._value
        if value is None:
            if wait:
                with self._lock:
                    if self._value is None:
                        self._value = self._run()
                return self._value[2]
            self._start()
            return None
        if value[0] != self._token() and time.monotonic() - value[1] >= self.throttle:
            self._start()
        return value[2]

    def _run(self, background: bool = False) -> tuple[Hashable, float, T]:
        token = self._token()  # before computing: a change meanwhile makes it stale
        compute = self._background if background else self._compute
        return token, time.monotonic(), compute()

    def _start(self) -> None:
        with self._lock:
            if self.computing:
                return
            self._thread = threading.Thread(
                target=self._refresh, name=f"noteseek-{self.name}", daemon=True
            )
            self._thread.start()

    def _refresh(self) -> None:
        # If the store closed under us, or similar, the previous value stays.
        with contextlib.suppress(Exception):
            self._value = self._run(background=True)

    def join(self, timeout: float | None = None) -> None:
        thread = self._thread
        if thread is not None:
            thread.join(timeout)
