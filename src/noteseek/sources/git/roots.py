"""Which git repositories ``[git] discover`` indexes: those holding or under the roots' folders.

A repository is found by its ``.git`` entry (a folder, or a file in worktrees and
submodules), without running git: the repository that holds a root's folder (its nearest
ancestor with one), and repositories below the folder (:func:`find_repositories`, which stops
descending at a ``.git``) in the folders a walk of the root enters: its ``exclude`` patterns,
``.gitignore`` files and the index's other rules are honoured by the very test the file walk
uses (:func:`~noteseek.sources.walk.folder_test`), so a repository vendored into an excluded
folder is not indexed either. Each becomes a root of kind ``git`` named after the root that led to
it: ``ROOT.git`` for the repository holding the folder, ``ROOT.git.SUB.DIR`` for one in its
subfolder ``sub/dir``. A repository already indexed by an explicit git root, or reached from two
roots, is indexed once.
"""

from __future__ import annotations

import os
import re
from collections.abc import Callable, Mapping
from pathlib import Path

from noteseek.config import RootConfig
from noteseek.sources.base import SourceContext
from noteseek.sources.folder import folder_rules
from noteseek.sources.git import GIT_KIND
from noteseek.sources.git.source import find_repositories
from noteseek.sources.walk import folder_test

_UNSAFE = re.compile(r"[^A-Za-z0-9_.-]+")


def enclosing_repository(folder: Path) -> Path | None:
    """The work tree that holds ``folder`` (itself included), or None."""
    here = Path(os.path.realpath(folder))
    for candidate in (here, *here.parents):
        if os.path.lexists(candidate / ".git"):
            return candidate
    return None


def discover_git_roots(
    roots: Mapping[str, RootConfig], context: SourceContext
) -> dict[str, RootConfig]:
    """Root name -> git root for the repositories of the ``files`` roots among ``roots``
    that no git root of ``roots`` indexes already; ``context`` is what the roots' sources are
    built with (the walk's rules come from it)."""
    seen: set[str] = set()
    folders: dict[str, Path] = {}
    for name, root in roots.items():
        path = Path(root.path).expanduser()
        if root.kind == GIT_KIND:
            seen.add(os.path.realpath(enclosing_repository(path) or path))
        elif root.kind == "files":
            folders[name] = path
    found: dict[str, RootConfig] = {}
    for name, folder in sorted(folders.items()):
        if not folder.is_dir():
            continue
        repos: list[tuple[str, Path]] = []
        holder = enclosing_repository(folder)
        if holder is not None:
            repos.append((f"{name}.git", holder))
        real = Path(os.path.realpath(folder))
        enters = folder_test(real, folder_rules(roots[name], context))
        for repo in find_repositories(real, skip=_refused_by(enters)):
            rel = os.path.relpath(os.path.realpath(repo), real)
            if rel == ".":
                continue
            repos.append((f"{name}.git." + _UNSAFE.sub("-", rel.replace(os.sep, ".")), repo))
        for root_name, repo in repos:
            key = os.path.realpath(repo)
            if key in seen:
                continue
            seen.add(key)
            found[root_name] = RootConfig(path=str(repo), kind=GIT_KIND, include=["*"])
    return found


def _refused_by(enters: Callable[[str], bool]) -> Callable[[str], bool]:
    """``find_repositories``'s ``skip``: the folders the root's walk does not enter."""
    return lambda rel: not enters(rel)
