"""``noteseek`` started again in a process of its own, for work that outlives the command that
asked for it (a hook's session capture, ``index --background``'s embedding). Standard library
only: the hook imports it before anything else."""

from __future__ import annotations

import contextlib
import subprocess
import sys
from pathlib import Path
from typing import IO, Any


def start_detached(
    args: list[str],
    *,
    stdout: IO[bytes] | int,
    stderr: IO[bytes] | int,
    payload: bytes = b"",
    cwd: Path | None = None,
) -> int:
    """Run ``noteseek ARGS`` in a session of its own (neither this process's exit nor a Ctrl-C
    in its terminal stops it), ``payload`` on its stdin, in ``cwd`` (default: this process's
    folder, where it finds its project file); return its pid at once."""
    child: subprocess.Popen[Any] = subprocess.Popen(
        [sys.executable, "-m", "noteseek.interfaces.cli", *args],
        stdin=subprocess.PIPE if payload else subprocess.DEVNULL,
        stdout=stdout,
        stderr=stderr,
        start_new_session=True,
        cwd=cwd,
    )
    if child.stdin is not None:
        with contextlib.suppress(BrokenPipeError):
            child.stdin.write(payload)
        child.stdin.close()
    return child.pid
