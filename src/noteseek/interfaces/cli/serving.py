"""``noteseek mcp``, ``serve`` and ``watch``: the long-running commands over a live index."""

from __future__ import annotations

import sys
import time
from pathlib import Path
from typing import Annotated, Any

import typer

from noteseek.config import ConfigError
from noteseek.interfaces.cli.common import (
    EXIT_USAGE,
    State,
    app,
    err,
    fail,
    open_state_engine,
    use_named,
)


def _load_live_config() -> Any:
    """The configuration for a long-running command (the index is opened by the service).

    Raises ConfigError with the problem.
    """
    engine = open_state_engine()
    config = engine.config
    engine.close()
    return config


def _live_config() -> Any:
    try:
        return _load_live_config()
    except ConfigError as exc:
        raise fail(str(exc), EXIT_USAGE) from None


def _log_to_stderr(level: int) -> None:
    import logging

    logging.basicConfig(
        stream=sys.stderr, level=level, format="%(asctime)s %(levelname)s %(name)s: %(message)s"
    )
    # watchfiles logs every batch at INFO; noteseek logs what it did with it instead.
    logging.getLogger("watchfiles").setLevel(logging.WARNING)
    # Clients can make a server warn (bad requests, refused hosts, files running out): a
    # warning that repeats is logged at a bounded rate, never once per attempt.
    from noteseek.interfaces.cli.log_limit import limit_log_rate

    limit_log_rate()


WatchOption = Annotated[
    bool, typer.Option(help="Watch the roots and keep the index fresh (as the writer).")
]
LiveConfigOption = Annotated[
    Path | None,
    typer.Option("--config", "-c", help="Project config file (default: found from here)."),
]


IndexOption = Annotated[
    str | None,
    typer.Option("--index", help="Serve the named index (noteseek indexes lists them)."),
]


@app.command("mcp")
def mcp_command(
    watch: WatchOption = True,
    config: LiveConfigOption = None,
    index: IndexOption = None,
) -> None:
    """Serve noteseek's tools to AI agents over MCP on stdin/stdout."""
    import logging

    if config is not None:
        State.config_file = config
    if index is not None:
        use_named(index)

    from noteseek.interfaces.mcp import run_stdio

    def load() -> Any:
        try:
            return _load_live_config()
        except ConfigError as exc:
            raise ConfigError(f"configuration: {exc}") from None

    _log_to_stderr(logging.INFO)
    run_stdio(load, watch=watch)


@app.command("serve")
def serve_command(
    host: Annotated[
        str | None,
        typer.Option(help="Address to listen on (default serve.host, 127.0.0.1)."),
    ] = None,
    port: Annotated[
        int | None,
        typer.Option(min=0, max=65535, help="Port (default serve.port, 8765; 0 = a free one)."),
    ] = None,
    token: Annotated[
        str | None,
        typer.Option(
            help="API token clients send as 'Authorization: Bearer <token>'; required off "
            "loopback. Prefer NOTESEEK_SERVE__TOKEN: options show in process lists."
        ),
    ] = None,
    watch: WatchOption = True,
    config: LiveConfigOption = None,
    index: IndexOption = None,
) -> None:
    """Serve the HTTP API, MCP over streamable HTTP (/mcp) and the web page."""
    import logging

    if config is not None:
        State.config_file = config
    if index is not None:
        use_named(index)
    for key, value in (("serve.host", host), ("serve.port", port), ("serve.token", token)):
        if value is not None:
            State.flags[key] = value
    loaded = _live_config()

    from noteseek.interfaces.serve import ServeRefused, run_server

    _log_to_stderr(logging.INFO)
    try:
        run_server(loaded, watch=watch)
    except ServeRefused as exc:
        raise fail(str(exc), EXIT_USAGE) from None


@app.command("watch")
def watch_command() -> None:
    """Keep the index fresh in the foreground: reconcile, then index changes as they happen."""
    import logging
    import signal

    from noteseek.engine.live import IndexService

    _log_to_stderr(logging.INFO)
    service = IndexService(_live_config(), command="watch")

    def on_term(_signum: int, _frame: Any) -> None:
        raise KeyboardInterrupt

    signal.signal(signal.SIGTERM, on_term)
    role = service.start()
    if role == "reader":
        err.print(
            "another process is the writer of this index and keeps it fresh; "
            "waiting to take over when it exits (Ctrl-C to stop)"
        )
    try:
        while True:
            time.sleep(3600)
    except KeyboardInterrupt:
        err.print("stopping: finishing the current batch")
    finally:
        service.stop()
