"""Documents written through noteseek (memories) reach the index whichever process holds the
writer role, and the answer says how.

Unless this process is the writer, the write's paths go to the pending journal first
(``indexing/pending.py``), durable before anything is answered. Then, by who holds the writer
role:

* this process's live index: it takes them at once (queued; searchable within a second),
  without the journal;
* nobody: this process takes the role, indexes every waiting write and gives it back;
* a live index elsewhere (``serve``, ``mcp``, ``watch``): it takes the journal on its next
  turn, and its watcher sees the files anyway (handed over);
* a one-shot command elsewhere (``noteseek index``): it indexes the journal before it gives
  the role up, and checks again just after (:func:`one_shot_writer`), so a write recorded
  while it was finishing is not left behind; a live index of this process also takes the
  role over when it is free, and takes the journal then.

A write is never acknowledged and then left unindexed: the journal outlives every process.
"""

from __future__ import annotations

import contextlib
import logging
from collections.abc import Iterable, Iterator
from typing import TYPE_CHECKING

from noteseek.engine.writer import LIVE_COMMANDS, WriterBusy, writer_role
from noteseek.indexing import pending
from noteseek.indexing.lock import WriterLock

if TYPE_CHECKING:
    from noteseek.engine import Engine
    from noteseek.engine.live import IndexService

log = logging.getLogger(__name__)

EMBED_AT_ONCE = 256
"""A write indexed by its own process embeds the pending sections itself when there are at
most this many (otherwise ``noteseek index`` or a running server embeds them)."""
QUEUED = "queued: searchable by keyword within a second, by meaning once embedded"


def index_written(
    engine: Engine, root: str, rels: Iterable[str], service: IndexService | None = None
) -> str:
    """Bring the index up to date with ``rels`` of ``root`` just written; returns what was
    done (see the module docstring). ``service``: this process's live index, if any."""
    rels = sorted(set(rels))
    if service is not None and service.role == "writer":
        # This process's live writer takes them now; the files outlive it (its next start
        # reconciles them), so the journal, which hands writes to another process, is not
        # needed.
        service.paths_changed({root: set(rels)})
        return QUEUED
    pending.record(engine.index_dir, root, rels)
    try:
        with one_shot_writer(engine, "memory"):
            pass  # taking the role indexed every waiting write, this one included
    except WriterBusy as exc:
        who = f"noteseek {exc.command}" if exc.command else "another process"
        if exc.pid:
            who += f" (pid {exc.pid})"
        if exc.command in LIVE_COMMANDS:
            return f"handed to the index's writer, {who}: searchable within seconds"
        return f"{who} is writing the index: it indexes this write before it finishes"
    embedded, total = engine.embedding_progress()
    if engine.wants_vectors() and 0 < total - embedded <= EMBED_AT_ONCE:
        engine.embed()
        return "indexed and embedded"
    return "indexed"


@contextlib.contextmanager
def one_shot_writer(engine: Engine, command: str) -> Iterator[WriterLock]:
    """Hold the writer role for a one-shot command (raises ``WriterBusy`` when another
    process holds it), indexing the writes waiting in the journal when the role is taken,
    before it is given up, and once more if any were recorded while it was given up."""
    with writer_role(engine.index_dir, command) as lock:
        index_pending(engine)
        yield lock
        index_pending(engine)
    # A writer that recorded while this one was finishing found the role taken: if nobody
    # holds it now, take it back for them (else the holder takes the journal).
    while pending.waiting(engine.index_dir) and lock.try_acquire(command):
        try:
            index_pending(engine)
        finally:
            lock.release()


def index_pending(engine: Engine) -> int:
    """As the writer: index every write waiting in the journal; returns how many paths.
    Writes of roots this index does not have (any more) are dropped."""
    waiting = pending.take(engine.index_dir)
    if not waiting:
        return 0
    roots = engine.roots()
    done = 0
    try:
        for root in sorted(waiting):
            if root in roots:
                engine.update_paths(root, sorted(waiting[root]))
                done += len(waiting[root])
            del waiting[root]
    finally:
        if waiting:  # an error stopped the run: what it did not reach waits for the next
            pending.give_back(engine.index_dir, waiting)
    return done
