"""`noteseek serve` under hostile clients: many idle connections, slow clients, errors on a
keep-alive connection, malformed HTTP, and one Origin rule for the API, the page and /mcp.

Every server is the real command in a subprocess on 127.0.0.1 with a free port (``--port 0``),
stopped by its PID in a ``finally``. The errors tests use ``faulty_serve`` (the real command
with two deliberate bugs): a real 500 is a bug that gets fixed, so no test can rely on one.
"""

from __future__ import annotations

import http.client
import io
import json
import logging
import os
import resource
import shutil
import signal
import socket
import subprocess
import sys
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import httpx
import pytest

from tests.conftest import EXAMPLE_VAULT, REPO
from tests.test_serve import LISTENING, serve_env, vault_project

MCP_HEADERS = {"Accept": "application/json, text/event-stream"}
INITIALIZE = {
    "jsonrpc": "2.0",
    "id": 1,
    "method": "initialize",
    "params": {
        "protocolVersion": "2025-06-18",
        "capabilities": {},
        "clientInfo": {"name": "test", "version": "0"},
    },
}


class Server:
    """``noteseek serve --no-watch`` (or ``faulty_serve``) in a subprocess, logging to a file."""

    def __init__(
        self,
        folder: Path,
        *,
        module: str = "noteseek.interfaces.cli",
        open_files: int | None = None,
        **settings: str,
    ) -> None:
        env = serve_env(folder / "home", **settings)
        env["PYTHONPATH"] = os.pathsep.join(p for p in (str(REPO), env.get("PYTHONPATH")) if p)
        self.log_path = folder / f"serve-{time.monotonic_ns()}.log"
        self._log = self.log_path.open("w")

        def limit_open_files() -> None:
            # Soft and hard: the server cannot raise it back, so the test is deterministic.
            assert open_files is not None
            resource.setrlimit(resource.RLIMIT_NOFILE, (open_files, open_files))

        self.proc = subprocess.Popen(
            [sys.executable, "-m", module, "serve", "--port", "0", "--no-watch"],
            cwd=folder,
            env=env,
            stdout=self._log,
            stderr=subprocess.STDOUT,
            preexec_fn=limit_open_files if open_files else None,
        )
        self.url = ""
        self.port = 0

    @property
    def log(self) -> str:
        return self.log_path.read_text(encoding="utf-8", errors="replace")

    def log_size(self) -> int:
        return self.log_path.stat().st_size

    def start(self) -> None:
        deadline = time.monotonic() + 30
        while not (found := LISTENING.search(self.log)):
            if self.proc.poll() is not None or time.monotonic() > deadline:
                raise AssertionError(f"serve did not start ({self.proc.returncode}):\n{self.log}")
            time.sleep(0.05)
        self.url = found.group(1)
        self.port = int(self.url.rsplit(":", 1)[1])
        # Ready: the first reconciliation is done, so its log lines are written.
        deadline = time.monotonic() + 30
        with httpx.Client(base_url=self.url, timeout=10) as client:
            while client.get("/status").json().get("status") != "ready":
                assert time.monotonic() < deadline, self.log
                time.sleep(0.05)

    def stop(self) -> None:
        if self.proc.poll() is None:
            self.proc.send_signal(signal.SIGTERM)
            try:
                self.proc.wait(20)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait(10)
        self._log.close()


@contextmanager
def running(base: Path, **kwargs: object) -> Iterator[Server]:
    vault = base / "vault"
    shutil.copytree(EXAMPLE_VAULT, vault)
    server = Server(vault_project(base, vault), **kwargs)  # type: ignore[arg-type]
    try:
        server.start()
        yield server
    finally:
        server.stop()


@pytest.fixture(scope="module")
def faulty(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Server]:
    with running(tmp_path_factory.mktemp("faulty"), module="tests.reliability.faulty_serve") as s:
        yield s


# -- errors on a keep-alive connection ------------------------------------------------------------


def test_a_500_is_json_logged_once_and_keeps_the_connection(faulty: Server) -> None:
    before = faulty.log.count("RuntimeError: a deliberate bug\n")
    conn = http.client.HTTPConnection("127.0.0.1", faulty.port, timeout=10)
    try:
        conn.request("GET", "/_bug")
        failed = conn.getresponse()
        body = failed.read()
        assert failed.status == 500
        assert failed.getheader("content-type") == "application/json"
        message = json.loads(body)["error"]
        assert message == "internal error (RuntimeError); the server log has details"
        assert conn.sock is not None
        local = conn.sock.getsockname()
        conn.request("GET", "/health")
        after = conn.getresponse()
        assert (after.status, after.read()) == (200, b'{"status":"ok"}')
        assert conn.sock.getsockname() == local  # the same connection
    finally:
        conn.close()
    deadline = time.monotonic() + 5
    while faulty.log.count("RuntimeError: a deliberate bug\n") == before:
        assert time.monotonic() < deadline
        time.sleep(0.05)
    time.sleep(0.3)
    assert faulty.log.count("RuntimeError: a deliberate bug\n") == before + 1, faulty.log


def test_a_stream_that_fails_midway_is_cut_off_and_logged_once(faulty: Server) -> None:
    marker = "RuntimeError: a deliberate bug in a stream\n"
    before = faulty.log.count(marker)
    conn = http.client.HTTPConnection("127.0.0.1", faulty.port, timeout=10)
    try:
        conn.request("GET", "/_bug_stream")
        response = conn.getresponse()
        assert response.status == 200  # sent before the bug
        with pytest.raises(http.client.IncompleteRead):
            response.read()  # HTTP has no other way to say a body is cut off
    finally:
        conn.close()
    time.sleep(0.5)
    assert faulty.log.count(marker) == before + 1, faulty.log[-3000:]
    with httpx.Client(base_url=faulty.url, timeout=10) as client:
        assert client.get("/health").status_code == 200


# -- one Origin rule ------------------------------------------------------------------------------


def test_one_origin_rule_for_the_api_the_page_and_mcp(faulty: Server) -> None:
    with socket.socket() as other:  # a port of this machine that is not the server's
        other.bind(("127.0.0.1", 0))
        other_port = other.getsockname()[1]
    requests = [
        ("GET", "/status", None, {}),
        ("GET", "/", None, {}),
        ("POST", "/mcp", INITIALIZE, MCP_HEADERS),
    ]
    with httpx.Client(base_url=faulty.url, timeout=10) as client:
        for method, path, body, headers in requests:
            for origin in (f"http://127.0.0.1:{faulty.port}", f"http://localhost:{faulty.port}"):
                same = client.request(
                    method, path, json=body, headers={**headers, "Origin": origin}
                )
                assert same.status_code == 200, (path, origin, same.text)
            for origin in (
                f"http://localhost:{other_port}",
                f"http://127.0.0.1:{other_port}",
                "http://127.0.0.1",
                "https://evil.example",
                "null",
            ):
                refused = client.request(
                    method, path, json=body, headers={**headers, "Origin": origin}
                )
                assert refused.status_code == 403, (path, origin, refused.text)
                assert "serve.cors_origins" in refused.json()["error"]


# -- the log ---------------------------------------------------------------------------------------


def test_repeated_warnings_are_logged_at_a_bounded_rate() -> None:
    from noteseek.interfaces.cli.log_limit import LogLimit

    now = [0.0]
    out = io.StringIO()
    handler = logging.StreamHandler(out)
    handler.addFilter(LogLimit(interval=10, budget=5, clock=lambda: now[0]))
    logger = logging.getLogger("tests.reliability.log_limit")
    logger.propagate = False
    logger.setLevel(logging.INFO)
    logger.addHandler(handler)
    try:
        for _ in range(1000):
            logger.warning("socket.accept() out of system resource")
        logger.info("an info line always passes")
        for n in range(100):
            logger.warning("Invalid Host header: %s", f"host{n}.example")  # varies: one kind
        for n in range(100):
            logger.warning(f"a message that varies {n}")  # no template: the budget bounds it
        try:
            raise OSError(24, "Too many open files")
        except OSError:
            logger.exception("accept failed")
        assert out.getvalue().splitlines() == [
            "socket.accept() out of system resource",
            "an info line always passes",
            "Invalid Host header: host0.example",
            "a message that varies 0",
            "a message that varies 1",
            "a message that varies 2",
        ]
        now[0] = 10.0  # the next interval: each kind again, with what was held back
        logger.warning("socket.accept() out of system resource")
        assert out.getvalue().splitlines()[-1] == (
            "socket.accept() out of system resource (999 more like this in the last 10 s not "
            "logged; 98 other warnings not logged)"
        )
    finally:
        logger.removeHandler(handler)
