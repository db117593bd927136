"""Processes for ``bench/soak.py``: start noteseek commands, find every descendant again, stop
them by PID.

Every command the soak starts gets two environment variables: ``SOAK_RUN`` (one value per soak
run) and ``SOAK_TAG`` (one per started command). Children inherit their parent's environment
at exec, including the parser processes a fork server starts, so a process that outlives its
parent is still found by its tag, even after it has been re-parented to init or has left the
process group. A command is also started in a session of its own (``start_new_session``), and
its process group is searched as well. Stopping is always by PID, and only of processes that
carry this run's mark: nothing the soak did not start is ever signalled.
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import threading
import time
import uuid
from dataclasses import dataclass, field
from pathlib import Path

import psutil

CLI = [sys.executable, "-m", "noteseek.interfaces.cli"]
TRACEBACK = "Traceback (most recent call last)"


@dataclass
class Leftover:
    """A process of a command that was still alive when it should have been gone."""

    pid: int
    rss: int
    cmdline: str


@dataclass
class Started:
    """A command started in the background (a writer to kill, or ``serve``)."""

    kind: str
    tag: str
    proc: subprocess.Popen[bytes]
    stderr_path: Path
    started: float
    # Set when the command's stdout pipe reaches end of file: only once every process that
    # holds its write end (the command and anything it started) is gone. A caller reading
    # ``$(noteseek index)`` waits for exactly this.
    stdout_closed: threading.Event = field(default_factory=threading.Event)

    def stderr(self) -> str:
        return self.stderr_path.read_text(encoding="utf-8", errors="replace")


@dataclass
class Finished:
    """A command run to its end."""

    args: list[str]
    code: int
    stdout: str
    stderr: str
    seconds: float
    leftovers: list[Leftover]
    peak_rss: int  # the most its processes held at once (sampled four times a second)

    @property
    def traceback(self) -> bool:
        return TRACEBACK in self.stdout or TRACEBACK in self.stderr


class Procs:
    """Starts noteseek commands for one soak run and keeps track of all of them."""

    def __init__(self, env: dict[str, str], logs: Path) -> None:
        self.run_id = uuid.uuid4().hex[:12]
        self.env = {**env, "SOAK_RUN": self.run_id}
        self.logs = logs
        self.logs.mkdir(parents=True, exist_ok=True)
        self._count = 0
        self.started: list[Started] = []

    def new_tag(self, kind: str) -> str:
        """A tag for one command (``kind`` is its last part)."""
        self._count += 1
        return f"{self.run_id}-{self._count}-{kind}"

    def env_for(self, tag: str, extra: dict[str, str] | None = None) -> dict[str, str]:
        return {**self.env, "SOAK_TAG": tag, **(extra or {})}

    def start(
        self,
        kind: str,
        args: list[str],
        cwd: Path,
        *,
        stdin: bool = False,
        extra_env: dict[str, str] | None = None,
    ) -> Started:
        """Start ``noteseek ARGS`` in its own session; stdout is drained by a thread."""
        tag = self.new_tag(kind)
        stderr_path = self.logs / f"{tag}.err"
        with stderr_path.open("wb") as err:
            proc = subprocess.Popen(
                [*CLI, *args],
                cwd=cwd,
                env=self.env_for(tag, extra_env),
                stdin=subprocess.PIPE if stdin else subprocess.DEVNULL,
                stdout=subprocess.PIPE,
                stderr=err,
                start_new_session=True,
            )
        started = Started(kind, tag, proc, stderr_path, time.monotonic())
        threading.Thread(target=_drain, args=(started,), daemon=True).start()
        self.started.append(started)
        return started

    def run(
        self,
        args: list[str],
        cwd: Path,
        *,
        timeout: float = 600.0,
        extra_env: dict[str, str] | None = None,
        grace: float = 5.0,
        program: list[str] = CLI,
    ) -> Finished:
        """Run ``noteseek ARGS`` (``program ARGS``) to its end; anything of it still alive
        ``grace`` seconds after it exits is a leftover (and is stopped)."""
        tag = self.new_tag(args[0] if program is CLI else "program")
        out_path, err_path = self.logs / f"{tag}.out", self.logs / f"{tag}.err"
        began = time.monotonic()
        # Output goes to files, not pipes: a leftover process that holds a pipe would make a
        # reader wait for its end forever (what ``$(noteseek index)`` does).
        with out_path.open("wb") as out, err_path.open("wb") as err:
            proc = subprocess.Popen(
                [*program, *args],
                cwd=cwd,
                env=self.env_for(tag, extra_env),
                stdin=subprocess.DEVNULL,
                stdout=out,
                stderr=err,
                start_new_session=True,
            )
            peak = 0
            while (code := proc.poll()) is None and time.monotonic() - began < timeout:
                peak = max(peak, tree_rss(proc.pid))
                time.sleep(0.25)
            if code is None:
                proc.kill()
                proc.wait()
                code = -1
        stdout = out_path.read_text(encoding="utf-8", errors="replace")
        stderr = err_path.read_text(encoding="utf-8", errors="replace")
        if code == -1:
            stderr += f"\n[soak] timed out after {timeout:.0f} s"
        seconds = time.monotonic() - began
        leftovers = self.wait_gone(tag, grace)
        return Finished(args, code, stdout, stderr, seconds, leftovers, peak)

    def marked(self, tag: str | None = None, group: int | None = None) -> list[psutil.Process]:
        """This run's live processes (of one command when ``tag`` is given, together with the
        members of process group ``group``)."""
        found = []
        for proc in psutil.process_iter():
            try:
                if proc.pid == os.getpid() or proc.status() == psutil.STATUS_ZOMBIE:
                    continue
                in_group = group is not None and os.getpgid(proc.pid) == group
                mark = proc.environ()
            except (psutil.Error, OSError):
                continue
            if mark.get("SOAK_RUN") != self.run_id and not in_group:
                continue
            if tag is None or mark.get("SOAK_TAG") == tag or in_group:
                found.append(proc)
        return found

    def wait_gone(self, tag: str | None, grace: float, group: int | None = None) -> list[Leftover]:
        """Wait up to ``grace`` seconds for a command's processes (every process of the run
        when ``tag`` is None) to exit by themselves; the ones still alive then are returned
        and killed."""
        deadline = time.monotonic() + grace
        while True:
            alive = self.marked(tag, group)
            if not alive or time.monotonic() >= deadline:
                break
            time.sleep(0.1)
        leftovers = []
        for proc in alive:
            try:
                leftovers.append(
                    Leftover(proc.pid, proc.memory_info().rss, " ".join(proc.cmdline())[:200])
                )
            except psutil.Error:
                continue
        kill_all(alive)
        return leftovers

    def cleanup(self) -> int:
        """Stop every process this run started that is still alive (by PID); how many."""
        for started in self.started:
            if started.proc.poll() is None:
                started.proc.kill()
                started.proc.wait()
        alive = self.marked()
        kill_all(alive)
        return len(alive)


def log(message: str) -> None:
    """A progress line on stderr (the summary goes to stdout)."""
    print(f"[soak {time.strftime('%H:%M:%S')}] {message}", file=sys.stderr, flush=True)


def base_env(work: Path) -> dict[str, str]:
    """The environment of every command: no NOTESEEK_ settings and no user configuration
    from outside the work folder."""
    env = {k: v for k, v in os.environ.items() if not k.startswith("NOTESEEK_")}
    env.update(XDG_CONFIG_HOME=str(work / "xdg-config"), XDG_DATA_HOME=str(work / "xdg-data"))
    return env


def problem_of(finished: Finished) -> str | None:
    """Why a command that should have succeeded did not (None when it did)."""
    if finished.traceback:
        return f"{finished.args[0]}: traceback"
    if finished.code != 0:
        last = (finished.stderr.strip().splitlines() or [""])[-1][:200]
        return f"{finished.args[0]}: exit {finished.code}: {last}"
    if finished.leftovers:
        return f"{finished.args[0]}: {len(finished.leftovers)} processes left after it exited"
    return None


def kill_all(procs: list[psutil.Process]) -> None:
    for proc in procs:
        try:
            proc.send_signal(signal.SIGKILL)
        except psutil.Error:
            continue
    psutil.wait_procs(procs, timeout=5)


def stop(started: Started, timeout: float = 30.0) -> int:
    """Stop a background command the polite way (SIGTERM, or end of input for ``mcp``), then
    by SIGKILL after ``timeout``; its exit code."""
    if started.proc.stdin is not None:
        started.proc.stdin.close()
    else:
        started.proc.send_signal(signal.SIGTERM)
    try:
        return started.proc.wait(timeout)
    except subprocess.TimeoutExpired:
        started.proc.kill()
        return started.proc.wait()


def tree_rss(pid: int) -> int:
    """The resident memory of a process and all its descendants together (0 once gone)."""
    try:
        root = psutil.Process(pid)
        tree = [root, *root.children(recursive=True)]
    except psutil.Error:
        return 0
    total = 0
    for proc in tree:
        try:
            total += proc.memory_info().rss
        except psutil.Error:
            continue
    return total


def rss_by_process(procs: Procs) -> dict[int, tuple[str, int]]:
    """Resident memory of every live process of the run: pid -> (command kind, bytes)."""
    out = {}
    for proc in procs.marked():
        try:
            kind = proc.environ().get("SOAK_TAG", "").rsplit("-", 1)[-1]
            out[proc.pid] = (kind, proc.memory_info().rss)
        except psutil.Error:
            continue
    return out


def _drain(started: Started) -> None:
    assert started.proc.stdout is not None
    while started.proc.stdout.read(65536):
        pass
    started.proc.stdout.close()
    started.stdout_closed.set()
