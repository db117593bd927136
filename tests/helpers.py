"""Small helpers for building engines over temporary folders."""

from __future__ import annotations

import importlib.util
import os
import socket
import subprocess
import sys
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from types import ModuleType
from typing import Any

from noteseek.engine import Engine, open_engine


def project(tmp: Path, roots: dict[str, Path], extra: str = "") -> Path:
    """Write a .noteseek.toml with the given roots; return its folder."""
    lines = []
    for name, path in roots.items():
        lines.append(f'[roots.{name}]\npath = "{path.as_posix()}"\n')
    (tmp / ".noteseek.toml").write_text("".join(lines) + extra, encoding="utf-8")
    return tmp


def engine_for(folder: Path, *, embeddings: bool = False, **flags: Any) -> Engine:
    """An engine for ``folder``'s project file; embeddings off unless asked for."""
    flags.setdefault("embedding.enabled", embeddings)
    # Rankings in tests must not depend on today's date (tests of recency set it themselves).
    flags.setdefault("search.recency", "off")
    return open_engine(folder, flags=flags, environ={})


def write(path: Path, text: str, mtime: float | None = None) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text, encoding="utf-8")
    if mtime is not None:
        os.utime(path, (mtime, mtime))
    return path


def indexed_notes(tmp: Path, notes: dict[str, str]) -> Path:
    """A project over one root ``n`` of ``notes`` (file name to text), indexed; its folder."""
    for name, text in notes.items():
        write(tmp / "notes" / name, text)
    folder = project(tmp, {"n": tmp / "notes"})
    with engine_for(folder) as engine:
        engine.index()
    return folder


@contextmanager
def refused_port() -> Iterator[int]:
    """A loopback port that refuses connections for as long as the block lasts: bound by this
    process and never listened on, so no server started meanwhile (a test's Milvus engine on a
    free port) can take it."""
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        yield int(s.getsockname()[1])


def paths(hits: list[Any]) -> list[str]:
    return [h.path for h in hits]


def run_cli(
    args: list[str], cwd: Path, env: dict[str, str] | None = None, code: int = 0
) -> subprocess.CompletedProcess[str]:
    """Run ``noteseek ARGS`` in a subprocess and check its exit code."""
    full_env = {**os.environ, **(env or {})}
    proc = subprocess.run(
        [sys.executable, "-m", "noteseek.interfaces.cli", *args],
        cwd=cwd,
        env=full_env,
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert proc.returncode == code, (
        f"exit {proc.returncode}\nstdout:\n{proc.stdout}\nstderr:\n{proc.stderr}"
    )
    return proc


@contextmanager
def writer_elsewhere(index: Path, command: str | None = None) -> Iterator[subprocess.Popen[str]]:
    """Another process holding the writer role of ``index`` (as ``command``) until killed."""
    proc = subprocess.Popen(
        [
            sys.executable,
            "-c",
            "import time\n"
            "from pathlib import Path\n"
            "from noteseek.indexing.lock import WriterLock\n"
            f"lock = WriterLock(Path({str(index)!r}))\n"
            f"assert lock.try_acquire({command!r})\n"
            "print('held', flush=True)\n"
            "time.sleep(60)\n",
        ],
        stdout=subprocess.PIPE,
        text=True,
    )
    try:
        assert proc.stdout is not None and proc.stdout.readline().strip() == "held"
        yield proc
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()


def bench_script(name: str) -> ModuleType:
    """The script ``bench/<name>.py`` loaded as a module (bench/ is not a package)."""
    path = Path(__file__).resolve().parent.parent / "bench" / f"{name}.py"
    spec = importlib.util.spec_from_file_location(name, path)
    assert spec and spec.loader
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module
