"""Walking a folder: which files a root's rules admit, and what cannot be read, with reasons.

Walking never raises for a bad entry: unreadable folders, broken links, symlink loops and
anything else it will not read are returned as problems with a reason, and the walk goes on.
Nothing outside the root is entered: a symbolic link whose target lies outside is reported,
not followed (unless ``index.follow_symlinks_outside``). Each real folder is walked once and
each real file found once, by identity (``st_dev``, ``st_ino``), and a walk is bounded in depth
and in entries. :func:`scan_paths` judges a few paths (a watcher's batch) by the very same
rules, without walking the root.
"""

from __future__ import annotations

import os
import stat
from collections import deque
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Literal, Protocol

from pathspec import GitIgnoreSpec

from noteseek.sources.base import FoundFile, PathScan, ScanResult, printable_path

Ignores = tuple[tuple[str, GitIgnoreSpec], ...]
"""The .gitignore specs in force in a folder, from the root down: (folder rel, spec)."""
FolderKey = tuple[int, int]
"""(st_dev, st_ino): what a folder or file is, whatever name or link leads to it."""

BAD_FILE_NAME = "file name is not valid UTF-8 (rename the file to index it)"
BAD_FOLDER_NAME = "folder name is not valid UTF-8 (rename the folder to index its files)"
OUTSIDE = "symbolic link leads outside the root (not read; index.follow_symlinks_outside allows it)"
LOOP = "symbolic link loop (points to a parent folder)"


@dataclass(frozen=True, slots=True)
class ScanRules:
    include: Sequence[str]
    exclude: Sequence[str] = ()
    include_hidden: bool = False
    gitignore: bool = True
    follow_symlinks: bool = True
    skip_dirs: frozenset[str] = frozenset()
    """Real paths of folders never to enter (the index folder itself)."""
    follow_symlinks_outside: bool = False
    """Also follow links whose target lies outside the root (off: reported, never read)."""
    max_depth: int = 64
    """Folders deeper than this below the root are reported, not entered."""
    max_entries: int = 200_000
    """A walk stops after examining this many folder entries, and says so."""


def compile_patterns(patterns: Iterable[str]) -> GitIgnoreSpec:
    return GitIgnoreSpec.from_lines([p for p in patterns if p.strip()])


def not_regular(mode: int) -> str:
    """Why a file of this mode is not read: only regular files are ever opened."""
    kinds = (
        (stat.S_ISFIFO, "FIFO"),
        (stat.S_ISSOCK, "socket"),
        (stat.S_ISCHR, "character device"),
        (stat.S_ISBLK, "block device"),
    )
    kind = next((name for test, name in kinds if test(mode)), "special file")
    return f"not a regular file ({kind}; never opened)"


def within(path: str, folder: str) -> bool:
    """Whether the real path ``path`` is ``folder`` or inside it (both resolved)."""
    return path == folder or path.startswith(folder.rstrip(os.sep) + os.sep)


def scan_root(name: str, root_path: Path, rules: ScanRules) -> ScanResult:
    """All files of one root that the rules admit, with their stat, in sorted order.

    Each real folder is walked once and each real file found once, whatever links lead to
    them: folders reached through a symbolic link are walked after all others, and files
    reached through one are judged last, so a file is indexed under the name it has without
    links, and any second name (a link, a hard link, a folder mounted twice) is reported as a
    duplicate. A loop of any shape is a folder met twice.
    """
    result = ScanResult()
    opened = _open_root(root_path)
    if isinstance(opened, str):
        result.problems.append((".", opened))
        result.unreadable.append(".")
        return result
    root_real, key = opened
    _Walk(name, root_real, key, _Admission.of(rules, root_real), result).run()
    result.files.sort(key=lambda f: f.path)
    return result


_Pending = tuple[str, str, Ignores]
"""A folder to walk: its real path, its path in the root, the .gitignore specs in force."""


class _Walk:
    """One walk of a root (:func:`scan_root`), bounded by ``max_entries``."""

    def __init__(
        self, name: str, root_real: str, key: FolderKey, admission: _Admission, out: ScanResult
    ) -> None:
        self.name = name
        self.admission = admission
        self.out = out
        self.folders: dict[FolderKey, str] = {key: ""}
        """Every folder walked or queued, by identity: its path ("" for the root)."""
        self.files: dict[FolderKey, str] = {}
        """Every file found, by identity: its path."""
        self.stack: list[_Pending] = [(root_real, "", ())]
        self.linked_folders: deque[tuple[_Pending, FolderKey]] = deque()
        self.linked_files: list[tuple[str, _Verdict]] = []
        self.entries = 0

    def run(self) -> None:
        while self.stack or self.linked_folders:
            if not self.stack:
                pending, key = self.linked_folders.popleft()
                if self._claim(pending[1], key):
                    self.stack.append(pending)
                continue
            pending = self.stack.pop()
            if not self._walk(*pending):
                self._stop(pending[1])
                break
        for rel, verdict in sorted(self.linked_files, key=lambda item: item[0]):
            self._admit(rel, verdict)

    def _walk(self, folder: str, rel_dir: str, ignores: Ignores) -> bool:
        """Examine one folder's entries; False when that would pass ``max_entries``."""
        try:
            entries = sorted(os.scandir(folder), key=lambda e: e.name)
        except OSError as exc:
            self.out.problems.append((rel_dir or ".", f"folder is not readable: {exc.strerror}"))
            self.out.unreadable.append(rel_dir or ".")
            return True
        self.entries += len(entries)
        if self.entries > self.admission.rules.max_entries:
            return False
        admission = self.admission
        ignores = admission.ignores_in(folder, rel_dir, ignores)
        subdirs = []
        for entry in entries:
            rel = f"{rel_dir}/{entry.name}" if rel_dir else entry.name
            verdict = admission.examine(entry, rel, ignores)
            if verdict.kind == "problem":
                self.out.problems.append((printable_path(rel), verdict.reason))
            elif verdict.kind == "folder":
                pending = (verdict.real, rel, ignores)
                if not verdict.linked:
                    if self._claim(rel, verdict.key):
                        subdirs.append(pending)
                elif verdict.key in self.folders:
                    self._claim(rel, verdict.key)  # reports the loop or duplicate now
                else:
                    self.linked_folders.append((pending, verdict.key))
            elif verdict.kind == "file":
                if verdict.linked:
                    self.linked_files.append((rel, verdict))
                else:
                    self._admit(rel, verdict)
        self.stack.extend(reversed(subdirs))
        return True

    def _claim(self, rel: str, key: FolderKey) -> bool:
        """Whether the folder ``key`` is new to this walk (it is then recorded as ``rel``)."""
        other = self.folders.get(key)
        if other is None or key[1] == 0:  # no inode numbers on this file system: trust names
            self.folders[key] = rel
            return True
        if not other or rel.startswith(other + "/"):
            reason = LOOP
        else:
            reason = f"duplicate folder (the same folder as {other}, walked there)"
        self.out.problems.append((printable_path(rel), reason))
        return False

    def _admit(self, rel: str, verdict: _Verdict) -> None:
        other = self.files.get(verdict.key)
        if other is not None and verdict.key[1] != 0:
            reason = f"duplicate (the same file as {other}, indexed there)"
            self.out.problems.append((printable_path(rel), reason))
            return
        self.files[verdict.key] = rel
        self.out.files.append(_found(self.name, rel, verdict))

    def _stop(self, rel_dir: str) -> None:
        """Give up at ``max_entries``: what is indexed under the folders left is kept."""
        left = [rel_dir, *(p[1] for p in self.stack), *(p[1] for p, _ in self.linked_folders)]
        self.out.unreadable.extend(r or "." for r in left)
        limit = self.admission.rules.max_entries
        self.out.problems.append(
            (
                rel_dir or ".",
                f"walk stopped (more than index.max_entries = {limit:,} entries in this root): "
                f"{len(left):,} folders from here on not walked, their indexed files kept",
            )
        )


def scan_paths(name: str, root_path: Path, rules: ScanRules, rels: Iterable[str]) -> PathScan:
    """Judge only ``rels`` (POSIX paths relative to the root), exactly as :func:`scan_root`.

    A watcher reports which paths changed, not how; walking the whole root for each batch would
    cost as much as a full run. Each path's folders are checked from the root down (hidden,
    excluded, gitignored, skipped, symlinks, loops) the way a walk would meet them. Absolute
    paths, ``..`` and empty paths are dropped: they cannot name a file of this root. A path
    through a symbolic link, or a file with several names, needs a walk of the root: which name
    a folder or file is found under depends on the whole tree.
    """
    result = PathScan()
    opened = _open_root(root_path)
    if isinstance(opened, str):
        result.needs_full_scan = True
        return result
    folders = _Folders(opened[0], opened[1], _Admission.of(rules, opened[0]))
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
            verdict = folders.admission.examine(entry, rel, parent.ignores)
            if verdict.kind == "file":
                assert verdict.st is not None
                if verdict.linked or verdict.st.st_nlink > 1:
                    # Which of a file's names is indexed depends on the whole root.
                    result.needs_full_scan = True
                else:
                    result.files.append(_found(name, rel, verdict))
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


def folder_test(root_path: Path, rules: ScanRules) -> Callable[[str], bool]:
    """Whether a walk of the root by ``rules`` enters the folder ``rel`` (a POSIX path
    relative to the root; a trailing ``/`` is allowed): judged from the root down exactly as
    :func:`scan_root` and :func:`scan_paths` judge it (hidden, excluded, gitignored, skipped,
    unreadable), so whoever looks for something else under a root (``[git] discover``) sees
    the folders its files are indexed from and no other. A root that cannot be opened enters
    nothing. Each folder is judged once per test."""
    opened = _open_root(root_path)
    if isinstance(opened, str):
        return lambda rel: False
    folders = _Folders(opened[0], opened[1], _Admission.of(rules, opened[0]))

    def enters(rel: str) -> bool:
        clean = _clean_rel(rel.rstrip("/"))
        if clean is None:
            return False
        if clean == ".":
            return True
        return isinstance(folders.get(tuple(clean.split("/"))), _Folder)

    return enters


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
    """The path to walk into or read (resolved when it is a symbolic link)."""
    key: FolderKey = (0, 0)
    st: os.stat_result | None = None
    linked: bool = False
    """Reached through a symbolic link."""


_SKIP = _Verdict("skip")


@dataclass(frozen=True, slots=True)
class _Admission:
    """The rules of a root, compiled once; one place decides what a scan admits."""

    rules: ScanRules
    root: str
    """The root's real path: links must resolve inside it."""
    include: GitIgnoreSpec
    exclude: GitIgnoreSpec

    @classmethod
    def of(cls, rules: ScanRules, root: str) -> _Admission:
        return cls(rules, root, compile_patterns(rules.include), compile_patterns(rules.exclude))

    def ignores_in(self, folder: str, rel_dir: str, ignores: Ignores) -> Ignores:
        """The specs in force inside ``folder``: its parent's plus its own .gitignore."""
        if self.rules.gitignore:
            spec = _read_gitignore(os.path.join(folder, ".gitignore"))
            if spec is not None:
                return (*ignores, (rel_dir, spec))
        return ignores

    def examine(self, entry: _Entry, rel: str, ignores: Ignores) -> _Verdict:
        """Skip, report, enter (folder) or index (file) one entry of a folder.

        Only what the rules would index is judged further (and reported when it cannot be):
        a socket or a link out of the root among excluded files is not worth a problem.
        """
        rules = self.rules
        if entry.name.startswith(".") and not rules.include_hidden:
            return _SKIP
        try:
            linked = entry.is_symlink()
            if linked and not rules.follow_symlinks:
                return _SKIP
            est = entry.stat(follow_symlinks=True)
        except FileNotFoundError:
            return _Verdict("problem", "broken symbolic link")
        except OSError as exc:
            reason = "symbolic link loop" if exc.errno == 40 else f"cannot stat: {exc.strerror}"
            return _Verdict("problem", reason)
        real = os.path.realpath(entry.path) if linked else entry.path
        key = (est.st_dev, est.st_ino)
        if stat.S_ISDIR(est.st_mode):
            if real in rules.skip_dirs or os.path.realpath(real) in rules.skip_dirs:
                return _SKIP
            if _ignored(rel + "/", ignores) or self.exclude.match_file(rel + "/"):
                return _SKIP
            refused = self._refused(entry.name, real, linked, BAD_FOLDER_NAME)
            if refused is None and rel.count("/") >= rules.max_depth:
                refused = f"too deep (more than index.max_depth = {rules.max_depth} folders)"
            if refused is not None:
                return _Verdict("problem", refused)
            return _Verdict("folder", real=real, key=key, linked=linked)
        if not self.include.match_file(rel) or self.exclude.match_file(rel):
            return _SKIP
        if _ignored(rel, ignores):
            return _SKIP
        refused = self._refused(entry.name, real, linked, BAD_FILE_NAME)
        if refused is None and not stat.S_ISREG(est.st_mode):
            refused = not_regular(est.st_mode)
        if refused is not None:
            return _Verdict("problem", refused)
        return _Verdict("file", real=real, key=key, st=est, linked=linked)

    def _refused(self, name: str, real: str, linked: bool, bad_name: str) -> str | None:
        """Why an admitted entry is not read: a link out of the root, a name not UTF-8."""
        if linked and not self.rules.follow_symlinks_outside and not within(real, self.root):
            return OUTSIDE
        if not _storable(name):
            return bad_name
        return None


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


def _found(name: str, rel: str, verdict: _Verdict) -> FoundFile:
    assert verdict.st is not None
    return FoundFile(name, rel, verdict.real, verdict.st.st_mtime_ns, verdict.st.st_size)


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
"""A folder that cannot be judged without a walk (unreadable, cannot stat, a loop, a link)."""


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
        verdict = self.admission.examine(entry, rel, parent.ignores)
        if verdict.kind == "problem":
            # A walk reports it on the folder itself; that takes a walk.
            return _FULL_SCAN
        if verdict.kind != "folder":
            return _GONE
        if verdict.linked or verdict.key in parent.ancestors:
            # Whether a walk enters it under this name depends on the whole tree.
            return _FULL_SCAN
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
