"""Which index a command opens, and the memory of the index used last.

Without a project file or configured roots, ``noteseek index ~/notes`` chooses an index in the
user data dir keyed by its roots and remembers it, so that a later ``noteseek search ...`` in
any folder opens the same index. Named indexes (``engine/named.py``) make that choice
deliberate: while one is in use (``noteseek use NAME``), indexing other folders does not
replace it as the index opened by default.

``--index NAME`` opens a named index as what it is named (:func:`named_config`), whatever
folder the command starts in: an MCP client starts ``noteseek mcp --index NAME`` in the
project it works on, and the roots of that project's ``.noteseek.toml`` (its docs, its
``.memories``, its git history) were added to the named index by the server's first
reconcile, for good.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from noteseek.config import (
    ConfigError,
    LoadedConfig,
    RootConfig,
    ad_hoc_root,
    default_index_dir,
    load_settings,
)
from noteseek.engine.named import in_use, last_index, named, remember_last
from noteseek.engine.results import NotFound


def named_config(
    name: str,
    cwd: Path | None = None,
    config_file: Path | None = None,
    flags: Mapping[str, Any] | None = None,
    environ: Mapping[str, str] | None = None,
) -> LoadedConfig:
    """The settings of the index registered as ``name``; ConfigError (what every door reports
    about its settings) when no index has that name, or its folder is gone.

    A named index is self-contained. Its roots are the ones it holds (``engine/roots.py``):
    no layer adds one by being read, and only an explicit command changes them (``noteseek
    roots add`` / ``remove``, or ``noteseek index FOLDER``). Its other settings are the user
    file, the environment and the flags, as for any index, plus the project file that made
    it when one did (registered with the name): its analyzer, chunking and model made the
    index, and another project's would not match its manifest, so the next run would clear
    it and index it all again, and the other project's run would do the same back. The
    project file found from ``cwd`` is never read; ``config_file`` (``--config``) still
    replaces the index's own, as it replaces the one found from the folder.
    """
    try:
        entry = named(name)
    except NotFound as exc:
        raise ConfigError(str(exc)) from None
    own = config_file if config_file is not None else entry.project_file
    config = load_settings(cwd, own, flags, environ, find_project=False)
    config.index_dir = entry.folder
    config.index_dir_reason = f"the index named {name}, opened with --index"
    config.named = name
    return config


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
    if settings.milvus.enabled and config.project_file is None and not settings.index.dir:
        return  # a Milvus index keeps its own folder (``config.milvus_state_dir``)
    if extra and config.project_file is None and not settings.index.dir:
        config.index_dir = default_index_dir({**settings.roots, **extra})
        config.index_dir_reason = "user data dir, keyed by the roots"
    elif (
        not settings.roots and not extra and config.project_file is None and not settings.index.dir
    ):
        remembered = last_index()
        if remembered is not None:
            config.index_dir = remembered
            named = in_use()
            if named is not None and named.folder == remembered:
                config.index_dir_reason = f"the index in use: {named.name} (noteseek use)"
            else:
                config.index_dir_reason = "the index used last (no project file or roots)"


def _is_dir(path: Path) -> bool:
    """Whether ``path`` is a folder; a name the system cannot look up (too long, no
    permission on the way) is not one, and the command then says the root is unknown."""
    try:
        return path.is_dir()
    except OSError:
        return False


def remember_index(config: LoadedConfig) -> str | None:
    """Without a project file, later commands in any folder find this index, unless a named
    index is in use: then it stays, and the returned notice says so."""
    if config.project_file is not None or config.settings.index.dir or config.named is not None:
        return None  # found again by its file, its setting or its name, not as the last one
    if config.settings.milvus.enabled:
        return None  # found again by its settings, not as the index used last
    named = in_use()
    if named is not None and named.exists and named.folder != config.index_dir:
        return (
            f"the index in use stays {named.name!r} ({named.folder}); "
            "name this one with --name NAME and switch with noteseek use NAME"
        )
    remember_last(config.index_dir)
    return None
