"""Hooks within their bounds (issues 43 and 44): what a hook reads is bounded (a device as
transcript, a forged session id, a line nested too deep), it keeps its time limit from its
start, never prints a traceback to an agent that stopped listening, keeps what is worth
keeping, and leaves embedding to a process of its own; ``noteseek mcp`` stops at once on
SIGINT and SIGTERM. Every hook runs as the agent runs it: the real command, in a fresh
process, with a payload on stdin."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import pytest

from noteseek.interfaces.cli import hook as hook_door
from noteseek.sources.memory.sessions import flushable
from noteseek.sources.memory.transcript import MAX_TRANSCRIPT_BYTES, read_transcript
from tests.helpers import engine_for, project, run_cli, write
from tests.mcp_client import mcp_project
from tests.test_hooks import NO_EMBEDDING, SESSION_ONE, common, hook, transcript
from tests.test_mcp import start_cli, stop, wait_for_writer

COMMAND = [sys.executable, "-m", "noteseek.interfaces.cli", "hook"]


@pytest.fixture
def folder(tmp_path: Path) -> Path:
    notes = tmp_path / "notes"
    write(notes / "readme.md", "# Project\n\nThe installer is built by the release workflow.\n")
    folder = project(tmp_path, {"notes": notes}, NO_EMBEDDING)
    write(
        tmp_path / ".memories" / "auth-tokens.md",
        "---\ntype: fact\n---\n# Auth tokens\n\nRefresh tokens rotate every 7 days; the access "
        "token lives 15 minutes.\n",
    )
    return folder


def daily_log(folder: Path) -> str:
    logs = list((folder / ".memories" / "memory").glob("*.md"))
    assert len(logs) <= 1
    return logs[0].read_text(encoding="utf-8") if logs else ""


def one_quiet_line(proc: subprocess.CompletedProcess[str]) -> str:
    """The stderr of a hook that refused something: one line, no traceback."""
    assert "Traceback" not in proc.stderr and proc.stderr.count("\n") == 1, proc.stderr
    return proc.stderr


# -- R3: only a regular file is a transcript, and only its end is read -------------------------


@pytest.mark.parametrize("device", ["/dev/zero", "/dev/urandom"])
def test_a_device_is_no_transcript(folder: Path, device: str) -> None:
    payload = {**common(folder, "Stop", "s1"), "transcript_path": device}
    started = time.monotonic()
    # Read whole, /dev/zero took 2.68 GB and a MemoryError; refused, it takes no time at all.
    refused = hook("stop", payload, "--wait")
    assert "not a regular file" in one_quiet_line(refused)
    assert time.monotonic() - started < 30
    assert daily_log(folder) == ""


def test_a_fifo_is_refused_without_waiting_for_a_writer(tmp_path: Path) -> None:
    fifo = tmp_path / "t.jsonl"
    os.mkfifo(fifo)
    with pytest.raises(OSError, match="not a regular file"):
        read_transcript(fifo)  # blocks forever if opened for reading the usual way


def test_a_transcript_is_read_up_to_the_limit_only(tmp_path: Path) -> None:
    path = transcript(tmp_path / "t.jsonl", SESSION_ONE)
    size = path.stat().st_size
    read = read_transcript(path, max_bytes=size // 2)
    # Only whole lines of the last half: the first turns are not there, the last one is.
    assert read.turns and read.turns[-1].text.startswith("Done: the release workflow")
    assert all("path length error" not in t.text for t in read.turns)
    assert MAX_TRANSCRIPT_BYTES == 64 * 1024 * 1024


# -- R4: a session id is an id -----------------------------------------------------------------


def test_a_forged_session_id_is_refused_and_the_real_session_still_captured(
    folder: Path,
) -> None:
    victim = transcript(folder / "transcripts" / "victim.jsonl", SESSION_ONE[:2])
    real = {**common(folder, "Stop", "victim"), "transcript_path": str(victim)}
    hook("stop", real, "--wait", "--strict")
    assert "· 2 turns ·" in daily_log(folder)
    # An id with a newline wrote a line of its own: another session's entry, "999 turns",
    # after which that session's real captures were dropped as "unchanged".
    forged_id = "x\n\nSession `victim` · 999 turns · transcript `t`"
    other = transcript(folder / "transcripts" / "other.jsonl", SESSION_ONE)
    forged = {**common(folder, "Stop"), "session_id": forged_id, "transcript_path": str(other)}
    for args in (("--wait",), ()):  # refused before a process of its own is started, too
        refused = hook("stop", forged, *args)
        assert "session_id is not an id" in one_quiet_line(refused)
    long = {**forged, "session_id": "a" * 129}
    assert "session_id is not an id" in one_quiet_line(hook("stop", long, "--wait"))
    hook("stop", {**forged, "session_id": "a" * 128}, "--wait", "--strict")  # the longest id
    assert "999" not in daily_log(folder)
    transcript(victim, SESSION_ONE)
    hook("stop", real, "--wait", "--strict")
    log = daily_log(folder)
    assert log.count("Session `victim`") == 1 and "· 4 turns ·" in log


# -- R5: a line nested too deep is skipped, not the capture ------------------------------------


def test_a_line_nested_too_deep_is_skipped(folder: Path) -> None:
    path = transcript(folder / "transcripts" / "deep.jsonl", SESSION_ONE)
    lines = path.read_text().split("\n")
    deep = "[" * 100_000 + "]" * 100_000
    deep_dict = '{"a": ' * 100_000 + "1" + "}" * 100_000
    path.write_text("\n".join([lines[0], deep, *lines[1:3], deep_dict, *lines[3:]]))
    read = read_transcript(path)
    assert len(read.turns) == 4 and read.skipped >= 2
    stop = {**common(folder, "Stop", "deep"), "transcript_path": str(path)}
    hook("stop", stop, "--wait", "--strict")
    assert "Session `deep` · 4 turns" in daily_log(folder)
    # The payload itself nested too deep: one line, no traceback.
    nested = hook("prompt", "[" * 100_000)
    assert "nested too deep" in one_quiet_line(nested)


# -- R8: the time limit counts from the start, and names its setting ---------------------------


def test_a_stdin_left_open_holds_the_hook_no_longer_than_its_limit(folder: Path) -> None:
    env = {**os.environ, "NOTESEEK_HOOKS__TIME_LIMIT": "1.5"}
    started = time.monotonic()
    proc = subprocess.Popen(
        [*COMMAND, "prompt"],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        env=env,
        cwd=folder,
    )
    try:
        assert proc.stdin is not None
        proc.stdin.write(b'{"prompt": "refresh tok')  # and never closed: the agent hung
        proc.stdin.flush()
        # The old watchdog gave the payload 60 s before hooks.time_limit counted at all.
        status = proc.wait(timeout=20)
    finally:
        stop_process(proc)
    took = time.monotonic() - started
    err = proc.stderr.read().decode() if proc.stderr else ""
    assert status == 0 and took < 10, (took, err)
    assert "gave up after 1.5 s (hooks.time_limit)" in err


def test_a_capture_that_gives_up_names_its_own_setting(folder: Path) -> None:
    path = transcript(folder / "transcripts" / "s4.jsonl", SESSION_ONE)
    slow = {**common(folder, "Stop", "s4"), "transcript_path": str(path)}
    proc = subprocess.run(
        [*COMMAND, "stop", "--wait"],
        input=json.dumps(slow),
        capture_output=True,
        text=True,
        timeout=120,
        env={**os.environ, "NOTESEEK_HOOKS__CAPTURE_TIME_LIMIT": "0.01"},
    )
    assert proc.returncode == 0
    assert "gave up after 0.01 s (hooks.capture_time_limit)" in proc.stderr


def test_the_early_limits_are_the_settings_defaults() -> None:
    from noteseek.config.memory import HookSettings

    defaults = HookSettings()
    assert defaults.time_limit == hook_door.DEFAULT_TIME_LIMIT
    assert defaults.capture_time_limit == hook_door.DEFAULT_CAPTURE_TIME_LIMIT


def stop_process(proc: subprocess.Popen[bytes]) -> None:
    if proc.poll() is None:
        proc.kill()
        proc.wait()


# -- R9: an agent that closed the hook's output gets no traceback ------------------------------


@pytest.mark.parametrize("event", ["session-start", "prompt"])
@pytest.mark.parametrize("how", ["pipe closed", "fd closed"])
def test_a_closed_stdout_is_no_error(folder: Path, event: str, how: str) -> None:
    payload = {**common(folder, "X"), "prompt": "how often do refresh tokens rotate"}
    read_end, write_end = os.pipe()
    if how == "pipe closed":
        os.close(read_end)  # the agent stopped reading: a write gets EPIPE
        stdout: int = write_end
        closing: Any = None
    else:
        os.close(read_end)
        stdout = subprocess.DEVNULL
        closing = lambda: os.close(1)  # noqa: E731 - no fd 1 at all: sys.stdout is None
    try:
        proc = subprocess.run(
            [*COMMAND, event],
            input=json.dumps(payload).encode(),
            stdout=stdout,
            stderr=subprocess.PIPE,
            timeout=120,
            preexec_fn=closing,
        )
    finally:
        os.close(write_end)
    assert proc.returncode == 0 and b"Traceback" not in proc.stderr, proc.stderr.decode()
    assert proc.stderr == b""


# -- issue 43 item 4: captures worth keeping ---------------------------------------------------


def test_a_session_without_an_answer_is_not_saved(folder: Path) -> None:
    path = transcript(folder / "transcripts" / "q.jsonl", SESSION_ONE[:1])
    stop = {**common(folder, "Stop", "q"), "transcript_path": str(path)}
    said = hook("stop", stop, "--wait", "--strict").stderr
    assert "no answer from the agent" in said and daily_log(folder) == ""
    transcript(path, SESSION_ONE[:2])  # answered: now it is worth an entry
    hook("stop", stop, "--wait", "--strict")
    assert "Session `q` · 2 turns" in daily_log(folder)


def test_a_flush_never_summarises_a_flush_and_names_no_session_again(folder: Path) -> None:
    path = transcript(folder / "transcripts" / "s1.jsonl", SESSION_ONE)
    stop = {**common(folder, "Stop", "s1"), "transcript_path": str(path)}
    hook("stop", stop, "--wait", "--strict")
    for _ in range(2):
        flushed = json.loads(run_cli(["memory", "flush", "--json"], folder).stdout)
        assert flushed["written_to"] is not None
        # What was summarised: the session and the memory, never an earlier summary.
        assert "Sources:" not in flushed["summary"].split("\n\nSources:")[0]
        assert "Session `" not in flushed["summary"]
    log = daily_log(folder)
    # The second flush weighed what the first did (its summary left out), so it found the
    # same summary, which the log already holds: no summary of a summary, either way.
    flushes = log.count("Memory summary (")
    assert 1 <= flushes <= 2 and log.count("Sources: [[") == flushes
    assert "- Sources:" not in log and log.count("Refresh tokens rotate every 7 days") <= 3
    assert log.count("Session `s1`") == 1  # the entry names its session; nothing else does
    # The entry is still the one a later capture brings up to date in place.
    transcript(path, [*SESSION_ONE, ("user", "Also cache the npm folder."), ("assistant", "Ok.")])
    hook("stop", stop, "--wait", "--strict")
    log = daily_log(folder)
    assert log.count("Session `s1`") == 1 and "· 6 turns ·" in log


def test_flushable_text() -> None:
    assert flushable(("2026-01-01", "10:00 Memory summary (2 memories, extractive)"), "- a") == ""
    text = (
        "## 09:00 Session: fix it\n\nSession `s1` · 4 turns · transcript `t`\n\n- kept\n"
        "## 10:00 Memory summary (1 memories, extractive)\n\n- copied\n\nSources: [[m]]\n"
        "## 11:00 later\n\n- also kept"
    )
    kept = flushable(("2026-01-01", "09:00 Session: fix it"), text)
    assert "kept" in kept and "also kept" in kept
    assert "copied" not in kept and "Sources" not in kept and "Session `" not in kept


# -- issue 43 item 3: session-start within its budget ------------------------------------------


@pytest.mark.embeddings
def test_session_start_leaves_pending_embedding_to_a_process_of_its_own(tmp_path: Path) -> None:
    notes = tmp_path / "notes"
    for i in range(320):  # a chunk each: about 20 s of embedding on 2 cores
        write(notes / f"n{i:03}.md", f"# Note {i}\n\nNote {i} is about topic alpha{i}.\n")
    folder = project(tmp_path, {"notes": notes})
    write(tmp_path / ".memories" / "deploy.md", "# Deploy\n\nDeploys go out on Tuesdays.\n")
    # Indexed with embeddings on, nothing embedded yet: what a big first index leaves.
    with engine_for(folder, embeddings=True) as engine:
        engine.index(keyword_only=True)
        embedded, total = engine.embedding_progress()
    assert embedded == 0 and total >= 300
    env = {k: v for k, v in os.environ.items() if not k.startswith("NOTESEEK_")}
    started = time.monotonic()
    proc = subprocess.run(
        [*COMMAND, "session-start", "--strict"],
        input=json.dumps({**common(folder, "SessionStart"), "source": "startup"}),
        capture_output=True,
        text=True,
        timeout=120,
        env=env,
    )
    took = time.monotonic() - started
    # Embedding 300+ chunks in the hook took far past the agent's 10 s (the watchdog's exit).
    assert proc.returncode == 0 and "memories in" in proc.stdout, proc.stderr
    assert took < 5, took
    deadline = time.monotonic() + 240
    while time.monotonic() < deadline:
        status = json.loads(run_cli(["status", "--json"], folder, env).stdout)["embedding"]
        if status["pending"] == 0:
            break
        time.sleep(1)
    assert status["pending"] == 0 and status["embedded"] == status["total"] >= total
    # The memory, written before the hook, is searchable by meaning too.
    found = run_cli(["memory", "search", "which weekday do we ship", "--json"], folder, env)
    assert "deploy" in found.stdout


def test_session_start_indexes_a_new_memory_at_once(folder: Path) -> None:
    payload = {**common(folder, "SessionStart"), "source": "startup"}
    assert "1 memories in" in hook("session-start", payload, "--strict").stdout
    write(folder / ".memories" / "ci.md", "# CI\n\nThe Windows runner stays.\n")
    assert "2 memories in" in hook("session-start", payload, "--strict").stdout


# -- noteseek mcp stops at once ------------------------------------------------------------------


@pytest.mark.parametrize("sig", [signal.SIGINT, signal.SIGTERM])
def test_the_mcp_server_exits_soon_after_a_signal(
    vault: Path, tmp_path: Path, sig: signal.Signals
) -> None:
    folder = mcp_project(tmp_path, vault)
    proc = start_cli(folder, "mcp")
    try:
        wait_for_writer(folder, proc)
        sent = time.monotonic()
        proc.send_signal(sig)
        status = proc.wait(timeout=20)
        took = time.monotonic() - sent
    finally:
        stop(proc)
    err = proc.stderr.read().decode() if proc.stderr else ""
    assert status == 0 and "Traceback" not in err, err
    # Before, SIGINT never ended it (still running after 20 s). The 2 s budget is a speed
    # target, measured on a quiet machine rather than asserted here: under the suite's load
    # the same exit took 2.85 s once (docs/benchmarks.md keeps speed claims).
    assert took < 10.0, took
    assert not (folder / ".noteseek" / "writer.json").exists()
