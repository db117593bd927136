"""The git source: a repository's commit history, one document per commit.

A root ``kind = "git"`` names a folder inside a work tree (or a bare repository). Its
documents are the commits reachable from branches, remote-tracking branches, tags and HEAD,
each named by its full hash and rendered as Markdown (:mod:`noteseek.sources.git.render`).
A commit never changes, so its fingerprint (its committer time, size 0) never does either:
the indexer reads a commit once, ever. A history rewrite (rebase, amend, force-push, a
deleted branch) makes commits unreachable; they drop out of the next scan and the indexer
deletes them, as it does a deleted file.

A scan costs one cheap ref listing when no ref moved (:func:`git_cli.refs_signature`), so
periodic reconciliation of a large history is nearly free; the watcher watches the git dir,
where a commit, fetch or rebase moves refs.
"""

from __future__ import annotations

import os
import threading
from collections.abc import Callable, Iterable, Iterator
from pathlib import Path

from noteseek.config import RootConfig
from noteseek.sources.base import (
    Fingerprint,
    FoundFile,
    PathScan,
    ReadError,
    ScanResult,
    SourceContext,
)
from noteseek.sources.git import GIT_KIND
from noteseek.sources.git.cli import (
    GitError,
    common_dir,
    is_hash,
    reachable,
    refs_signature,
    run,
    toplevel,
)
from noteseek.sources.git.log import Commit, DiffBounds
from noteseek.sources.git.read import read_commits
from noteseek.sources.git.render import render_commit

_REF_NAMES = frozenset({"HEAD", "ORIG_HEAD", "FETCH_HEAD", "packed-refs", "shallow"})
"""Files of a git dir whose change may change which commits are reachable."""


class GitSource:
    """A root of kind ``git``: the commits of one repository."""

    kind = GIT_KIND

    def __init__(
        self,
        name: str,
        root: RootConfig,
        context: SourceContext,
        *,
        bounds: DiffBounds | None = None,
    ) -> None:
        self.name = name
        self.folder = Path(root.path).expanduser()
        git = context.git
        self.bounds = bounds or DiffBounds(
            max_lines_per_file=git.max_file_lines,
            max_lines=git.max_diff_lines,
            max_files=git.max_files,
        )
        self.embed_diffs = git.embed_diffs
        """Whether the hunks of a commit are embedded (its message and file list always are)."""
        self._lock = threading.Lock()
        self._signature: str | None = None
        self._commits: dict[str, int] = {}
        """Hash -> committer time of the last scan's reachable commits."""
        self._files: list[FoundFile] = []
        self._repo: Path | None = None
        self._git_dir: Path | None = None
        self._find_quietly()
        self.location = str(self._repo or self.folder.resolve())

    @property
    def repository(self) -> Path | None:
        """The work tree's top (the git dir of a bare repository); None when not a repo."""
        return self._repo

    def _find(self) -> Path:
        """The repository, looked up again while it is not found (it may be created later)."""
        if self._repo is None:
            try:
                self._repo = toplevel(self.folder)
                self._git_dir = common_dir(self._repo)
            except GitError:
                self._repo = self._git_dir = None
                raise
        return self._repo

    def _find_quietly(self) -> Path | None:
        try:
            return self._find()
        except GitError:
            return None

    # -- the Source protocol ---------------------------------------------------------------

    def scan(self) -> ScanResult:
        try:
            repo = self._find()
            signature = refs_signature(repo)
            with self._lock:
                if signature == self._signature:
                    return ScanResult(files=list(self._files))
            commits = dict(reachable(repo))
        except GitError as exc:
            return ScanResult(problems=[(".", str(exc))], unreadable=["."])
        files = [
            FoundFile(self.name, sha, "", when * 1_000_000_000, 0)
            for sha, when in sorted(commits.items())
        ]
        with self._lock:
            self._signature, self._commits, self._files = signature, commits, files
        return ScanResult(files=list(files))

    def scan_paths(self, rels: Iterable[str]) -> PathScan:
        """Paths are relative to :meth:`watch_folder` (the git dir): a moved ref means the
        set of reachable commits must be listed again; objects, the index and lock files
        being written change nothing by themselves."""
        if any(_is_ref_path(rel) for rel in rels):
            return PathScan(needs_full_scan=True)
        return PathScan()

    def read(self, path: str, limit: int | None = None) -> bytes:
        commit = self.commit(path)
        data = render_commit(commit).text.encode("utf-8")
        return data if limit is None else data[:limit]

    def fingerprint(self, path: str) -> Fingerprint | None:
        when = self._committed(path)
        return None if when is None else Fingerprint(when * 1_000_000_000, 0)

    def inside(self, path: str) -> bool:
        return self._committed(path) is not None

    def locate(self, disk_path: Path) -> str | None:
        return None

    def watch_folder(self) -> Path | None:
        """The folder holding the refs and HEAD (the common git dir of all worktrees)."""
        self._find_quietly()
        return self._git_dir

    # -- for the indexer ---------------------------------------------------------------------

    def commit(self, sha: str) -> Commit:
        """One commit, read with the root's bounds; ReadError with the reason otherwise."""
        if not is_hash(sha):
            raise ReadError(f"{sha!r} is not a full commit hash")
        try:
            for _, found in read_commits(self._find(), [sha], self.bounds):
                if isinstance(found, str):
                    raise ReadError(found)
                return found
        except GitError as exc:
            raise ReadError(str(exc)) from exc
        raise ReadError(f"commit {sha} was not found")

    def commits(self, hashes: Iterable[str]) -> Iterator[tuple[str, Commit | str]]:
        """Read many commits with one git process (see :mod:`noteseek.sources.git.read`)."""
        try:
            repo = self._find()
        except GitError as exc:
            for sha in hashes:
                yield sha, str(exc)
            return
        yield from read_commits(repo, hashes, self.bounds)

    def _committed(self, sha: str) -> int | None:
        """The committer time of a commit of this repository (reachable at the last scan, or
        at least present), without touching the work tree."""
        if not is_hash(sha):
            return None
        with self._lock:
            when = self._commits.get(sha)
        if when is not None:
            return when
        repo = self._find_quietly()
        if repo is None:
            return None
        try:
            out = run(repo, ["log", "-1", "--no-walk", "--format=%ct", sha, "--"])
            return int(out.strip() or b"x")
        except (GitError, ValueError):
            return None


def _is_ref_path(rel: str) -> bool:
    """Whether a changed path of the git dir may move a ref (and so change the history)."""
    parts = [p for p in rel.replace("\\", "/").split("/") if p not in ("", ".")]
    if not parts:
        return True  # The git dir itself: what changed in it is unknown.
    if parts[-1].endswith(".lock"):
        return False  # Written first, then renamed over the ref: the rename is the change.
    if parts[0] == "refs":
        return True
    # logs/HEAD is a reflog: it follows a move of HEAD, which is the change that matters.
    return parts[-1] in _REF_NAMES and "logs" not in parts


def find_repositories(
    folder: Path | str,
    exclude_dirs: Iterable[Path | str] = (),
    max_depth: int = 8,
    skip: Callable[[str], bool] | None = None,
) -> list[Path]:
    """The repositories under ``folder`` (itself included), resolved and sorted.

    A folder holding ``.git`` (a folder, or the file of a worktree or submodule) is a work
    tree; one holding ``HEAD``, ``objects/`` and ``refs/`` is a bare repository. The walk
    stops at a repository (what is inside belongs to it), never enters hidden folders or
    follows symbolic links (a link could lead to the same repository twice, or in a loop),
    skips ``exclude_dirs`` (real paths) and the folders ``skip(rel)`` refuses (``rel`` is the
    POSIX path relative to ``folder`` with a trailing ``/``, as exclude globs match it), and
    goes at most ``max_depth`` folders down.
    """
    top = Path(os.path.realpath(Path(folder).expanduser()))
    excluded = {os.path.realpath(p) for p in exclude_dirs}
    found: list[Path] = []
    stack: list[tuple[Path, int]] = [(top, 0)]
    while stack:
        current, depth = stack.pop()
        if str(current) in excluded:
            continue
        try:
            entries = list(os.scandir(current))
        except OSError:
            continue
        names = {e.name for e in entries}
        if ".git" in names or {"HEAD", "objects", "refs"} <= names:
            found.append(current)
            continue
        if depth >= max_depth:
            continue
        for entry in entries:
            if entry.name.startswith(".") or not entry.is_dir(follow_symlinks=False):
                continue
            child = current / entry.name
            if skip is not None and skip(child.relative_to(top).as_posix() + "/"):
                continue
            stack.append((child, depth + 1))
    return sorted(found)
