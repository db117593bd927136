"""Which git repositories ``[git] discover`` indexes: those holding or under the roots' folders.

A repository is found by its ``.git`` entry (a folder, or a file in worktrees and
submodules), without running git: the repository that holds a root's folder (its nearest
ancestor with one), and repositories below the folder (:func:`find_repositories`, which stops
descending at a ``.git``). Each becomes a root of kind ``git`` named after the root that led to
it: ``ROOT.git`` for the repository holding the folder, ``ROOT.git.SUB.DIR`` for one in its
subfolder ``sub/dir``. A repository already indexed by an explicit git root, or reached from two
roots, is indexed once.
"""

from __future__ import annotations

import os
import re
from collections.abc import Mapping
from pathlib import Path

from noteseek.config import RootConfig
from noteseek.sources.git import GIT_KIND
from noteseek.sources.git.source import find_repositories

_UNSAFE = re.compile(r"[^A-Za-z0-9_.-]+")


def enclosing_repository(folder: Path) -> Path | None:
    """The work tree that holds ``folder`` (itself included), or None."""
    here = Path(os.path.realpath(folder))
    for candidate in (here, *here.parents):
        if os.path.lexists(candidate / ".git"):
            return candidate
    return None


def discover_git_roots(roots: Mapping[str, RootConfig]) -> dict[str, RootConfig]:
    """Root name -> git root for the repositories of the ``files`` roots among ``roots``
    that no git root of ``roots`` indexes already."""
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
        for repo in find_repositories(real):
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
