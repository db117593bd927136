"""Find the files of a root: include/exclude globs, .gitignore, hidden folders, symlinks.

Walking never raises for a bad entry: unreadable folders, broken links and symlink loops are
returned as problems with a reason, and the walk goes on.
"""

from __future__ import annotations

import os
import stat
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from pathlib import Path

from pathspec import GitIgnoreSpec


@dataclass(frozen=True, slots=True)
class FoundFile:
    root: str
    path: str
    """POSIX path relative to the root."""
    abspath: str
    mtime_ns: int
    size: int


@dataclass(slots=True)
class ScanResult:
    files: list[FoundFile] = field(default_factory=list)
    problems: list[tuple[str, str]] = field(default_factory=list)
    """(relative path, reason) for entries that could not be examined."""
    unreadable: list[str] = field(default_factory=list)
    """Folders (``.`` for the root) whose contents could not be listed: absent files under
    them are unknown, not deleted."""


@dataclass(frozen=True, slots=True)
class ScanRules:
    include: Sequence[str]
    exclude: Sequence[str] = ()
    include_hidden: bool = False
    gitignore: bool = True
    follow_symlinks: bool = True
    skip_dirs: frozenset[str] = frozenset()
    """Real paths of folders never to enter (the index folder itself)."""


def compile_patterns(patterns: Iterable[str]) -> GitIgnoreSpec:
    return GitIgnoreSpec.from_lines([p for p in patterns if p.strip()])


def scan_root(name: str, root_path: Path, rules: ScanRules) -> ScanResult:
    """All files of one root that the rules admit, with their stat, in sorted order."""
    result = ScanResult()
    root_path = root_path.expanduser()
    try:
        root_real = os.path.realpath(root_path)
        st = os.stat(root_real)
    except OSError as exc:
        result.problems.append((".", f"root is not readable: {exc.strerror or exc}"))
        result.unreadable.append(".")
        return result
    if not stat.S_ISDIR(st.st_mode):
        result.problems.append((".", "root is not a folder"))
        result.unreadable.append(".")
        return result

    include = compile_patterns(rules.include)
    exclude = compile_patterns(rules.exclude)
    # (real folder path, relative folder, .gitignore specs in force: (base, spec))
    stack: list[tuple[str, str, tuple[tuple[str, GitIgnoreSpec], ...], frozenset[tuple[int, int]]]]
    stack = [(root_real, "", (), frozenset({(st.st_dev, st.st_ino)}))]
    while stack:
        folder, rel_dir, ignores, ancestors = stack.pop()
        try:
            entries = sorted(os.scandir(folder), key=lambda e: e.name)
        except OSError as exc:
            result.problems.append((rel_dir or ".", f"folder is not readable: {exc.strerror}"))
            result.unreadable.append(rel_dir or ".")
            continue
        if rules.gitignore:
            spec = _read_gitignore(os.path.join(folder, ".gitignore"))
            if spec is not None:
                ignores = (*ignores, (rel_dir, spec))
        subdirs = []
        for entry in entries:
            name_ = entry.name
            if name_.startswith(".") and not rules.include_hidden:
                continue
            rel = f"{rel_dir}/{name_}" if rel_dir else name_
            try:
                is_link = entry.is_symlink()
                if is_link and not rules.follow_symlinks:
                    continue
                est = entry.stat(follow_symlinks=True)
            except FileNotFoundError:
                result.problems.append((rel, "broken symbolic link"))
                continue
            except OSError as exc:
                reason = "symbolic link loop" if exc.errno == 40 else f"cannot stat: {exc.strerror}"
                result.problems.append((rel, reason))
                continue
            if stat.S_ISDIR(est.st_mode):
                key = (est.st_dev, est.st_ino)
                if key in ancestors:
                    result.problems.append((rel, "symbolic link loop (points to a parent folder)"))
                    continue
                real = os.path.realpath(entry.path) if is_link else entry.path
                if real in rules.skip_dirs or os.path.realpath(real) in rules.skip_dirs:
                    continue
                if _ignored(rel + "/", ignores) or exclude.match_file(rel + "/"):
                    continue
                subdirs.append((real, rel, ignores, ancestors | {key}))
            elif stat.S_ISREG(est.st_mode):
                if not include.match_file(rel) or exclude.match_file(rel):
                    continue
                if _ignored(rel, ignores):
                    continue
                result.files.append(FoundFile(name, rel, entry.path, est.st_mtime_ns, est.st_size))
        stack.extend(reversed(subdirs))
    result.files.sort(key=lambda f: f.path)
    return result


def _read_gitignore(path: str) -> GitIgnoreSpec | None:
    try:
        with open(path, encoding="utf-8", errors="replace") as fh:
            lines = fh.read().splitlines()
    except OSError:
        return None
    return GitIgnoreSpec.from_lines(lines)


def _ignored(rel: str, ignores: tuple[tuple[str, GitIgnoreSpec], ...]) -> bool:
    """Apply .gitignore files from the root down; a deeper file may re-include (``!``)."""
    ignored = False
    for base, spec in ignores:
        sub = rel[len(base) + 1 :] if base else rel
        verdict = spec.check_file(sub).include
        if verdict is not None:
            ignored = verdict
    return ignored
