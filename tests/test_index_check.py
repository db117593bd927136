"""The full check's schedule and record (``engine/checking.py``), in one process.

The damage it finds, through every door, is ``tests/reliability/test_damage_check.py``; here:
what ``status`` reports of the last check, when the live writer checks (after its
reconciliation at start, not again while the last check of the file is recent), that a stop
interrupts it without a record, and that a rebuild forgets the check of the old file.
"""

from __future__ import annotations

import json
import threading
import time
from pathlib import Path

from noteseek.engine import Engine, open_engine
from noteseek.engine.live import IndexService
from noteseek.store.folder import CHECK_FILE
from tests.helpers import project, write
from tests.test_live_index import wait_until


def indexed(tmp_path: Path, extra: str = "") -> Engine:
    notes = tmp_path / "notes"
    for i in range(20):
        write(notes / f"n{i}.md", f"# Note {i}\n\nalpha bravo {i}\n")
    folder = project(tmp_path, {"notes": notes}, extra)
    engine = open_engine(folder, environ={})
    engine.index(keyword_only=True)
    return engine


def recorded(engine: Engine) -> dict[str, object] | None:
    path = engine.index_dir / CHECK_FILE
    return json.loads(path.read_text(encoding="utf-8")) if path.exists() else None


def test_status_reports_the_last_full_check_of_this_file_and_a_rebuild_forgets_it(
    tmp_path: Path,
) -> None:
    engine = indexed(tmp_path)
    try:
        assert engine.status()["check"] is None
        assert engine.check_due(3600) == 0  # never checked through: due now
        assert engine.check_due(0) == float("inf")  # 0: never
        checked = engine.full_check()
        assert checked is not None and checked.found is None
        status = engine.status()["check"]
        assert abs(status["at"] - checked.at) < 1
        assert status["found"] is None and status["seconds"] >= 0
        assert 3590 < engine.check_due(3600) <= 3600
        engine.rebuild(keyword_only=True)
        assert engine.status()["check"] is None  # a check of the index before the rebuild
        assert engine.check_due(3600) == 0
    finally:
        engine.close()


def test_a_stopped_check_records_nothing(tmp_path: Path) -> None:
    engine = indexed(tmp_path)
    try:
        stop = threading.Event()
        stop.set()
        assert engine.full_check(stop) is None
        assert recorded(engine) is None and engine.status()["check"] is None
    finally:
        engine.close()


def test_the_writer_checks_after_its_reconciliation_and_not_again_while_recent(
    tmp_path: Path,
) -> None:
    engine = indexed(tmp_path)
    config = engine.config
    engine.close()
    service = IndexService(config, watch=False)
    try:
        assert service.start() == "writer"
        wait_until(lambda: recorded(engine) is not None, timeout=30)
        first = recorded(engine)
        assert first is not None and first["found"] is None
        assert service.state()["last_reconcile"] is not None  # the check came after it
    finally:
        service.stop()
    # A writer that starts again leaves a file checked a moment ago alone.
    again = IndexService(config, watch=False)
    try:
        assert again.start() == "writer"
        wait_until(lambda: again.state()["last_reconcile"] is not None, timeout=30)
        time.sleep(3)  # more than the checker's poll
        assert recorded(engine) == first
        assert again.state()["checking"] is False
    finally:
        again.stop()


def test_a_check_interval_of_zero_runs_no_check(tmp_path: Path) -> None:
    engine = indexed(tmp_path, "[watch]\ncheck_interval = 0\n")
    config = engine.config
    engine.close()
    service = IndexService(config, watch=False)
    try:
        assert service.start() == "writer"
        wait_until(lambda: service.state()["last_reconcile"] is not None, timeout=30)
        time.sleep(3)
        assert recorded(engine) is None
        assert not any(t.name == "noteseek-check" for t in threading.enumerate())
    finally:
        service.stop()
