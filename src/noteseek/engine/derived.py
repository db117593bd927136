"""A value derived from the whole index, kept in step with the index's change token.

Every cached value the engine holds (the analyzer, the link graph, the vector index, the
embedding count, communities, the concept vocabulary ...) is one :class:`Derived`: it remembers
the token it was computed at, and when the token moves it is computed again in one of two ways.

- **Inline** (the default, for values that take milliseconds): the caller that notices the
  change recomputes the value and gets the fresh one.
- **In the background** (``background=``, for values that take seconds on a large index): the
  refresh runs on a thread of its own, at most one at a time and at most once per ``throttle``
  seconds, and the previous value answers meanwhile, so a burst of edits costs one
  recomputation and no query waits for one. ``expensive`` can narrow this to the refreshes
  that are slow (judged from the last one's duration), and a caller that must see the current
  value passes ``stale=False`` and gets an inline computation.

The first value is computed inline, unless the caller passes ``wait=False``: then it is
computed in the background and the caller gets None until it is ready.
"""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Callable, Hashable
from typing import Generic, Literal, NamedTuple, TypeVar, overload

log = logging.getLogger(__name__)

T = TypeVar("T")


class Held(NamedTuple, Generic[T]):
    """A computed value and what is known about its computation."""

    token: Hashable
    """The change token read before computing: a change meanwhile leaves the value stale."""
    started: float
    """When the computation started (``time.monotonic``), for the throttle."""
    seconds: float
    """How long it took, for ``expensive``."""
    value: T


class Derived(Generic[T]):
    """One derived value; see the module docstring for the two refresh policies."""

    def __init__(
        self,
        name: str,
        compute: Callable[[], T],
        token: Callable[[], Hashable],
        *,
        background: Callable[[], T] | None = None,
        throttle: float = 0.0,
        expensive: Callable[[T, float], bool] | None = None,
    ) -> None:
        """``compute`` runs in the caller's thread; ``background``, if given, runs on the
        background thread instead (for example on its own connection, at a lower CPU priority)
        and makes refreshes background work. ``expensive(value, seconds)`` says whether
        refreshing a value whose computation took ``seconds`` is background work (default:
        always, when ``background`` is given)."""
        self.name = name
        self._compute = compute
        self._background = background
        self._token = token
        self.throttle = throttle
        self._expensive = expensive
        self._held: Held[T] | None = None
        self._thread: threading.Thread | None = None
        self._generation = 0  # bumped by reset: a refresh started before it is dropped
        self._lock = threading.Lock()  # one inline computation at a time
        self._start_lock = threading.Lock()

    @property
    def cached(self) -> T | None:
        """The last computed value, never computing (for status pages)."""
        held = self._held
        return held.value if held is not None else None

    @property
    def computing(self) -> bool:
        """True while a background computation runs."""
        thread = self._thread
        return thread is not None and thread.is_alive()

    @overload
    def get(self, *, wait: Literal[True] = True, stale: bool = True) -> T: ...
    @overload
    def get(self, *, wait: bool, stale: bool = True) -> T | None: ...
    def get(self, *, wait: bool = True, stale: bool = True) -> T | None:
        """The value, computed or refreshed as the module docstring says.

        ``wait=False``: a first value is computed in the background (None until ready).
        ``stale=False``: a changed value is recomputed now even if refreshes are background
        work. Only None when ``wait`` is False and no value is ready yet.
        """
        held = self._held
        if held is None:
            if not wait:
                self._start()
                return None
        elif held.token == self._token():
            return held.value
        elif stale and self._in_background(held):
            if time.monotonic() - held.started >= self.throttle:
                self._start()
            return held.value
        return self._compute_inline()

    def reset(self) -> None:
        """Forget the value (its store was closed); a refresh under way is discarded."""
        with self._start_lock:
            self._generation += 1
            self._held = None

    def join(self, timeout: float | None = None) -> None:
        """Wait for a background computation (tests, benchmarks)."""
        thread = self._thread
        if thread is not None:
            thread.join(timeout)

    def _in_background(self, held: Held[T]) -> bool:
        if self._background is None:
            return False
        return self._expensive is None or self._expensive(held.value, held.seconds)

    def _compute_inline(self) -> T:
        with self._lock:
            token = self._token()
            held = self._held
            if held is not None and held.token == token:
                return held.value  # another caller computed it while this one waited
            generation = self._generation
            held = self._run(token, self._compute)
            if generation == self._generation:
                self._held = held
            return held.value

    def _run(self, token: Hashable, compute: Callable[[], T]) -> Held[T]:
        started = time.monotonic()
        value = compute()
        return Held(token, started, time.monotonic() - started, value)

    def _start(self) -> None:
        with self._start_lock:
            if self.computing:
                return
            self._thread = threading.Thread(
                target=self._refresh,
                args=(self._generation,),
                name=f"noteseek-{self.name}",
                daemon=True,
            )
            self._thread.start()

    def _refresh(self, generation: int) -> None:
        compute = self._background or self._compute
        try:
            held = self._run(self._token(), compute)
        except Exception:  # the store closed under us, or similar: the previous value stays
            log.debug("refreshing %s failed", self.name, exc_info=True)
            return
        with self._start_lock:
            if generation == self._generation:
                self._held = held
