"""The files source: the files of a folder that its root's rules admit (:mod:`.walk`), and
their bytes, read only from inside the root and only from regular files.
"""

from __future__ import annotations

import os
import stat
from collections.abc import Iterable
from pathlib import Path

from noteseek.config import RootConfig
from noteseek.sources.base import Fingerprint, PathScan, ReadError, ScanResult, SourceContext
from noteseek.sources.walk import (
    OUTSIDE,
    ScanRules,
    not_regular,
    scan_paths,
    scan_root,
    within,
)

__all__ = [
    "FolderSource",
    "ScanRules",
    "folder_rules",
    "read_regular",
    "scan_paths",
    "scan_root",
]


class FolderSource:
    """A root over a folder (kind ``files``, and the base of other folder kinds): the files
    under ``path`` that its rules admit.

    Its documents are files on disk, so :attr:`FoundFile.abspath` is set and the indexer's
    worker processes open large runs' files themselves instead of passing bytes between
    processes; everything else reads through :meth:`read`.
    """

    def __init__(self, name: str, root: RootConfig, context: SourceContext) -> None:
        self.name = name
        self.kind = root.kind
        self.folder = Path(root.path).expanduser()
        self.location = str(self.folder.resolve())
        self.rules = folder_rules(root, context)

    def scan(self) -> ScanResult:
        return scan_root(self.name, self.folder, self.rules)

    def scan_paths(self, rels: Iterable[str]) -> PathScan:
        return scan_paths(self.name, self.folder, self.rules, rels)

    def read(self, path: str, limit: int | None = None) -> bytes:
        # Checked again here, not only by the walk: a link may have been re-pointed since, or
        # the index may have been built by a version that followed links out of the root.
        if not self.inside(path):
            raise ReadError(OUTSIDE)
        return read_regular(os.path.join(self.location, path), limit)

    def fingerprint(self, path: str) -> Fingerprint | None:
        try:
            st = os.stat(os.path.join(self.location, path))
        except OSError:
            return None
        return Fingerprint(st.st_mtime_ns, st.st_size)

    def inside(self, path: str) -> bool:
        """Whether ``path`` really lies inside the root, or may be read all the same (links
        out of the root followed on purpose: ``index.follow_symlinks_outside``)."""
        if self.rules.follow_symlinks_outside:
            return True
        return within(os.path.realpath(os.path.join(self.location, path)), self.location)

    def locate(self, disk_path: Path) -> str | None:
        try:
            return disk_path.relative_to(Path(self.location)).as_posix()
        except ValueError:
            return None

    def watch_folder(self) -> Path | None:
        return self.folder


def folder_rules(root: RootConfig, context: SourceContext) -> ScanRules:
    """The rules a walk of ``root``'s folder follows: its include and exclude patterns and the
    index's settings (hidden files, .gitignore, links, bounds); the index folder and the folders
    other roots own are never entered. One place, so that what else looks under a root
    (``[git] discover``) skips exactly what indexing its files skips."""
    ix = context.index
    folder = os.path.realpath(Path(root.path).expanduser())
    return ScanRules(
        include=root.include,
        exclude=root.exclude,
        include_hidden=ix.include_hidden,
        gitignore=ix.gitignore,
        follow_symlinks=ix.follow_symlinks,
        skip_dirs=frozenset({os.path.realpath(context.index_dir)}) | (context.skip_dirs - {folder}),
        follow_symlinks_outside=ix.follow_symlinks_outside,
        max_depth=ix.max_depth,
        max_entries=ix.max_entries,
    )


def read_regular(path: str, limit: int | None = None) -> bytes:
    """The bytes of the regular file at ``path`` (at most ``limit``); raises ReadError.

    A FIFO, socket or device is refused before it is opened (opening a FIFO waits for a
    writer, reading a device may never end), and again after, in case it was swapped in.
    """
    try:
        mode = os.stat(path).st_mode
        if not stat.S_ISREG(mode):
            raise ReadError(not_regular(mode))
        with open(path, "rb", opener=_open_nonblocking) as fh:
            mode = os.fstat(fh.fileno()).st_mode
            if not stat.S_ISREG(mode):
                raise ReadError(not_regular(mode))
            return fh.read(-1 if limit is None else limit)
    except OSError as exc:
        raise ReadError(f"unreadable: {exc.strerror or exc}") from exc


def _open_nonblocking(path: str, flags: int) -> int:
    return os.open(path, flags | os.O_NONBLOCK)
