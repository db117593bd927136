"""The Source protocol: where a root's documents come from, and what it finds.

The indexer, the watcher and the engine's read paths only talk to a root through its source:
which documents it holds now (with a fingerprint that says whether one changed without reading
it), which of a watcher's changed paths are documents, the bytes of one document, and which
folder to watch. A source never raises for a bad document while scanning: what it cannot
examine is returned as a problem with a reason, which the indexer records.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Protocol

from noteseek.config import GitSettings, IndexSettings


@dataclass(frozen=True, slots=True)
class FoundFile:
    """One document a scan found, with its fingerprint."""

    root: str
    path: str
    """POSIX path relative to the root: the document's name inside its root."""
    abspath: str
    """Where a worker process may open the document itself (files); empty when only the
    source can read it (:meth:`Source.read`)."""
    mtime_ns: int
    size: int


@dataclass(frozen=True, slots=True)
class Fingerprint:
    """What says a document changed without reading it."""

    mtime_ns: int
    size: int


@dataclass(slots=True)
class ScanResult:
    """Every document of a root that the rules admit, in sorted order."""

    files: list[FoundFile] = field(default_factory=list)
    problems: list[tuple[str, str]] = field(default_factory=list)
    """(relative path, reason) for entries that could not be examined."""
    unreadable: list[str] = field(default_factory=list)
    """Folders (``.`` for the root) whose contents could not be listed: absent documents under
    them are unknown, not deleted."""


@dataclass(slots=True)
class PathScan:
    """What a scan of some changed paths found for the paths it was given."""

    files: list[FoundFile] = field(default_factory=list)
    """Paths that are documents the rules admit, with their fingerprint, in sorted order."""
    gone: list[str] = field(default_factory=list)
    """Paths that are not admitted documents now (deleted, excluded, ...): nothing at or under
    them belongs in the index."""
    problems: list[tuple[str, str]] = field(default_factory=list)
    """(relative path, reason) for paths that could not be examined, as in a full scan."""
    needs_full_scan: bool = False
    """Some path cannot be judged on its own: the other fields are incomplete and the root
    must be scanned whole."""


def printable_path(path: str) -> str:
    """``path`` as text that can be stored and shown: the bytes of a file name that is not
    valid UTF-8 (which Python keeps as lone surrogates) are written ``\\xNN``."""
    try:
        path.encode("utf-8")
        return path
    except UnicodeEncodeError:
        pass
    try:
        return path.encode("utf-8", "surrogateescape").decode("utf-8", "backslashreplace")
    except UnicodeEncodeError:  # surrogates that did not come from a file name
        return path.encode("utf-8", "backslashreplace").decode("utf-8")


class ReadError(Exception):
    """A document could not be read; the message is the reason the indexer records."""


class WriteRefused(Exception):
    """A kind's writer refused or failed a write (a memory folder's); the message says what to
    do. The doors answer it as invalid unless it is one of the kinds below."""


class WriteNotFound(WriteRefused):
    """The document to change does not exist."""


class WriteConflict(WriteRefused):
    """Another document has that name, or another writer holds the folder."""


@dataclass(frozen=True, slots=True)
class SourceContext:
    """What every source of one index is built with besides its root's own settings."""

    index: IndexSettings
    index_dir: Path
    """The index folder, which a source over a folder must never enter."""
    skip_dirs: frozenset[str] = frozenset()
    """Real paths of folders other roots' sources own (memory folders): a walk of another
    root that contains one never enters it, so nothing is indexed twice."""
    git: GitSettings = field(default_factory=GitSettings)
    """``[git]``: how much of a commit's diff a git root keeps."""


class Source(Protocol):
    """One root's documents (``[roots.NAME]`` with its ``kind``)."""

    @property
    def name(self) -> str:
        """The root's name."""
        ...

    @property
    def kind(self) -> str:
        """The registered kind that built this source (``files``, ...)."""
        ...

    @property
    def location(self) -> str:
        """Where the documents are, as the store records the root (a resolved folder for
        files): a root whose location changed is indexed again from the new place."""
        ...

    def scan(self) -> ScanResult:
        """Every admitted document with its fingerprint."""
        ...

    def scan_paths(self, rels: Iterable[str]) -> PathScan:
        """Judge only ``rels`` (a watcher's batch) by the same rules as :meth:`scan`."""
        ...

    def read(self, path: str, limit: int | None = None) -> bytes:
        """The bytes of one document (at most ``limit``); raises :class:`ReadError`."""
        ...

    def fingerprint(self, path: str) -> Fingerprint | None:
        """The document's fingerprint now; None when it is gone or cannot be examined."""
        ...

    def inside(self, path: str) -> bool:
        """Whether the document really lies inside the root (a symbolic link may lead out);
        only such documents are served to readers."""
        ...

    def locate(self, disk_path: Path) -> str | None:
        """The root-relative path of ``disk_path`` (resolved), or None when it is not in this
        root (or the source has no places on disk)."""
        ...

    def watch_folder(self) -> Path | None:
        """The folder a watcher watches for this root; None when nothing can be watched (the
        root is then brought up to date by reconciliation only)."""
        ...
