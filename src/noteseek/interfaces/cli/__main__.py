"""``python -m noteseek.interfaces.cli``: the ``noteseek`` command."""

from noteseek.interfaces.cli import run

run()
