"""One-shot commands that write (index, rebuild) take the writer role for their duration, or are
refused with the live writer's pid and what to do instead."""

from __future__ import annotations

import os
import sys
import time
from pathlib import Path

import pytest

from noteseek.engine import open_engine
from noteseek.engine.live import IndexService
from noteseek.engine.writer import NotWriter, WriterBusy, writer_role
from noteseek.indexing.lock import INFO_FILE, WriterLock, read_writer_info
from tests.helpers import project, write, writer_elsewhere


def test_a_one_shot_command_is_refused_while_serve_holds_the_role(tmp_path: Path) -> None:
    index = tmp_path / "index"
    with writer_elsewhere(index, "serve") as proc:
        with pytest.raises(WriterBusy) as refused, writer_role(index, "index"):
            pytest.fail("the role is held by another process")
        assert refused.value.pid == proc.pid and refused.value.command == "serve"
        assert isinstance(refused.value, NotWriter)
        assert str(refused.value) == (
            f"noteseek serve (pid {proc.pid}) is the writer of this index and keeps it fresh; "
            "ask it to re-index (MCP tool reindex, POST /reindex) or stop it first"
        )
        assert read_writer_info(index)["pid"] == proc.pid  # the refusal changed nothing
        proc.kill()  # the holder dies without cleaning up: the kernel frees the lock
        proc.wait()
        with writer_role(index, "rebuild"):
            info = read_writer_info(index)
            assert info is not None
            assert info["pid"] == os.getpid() and info["command"] == "rebuild"
        assert not (index / INFO_FILE).exists()  # released on exit
        assert WriterLock(index).try_acquire()


def test_the_message_fits_the_holder(tmp_path: Path) -> None:
    index = tmp_path / "index"
    for command, says in (
        ("mcp", "ask it to re-index (MCP tool reindex) or stop it first"),
        ("watch", "indexing every change; stop it first"),
        ("index", "is writing this index; wait for it to finish"),
        (None, "another process (pid"),
    ):
        with (
            writer_elsewhere(index, command) as proc,
            pytest.raises(WriterBusy) as refused,
            writer_role(index, "rebuild"),
        ):
            pytest.fail("the role is held by another process")
        assert refused.value.pid == proc.pid and refused.value.command == command
        assert says in str(refused.value), str(refused.value)


def test_the_role_is_released_when_the_command_fails(tmp_path: Path) -> None:
    index = tmp_path / "index"
    with pytest.raises(KeyboardInterrupt), writer_role(index, "index"):
        raise KeyboardInterrupt
    lock = WriterLock(index)
    assert lock.try_acquire()
    lock.release()


def test_a_live_service_takes_the_role_after_a_one_shot_command(tmp_path: Path) -> None:
    notes = tmp_path / "notes"
    write(notes / "a.md", "# A\n\nalpha\n")
    folder = project(tmp_path, {"notes": notes}, "[watch]\ntakeover_interval = 0.1\n")
    config = open_engine(folder, environ={}).config
    service = IndexService(config, watch=False, command="watch")
    try:
        with writer_role(config.index_dir, "index"):
            assert service.start() == "reader"  # the one-shot command is the writer
            time.sleep(0.3)
            assert service.role == "reader"
        deadline = time.monotonic() + 10
        while service.role != "writer":
            assert time.monotonic() < deadline, "the service did not take over"
            time.sleep(0.05)
        info = read_writer_info(config.index_dir)
        assert info is not None
        assert info["pid"] == os.getpid() and info["command"] == "watch"
        with pytest.raises(WriterBusy) as refused, writer_role(config.index_dir, "rebuild"):
            pytest.fail("the live service holds the role")
        assert refused.value.command == "watch"
    finally:
        service.stop()


def test_a_live_service_records_its_command(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Told or not (then read from the process's arguments), writer.json says who writes."""
    notes = tmp_path / "notes"
    write(notes / "a.md", "# A\n\nalpha\n")
    config = open_engine(project(tmp_path, {"notes": notes}), environ={}).config
    monkeypatch.setattr(sys, "argv", ["noteseek", "--config", "x.toml", "mcp"])
    for service, command in (
        (IndexService(config, watch=False), "mcp"),
        (IndexService(config, watch=False, command="serve"), "serve"),
    ):
        try:
            assert service.start() == "writer"
            info = read_writer_info(config.index_dir)
            assert info is not None and info["command"] == command
        finally:
            service.stop()
