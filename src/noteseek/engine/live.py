"""A live index: the writer role, the watcher, background jobs and periodic reconciliation.

One process per index is the writer (``lock.WriterLock``): it reconciles the index with the
file system at start, runs the watcher, indexes changed paths, embeds new sections, reconciles
again every ``watch.reconcile_interval`` seconds, and runs ``reindex`` jobs. All of that
happens on one worker thread with its own engine (its own SQLite connection), so searches in
the same process, which use another engine, never wait for it: SQLite's WAL lets them read
the last committed state while a batch is being written.

Every other process is a reader: it searches the same index (seeing each commit as it lands)
and tries to take the writer role every ``watch.takeover_interval`` seconds, so when the
writer exits another process carries on.

Work is ordered by urgency: changed paths from the watcher first, then queued jobs, then
embedding (in committed batches, interrupted as soon as new paths arrive), then the periodic
reconciliation. A damaged index (recorded by any process: a search that met a bad page) is
rebuilt from the files before anything else; the idle writer looks for that every
``DAMAGE_POLL`` seconds. Damage no read has met is found by the full check
(``engine/checking.py``), which the writer runs on a thread of its own at a lower CPU priority
after the reconciliation at start and every ``watch.check_interval`` seconds.

A one-shot command that writes (``noteseek index``, ``noteseek rebuild``) takes the same role
for its duration (``engine/writer.py``); a live service started meanwhile is a reader until the
command exits, then takes over. Writes other processes could not index themselves (memories)
wait in the index folder's journal (``indexing/pending.py``), which the writer takes first.
"""

from __future__ import annotations

import contextlib
import itertools
import logging
import os
import sys
import threading
import time
from collections import OrderedDict, deque
from collections.abc import Sequence
from pathlib import Path
from typing import Any, Literal

from noteseek.config import LoadedConfig
from noteseek.embed.base import EmbeddingError
from noteseek.engine import Engine
from noteseek.engine.checking import BackgroundCheck
from noteseek.engine.jobs import Job
from noteseek.engine.writer import (
    NotWriter,
    command_from_argv,
    try_acquire_role,
)
from noteseek.heap import trim
from noteseek.indexing import pending
from noteseek.indexing.indexer import IndexReport
from noteseek.indexing.lock import WriterLock, read_writer_info
from noteseek.indexing.watcher import Batch, Watcher
from noteseek.priority import yield_cpu
from noteseek.sources.registry import spec_of
from noteseek.store.errors import StoreError

log = logging.getLogger(__name__)

Role = Literal["starting", "writer", "reader", "stopped"]
KEEP_JOBS = 50
DAMAGE_POLL = 2.0
"""Seconds between the idle writer's looks for a damage record (a stat of one file)."""
DAMAGE_RETRY = 60.0
"""Seconds before work that failed on the store (a full disk; a failed rebuild) is retried."""
BATCH_GAP = 0.2
"""Seconds at least the worker leaves between two batches of changed paths, so writes
arriving one by one (agents' memories, each a file written again whole) are indexed a few at
a time: a daily log appended to every 100 ms is parsed again at most five times a second."""
BATCH_SHARE = 2.0
"""...and at least this many times the last batch took: the worker's Python (parsing,
chunking, analysing) holds the interpreter's lock that searches in the same process need, so
under a stream of writes indexing takes at most a third of it. Four clients appending to one
daily log made it 600 KB in two minutes, parsed again whole for every batch."""
GRAPH_QUIET = 1.0
"""Seconds without new changed paths before the writer takes a burst's batches into the kept
link graph (and its communities) at once, instead of after each batch."""
GRAPH_MAX_WAIT = 10.0
"""Seconds at most a batch waits for the link graph while changes keep arriving."""
UNAVAILABLE_RETRY = 5.0
"""Seconds before work is retried on an index that could not be reached or opened (a Milvus
server down, a Milvus Lite file another process holds, a SQLite file locked too long)."""


class IndexService:
    """Keeps one index fresh; see the module docstring."""

    def __init__(
        self, config: LoadedConfig, *, watch: bool = True, command: str | None = None
    ) -> None:
        """``command`` is the command this process runs (``serve``, ``mcp``, ``watch``), for
        ``writer.json``; by default it is read from the process's arguments."""
        self.config = config
        self.settings = config.settings
        self.index_dir = config.index_dir
        self.watch_enabled = watch
        self.command = command or command_from_argv(sys.argv)
        self.role: Role = "starting"
        self.lock = WriterLock(self.index_dir)
        self.watcher: Watcher | None = None
        self.jobs: OrderedDict[str, Job] = OrderedDict()
        self.activity: str | None = None
        self.last_reconcile: float | None = None
        self.last_error: str | None = None
        self.batches_indexed = 0
        self._ids = itertools.count(1)
        self._queue: deque[Job] = deque()
        self._paths: Batch = {}
        self._cond = threading.Condition()
        self._stop = threading.Event()
        self._preempt = threading.Event()
        self._embed_blocked: tuple[int, int] | None = None
        self._rebuild_failed = -DAMAGE_RETRY
        self._threads: list[threading.Thread] = []
        self.checker: BackgroundCheck | None = None
        """The writer's full checks (``engine/checking.py``)."""
        self._batch_gap = BATCH_GAP
        self._graph_since: float | None = None
        """When the oldest batch not yet taken into the link graph was indexed (monotonic)."""
        self._last_batch = 0.0

    # -- lifecycle -------------------------------------------------------------------------

    def start(self) -> Role:
        """Take the writer role if free (and start working), else become a reader (for good
        in a folder this process cannot write: a read-only index is still searched)."""
        try:
            acquired = try_acquire_role(self.lock, self.index_dir, self.command)
        except StoreError as exc:
            self.role, self.last_error = "reader", str(exc)
            log.warning("%s", exc)
            return self.role
        if acquired:
            self._become_writer()
        else:
            self.role = "reader"
            self._spawn(self._takeover_loop, "noteseek-takeover")
        return self.role

    def stop(self, timeout: float = 10.0) -> None:
        """Stop the watcher and the worker (after its current commit) and give up the role."""
        self._stop.set()
        self._preempt.set()
        with self._cond:
            self._cond.notify_all()
        if self.watcher is not None:
            self.watcher.stop()
        deadline = time.monotonic() + timeout
        for thread in self._threads:
            thread.join(max(0.0, deadline - time.monotonic()))
        if self.watcher is not None:  # the worker may have started it while we stopped
            self.watcher.stop()
        self.lock.release()
        self.role = "stopped"

    def __enter__(self) -> IndexService:
        self.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self.stop()

    def _spawn(self, target: Any, name: str) -> None:
        thread = threading.Thread(target=target, name=name, daemon=True)
        self._threads.append(thread)
        thread.start()

    def _become_writer(self) -> None:
        self.role = "writer"
        self._queue.append(self._new_job("reconcile"))
        self._spawn(self._work, "noteseek-indexer")
        if self.settings.watch.check_interval > 0:
            checker = BackgroundCheck(
                self.config, self._stop, lambda: self.last_reconcile is not None, self._wake
            )
            self.checker = checker
            self._spawn(checker.run, "noteseek-check")

    def _wake(self) -> None:
        with self._cond:  # the worker looks at the damage record (and rebuilds) now
            self._cond.notify_all()

    def _takeover_loop(self) -> None:
        while not self._stop.wait(self.settings.watch.takeover_interval):
            if self.lock.try_acquire(self.command):
                log.info("took over the writer role for %s", self.index_dir)
                self._become_writer()
                return

    # -- requests --------------------------------------------------------------------------

    def take_pending(self) -> None:
        """As the writer: queue the writes waiting in the journal (``engine/handoff.py``)."""
        self.paths_changed(pending.take(self.index_dir))

    def paths_changed(self, batch: Batch) -> None:
        """Queue changed paths (from the watcher); the worker takes them before anything else."""
        with self._cond:
            for root, rels in batch.items():
                self._paths.setdefault(root, set()).update(rels)
            self._preempt.set()
            self._cond.notify_all()

    def reindex(self, roots: Sequence[str] | None = None, force: bool = False) -> Job:
        """Queue a re-index of some roots (all when None); returns the job to follow."""
        return self.request_reindex(roots, force)[0]

    def request_reindex(
        self, roots: Sequence[str] | None = None, force: bool = False
    ) -> tuple[Job, bool]:
        """Queue a re-index of some roots (all when None); returns the job to follow and
        whether the request was merged into a reindex job already waiting in the queue.

        Repeated requests (an agent calling ``reindex`` after each edit, a script retrying)
        would each queue a full run that finds nothing the first did not; so while a reindex
        job has not started, a new request joins it: its roots become the union of both (all
        roots when either asks for all), and it re-reads unchanged files when either asks
        to (``force``). A job already running is never changed (it may have passed the
        files the request is about): the request queues a new job, which later requests join.
        """
        if self.role != "writer":
            holder = read_writer_info(self.index_dir) or {}
            raise NotWriter(
                "this process is a reader of the index; the writer"
                + (f" (pid {holder['pid']})" if holder.get("pid") else "")
                + " keeps it up to date and takes reindex requests"
            )
        wanted = list(roots) if roots else None
        with self._cond:  # the worker takes jobs from the queue under the same lock
            waiting = next((j for j in self._queue if j.kind == "reindex"), None)
            if waiting is not None:
                waiting.merge(wanted, force)
                return waiting, True
            job = self._new_job("reindex", wanted, force)
            self._queue.append(job)
            self._preempt.set()
            self._cond.notify_all()
        return job, False

    def _new_job(
        self,
        kind: Literal["reconcile", "reindex"],
        roots: list[str] | None = None,
        force: bool = False,
    ) -> Job:
        job = Job(f"job-{os.getpid()}-{next(self._ids)}", kind, roots, force)
        self.jobs[job.id] = job
        while len(self.jobs) > KEEP_JOBS:
            self.jobs.popitem(last=False)
        return job

    # -- state -----------------------------------------------------------------------------

    @property
    def busy(self) -> bool:
        """True while there is indexing work in flight or waiting."""
        return bool(self.activity or self._queue or self._paths)

    @property
    def embedding_blocked(self) -> bool:
        """True after embedding failed (model missing, endpoint down) until the index changes."""
        return self._embed_blocked is not None

    def state(self) -> dict[str, Any]:
        writer = read_writer_info(self.index_dir) if self.role != "writer" else None
        return {
            "role": self.role,
            "pid": os.getpid(),
            "writer_pid": os.getpid() if self.role == "writer" else (writer or {}).get("pid"),
            "activity": self.activity,
            "checking": self.checker is not None and self.checker.running,
            "queued_jobs": len(self._queue),
            "queued_paths": sum(len(v) for v in self._paths.values()),
            "batches_indexed": self.batches_indexed,
            "last_reconcile": self.last_reconcile,
            "reconcile_interval": self.settings.watch.reconcile_interval,
            "last_error": self.last_error,
            "watcher": self.watcher.state.to_dict() if self.watcher else {"running": False},
            "jobs": [j.to_dict() for j in list(self.jobs.values())[-10:]],
        }

    # -- the worker ------------------------------------------------------------------------

    def _start_watcher(self, engine: Engine) -> None:
        roots: dict[str, Path] = {}
        for name, root in engine.roots().items():
            folder = engine.source(name).watch_folder()
            if folder is not None and spec_of(root.kind).owns_folder:
                # Other processes (agents) write a kind's own folder: watched from the
                # start, not once the first write has created it.
                with contextlib.suppress(OSError):
                    folder.mkdir(parents=True, exist_ok=True)
            if folder is not None:
                roots[name] = folder
        self.watcher = Watcher(
            roots,
            self.paths_changed,
            debounce_ms=self.settings.watch.debounce_ms,
            ignore_dirs=(self.index_dir,),
        )
        self.watcher.start()
        log.info("watching %s", ", ".join(f"{n} ({p})" for n, p in sorted(roots.items())))

    def _work(self) -> None:
        yield_cpu()  # searches in this process come first; the parser processes inherit it
        engine = Engine(self.config)
        watch = self.watch_enabled
        try:
            while not self._stop.is_set():
                try:
                    if watch and self.watcher is None:
                        # Before the first reconciliation, so no change made during it is
                        # missed; again once an index that could not be opened can be.
                        watch = self._try_watching(engine)
                    task = self._next_task(engine)
                    if task is not None:
                        task()
                        trim()  # what the batch freed, back to the system now and then
                except StoreError as exc:  # damaged (rebuilt next), full, read-only: no trace
                    if str(exc) != self.last_error:
                        log.error("%s", exc)
                    self.last_error = str(exc)
                    with self._cond:  # what the error lost is redone by a reconciliation
                        if not any(job.kind == "reconcile" for job in self._queue):
                            self._queue.append(self._new_job("reconcile"))
                    retry = 0 if engine.damaged() else DAMAGE_RETRY
                    self._stop.wait(UNAVAILABLE_RETRY if exc.transient else retry)
                except Exception as exc:  # keep serving; the error shows in status
                    self.last_error = f"{type(exc).__name__}: {exc}"
                    log.exception("indexing failed")
                finally:
                    self.activity = None
        finally:
            engine.close()

    def _try_watching(self, engine: Engine) -> bool:
        """Start the watcher; False when the roots cannot be watched (not tried again). An
        index that cannot be reached now raises: it is tried again once it can be."""
        try:
            self._start_watcher(engine)
        except Exception as exc:  # the reconciliation reports what is wrong with the index
            if isinstance(exc, StoreError) and exc.transient:
                raise
            self.last_error = f"watcher: {exc}"
            log.warning("cannot watch the roots: %s", exc)
            return False
        return True

    def _next_task(self, engine: Engine) -> Any:
        with self._cond:
            if engine.damaged():  # rebuilt before anything else; a failed rebuild waits
                if time.monotonic() < self._rebuild_failed + DAMAGE_RETRY:
                    self._cond.wait(timeout=DAMAGE_POLL)
                    return None
                self._preempt.clear()
                return lambda: self._rebuild_damaged(engine)
            if pending.waiting(self.index_dir):
                self.take_pending()
            if self._paths:
                gap = self._last_batch + self._batch_gap - time.monotonic()
                if gap > 0:
                    self._cond.wait(timeout=gap)
                    return None
                batch, self._paths = self._paths, {}
                self._preempt.clear()
                return lambda: self._index_paths(engine, batch)
            graph_wait = self._graph_wait()
            if graph_wait is not None and graph_wait <= 0:
                return lambda: self._update_graph(engine)
            if self._queue:
                job = self._queue.popleft()
                self._preempt.clear()
                return lambda: self._run_job(engine, job)
            if self._embedding_due(engine):
                self._preempt.clear()
                return lambda: self._embed(engine)
            wait = self._reconcile_wait()
            if wait is not None and wait <= 0:
                self._queue.append(self._new_job("reconcile"))
                return None
            waits = [w for w in (wait, graph_wait) if w is not None]
            self._cond.wait(timeout=min([DAMAGE_POLL, *waits]))
            return None

    def _graph_wait(self) -> float | None:
        """Seconds until the batches indexed since the last link-graph update are taken into
        it (None: none waiting): once changes pause, or at the latest after a while."""
        if self._graph_since is None:
            return None
        quiet = self._last_batch + GRAPH_QUIET
        return min(quiet, self._graph_since + GRAPH_MAX_WAIT) - time.monotonic()

    def _update_graph(self, engine: Engine) -> None:
        self.activity = "updating the link graph"
        self._graph_since = None
        engine.update_graph()

    def _rebuild_damaged(self, engine: Engine) -> None:
        self.activity = "rebuilding a damaged index"
        log.warning("%s; rebuilding it", engine.damaged())
        self._rebuild_failed = time.monotonic()  # until it succeeds: not retried in a loop
        report = engine.rebuild(keyword_only=True)
        self._rebuild_failed = -DAMAGE_RETRY
        self.last_reconcile = time.time()
        log.info("rebuilt: %s", report.rebuilt_because)

    def _reconcile_wait(self) -> float | None:
        interval = self.settings.watch.reconcile_interval
        if interval <= 0 or self.last_reconcile is None:
            return None
        return self.last_reconcile + interval - time.time()

    def _index_paths(self, engine: Engine, batch: Batch) -> None:
        self.activity = "indexing changed files"
        started = time.monotonic()
        known = engine.roots()
        for root, rels in batch.items():
            if root in known:
                # The link graph takes a burst of batches in at once (GRAPH_QUIET): a file's
                # links, resolved and with communities, cost more than indexing it.
                report = engine.update_paths(root, sorted(rels), graph=False)
                log.info("%s: %s", root, summarise(report))
                self._last_batch = time.monotonic()
                if self._graph_since is None:
                    self._graph_since = self._last_batch
        self._batch_gap = max(BATCH_GAP, BATCH_SHARE * (time.monotonic() - started))
        self.batches_indexed += 1

    def _run_job(self, engine: Engine, job: Job) -> None:
        self.activity = "reconciling" if job.kind == "reconcile" else "reindexing"
        job.state = "running"
        job.started = time.time()
        try:
            report = engine.index(job.roots, force=job.force, keyword_only=True)
            self._graph_since = None  # the run took every waiting file into the link graph
            job.result = {k: v for k, v in report.to_dict().items() if k != "problems"} | {
                "problems": len(report.problems)
            }
            job.state = "done"
            log.info("%s: %s", job.kind, summarise(report))
        except Exception as exc:
            job.state = "failed"
            job.error = f"{type(exc).__name__}: {exc}"
            raise
        finally:
            job.finished = time.time()
            if job.kind == "reconcile" or job.roots is None:
                self.last_reconcile = time.time()

    def _embedding_due(self, engine: Engine) -> bool:
        if not engine.index_exists or not engine.wants_vectors():
            return False
        embedded, total = engine.embedding_progress()
        if embedded >= total:
            return False
        # After a failure (model missing, endpoint down), wait for the index to change.
        return self._embed_blocked != engine.store.change_token()

    def _embed(self, engine: Engine) -> None:
        self.activity = "embedding"
        try:
            report = engine.embed(stop=self._preempt)
        except EmbeddingError as exc:
            # The model cannot load or the endpoint is down: retry after the next change.
            self._embed_blocked = engine.store.change_token()
            self.last_error = f"embedding: {exc}"
            return
        if not report.interrupted and report.embedded == 0:
            # Nothing could be embedded although sections lack vectors: do not spin.
            self._embed_blocked = engine.store.change_token()
        elif report.embedded:
            self._embed_blocked = None


def summarise(report: IndexReport) -> str:
    """One line for logs: what a run changed."""
    counts = ("added", "updated", "renamed", "removed", "skipped")
    parts = [f"{getattr(report, name)} {name}" for name in counts if getattr(report, name)]
    return (", ".join(parts) or "no changes") + f" ({report.seconds:.2f} s)"
