"""The ``noteseek`` command: a thin door over the operations table.

Each module registers its commands on the one typer app (``common.py``, which also holds the
exit codes): ``indexing`` (init, index, rebuild, migrate), ``searching`` (search),
``memory`` (memory add, append, search, linked, flush, ...), ``reading`` (get, links, graph,
status, config show), ``serving`` (mcp, serve, watch), ``indexes`` (use, indexes: named
indexes) and ``evaluate`` (eval).
"""

from __future__ import annotations

import sys

# Each command module registers its commands on the app when imported.
import noteseek.interfaces.cli.evaluate
import noteseek.interfaces.cli.indexes
import noteseek.interfaces.cli.indexing
import noteseek.interfaces.cli.memory
import noteseek.interfaces.cli.reading
import noteseek.interfaces.cli.searching
import noteseek.interfaces.cli.serving  # noqa: F401
from noteseek.interfaces.cli.common import EXIT_INTERRUPTED, app, err

__all__ = ["app", "main"]


def main() -> None:
    try:
        # One name however it is started (``python -m`` too): shell completion keys on it.
        app(prog_name="noteseek")
    except KeyboardInterrupt:
        err.print("interrupted")
        sys.exit(EXIT_INTERRUPTED)


if __name__ == "__main__":
    main()
