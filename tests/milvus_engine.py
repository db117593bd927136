"""Milvus's C++ engine as a server on a loopback port, for the tests that run "over the network".

milvus-lite 2.5.1 ships Milvus's C++ engine as one binary (``milvus_lite/lib/milvus``) that
serves gRPC on a TCP address like a Milvus Server. It cannot share an environment with
milvus-lite 3 (the project's Milvus Lite), so ``./scripts/test`` unpacks its wheel into
:data:`ENGINE_HOME` (``.cache/milvus-engine``, kept between runs); nothing is downloaded here.
``NOTESEEK_TEST_MILVUS_ENGINE`` names another folder holding ``milvus_lite/lib/milvus``.

:class:`Engine` starts the binary on a free port, waits until it answers, and stops it by its
process id (never by name): SIGTERM, then SIGKILL. :meth:`Engine.kill` and
:meth:`Engine.start` again on the same port and data folder are the fault tests' crash and
restart.
"""

from __future__ import annotations

import contextlib
import os
import secrets
import shutil
import signal
import socket
import subprocess
import tempfile
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parent.parent
ENGINE_HOME = Path(
    os.environ.get("NOTESEEK_TEST_MILVUS_ENGINE") or REPO / ".cache" / "milvus-engine"
)
BINARY = ENGINE_HOME / "milvus_lite" / "lib" / "milvus"
MISSING = (
    f"Milvus's C++ engine is absent ({BINARY}): ./scripts/test prepares it from milvus-lite "
    "2.5.1's wheel (or set NOTESEEK_TEST_MILVUS_ENGINE to a folder holding milvus_lite/lib)"
)
START_WAIT = 30.0
NO_PINGS = {"grpc.keepalive_time_ms": 2**31 - 1}


def available() -> bool:
    return BINARY.is_file() and os.access(BINARY, os.X_OK)


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


class Engine:
    """One engine process serving the data folder ``folder`` on ``127.0.0.1:port``."""

    def __init__(self, folder: Path, port: int | None = None) -> None:
        self.folder = folder
        self.port = port or free_port()
        self.process: subprocess.Popen[bytes] | None = None
        folder.mkdir(parents=True, exist_ok=True)

    @property
    def uri(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    @property
    def pid(self) -> int | None:
        return None if self.process is None else self.process.pid

    def start(self) -> Engine:
        """Start the engine (again, after :meth:`kill`) and wait until it takes connections."""
        if not available():
            raise RuntimeError(MISSING)
        lib = BINARY.parent
        env = {**os.environ, "LD_LIBRARY_PATH": f"{lib}:{os.environ.get('LD_LIBRARY_PATH', '')}"}
        log = (self.folder / "engine.log").open("ab")
        self.process = subprocess.Popen(
            [str(BINARY), str(self.folder / "milvus.db"), f"127.0.0.1:{self.port}", "ERROR"],
            cwd=self.folder,
            env=env,
            stdin=subprocess.DEVNULL,
            stdout=log,
            stderr=subprocess.STDOUT,
            start_new_session=True,  # a Ctrl-C in the terminal reaches pytest, not the engine
        )
        log.close()
        deadline = time.monotonic() + START_WAIT
        while time.monotonic() < deadline:
            if self.process.poll() is not None:
                raise RuntimeError(
                    f"Milvus's engine exited with {self.process.returncode} at start: "
                    + (self.folder / "engine.log").read_text(errors="replace")[-2000:]
                )
            with (
                contextlib.suppress(OSError),
                socket.create_connection(("127.0.0.1", self.port), timeout=0.5),
            ):
                return self
            time.sleep(0.05)
        self.stop()
        raise RuntimeError(f"Milvus's engine did not listen on port {self.port} in {START_WAIT} s")

    def kill(self) -> None:
        """Kill the engine at once (SIGKILL), as a crash."""
        self._signal(signal.SIGKILL)

    def stop(self) -> None:
        """Stop the engine: SIGTERM, then SIGKILL after five seconds."""
        self._signal(signal.SIGTERM)

    def _signal(self, sig: int) -> None:
        process, self.process = self.process, None
        if process is None or process.poll() is not None:
            return
        with contextlib.suppress(ProcessLookupError):
            os.kill(process.pid, sig)
        try:
            process.wait(timeout=5)
        except subprocess.TimeoutExpired:
            with contextlib.suppress(ProcessLookupError):
                os.kill(process.pid, signal.SIGKILL)
            process.wait(timeout=5)

    def drop(self, prefix: str) -> None:
        """Drop every collection named ``prefix_*`` (a test's index, when it is done)."""
        client = direct_client(self.uri)
        try:
            for name in client.list_collections():
                if name.startswith(prefix + "_"):
                    client.drop_collection(name)
        finally:
            client.close()


def direct_client(uri: str, timeout: float = 10) -> Any:
    """A pymilvus client of the test's own to ``uri``.

    The engine answers a client's keepalive pings with "too many pings" and drops the
    connection (gRPC's default server policy), so this one sends none; and it dials a
    connection of its own, since pymilvus shares one per address whatever the options, and
    re-dials an idle shared one after a GetVersion probe this engine does not answer."""
    from pymilvus import MilvusClient

    return MilvusClient(uri=uri, timeout=timeout, grpc_options=NO_PINGS, dedicated=True)


@contextlib.contextmanager
def scratch(fallback: Path) -> Iterator[Path]:
    """A data folder for an engine: in memory (``/dev/shm``) where there is one, since the
    engine syncs every write to disk (33 ms an upsert on this disk, 2 ms in memory) and a
    test's data need not survive the machine; else ``fallback``. Removed afterwards."""
    shm = Path("/dev/shm")
    if shm.is_dir() and os.access(shm, os.W_OK):
        folder = Path(tempfile.mkdtemp(prefix="noteseek-engine-", dir=shm))
    else:
        folder = fallback
        folder.mkdir(parents=True, exist_ok=True)
    try:
        yield folder
    finally:
        shutil.rmtree(folder, ignore_errors=True)


def unique_prefix(base: str = "t") -> str:
    """A collection prefix no other test on the shared engine uses."""
    return f"{base}_{secrets.token_hex(4)}"


@contextlib.contextmanager
def running(fallback: Path, port: int | None = None) -> Iterator[Engine]:
    """An engine of its own for the block (the fault tests kill theirs), on a scratch folder."""
    with scratch(fallback) as folder:
        engine = Engine(folder, port).start()
        try:
            yield engine
        finally:
            engine.stop()
