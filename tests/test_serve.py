"""`noteseek serve` as a process: start-up checks, the token off loopback, CORS, shutdown.

Every test runs the real command in a subprocess on a free port (``--port 0``; the port is
read from the line it prints) and stops it by its PID. ``ServeProcess`` is shared with the
other ``test_http*`` modules.
"""

from __future__ import annotations

import contextlib
import os
import re
import shutil
import signal
import subprocess
import sys
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import httpx
import pytest

from noteseek.indexing.lock import WriterLock
from tests.conftest import EXAMPLE_VAULT
from tests.helpers import project

TOKEN = "correct-horse-battery-staple"
LISTENING = re.compile(r"listening on (http://\S+?) ")


def serve_env(home: Path, **settings: str) -> dict[str, str]:
    """The environment of a server process: private user dirs, embeddings and recency off."""
    env = {k: v for k, v in os.environ.items() if not k.upper().startswith("NOTESEEK_")}
    env.update(
        HOME=str(home),
        XDG_CONFIG_HOME=str(home / "config"),
        XDG_DATA_HOME=str(home / "data"),
        NOTESEEK_EMBEDDING__ENABLED="false",
        NOTESEEK_SEARCH__RECENCY="off",
    )
    env.update(settings)
    return env


class ServeProcess:
    """``noteseek serve`` in a subprocess; its log goes to a file, so no pipe can fill up."""

    def __init__(self, folder: Path, *args: str, env: dict[str, str] | None = None) -> None:
        self.folder = folder
        self.log_path = folder / f"serve-{time.monotonic_ns()}.log"
        self._log = self.log_path.open("w")
        self.proc = subprocess.Popen(
            [sys.executable, "-m", "noteseek.interfaces.cli", "serve", "--port", "0", *args],
            cwd=folder,
            env=env if env is not None else serve_env(folder / "home"),
            stdout=self._log,
            stderr=subprocess.STDOUT,
        )
        self.url = ""

    @property
    def log(self) -> str:
        return self.log_path.read_text(encoding="utf-8", errors="replace")

    def wait_listening(self, timeout: float = 30.0) -> str:
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            found = LISTENING.search(self.log)
            if found:
                self.url = found.group(1)
                return self.url
            if self.proc.poll() is not None:
                raise AssertionError(f"serve exited {self.proc.returncode}:\n{self.log}")
            time.sleep(0.05)
        raise AssertionError(f"serve did not listen within {timeout} s:\n{self.log}")

    def client(self, **kwargs: object) -> httpx.Client:
        return httpx.Client(base_url=self.url, timeout=30, **kwargs)  # type: ignore[arg-type]

    def wait_ready(self, client: httpx.Client, timeout: float = 30.0) -> dict:
        """Poll /status until the first reconciliation has indexed the files."""
        deadline = time.monotonic() + timeout
        last: dict = {}
        while time.monotonic() < deadline:
            response = client.get("/status")
            if response.status_code == 200:
                last = response.json()
                if last["status"] == "ready" and last["documents"] > 0:
                    return last
            time.sleep(0.05)
        raise AssertionError(f"never ready: {last}\n{self.log}")

    def stop(self, timeout: float = 20.0) -> int:
        """SIGTERM, then wait; kill only if it does not stop. Returns the exit code."""
        if self.proc.poll() is None:
            self.proc.send_signal(signal.SIGTERM)
            try:
                self.proc.wait(timeout)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait(10)
        self._log.close()
        return self.proc.returncode


@contextmanager
def serving(folder: Path, *args: str, env: dict[str, str] | None = None) -> Iterator[ServeProcess]:
    server = ServeProcess(folder, *args, env=env)
    try:
        server.wait_listening()
        yield server
    finally:
        server.stop()


def vault_project(tmp: Path, vault: Path, extra: str = "") -> Path:
    folder = tmp / "project"
    folder.mkdir()
    return project(folder, {"notes": vault}, extra)


@contextmanager
def serving_example_vault(
    base: Path, *args: str, headers: dict[str, str] | None = None, **settings: str
) -> Iterator[ServeProcess]:
    """A server over a fresh copy of the example vault, once it has indexed it."""
    vault = base / "vault"
    shutil.copytree(EXAMPLE_VAULT, vault)
    folder = vault_project(base, vault)
    with serving(folder, *args, env=serve_env(base / "home", **settings)) as running:
        with running.client(headers=headers or {}) as client:
            running.wait_ready(client)
        yield running


# -- start-up -------------------------------------------------------------------------------------


def run_serve(
    folder: Path, *args: str, env: dict[str, str] | None = None
) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "noteseek.interfaces.cli", "serve", "--port", "0", *args],
        cwd=folder,
        env=env if env is not None else serve_env(folder / "home"),
        capture_output=True,
        text=True,
        timeout=60,
    )


def test_listening_off_loopback_without_a_token_is_refused(vault: Path, tmp_path: Path) -> None:
    folder = vault_project(tmp_path, vault)
    done = run_serve(folder, "--host", "0.0.0.0")
    assert done.returncode == 2, done.stderr
    assert "requires an API token" in done.stderr
    assert "NOTESEEK_SERVE__TOKEN" in done.stderr
    assert "listening on http" not in done.stderr
    # A weak token is refused too, with the rule.
    weak = run_serve(folder, "--host", "0.0.0.0", "--token", "tiny-secret")
    assert weak.returncode == 2
    assert "at least 16 characters" in weak.stderr
    assert "tiny-secret" not in weak.stderr  # a token is never echoed


def test_a_busy_port_is_a_clear_error(vault: Path, tmp_path: Path) -> None:
    folder = vault_project(tmp_path, vault)
    with serving(folder) as first:
        port = first.url.rsplit(":", 1)[1]
        done = run_serve(folder, "--port", port, "--no-watch")
    assert done.returncode == 2
    assert f"cannot listen on 127.0.0.1:{port}" in done.stderr


def test_the_token_guards_every_route_off_loopback(vault: Path, tmp_path: Path) -> None:
    folder = vault_project(tmp_path, vault)
    env = serve_env(folder / "home", NOTESEEK_SERVE__TOKEN=TOKEN)
    with serving(folder, "--host", "0.0.0.0", env=env) as server:
        assert server.url.startswith("http://0.0.0.0:")
        server.url = server.url.replace("0.0.0.0", "127.0.0.1")
        with (
            server.client() as anon,
            server.client(headers={"Authorization": f"Bearer {TOKEN}"}) as ok,
            server.client(headers={"Authorization": "Bearer wrong-token-of-some-length"}) as bad,
        ):
            assert anon.get("/health").json() == {"status": "ok"}  # open by design
            assert anon.get("/openapi.json").status_code == 200
            requests = [
                ("GET", "/status", None),
                ("POST", "/query_documents", {"query": "redis"}),
                ("POST", "/query_documents_stream", {"query": "redis"}),
                ("POST", "/search_with_hypothesis", {"hypothesis": "redis keys expire"}),
                ("GET", "/chunks/0123456789abcdef", None),
                ("GET", "/documents/notes/redis.md", None),
                ("POST", "/reindex", {}),
            ]
            for method, path, body in requests:
                for client, why in ((anon, "requires an API token"), (bad, "wrong API token")):
                    response = client.request(method, path, json=body)
                    assert response.status_code == 401, (method, path, response.text)
                    assert why in response.json()["error"]
                    assert response.headers["www-authenticate"] == "Bearer"
            # MCP needs it too.
            mcp = anon.post("/mcp", json={"jsonrpc": "2.0", "id": 1, "method": "ping"})
            assert mcp.status_code == 401
            # The right token opens everything.
            server.wait_ready(ok)
            found = ok.post("/query_documents", json={"query": "redis ttl"})
            assert found.status_code == 200
            assert found.json()["results"][0]["path"] == "notes/redis.md"
            # Another scheme, or the token in another header, is not accepted.
            basic = anon.get("/status", headers={"Authorization": f"Basic {TOKEN}"})
            assert basic.status_code == 401
            assert anon.get("/status", headers={"X-Token": TOKEN}).status_code == 401
    # Reachable from other machines: it listened on every interface.
    assert "0.0.0.0" in server.log


def test_sigterm_stops_cleanly_and_releases_the_writer_lock(vault: Path, tmp_path: Path) -> None:
    folder = vault_project(tmp_path, vault)
    server = ServeProcess(folder)
    try:
        server.wait_listening()
        with server.client() as client:
            status = server.wait_ready(client)
            assert status["service"]["role"] == "writer"
            lock = WriterLock(folder / ".noteseek")
            assert not lock.try_acquire()  # held by the server
            # A stream in flight does not keep it from stopping.
            with client.stream("POST", "/query_documents_stream", json={"query": "redis"}) as r:
                assert r.status_code == 200
                started = time.monotonic()
                code = server.stop()
    finally:
        server.stop()
    assert code == 0, server.log
    assert time.monotonic() - started < 15
    assert "Traceback" not in server.log
    assert lock.try_acquire()  # given up on the way out
    lock.release()


def test_ctrl_c_also_exits_0(vault: Path, tmp_path: Path) -> None:
    folder = vault_project(tmp_path, vault)
    server = ServeProcess(folder, "--no-watch")
    try:
        server.wait_listening()
        with server.client() as client:
            assert client.get("/health").status_code == 200
        server.proc.send_signal(signal.SIGINT)
        assert server.proc.wait(20) == 0, server.log
    finally:
        server.stop()


def test_cors_is_off_by_default_and_follows_the_allow_list(vault: Path, tmp_path: Path) -> None:
    folder = vault_project(tmp_path, vault)
    preflight = {
        "Origin": "https://notes.example.org",
        "Access-Control-Request-Method": "POST",
        "Access-Control-Request-Headers": "content-type",
    }
    with serving(folder, "--no-watch") as server, server.client() as client:
        answer = client.options("/query_documents", headers=preflight)
        assert "access-control-allow-origin" not in answer.headers
        cross = client.post(
            "/query_documents",
            json={"query": "redis"},
            headers={"Origin": "https://notes.example.org"},
        )
        assert cross.status_code == 403
        assert "serve.cors_origins" in cross.json()["error"]
        assert "access-control-allow-origin" not in cross.headers
    env = serve_env(folder / "home", NOTESEEK_SERVE__CORS_ORIGINS='["https://notes.example.org"]')
    with serving(folder, "--no-watch", env=env) as server, server.client() as client:
        answer = client.options("/query_documents", headers=preflight)
        assert answer.status_code == 200
        assert answer.headers["access-control-allow-origin"] == "https://notes.example.org"
        server.wait_ready(client)
        cross = client.post(
            "/query_documents",
            json={"query": "redis"},
            headers={"Origin": "https://notes.example.org"},
        )
        assert cross.status_code == 200
        assert cross.headers["access-control-allow-origin"] == "https://notes.example.org"
        other = client.post(
            "/query_documents", json={"query": "redis"}, headers={"Origin": "https://evil.test"}
        )
        assert other.status_code == 403


def own_ipv4_address() -> str | None:
    """A non-loopback IPv4 address of this machine's interfaces, or None if it has none."""
    import ipaddress
    import socket

    found = set()
    with contextlib.suppress(OSError):
        for info in socket.getaddrinfo(socket.gethostname(), None, socket.AF_INET):
            found.add(str(info[4][0]))
    with contextlib.suppress(OSError), socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as probe:
        probe.connect(("192.0.2.1", 9))  # UDP: nothing is sent; the route picks the address
        found.add(probe.getsockname()[0])
    own = sorted(a for a in found if not ipaddress.ip_address(a).is_loopback)
    return own[0] if own else None


def test_listening_on_every_interface_accepts_the_machines_own_addresses(
    vault: Path, tmp_path: Path
) -> None:
    """Issue 44 R11: Host set to one of this machine's addresses is accepted (it was 421)."""
    folder = vault_project(tmp_path, vault)
    env = serve_env(folder / "home", NOTESEEK_SERVE__TOKEN=TOKEN)
    auth = {"Authorization": f"Bearer {TOKEN}"}
    with serving(folder, "--host", "0.0.0.0", env=env) as server:
        port = server.url.rsplit(":", 1)[1]
        server.url = f"http://127.0.0.1:{port}"
        with server.client(headers=auth) as client:
            # DNS rebinding protection holds: foreign names and addresses are still refused.
            for foreign in ("attacker.example", "203.0.113.9", "0.0.0.0"):
                refused = client.get("/status", headers={"Host": f"{foreign}:{port}"})
                assert refused.status_code == 421, (foreign, refused.text)
            assert client.get("/status", headers={"Host": f"localhost:{port}"}).status_code == 200
        own = own_ipv4_address()
        if own is None:
            pytest.skip("this machine has no non-loopback IPv4 address")
        server.url = f"http://{own}:{port}"  # a real request to that address: Host is it
        with server.client(headers=auth) as client:
            response = client.get("/status")
            assert response.status_code == 200, response.text
            # Its pages are this server's own: the Origin check agrees with the Host check.
            same = client.get("/status", headers={"Origin": f"http://{own}:{port}"})
            assert same.status_code == 200, same.text
