"""Parser processes die with the process that runs them and never hold its pipes.

Killing ``noteseek index``, ``serve`` or ``mcp`` while its worker processes were parsing used
to leave the workers running forever, holding the caller's stdout and stderr, so a shell's
``$(noteseek index)`` hung; SIGTERM of ``index`` did the same. Each case starts a real
``noteseek`` process on a folder large enough for the worker pool, waits until its workers are
parsing, signals it, and checks that the output pipes close at once (as a shell capturing the
output would see) and that no process it started is left.
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import pytest

from tests.helpers import project, run_cli
from tests.test_serve import serve_env

if not sys.platform.startswith("linux"):  # pragma: no cover - the suite runs on Linux
    pytest.skip("walks /proc for the process tree", allow_module_level=True)

FILES = 3_000
WORDS = ("alpha", "beta", "gamma", "delta", "redis", "cache", "ttl", "expire", "key", "node")


@pytest.fixture(scope="module")
def vault(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """Enough notes for the worker pool (200 or more) to parse for several seconds."""
    folder = tmp_path_factory.mktemp("procs") / "vault"
    folder.mkdir()
    for i in range(FILES):
        sections = "\n\n".join(
            f"## Part {j}\n\n"
            + " ".join(WORDS[(i * 7 + j * 3 + k) % len(WORDS)] for k in range(90))
            for j in range(12)
        )
        (folder / f"note{i:05d}.md").write_text(f"# Note {i}\n\n{sections}\n", encoding="utf-8")
    return folder


def _env(home: Path) -> dict[str, str]:
    # Two workers even on a one-core machine, where the default would parse in-process.
    return serve_env(home, NOTESEEK_INDEX__WORKERS="2")


def _children() -> dict[int, list[int]]:
    children: dict[int, list[int]] = {}
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            stat = Path(f"/proc/{entry}/stat").read_text()
        except OSError:
            continue
        parent = int(stat.rsplit(")", 1)[1].split()[1])
        children.setdefault(parent, []).append(int(entry))
    return children


def _descendants(pid: int) -> set[int]:
    children = _children()
    found: set[int] = set()
    todo = [pid]
    while todo:
        for child in children.get(todo.pop(), []):
            found.add(child)
            todo.append(child)
    return found


def _alive(pid: int) -> bool:
    try:
        state = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
    except OSError:
        return False
    return state != "Z"


def _cmdline(pid: int) -> str:
    try:
        return Path(f"/proc/{pid}/cmdline").read_bytes().replace(b"\0", b" ").decode()
    except OSError:
        return ""


def _workers(pid: int) -> set[int]:
    """Descendants running multiprocessing's worker code (not its resource tracker, and not a
    fork server, which would be their parent)."""
    children = _children()
    return {
        p
        for p in _descendants(pid)
        if "multiprocessing" in (command := _cmdline(p))
        and "resource_tracker" not in command
        and not children.get(p)
    }


def _sigint_as_default() -> None:
    signal.signal(signal.SIGINT, signal.SIG_DFL)


def _wait_for_parsing(run: _Run, timeout: float = 60.0) -> tuple[set[int], set[int]]:
    """(all descendants, the workers) once two workers have taken up their first files."""
    deadline = time.monotonic() + timeout
    workers: set[int] = set()
    while len(workers) < 2:
        assert time.monotonic() < deadline, f"no two parser processes within {timeout} s"
        assert run.proc.poll() is None, f"noteseek exited {run.proc.returncode} before parsing"
        time.sleep(0.05)
        workers = _workers(run.proc.pid)
    # A worker lets go of the inherited stdio once it is set up, just before it parses; a
    # spawned worker on a loaded machine may take seconds to import and get there. Parsing
    # has begun once one has (one that keeps them for good fails the assertions after the
    # signal). Waiting for all of them let a quick run (3,000 files in 7 s) finish first.
    ready = time.monotonic() + 20
    while time.monotonic() < ready and all(_stdio(w) != {"/dev/null"} for w in workers):
        time.sleep(0.05)
    time.sleep(0.3)  # into their batches
    return run.descendants(), workers


def _stdio(pid: int) -> set[str]:
    targets = set()
    for fd in (0, 1, 2):
        try:
            targets.add(os.readlink(f"/proc/{pid}/fd/{fd}"))
        except OSError:
            targets.add("?")
    return targets


class _Run:
    """A ``noteseek`` process and every process seen under it (once killed, its orphans are
    no longer its descendants, so they are remembered)."""

    def __init__(self, proc: subprocess.Popen[bytes]) -> None:
        self.proc = proc
        self.seen: set[int] = set()

    def descendants(self) -> set[int]:
        found = _descendants(self.proc.pid)
        self.seen |= found
        return found


@contextmanager
def _started(args: list[str], cwd: Path, env: dict[str, str]) -> Iterator[_Run]:
    """``noteseek ARGS`` with stdin, stdout and stderr on pipes, as ``$(...)`` runs it; every
    process seen under it is killed afterwards (by pid) if the test left any."""
    run = _Run(
        subprocess.Popen(
            [sys.executable, "-m", "noteseek.interfaces.cli", *args],
            cwd=cwd,
            env=env,
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            # As from a terminal: Ctrl-C not ignored. A process started with SIGINT ignored
            # keeps ignoring it (Python installs no KeyboardInterrupt handler then), and a
            # test worker may have been left ignoring it by an earlier test in its process.
            preexec_fn=_sigint_as_default,
        )
    )
    try:
        yield run
    finally:
        run.descendants()
        for pid in [run.proc.pid, *run.seen]:
            if _alive(pid):
                os.kill(pid, signal.SIGKILL)
        run.proc.wait(10)


def _assert_all_gone(pids: set[int], timeout: float = 5.0) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        left = {p for p in pids if _alive(p)}
        if not left:
            return
        time.sleep(0.05)
    raise AssertionError(
        "left running: " + "; ".join(f"{p}: {_cmdline(p)[:100]}" for p in sorted(left))
    )


def _output_closes(run: _Run, timeout: float) -> tuple[bytes, bytes]:
    """stdout and stderr read to the end, as ``$(noteseek ...)`` does: every process holding
    them must have let go."""
    try:
        return run.proc.communicate(timeout=timeout)
    except subprocess.TimeoutExpired:
        raise AssertionError(f"the output pipes were still open {timeout} s later") from None


# ----------------------------------------------------------------------------------------------


def test_sigkill_of_index_while_parsing_leaves_no_process_and_closes_the_output(
    vault: Path, tmp_path: Path
) -> None:
    env = _env(tmp_path / "home")
    args = ["--index-dir", str(tmp_path / "index"), "index", str(vault), "--keyword-only"]
    with _started(args, tmp_path, env) as run:
        started, workers = _wait_for_parsing(run)
        # The workers do not hold the caller's pipes (nor its stdin) at all.
        assert all(_stdio(w) == {"/dev/null"} for w in workers), [_stdio(w) for w in workers]
        run.proc.kill()
        _output_closes(run, timeout=10)
        _assert_all_gone(started)


@pytest.mark.parametrize("sig", [signal.SIGTERM, signal.SIGINT], ids=["SIGTERM", "SIGINT"])
def test_sigterm_or_sigint_of_index_stops_it_promptly_and_the_next_run_finishes(
    vault: Path, tmp_path: Path, sig: signal.Signals
) -> None:
    env = _env(tmp_path / "home")
    index = tmp_path / "index"
    args = ["--index-dir", str(index), "index", str(vault), "--keyword-only"]
    with _started(args, tmp_path, env) as run:
        started, _ = _wait_for_parsing(run)
        signalled = time.monotonic()
        run.proc.send_signal(sig)
        _, err = _output_closes(run, timeout=15)
        took = time.monotonic() - signalled
        assert run.proc.returncode == 130, err.decode()
        assert "interrupted: the index is consistent" in err.decode()
        assert "Traceback" not in err.decode(), err.decode()
        assert took < 10, f"stopping took {took:.1f} s"
        _assert_all_gone(started)
    # The index is consistent: the next run indexes what is left, and then has every note.
    done = run_cli(
        ["--index-dir", str(index), "index", str(vault), "--keyword-only"], tmp_path, env
    )
    assert f"{FILES} files in" in done.stdout and "0 skipped" in done.stdout, done.stdout
    again = run_cli(
        ["--index-dir", str(index), "index", str(vault), "--keyword-only"], tmp_path, env
    )
    assert f"{FILES} unchanged" in again.stdout, again.stdout


@pytest.mark.parametrize("door", ["serve", "mcp"])
def test_sigkill_of_a_server_while_parsing_leaves_no_process(
    vault: Path, tmp_path: Path, door: str
) -> None:
    folder = project(tmp_path, {"notes": vault})
    args = ["serve", "--port", "0"] if door == "serve" else ["mcp"]
    with _started(args, folder, _env(tmp_path / "home")) as run:
        # The server reconciles its roots at start, parsing in worker processes.
        started, _ = _wait_for_parsing(run)
        run.proc.kill()
        _output_closes(run, timeout=10)
        _assert_all_gone(started)
