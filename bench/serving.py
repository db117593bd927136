"""``noteseek serve`` for a benchmark: started on a free port, waited for, stopped by its PID.

The load and hook benches all time requests against a running server; this is how each of
them starts one, finds where it listens (the ``listening on`` line of its log), waits until
``/status`` says it is ready, and stops it afterwards (SIGTERM, then SIGKILL after a minute),
keeping the exit code for the report.
"""

from __future__ import annotations

import contextlib
import re
import signal
import subprocess
import sys
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import httpx
import psutil

CLI = [sys.executable, "-m", "noteseek.interfaces.cli"]


def wait_for(check: Callable[[], Any], timeout: float, step: float = 0.5) -> Any:
    """The first true value ``check`` returns, polling every ``step`` s for ``timeout`` s."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        value = check()
        if value:
            return value
        time.sleep(step)
    raise RuntimeError(f"not ready within {timeout} s")


def wait_idle(pid: int, timeout: float = 300.0) -> float:
    """Wait until the process's CPU use stays under 10% of a core for 3 s; returns the wait."""
    proc = psutil.Process(pid)
    started = time.monotonic()
    quiet = 0
    proc.cpu_percent(None)
    while time.monotonic() - started < timeout and quiet < 3:
        time.sleep(1.0)
        quiet = quiet + 1 if proc.cpu_percent(None) < 10 else 0
    return time.monotonic() - started


def is_ready(status: dict[str, Any]) -> bool:
    return bool(status.get("status") == "ready")


@dataclass
class Server:
    """A running ``noteseek serve``: where it listens, its status once ready, and (after the
    ``served`` block) how it exited."""

    process: subprocess.Popen[bytes]
    log: Path
    url: str = ""
    status: dict[str, Any] = field(default_factory=dict)
    code: int | None = None

    @property
    def pid(self) -> int:
        return self.process.pid

    def _listening(self) -> str:
        if self.process.poll() is not None:
            raise RuntimeError(f"noteseek serve exited at start:\n{self.log.read_text()[-3000:]}")
        found = re.search(r"listening on (http://\S+?) ", self.log.read_text())
        return found.group(1) if found else ""

    def _status(self, client: httpx.Client, ready: Callable[[dict[str, Any]], bool]) -> Any:
        try:
            status = client.get("/status").json()
        except httpx.HTTPError:
            return None
        return ready(status) and status

    def stop(self) -> int:
        """SIGTERM, then SIGKILL after a minute; the exit code."""
        if self.code is None:
            self.process.send_signal(signal.SIGTERM)
            try:
                self.code = self.process.wait(60)
            except subprocess.TimeoutExpired:
                self.process.kill()
                self.code = self.process.wait()
        return self.code


@contextlib.contextmanager
def served(
    folder: Path,
    env: dict[str, str],
    log: Path,
    *,
    ready: Callable[[dict[str, Any]], bool] = is_ready,
    timeout: float = 600.0,
) -> Iterator[Server]:
    """``noteseek serve --port 0`` in ``folder`` (its output in ``log``), ready per ``ready``
    within ``timeout`` s; stopped by its PID when the block ends."""
    with log.open("w") as out:
        process = subprocess.Popen(
            [*CLI, "serve", "--port", "0"],
            cwd=folder,
            env=env,
            stdout=out,
            stderr=subprocess.STDOUT,
        )
    server = Server(process, log)
    try:
        server.url = wait_for(server._listening, 60, 0.05)
        with httpx.Client(base_url=server.url, timeout=60) as client:
            server.status = wait_for(lambda: server._status(client, ready), timeout, 0.2)
        yield server
    finally:
        server.stop()
