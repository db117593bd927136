"""The live writer's jobs (``engine/live.py``): a reconciliation or a requested re-index, queued
and run one at a time, their state shown by ``index_status``."""

from __future__ import annotations

import dataclasses
import time
from dataclasses import dataclass, field
from typing import Any, Literal

JobState = Literal["queued", "running", "done", "failed"]


@dataclass
class Job:
    id: str
    kind: Literal["reconcile", "reindex"]
    roots: list[str] | None = None
    """The roots to index; None: every root."""
    force: bool = False
    state: JobState = "queued"
    created: float = field(default_factory=time.time)
    started: float | None = None
    finished: float | None = None
    result: dict[str, Any] | None = None
    error: str | None = None
    requests: int = 1
    """How many reindex requests this job answers: those made while it waited in the queue
    were merged into it (:meth:`merge`)."""

    def merge(self, roots: list[str] | None, force: bool) -> None:
        """Take in one more request while the job waits: it then does the work of both (the
        union of their roots, every root when either asks for all; ``force`` when either
        does). Only for a job not yet started: a running one may have passed those files."""
        assert self.state == "queued", self.state
        if self.roots is not None:
            self.roots = (
                None if roots is None else self.roots + [r for r in roots if r not in self.roots]
            )
        self.force = self.force or force
        self.requests += 1

    def to_dict(self) -> dict[str, Any]:
        return dataclasses.asdict(self)
