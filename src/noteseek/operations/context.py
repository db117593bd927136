"""What an operation runs against: the engine, the live index if any, and the caller's limits."""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

if TYPE_CHECKING:  # the engine loads on the first call, not when a door starts
    from noteseek.engine import Engine
    from noteseek.engine.live import IndexService


@dataclass(frozen=True)
class Limits:
    """How much text one answer may carry. Agents pay for every token; people at a terminal
    asked for what they asked for."""

    content_chars: int | None = 2_000
    """Characters of section text per search result (the rest is cut and marked truncated)."""
    payload_chars: int | None = 40_000
    """Characters of text across all results of one call, and of one document page."""
    problems: int | None = 50
    """Failed files listed by index_status (the count is always complete)."""


AGENT_LIMITS = Limits()
NO_LIMITS = Limits(content_chars=None, payload_chars=None, problems=None)


@dataclass
class Context:
    engine: Engine
    service: IndexService | None = None
    """The live index (writer role, watcher, jobs) when serving; None for one-shot commands."""
    limits: Limits = AGENT_LIMITS

    def indexing(self) -> bool:
        """Still building: no index yet, work queued or running, or vectors missing."""
        engine = self.engine
        if not engine.index_exists:
            return True
        if self.service is None:
            return False  # nothing runs in the background of a one-shot command
        if self.service.busy:
            return True
        if engine.wants_vectors() and not self.service.embedding_blocked:
            embedded, total = engine.embedding_progress(allow_stale=True)
            return embedded < total
        return False
