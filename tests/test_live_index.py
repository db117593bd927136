"""The parts of the live index: the watcher, the writer lock and the service's reconciliation."""

from __future__ import annotations

import json
import os
import shutil
import threading
import time
from collections.abc import Callable
from pathlib import Path

from noteseek.engine import SearchRequest, open_engine
from noteseek.engine.live import IndexService
from noteseek.indexing.lock import INFO_FILE, WriterLock, read_writer_info
from noteseek.indexing.watcher import Batch, Watcher
from tests.helpers import project, write, writer_elsewhere


def wait_until(check: Callable[[], bool], timeout: float = 10.0) -> float:
    started = time.monotonic()
    while not check():
        assert time.monotonic() - started < timeout, "condition not met in time"
        time.sleep(0.05)
    return time.monotonic() - started


class Collector:
    def __init__(self) -> None:
        self.batches: list[Batch] = []
        self._lock = threading.Lock()

    def __call__(self, batch: Batch) -> None:
        with self._lock:
            self.batches.append(batch)

    def paths(self, root: str = "notes") -> set[str]:
        with self._lock:
            return {p for b in self.batches for p in b.get(root, set())}


def test_watcher_reports_changed_paths_per_root_and_skips_the_index_folder(
    tmp_path: Path,
) -> None:
    notes = tmp_path / "notes"
    other = tmp_path / "other"
    index = notes / ".noteseek"
    for folder in (notes, other, index):
        folder.mkdir(parents=True)
    got = Collector()
    watcher = Watcher({"notes": notes, "other": other}, got, debounce_ms=100, ignore_dirs=(index,))
    watcher.start()
    try:
        wait_until(lambda: watcher.state.running)
        time.sleep(0.2)
        write(notes / "a.md", "# A\n")
        write(notes / "sub" / "b.md", "# B\n")
        write(other / "c.md", "# C\n")
        write(index / "index.db-wal", "noise")
        # A file created together with its folder may be reported as the folder only (the
        # folder's watch is added after it appears); the indexer scans a new folder whole.
        wait_until(
            lambda: (
                "a.md" in got.paths()
                and bool({"sub", "sub/b.md"} & got.paths())
                and "c.md" in got.paths("other")
            )
        )
        (notes / "a.md").unlink()
        os.replace(notes / "sub" / "b.md", notes / "renamed.md")
        wait_until(lambda: "renamed.md" in got.paths())
        assert not any(p.startswith(".noteseek") for p in got.paths())
        assert watcher.state.batches >= 2 and watcher.state.errors == 0
    finally:
        watcher.stop()
    assert not watcher.state.running


def test_watcher_waits_for_a_missing_root_and_survives_its_removal(tmp_path: Path) -> None:
    notes = tmp_path / "notes"
    got = Collector()
    watcher = Watcher({"notes": notes}, got, debounce_ms=50)
    watcher.start()
    try:
        time.sleep(0.3)
        assert not watcher.state.running  # nothing to watch yet
        notes.mkdir()
        wait_until(lambda: watcher.state.running, timeout=15)
        time.sleep(0.2)
        write(notes / "first.md", "# First\n")
        wait_until(lambda: "first.md" in got.paths())
        shutil.rmtree(notes)
        time.sleep(0.5)
        notes.mkdir()
        wait_until(lambda: watcher.state.running, timeout=20)
        time.sleep(0.3)
        write(notes / "second.md", "# Second\n")
        wait_until(lambda: "second.md" in got.paths(), timeout=20)
    finally:
        watcher.stop()


def test_the_writer_lock_is_exclusive_and_freed_when_its_process_dies(tmp_path: Path) -> None:
    index = tmp_path / "index"
    with writer_elsewhere(index) as holder:
        mine = WriterLock(index)
        assert not mine.try_acquire()
        assert read_writer_info(index)["pid"] == holder.pid
        holder.kill()  # no cleanup at all: writer.json stays behind, stale
        holder.wait()
        assert (index / INFO_FILE).exists()
        assert mine.try_acquire()  # the kernel released the dead holder's lock
        assert read_writer_info(index)["pid"] == os.getpid()
        mine.release()
        assert not (index / INFO_FILE).exists()


def test_periodic_reconciliation_without_a_watcher(tmp_path: Path) -> None:
    notes = tmp_path / "notes"
    write(notes / "kept.md", "# Kept\n\nalpha\n")
    write(notes / "stale.md", "# Stale\n\nbravo\n")
    folder = project(tmp_path, {"notes": notes}, "[watch]\nreconcile_interval = 0.3\n")
    config = open_engine(folder, environ={}).config
    service = IndexService(config, watch=False)
    reader = open_engine(folder, environ={})

    def found(word: str) -> set[str]:
        if not reader.index_exists:
            return set()
        return {h.path for h in reader.search(SearchRequest(word, mode="keyword")).hits}

    try:
        assert service.start() == "writer"
        wait_until(lambda: found("bravo") == {"stale.md"})
        assert service.watcher is None
        (notes / "stale.md").unlink()
        write(notes / "missing.md", "# Missing\n\ncharlie\n")
        wait_until(lambda: found("charlie") == {"missing.md"} and not found("bravo"))
        state = service.state()
        assert state["role"] == "writer" and state["last_reconcile"] is not None
        kinds = [j["kind"] for j in state["jobs"]]
        assert kinds.count("reconcile") >= 2
        assert all(j["state"] in {"done", "queued", "running"} for j in state["jobs"])
    finally:
        service.stop()
        reader.close()
    assert service.role == "stopped"
    info = (
        json.loads((config.index_dir / INFO_FILE).read_text())
        if (config.index_dir / INFO_FILE).exists()
        else None
    )
    assert info is None
