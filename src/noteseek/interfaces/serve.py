"""``noteseek serve``: the HTTP app (``http.py``) under uvicorn, as the index's writer.

The socket is bound here, before uvicorn starts, so a busy port is a clear error and port 0
picks a free one (the line printed on stderr says which). The index opens on a background
thread (``operations.Runtime``), so the server answers ``/health`` at once. SIGTERM and Ctrl-C stop
uvicorn gracefully (open requests get ``SHUTDOWN_GRACE`` seconds), then the app's lifespan
stops the watcher and the worker and releases the writer lock; the process exits 0.

Connections are bounded (``http/connections.py``): in number, below the open-file limit (whose
soft value is raised to the hard one at start, as servers do), and in idle time.
"""

from __future__ import annotations

import contextlib
import faulthandler
import logging
import math
import os
import signal
import socket
import sys
from pathlib import Path
from typing import TYPE_CHECKING, Any, NoReturn

from noteseek import servers

if TYPE_CHECKING:
    from noteseek.config import LoadedConfig

log = logging.getLogger(__name__)

SHUTDOWN_GRACE = 5
"""Seconds open requests (a stream, an MCP session's GET) get to finish on shutdown."""

BACKLOG = 128
"""Connections the kernel queues until they are accepted, which is also how many asyncio
accepts in one go: small, so that one burst cannot use up the descriptors ``FD_RESERVE``
keeps."""

FD_RESERVE = 256
"""Open files kept for all but connections: the index and its WAL, the SQLite connections of
worker threads, parser processes' pipes, the watcher, logs, and an accept burst."""

MAX_OPEN_FILES = 65_536
"""The soft open-file limit is raised to the hard one at start, but not above this."""


class ServeRefused(Exception):
    """The server must not start as configured; the message says what to change."""


def check_token(host: str, has_token: bool) -> None:
    """Refuse a non-loopback address without a token: anyone on the network could read."""
    from noteseek.interfaces.http import is_loopback

    if not has_token and not is_loopback(host):
        raise ServeRefused(
            f"listening on {host} (not loopback) requires an API token: pass --token, or set "
            "NOTESEEK_SERVE__TOKEN or serve.token (at least 16 characters)"
        )


def bind(host: str, port: int) -> socket.socket:
    """A listening TCP socket on ``host:port``; raises ServeRefused with the reason."""
    try:
        infos = socket.getaddrinfo(
            host or None, port, type=socket.SOCK_STREAM, flags=socket.AI_PASSIVE
        )
    except OSError as exc:
        raise ServeRefused(f"cannot resolve {host!r}: {exc}") from None
    family, kind, proto, _, address = infos[0]
    sock = socket.socket(family, kind, proto)
    try:
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        sock.bind(address)
        sock.listen(BACKLOG)
    except OSError as exc:
        sock.close()
        raise ServeRefused(f"cannot listen on {host}:{port}: {exc.strerror or exc}") from None
    sock.set_inheritable(True)
    return sock


def raise_open_file_limit() -> int | None:
    """Raise the soft limit on open files to the hard one (at most ``MAX_OPEN_FILES``); the
    soft limit now, or None where there is none."""
    try:
        import resource
    except ImportError:  # not a Unix
        return None
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    target = MAX_OPEN_FILES if hard == resource.RLIM_INFINITY else min(hard, MAX_OPEN_FILES)
    if soft != resource.RLIM_INFINITY and soft < target:
        with contextlib.suppress(ValueError, OSError):
            resource.setrlimit(resource.RLIMIT_NOFILE, (target, hard))
            soft = target
    return None if soft == resource.RLIM_INFINITY else soft


def connection_limit(max_connections: int, open_files: int | None) -> int:
    """``serve.max_connections``, lowered to leave ``FD_RESERVE`` files under the limit."""
    if open_files is None:
        return max_connections
    return max(8, min(max_connections, open_files - FD_RESERVE))


def url_of(sock: socket.socket, *, reachable: bool = False) -> str:
    """The URL of the socket's address; ``reachable``: one a client on this machine can open
    (a wildcard address as loopback)."""
    host, port = sock.getsockname()[:2]
    if reachable and host in ("0.0.0.0", "::"):
        host = "127.0.0.1" if host == "0.0.0.0" else "::1"
    shown = f"[{host}]" if ":" in host else host
    return f"http://{shown}:{port}"


def run_server(config: LoadedConfig, *, watch: bool = True) -> NoReturn:
    """Serve until SIGTERM or Ctrl-C, then end the process (exit 0).

    Raises ServeRefused before binding if misconfigured, or if the server could not start.
    """
    import uvicorn

    from noteseek.interfaces.http import create_app
    from noteseek.interfaces.http.connections import HEAD_LIMIT, ConnectionPool, protocol_class
    from noteseek.interfaces.mcp import build_server
    from noteseek.operations import Runtime

    serve = config.settings.serve
    check_token(serve.host, serve.token is not None)
    open_files = raise_open_file_limit()
    pool = ConnectionPool(
        max_connections=connection_limit(serve.max_connections, open_files),
        idle_timeout=serve.idle_timeout,
        request_timeout=serve.request_timeout,
    )
    if pool.max_connections < serve.max_connections:
        log.info(
            "at most %d connections at once: the open-file limit is %s (serve.max_connections "
            "is %d)",
            pool.max_connections,
            open_files,
            serve.max_connections,
        )
    sock = bind(serve.host, serve.port)
    runtime = Runtime(lambda: config, watch=watch, command="serve", settle=True)
    app = create_app(runtime, serve, build_server(runtime))
    server = uvicorn.Server(
        uvicorn.Config(
            app,
            lifespan="on",
            log_config=None,  # the CLI's logging setup
            access_log=False,
            server_header=False,
            proxy_headers=False,
            timeout_graceful_shutdown=SHUTDOWN_GRACE,
            # The connection rules: the protocol's own timers close idle and slow clients;
            # uvicorn's keep-alive timer is only a backstop.
            http=protocol_class(pool),
            backlog=BACKLOG,
            timeout_keep_alive=math.ceil(serve.idle_timeout),
            h11_max_incomplete_event_size=HEAD_LIMIT,
        )
    )
    url = url_of(sock)
    sys.stderr.write(
        f"noteseek serve: listening on {url} (OpenAPI {url}/openapi.json, MCP {url}/mcp"
        + (", token required" if serve.token is not None else "")
        + ")\n"
    )
    sys.stderr.flush()
    # `kill -USR1 <pid>` prints every thread's stack to the log: what a busy server is doing.
    faulthandler.register(signal.SIGUSR1, file=sys.stderr, all_threads=True)
    # uvicorn handles SIGTERM and SIGINT while it runs and, once stopped, raises the signal
    # again for the handler that was there before; that handler must not kill the process.
    previous = {sig: signal.signal(sig, _ignore) for sig in (signal.SIGTERM, signal.SIGINT)}
    reachable = _register(config, sock)
    try:
        server.run(sockets=[sock])
    finally:
        if reachable is not None:
            servers.unregister(reachable)
        for sig, handler in previous.items():
            signal.signal(sig, handler)
        sock.close()
    if not server.started:
        raise ServeRefused("the server could not start (see the log above)")
    # The lifespan has stopped the service and released the writer lock. A re-index may still
    # be running in the worker (a run is not interrupted midway), and at exit Python would
    # wait for its parser processes to finish the whole run: end here, as `noteseek mcp` does.
    # Its open transaction, if any, is rolled back by SQLite.
    logging.shutdown()
    sys.stderr.flush()
    os._exit(0)


def _register(config: LoadedConfig, sock: socket.socket) -> Path | None:
    """Say where this server listens, so the project's prompt hooks ask it
    (``noteseek/servers.py``), with the API token when it requires one: only a project's
    server (one with a project file); the file that says it, or None."""
    if config.project_file is None:
        return None
    token = config.settings.serve.token
    try:
        return servers.register(
            url_of(sock, reachable=True),
            config.project_file,
            config.index_dir,
            token=None if token is None else token.get_secret_value(),
        )
    except OSError as exc:
        log.info("the project's hooks will not find this server: %s", exc)
        return None


def _ignore(_signum: int, _frame: Any) -> None:
    """Stand-in handler: uvicorn's own handles the signal."""
