"""Which index a command opens, and the memory of the index used last.

Without a project file or configured roots, ``noteseek index ~/notes`` chooses an index in the
user data dir keyed by its roots and remembers it, so that a later ``noteseek search ...`` in
any folder opens the same index.
"""

from __future__ import annotations

import contextlib
from collections.abc import Sequence
from pathlib import Path

from noteseek.config import (
    LoadedConfig,
    RootConfig,
    ad_hoc_root,
    data_dir,
    default_index_dir,
)
from noteseek.store.factory import INDEX_FILE

LAST_INDEX_FILE = "last-index"
"""In the user data dir: the folder of the index used last."""


def choose_index(config: LoadedConfig, roots: Sequence[str], cwd: Path | None) -> None:
    """Set ``config.index_dir`` for a command about to use ``roots`` (see ``open_engine``).

    Folders among ``roots`` that are not configured roots become roots of this index, and
    without a project file (or ``index.dir``) they choose the index: one per set of roots, in
    the user data dir. Without a project file, configured roots or ``roots``, the index used
    last is chosen, if it still exists.
    """
    settings = config.settings
    extra: dict[str, RootConfig] = {}
    for ref in roots:
        if ref in settings.roots:
            continue
        try:
            path = Path(ref).expanduser()
        except RuntimeError:  # ~name of a user this system does not know: not a folder
            continue
        if not path.is_absolute() and cwd is not None:
            path = cwd / path
        if _is_dir(path):
            name, root = ad_hoc_root(path, {**settings.roots, **extra})
            extra[name] = root
    if extra and config.project_file is None and not settings.index.dir:
        config.index_dir = default_index_dir({**settings.roots, **extra})
        config.index_dir_reason = "user data dir, keyed by the roots"
    elif (
        not settings.roots and not extra and config.project_file is None and not settings.index.dir
    ):
        last = data_dir() / LAST_INDEX_FILE
        with contextlib.suppress(OSError):
            remembered = Path(last.read_text(encoding="utf-8").strip())
            if (remembered / INDEX_FILE).exists():
                config.index_dir = remembered
                config.index_dir_reason = "the index used last (no project file or roots)"


def _is_dir(path: Path) -> bool:
    """Whether ``path`` is a folder; a name the system cannot look up (too long, no
    permission on the way) is not one, and the command then says the root is unknown."""
    try:
        return path.is_dir()
    except OSError:
        return False


def remember_index(config: LoadedConfig) -> None:
    """Without a project file, later commands in any folder find this index."""
    if config.project_file is not None or config.settings.index.dir:
        return
    with contextlib.suppress(OSError):
        folder = data_dir()
        folder.mkdir(parents=True, exist_ok=True)
        (folder / LAST_INDEX_FILE).write_text(str(config.index_dir), encoding="utf-8")
