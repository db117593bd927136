"""``scripts/milvus-engine``, the one-machine trial of the team tier (docs/deploy-milvus.md):
started on a free loopback port over the engine ``./scripts/test`` prepared, it serves a
pymilvus client; ``stop`` ends it by the PID it wrote, and the port closes."""

from __future__ import annotations

import contextlib
import os
import signal
import socket
import subprocess
import time
from pathlib import Path

import pytest
from pymilvus import DataType

from tests import milvus_engine as engines

SCRIPT = engines.REPO / "scripts" / "milvus-engine"
PID_FILE = "milvus-engine.pid"


def script(*args: str) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "MILVUS_ENGINE_CACHE": str(engines.ENGINE_HOME)}
    return subprocess.run(
        [str(SCRIPT), *args], env=env, capture_output=True, text=True, timeout=120
    )


def alive(pid: int) -> bool:
    """Whether ``pid`` runs (a zombie, dead and not yet reaped by init, does not)."""
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except FileNotFoundError:
        return False
    return stat[stat.rindex(")") + 2] not in "ZX"


def port_open(port: int) -> bool:
    try:
        with socket.create_connection(("127.0.0.1", port), timeout=1):
            return True
    except OSError:
        return False


def test_start_serves_a_client_and_stop_ends_it_by_its_pid(tmp_path: Path) -> None:
    if not engines.BINARY.is_file():
        pytest.skip(engines.MISSING)
    assert os.access(SCRIPT, os.X_OK), "scripts/milvus-engine must be executable"
    port = engines.free_port()
    with engines.scratch(tmp_path / "engine") as data:
        pid: int | None = None
        try:
            started = script("start", "--port", str(port), "--data", str(data))
            assert started.returncode == 0, started.stdout + started.stderr
            uri = f"http://127.0.0.1:{port}"
            assert f'uri = "{uri}"' in started.stdout
            pid = int((data / PID_FILE).read_text())
            assert alive(pid) and port_open(port)
            status = script("status", "--data", str(data))
            assert status.returncode == 0 and f"pid {pid}" in status.stdout

            client = engines.direct_client(uri)
            try:
                schema = client.create_schema(auto_id=False)
                schema.add_field("id", DataType.INT64, is_primary=True)
                schema.add_field("vector", DataType.FLOAT_VECTOR, dim=4)
                schema.add_field("title", DataType.VARCHAR, max_length=64)
                index = client.prepare_index_params()
                index.add_index("vector", index_type="AUTOINDEX", metric_type="COSINE")
                client.create_collection("trial", schema=schema, index_params=index)
                row = {"id": 7, "vector": [0.1, 0.2, 0.3, 0.4], "title": "redis ttl"}
                assert client.insert("trial", [row])["insert_count"] == 1
                found: list[dict[str, object]] = []
                deadline = time.monotonic() + 10
                while not found and time.monotonic() < deadline:
                    found = client.query("trial", filter="id == 7", output_fields=["title"])
                    time.sleep(0 if found else 0.2)
                assert [(r["id"], r["title"]) for r in found] == [(7, "redis ttl")]
            finally:
                client.close()

            stopped = script("stop", "--data", str(data))
            assert stopped.returncode == 0, stopped.stdout + stopped.stderr
            assert not alive(pid), f"the engine (pid {pid}) still runs after stop"
            assert not port_open(port), f"port {port} still answers after stop"
            assert not (data / PID_FILE).exists()
            status = script("status", "--data", str(data))
            assert status.returncode == 3 and "not running" in status.stdout
        finally:
            with contextlib.suppress(subprocess.TimeoutExpired):
                script("stop", "--data", str(data))
            if pid is not None and alive(pid):  # never leave an engine behind
                os.kill(pid, signal.SIGKILL)
