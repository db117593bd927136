"""The files source: the files of a folder, admitted by include/exclude globs, .gitignore,
hidden folders and symbolic links.

Walking never raises for a bad entry: unreadable folders, broken links and symlink loops are
returned as problems with a reason, and the walk goes on. :func:`scan_paths` judges a few paths
(a watcher's batch) by the very same rules, without walking the root.
"""

from __future__ import annotations

import os
import stat
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Literal, Protocol

from pathspec import GitIgnoreSpec

from noteseek.config import RootConfig
from noteseek.sources.base import (
    Fingerprint,
    FoundFile,
    PathScan,
    ReadError,
    ScanResult,
    SourceContext,
    printable_path,
)

Ignores = tuple[tuple[str, GitIgnoreSpec], ...]
"""The .gitignore specs in force in a folder, from the root down: (folder rel, spec)."""
FolderKey = tuple[int, int]
"""(st_dev, st_ino) of a folder, to detect symlink loops."""

BAD_FILE_NAME = "file name is not valid UTF-8 (rename the file to index it)"
BAD_FOLDER_NAME = "folder name is not valid UTF-8 (rename the folder to index its files)"


@dataclass(frozen=True, slots=True)
class ScanRules:
    include: Sequence[str]
    exclude: Sequence[str] = ()
    include_hidden: bool = False
    gitignore: bool = True
    follow_symlinks: bool = True
    skip_dirs: frozenset[str] = frozenset()
    """Real paths of folders never to enter (the index folder itself)."""


class FilesSource:
    """A root of kind ``files``: the files under ``path`` that its rules admit.

    Its documents are files on disk, so :attr:`FoundFile.abspath` is set and the indexer's
    worker processes open large runs' files themselves instead of passing bytes between
    processes; everything else reads through :meth:`read`.
    """

    kind = "files"

    def __init__(self, name: str, root: RootConfig, context: SourceContext) -> None:
        self.name = name
        self.folder = Path(root.path).expanduser()
        self.location = str(self.folder.resolve())
        ix = context.index
        self.rules = ScanRules(
            include=root.include,
            exclude=root.exclude,
            include_hidden=ix.include_hidden,
            gitignore=ix.gitignore,
            follow_symlinks=ix.follow_symlinks,
            skip_dirs=frozenset({os.path.realpath(context.index_dir)})
            | (context.skip_dirs - {os.path.realpath(self.folder)}),
        )

    def scan(self) -> ScanResult:
        return scan_root(self.name, self.folder, self.rules)

    def scan_paths(self, rels: Iterable[str]) -> PathScan:
        return scan_paths(self.name, self.folder, self.rules, rels)

    def read(self, path: str, limit: int | None = None) -> bytes:
        try:
            with open(os.path.join(self.location, path), "rb") as fh:
                return fh.read(-1 if limit is None else limit)
        except OSError as exc:
            raise ReadError(f"unreadable: {exc.strerror or exc}") from exc

    def fingerprint(self, path: str) -> Fingerprint | None:
        try:
            st = os.stat(os.path.join(self.location, path))
        except OSError:
            return None
        return Fingerprint(st.st_mtime_ns, st.st_size)

    def inside(self, path: str) -> bool:
        real = Path(os.path.realpath(os.path.join(self.location, path)))
        return real.is_relative_to(Path(os.path.realpath(self.location)))

    def locate(self, disk_path: Path) -> str | None:
        try:
            return disk_path.relative_to(Path(self.location)).as_posix()
        except ValueError:
            return None

    def watch_folder(self) -> Path | None:
        return self.folder


def compile_patterns(patterns: Iterable[str]) -> GitIgnoreSpec:
    return GitIgnoreSpec.from_lines([p for p in patterns if p.strip()])


def scan_root(name: str, root_path: Path, rules: ScanRules) -> ScanResult:
    """All files of one root that the rules admit, with their stat, in sorted order."""
    result = ScanResult()
    opened = _open_root(root_path)
    if isinstance(opened, str):
        result.problems.append((".", opened))
        result.unreadable.append(".")
        return result
    root_real, key = opened
    admission = _Admission.of(rules)
    # (real folder path, relative folder, .gitignore specs in force, folders above it)
    stack: list[tuple[str, str, Ignores, frozenset[FolderKey]]]
    stack = [(root_real, "", (), frozenset({key}))]
    while stack:
        folder, rel_dir, ignores, ancestors = stack.pop()
        try:
            entries = sorted(os.scandir(folder), key=lambda e: e.name)
        except OSError as exc:
            result.problems.append((rel_dir or ".", f"folder is not readable: {exc.strerror}"))
            result.unreadable.append(rel_dir or ".")
            continue
        ignores = admission.ignores_in(folder, rel_dir, ignores)
        subdirs = []
        for entry in entries:
            rel = f"{rel_dir}/{entry.name}" if rel_dir else entry.name
            verdict = admission.examine(entry, rel, ignores, ancestors)
            if verdict.kind == "problem":
                result.problems.append((printable_path(rel), verdict.reason))
            elif verdict.kind == "folder":
                subdirs.append((verdict.real, rel, ignores, ancestors | {verdict.key}))
            elif verdict.kind == "file":
                result.files.append(_found(name, rel, entry.path, verdict))
        stack.extend(reversed(subdirs))
    result.files.sort(key=lambda f: f.path)
    return result


def scan_paths(name: str, root_path: Path, rules: ScanRules, rels: Iterable[str]) -> PathScan:
    """Judge only ``rels`` (POSIX paths relative to the root), exactly as :func:`scan_root`.

    A watcher reports which paths changed, not how; walking the whole root for each batch would
    cost as much as a full run. Each path's folders are checked from the root down (hidden,
    excluded, gitignored, skipped, symlinks, loops) the way a walk would meet them. Absolute
    paths, ``..`` and empty paths are dropped: they cannot name a file of this root.
    """
    result = PathScan()
    opened = _open_root(root_path)
    if isinstance(opened, str):
        result.needs_full_scan = True
        return result
    folders = _Folders(opened[0], opened[1], _Admission.of(rules))
    for rel in sorted({r for r in map(_clean_rel, rels) if r is not None}):
        if rel == ".":
            # The root folder itself: what changed in it is not known file by file.
            result.needs_full_scan = True
            return result
        parts = rel.split("/")
        parent = folders.get(tuple(parts[:-1]))
        if parent is _FULL_SCAN:
            result.needs_full_scan = True
        elif parent is _GONE:
            result.gone.append(rel)
        elif rules.gitignore and parts[-1] == ".gitignore":
            # It changes what is admitted anywhere below it.
            result.needs_full_scan = True
        else:
            assert isinstance(parent, _Folder)
            entry = _lstat_entry(os.path.join(parent.path, parts[-1]))
            if entry is None:
                result.gone.append(rel)
                continue
            verdict = folders.admission.examine(entry, rel, parent.ignores, parent.ancestors)
            if verdict.kind == "file":
                result.files.append(_found(name, rel, entry.path, verdict))
            elif verdict.kind == "problem":
                result.problems.append((printable_path(rel), verdict.reason))
            elif verdict.kind == "folder":
                # Its files are not known one by one (a folder created, moved or restored).
                result.needs_full_scan = True
            else:
                result.gone.append(rel)
        if result.needs_full_scan:
            return result
    return result


# -- shared admission rules -----------------------------------------------------------------


class _Entry(Protocol):
    """The part of ``os.DirEntry`` the rules look at."""

    @property
    def name(self) -> str: ...
    @property
    def path(self) -> str: ...
    def is_symlink(self) -> bool: ...
    def stat(self, *, follow_symlinks: bool = True) -> os.stat_result: ...


@dataclass(frozen=True, slots=True)
class _Verdict:
    kind: Literal["skip", "problem", "folder", "file"]
    reason: str = ""
    real: str = ""
    """For a folder: the path to walk into (resolved when it is a symbolic link)."""
    key: FolderKey = (0, 0)
    st: os.stat_result | None = None


_SKIP = _Verdict("skip")


@dataclass(frozen=True, slots=True)
class _Admission:
    """The rules of a root, compiled once; one place decides what a scan admits."""

    rules: ScanRules
    include: GitIgnoreSpec
    exclude: GitIgnoreSpec

    @classmethod
    def of(cls, rules: ScanRules) -> _Admission:
        return cls(rules, compile_patterns(rules.include), compile_patterns(rules.exclude))

    def ignores_in(self, folder: str, rel_dir: str, ignores: Ignores) -> Ignores:
        """The specs in force inside ``folder``: its parent's plus its own .gitignore."""
        if self.rules.gitignore:
            spec = _read_gitignore(os.path.join(folder, ".gitignore"))
            if spec is not None:
                return (*ignores, (rel_dir, spec))
        return ignores

    def examine(
        self, entry: _Entry, rel: str, ignores: Ignores, ancestors: frozenset[FolderKey]
    ) -> _Verdict:
        """Skip, report, enter (folder) or index (file) one entry of a folder."""
        rules = self.rules
        if entry.name.startswith(".") and not rules.include_hidden:
            return _SKIP
        try:
            is_link = entry.is_symlink()
            if is_link and not rules.follow_symlinks:
                return _SKIP
            est = entry.stat(follow_symlinks=True)
        except FileNotFoundError:
            return _Verdict("problem", "broken symbolic link")
        except OSError as exc:
            reason = "symbolic link loop" if exc.errno == 40 else f"cannot stat: {exc.strerror}"
            return _Verdict("problem", reason)
        if stat.S_ISDIR(est.st_mode):
            key = (est.st_dev, est.st_ino)
            if key in ancestors:
                return _Verdict("problem", "symbolic link loop (points to a parent folder)")
            real = os.path.realpath(entry.path) if is_link else entry.path
            if real in rules.skip_dirs or os.path.realpath(real) in rules.skip_dirs:
                return _SKIP
            if _ignored(rel + "/", ignores) or self.exclude.match_file(rel + "/"):
                return _SKIP
            if not _storable(entry.name):
                return _Verdict("problem", BAD_FOLDER_NAME)
            return _Verdict("folder", real=real, key=key)
        if stat.S_ISREG(est.st_mode):
            if not self.include.match_file(rel) or self.exclude.match_file(rel):
                return _SKIP
            if _ignored(rel, ignores):
                return _SKIP
            if not _storable(entry.name):
                return _Verdict("problem", BAD_FILE_NAME)
            return _Verdict("file", st=est)
        return _SKIP


def _open_root(root_path: Path) -> tuple[str, FolderKey] | str:
    """The root's real path and folder key, or why it cannot be scanned."""
    try:
        root_real = os.path.realpath(root_path.expanduser())
        st = os.stat(root_real)
    except OSError as exc:
        return f"root is not readable: {exc.strerror or exc}"
    if not stat.S_ISDIR(st.st_mode):
        return "root is not a folder"
    return root_real, (st.st_dev, st.st_ino)


def _found(name: str, rel: str, abspath: str, verdict: _Verdict) -> FoundFile:
    assert verdict.st is not None
    return FoundFile(name, rel, abspath, verdict.st.st_mtime_ns, verdict.st.st_size)


# -- scan_paths internals -------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class _Folder:
    """A folder a walk of the root would enter, with what is in force inside it."""

    path: str
    rel: str
    ignores: Ignores
    ancestors: frozenset[FolderKey]


_GONE = object()
"""A folder a walk would not enter (absent, excluded, hidden, not a folder)."""
_FULL_SCAN = object()
"""A folder that cannot be judged without a walk (unreadable, cannot stat, a loop)."""


class _Folders:
    """The folders above a batch's paths, judged once each from the root down."""

    def __init__(self, root_real: str, key: FolderKey, admission: _Admission) -> None:
        self.admission = admission
        self._root = (root_real, key)
        self._seen: dict[tuple[str, ...], object] = {}

    def get(self, parts: tuple[str, ...]) -> object:
        """A :class:`_Folder`, ``_GONE`` or ``_FULL_SCAN`` for the folder ``parts``."""
        if parts not in self._seen:
            self._seen[parts] = self._judge(parts)
        return self._seen[parts]

    def _judge(self, parts: tuple[str, ...]) -> object:
        if not parts:
            real, key = self._root
            return self._enter(real, "", (), frozenset({key}))
        parent = self.get(parts[:-1])
        if not isinstance(parent, _Folder):
            return parent
        rel = "/".join(parts)
        entry = _lstat_entry(os.path.join(parent.path, parts[-1]))
        if entry is None:
            return _GONE
        verdict = self.admission.examine(entry, rel, parent.ignores, parent.ancestors)
        if verdict.kind == "problem":
            # A walk reports it on the folder itself; that takes a walk.
            return _FULL_SCAN
        if verdict.kind != "folder":
            return _GONE
        return self._enter(verdict.real, rel, parent.ignores, parent.ancestors | {verdict.key})

    def _enter(
        self, real: str, rel: str, ignores: Ignores, ancestors: frozenset[FolderKey]
    ) -> object:
        try:
            # A walk lists every folder it enters; one it cannot list keeps its indexed files.
            with os.scandir(real):
                pass
        except OSError:
            return _FULL_SCAN
        return _Folder(real, rel, self.admission.ignores_in(real, rel, ignores), ancestors)


class _PathEntry:
    """One path, shaped like the ``os.DirEntry`` a walk would get for it."""

    __slots__ = ("_lst", "name", "path")

    def __init__(self, path: str, lst: os.stat_result | None) -> None:
        self.path = path
        self.name = os.path.basename(path)
        self._lst = lst

    def is_symlink(self) -> bool:
        return self._lst is not None and stat.S_ISLNK(self._lst.st_mode)

    def stat(self, *, follow_symlinks: bool = True) -> os.stat_result:
        if self._lst is None or (follow_symlinks and self.is_symlink()):
            return os.stat(self.path, follow_symlinks=follow_symlinks)
        return self._lst


def _lstat_entry(path: str) -> _PathEntry | None:
    """The entry at ``path``, or None when nothing is there."""
    try:
        return _PathEntry(path, os.lstat(path))
    except (FileNotFoundError, NotADirectoryError):
        return None
    except OSError:
        # Let examine() meet the error when it stats, and report it as a walk would.
        return _PathEntry(path, None)


def _storable(name: str) -> bool:
    """Whether ``name`` is valid Unicode text (a file name of undecodable bytes is not: the
    index, the doors and JSON can only carry text)."""
    try:
        name.encode("utf-8")
    except UnicodeEncodeError:
        return False
    return True


def _clean_rel(rel: str) -> str | None:
    """``rel`` without ``.`` and empty segments; ``.`` for the root; None to drop it."""
    if not rel or rel.startswith("/"):
        return None
    parts = [p for p in rel.split("/") if p not in ("", ".")]
    if ".." in parts:
        return None
    return "/".join(parts) or "."


def _read_gitignore(path: str) -> GitIgnoreSpec | None:
    try:
        with open(path, encoding="utf-8", errors="replace") as fh:
            lines = fh.read().splitlines()
    except OSError:
        return None
    return GitIgnoreSpec.from_lines(lines)


def _ignored(rel: str, ignores: Ignores) -> bool:
    """Apply .gitignore files from the root down; a deeper file may re-include (``!``)."""
    ignored = False
    for base, spec in ignores:
        sub = rel[len(base) + 1 :] if base else rel
        verdict = spec.check_file(sub).include
        if verdict is not None:
            ignored = verdict
    return ignored
