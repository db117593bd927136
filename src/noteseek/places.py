"""Where noteseek keeps things, known before any setting is read: its data folder and the
project file's name. Standard library and platformdirs only, so a process that needs no more
(an agent's prompt hook asking a running server) imports nothing else."""

from __future__ import annotations

from pathlib import Path

import platformdirs

APP_NAME = "noteseek"
PROJECT_FILE = ".noteseek.toml"


def data_dir() -> Path:
    """noteseek's data folder (platformdirs' user data dir): indexes, logs, running servers."""
    return Path(platformdirs.user_data_dir(APP_NAME))


def find_project_file(start: Path) -> Path | None:
    """The nearest ``.noteseek.toml`` in ``start`` or a parent folder."""
    start = start.resolve()
    for folder in (start, *start.parents):
        candidate = folder / PROJECT_FILE
        if candidate.is_file():
            return candidate
    return None
