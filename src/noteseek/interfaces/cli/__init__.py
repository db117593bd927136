"""The ``noteseek`` command: a thin door over the operations table.

Each module registers its commands on the one typer app (``common.py``, which also holds the
exit codes): ``indexing`` (init, index, rebuild, migrate), ``searching`` (search),
``memory`` (memory add, append, search, linked, flush, ...), ``reading`` (get, links, graph,
status, config show), ``serving`` (mcp, serve, watch), ``indexes`` (use, indexes: named
indexes) and ``evaluate`` (eval). ``noteseek hook`` (``hook.py``) is sent to its module
before any of them loads: an agent runs it on every prompt.
"""

from __future__ import annotations

import sys
from typing import Any

__all__ = ["app", "main"]


def main() -> None:
    if sys.argv[1:2] == ["hook"]:
        from noteseek.interfaces.cli.hook import run

        sys.exit(run(sys.argv[2:]))
    from noteseek.interfaces.cli.common import EXIT_INTERRUPTED, err

    typer_app = _app()
    try:
        # One name however it is started (``python -m`` too): shell completion keys on it.
        typer_app(prog_name="noteseek")
    except KeyboardInterrupt:
        err.print("interrupted")
        sys.exit(EXIT_INTERRUPTED)


def _app() -> Any:
    """The typer app with every command registered (each module registers its own)."""
    import noteseek.interfaces.cli.evaluate
    import noteseek.interfaces.cli.indexes
    import noteseek.interfaces.cli.indexing
    import noteseek.interfaces.cli.memory
    import noteseek.interfaces.cli.reading
    import noteseek.interfaces.cli.searching
    import noteseek.interfaces.cli.serving  # noqa: F401
    from noteseek.interfaces.cli.common import app

    return app


def __getattr__(name: str) -> Any:
    if name == "app":
        return _app()
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


if __name__ == "__main__":
    main()
