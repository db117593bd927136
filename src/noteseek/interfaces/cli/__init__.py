"""The ``noteseek`` command: a thin door over the operations table.

Each module registers its commands on the one typer app (``common.py``, which also holds the
exit codes): ``indexing`` (init, index, rebuild, migrate), ``searching`` (search),
``memory`` (memory add, append, search, linked, flush, ...), ``reading`` (get, links, graph,
status, config show), ``serving`` (mcp, serve, watch), ``indexes`` (use, indexes: named
indexes), ``roots`` (roots list, add, remove) and ``evaluate`` (eval). ``noteseek hook``
(``hook.py``) is sent to its module before any of them loads: an agent runs it on every
prompt.
"""

from __future__ import annotations

import os
import sys
from typing import Any

__all__ = ["app", "main", "run"]


COMMANDS: dict[str, str] = {
    "init": "indexing",
    "index": "indexing",
    "rebuild": "indexing",
    "migrate": "indexing",
    "search": "searching",
    "memory": "memory",
    "hook": "memory",
    "get": "reading",
    "links": "reading",
    "graph": "reading",
    "status": "reading",
    "config": "reading",
    "mcp": "serving",
    "serve": "serving",
    "watch": "serving",
    "use": "indexes",
    "indexes": "indexes",
    "roots": "roots",
    "eval": "evaluate",
}
"""Each command and the module that registers it: a command loads its own module only, so
``noteseek status`` does not import the evaluator, the server or the progress bars
(tests/test_cli_starts.py checks this map against the registered commands)."""

MODULES = (
    "evaluate",
    "indexes",
    "indexing",
    "memory",
    "reading",
    "roots",
    "searching",
    "serving",
)
"""Every command module, in the order their commands are registered (and listed by --help)."""

_VALUED = frozenset({"--config", "-c", "--index-dir", "--index"})
"""The app's options that take a value, written before the command."""


def main() -> None:
    argv = sys.argv[1:]
    # pydantic looks for plugins among every installed package's entry points when the first
    # model is built (10 ms of a 0.3 s `noteseek status`); noteseek's process uses none. A
    # value the user set is kept.
    os.environ.setdefault("PYDANTIC_DISABLE_PLUGINS", "__all__")
    if argv[:1] == ["hook"]:
        from noteseek.interfaces.cli.hook import run

        sys.exit(run(argv[1:]))
    if argv == ["--version"]:
        # What typer prints for --version, without loading typer, rich or the engine.
        from noteseek.interfaces.cli.version import package_version

        sys.stdout.write(f"noteseek {package_version()}\n")
        return
    from noteseek.interfaces.cli.common import EXIT_INTERRUPTED, err

    typer_app = _app(command_module(argv))
    try:
        # One name however it is started (``python -m`` too): shell completion keys on it.
        typer_app(prog_name="noteseek")
    except KeyboardInterrupt:
        err.print("interrupted")
        sys.exit(EXIT_INTERRUPTED)


QUICK_EXIT_MODULES = frozenset({"reading", "searching", "indexes"})
"""Modules whose commands read the index and write at most a small file they have closed
(``use`` records the name in use): once one has answered, the process ends without tearing
the interpreter down."""


def run() -> None:
    """The installed ``noteseek`` command: :func:`main`, then a quick exit after a command
    that only reads.

    Tearing the interpreter down (every module's objects freed one by one: pydantic's models,
    numpy, the analyzer's caches) took 50-80 ms of every ``status``, ``get`` or ``search``
    (0.27 -> 0.21 s for ``status`` on the 14k-page index). A reading command has written
    nothing and holds nothing that must be finished, so once its output is flushed the process
    ends at once (``os._exit``) with the same exit code. Background threads are daemons, which
    the usual exit abandons too (a vector graph being built is thrown away once the engine has
    closed). Not when a thread the usual exit would wait for is alive, when the output cannot
    be flushed (a closed pipe: the usual exit reports it), or for any other command.
    """
    quick = command_module(sys.argv[1:]) in QUICK_EXIT_MODULES
    try:
        main()
    except SystemExit as done:
        if quick:
            _exit_now(done.code)
        raise
    if quick:
        _exit_now(0)


def _exit_now(code: object) -> None:
    """End the process with ``code`` now, output flushed; returns when it cannot."""
    import threading

    if not (code is None or isinstance(code, int)):
        return
    if any(not t.daemon for t in threading.enumerate() if t is not threading.main_thread()):
        return  # work the usual exit would wait for
    try:
        sys.stdout.flush()
        sys.stderr.flush()
    except (OSError, ValueError):
        return
    logging = sys.modules.get("logging")
    if logging is not None:
        logging.shutdown()
    os._exit(code or 0)


def command_module(argv: list[str]) -> str | None:
    """The module registering the command ``argv`` names, or None when every command must be
    registered (help, completion, an unknown or missing command)."""
    if any(name.endswith("_COMPLETE") for name in os.environ):
        return None
    at = 0
    while at < len(argv):
        word = argv[at]
        if word in _VALUED:
            at += 2
        elif word.startswith("-"):
            if word.split("=", 1)[0] not in _VALUED:
                return None  # --help, --version with more, an unknown option: all of them
            at += 1
        else:
            return COMMANDS.get(word)
    return None


def _app(module: str | None = None) -> Any:
    """The typer app with the commands of ``module`` registered (every command's without)."""
    import importlib

    for name in MODULES if module is None else (module,):
        importlib.import_module(f"noteseek.interfaces.cli.{name}")
    from noteseek.interfaces.cli.common import app

    return app


def __getattr__(name: str) -> Any:
    if name == "app":
        return _app()
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


if __name__ == "__main__":
    run()
