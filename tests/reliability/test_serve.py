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
import select
import shutil
import signal
import socket
import subprocess
import sys
import time
from collections.abc import Iterator
from contextlib import contextmanager, suppress
from pathlib import Path

import httpx
import pytest

from tests.conftest import EXAMPLE_VAULT, REPO
from tests.test_http_mcp import INITIALIZE
from tests.test_serve import LISTENING, serve_env, vault_project

MCP_HEADERS = {"Accept": "application/json, text/event-stream"}


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


def connect(server: Server) -> socket.socket:
    return socket.create_connection(("127.0.0.1", server.port), timeout=10)


def read_until_closed(sock: socket.socket, timeout: float = 10) -> bytes:
    """Everything the server sends until it closes the connection."""
    sock.settimeout(timeout)
    data = b""
    while chunk := sock.recv(65536):
        data += chunk
    return data


def json_error(raw: bytes, status: int) -> str:
    head, _, body = raw.partition(b"\r\n\r\n")
    assert head.startswith(f"HTTP/1.1 {status} ".encode()), raw[:300]
    assert b"content-type: application/json" in head.lower(), head
    message = json.loads(body)["error"]
    assert isinstance(message, str) and "Traceback" not in message
    return message


# -- many idle connections ------------------------------------------------------------------------


def test_a_thousand_idle_connections_neither_stall_the_server_nor_flood_its_log(
    tmp_path: Path,
) -> None:
    # The numbers: ~1,100 idle sockets at the usual limit of 1,024 open files. This
    # process needs a descriptor per socket too.
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    server_limit = min(1024, (hard - 200) // 2)
    count = server_limit + 76
    if soft < count + 200:
        resource.setrlimit(resource.RLIMIT_NOFILE, (count + 200, hard))
    held: list[socket.socket] = []
    try:
        with running(tmp_path, open_files=server_limit) as server:
            before = server.log_size()
            for _ in range(count):
                sock = socket.socket()
                sock.setblocking(False)
                sock.connect_ex(("127.0.0.1", server.port))
                held.append(sock)
            time.sleep(0.5)
            started = time.monotonic()
            with httpx.Client(base_url=server.url, timeout=10) as client:
                assert client.get("/health").json() == {"status": "ok"}
                found = client.post("/query_documents", json={"query": "redis ttl"})
                assert found.status_code == 200
                assert found.json()["results"][0]["path"] == "notes/redis.md"
            assert time.monotonic() - started < 5
            # Connections the kernel could not queue at once come back within seconds (SYN
            # retries) and fill the pool: the server says so, once.
            deadline = time.monotonic() + 10
            while "serve.max_connections" not in server.log:
                assert time.monotonic() < deadline, server.log[-3000:]
                time.sleep(0.1)
            time.sleep(1.5)  # a flooded log would grow by megabytes meanwhile
            grown = server.log_size() - before
            assert grown < 20_000, server.log[-3000:]
            assert "Too many open files" not in server.log
            with httpx.Client(base_url=server.url, timeout=10) as client:
                assert client.get("/health").json() == {"status": "ok"}
    finally:
        for sock in held:
            sock.close()
        resource.setrlimit(resource.RLIMIT_NOFILE, (soft, hard))


# -- slow and idle clients ------------------------------------------------------------------------


def test_idle_and_slow_connections_are_closed_after_their_timeouts(tmp_path: Path) -> None:
    with running(
        tmp_path, NOTESEEK_SERVE__IDLE_TIMEOUT="1", NOTESEEK_SERVE__REQUEST_TIMEOUT="2"
    ) as server:
        started = time.monotonic()
        idle = connect(server)  # never sends a byte
        slow_head = connect(server)
        slow_head.sendall(b"GET /health HTTP/1.1\r\n")
        slow_body = connect(server)
        slow_body.sendall(
            b"POST /query_documents HTTP/1.1\r\nHost: 127.0.0.1\r\n"
            b"Content-Type: application/json\r\nContent-Length: 100\r\n\r\n{"
        )
        kept = http.client.HTTPConnection("127.0.0.1", server.port, timeout=10)
        kept.request("GET", "/health")
        assert kept.getresponse().read() == b'{"status":"ok"}'
        assert kept.sock is not None
        # A byte now and then does not keep a request alive.
        closed: dict[str, float] = {}
        answers: dict[str, bytes] = {}
        sockets = {"idle": idle, "slow_head": slow_head, "slow_body": slow_body, "kept": kept.sock}
        while len(closed) < len(sockets) and time.monotonic() - started < 6:
            for name in ("slow_head", "slow_body"):
                if name not in closed:
                    with suppress(OSError):  # closed meanwhile: read below
                        sockets[name].send(b"a")
            ready, _, _ = select.select(
                [s for n, s in sockets.items() if n not in closed], [], [], 0.25
            )
            for name, sock in sockets.items():
                if sock in ready:
                    try:
                        data = sock.recv(65536)
                    except ConnectionResetError:
                        data = b""
                    answers[name] = answers.get(name, b"") + data
                    if not data:
                        closed[name] = time.monotonic() - started
        assert set(closed) == set(sockets), (closed, server.log[-2000:])
        assert 0.8 <= closed["idle"] < 3, closed
        assert 0.8 <= closed["kept"] < 3, closed
        assert 1.8 <= closed["slow_head"] < 4, closed
        assert 1.8 <= closed["slow_body"] < 4, closed
        for name in ("slow_head", "slow_body"):
            assert "serve.request_timeout" in json_error(answers[name], 408)
        assert answers["idle"] == b""
        for sock in (idle, slow_head, slow_body):
            sock.close()
        kept.close()
        with httpx.Client(base_url=server.url, timeout=10) as client:
            assert client.get("/health").status_code == 200
        time.sleep(0.3)
        assert "Traceback" not in server.log  # a request cut off is no bug


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


def test_the_servers_own_errors_are_precise_and_keep_the_connection(faulty: Server) -> None:
    tracebacks = faulty.log.count("Traceback")
    conn = http.client.HTTPConnection("127.0.0.1", faulty.port, timeout=10)
    as_json = {"Content-Type": "application/json"}
    bad_requests = [
        ("POST", "/query_documents", b"{not json", as_json, 400, "not valid JSON"),
        ("POST", "/query_documents", b"[1]", as_json, 400, "must be a JSON object"),
        ("POST", "/query_documents", b"x" * 2_000_000, as_json, 413, "serve.max_body_bytes"),
        (
            "POST",
            "/query_documents",
            b'{"query": "a"}',
            {"Content-Type": "text/plain"},
            415,
            "JSON",
        ),
        ("GET", "/no/such/route", None, {}, 404, "no route /no/such/route"),
    ]
    try:
        conn.request("GET", "/health")
        conn.getresponse().read()
        assert conn.sock is not None
        local = conn.sock.getsockname()
        for method, path, body, headers, status, says in bad_requests:
            conn.request(method, path, body=body, headers=headers)
            response = conn.getresponse()
            data = response.read()
            assert response.status == status, (path, data)
            assert says in json.loads(data)["error"]
            conn.request("GET", "/health")
            assert conn.getresponse().read() == b'{"status":"ok"}'
            assert conn.sock.getsockname() == local, f"{status} closed the connection"
    finally:
        conn.close()
    # HTTP that cannot be parsed: a precise JSON answer, then the connection closes (where the
    # next request would start is unknown).
    with connect(faulty) as sock:
        sock.sendall(b"GARBAGE\r\n\r\n")
        assert "malformed HTTP request" in json_error(read_until_closed(sock), 400)
    with connect(faulty) as sock:
        sock.sendall(b"GET /health HTTP/1.1\r\nHost: 127.0.0.1\r\nX-Big: " + b"a" * 20_000)
        assert "too large" in json_error(read_until_closed(sock), 431)
    # Each is worth a warning in the log, not one per attempt.
    warned = faulty.log.count("Invalid HTTP request received.")
    for _ in range(50):
        with connect(faulty) as sock:
            sock.sendall(b"GARBAGE\r\n\r\n")
            read_until_closed(sock)
    time.sleep(0.2)
    assert faulty.log.count("Invalid HTTP request received.") <= warned + 1
    assert faulty.log.count("Traceback") == tracebacks


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
