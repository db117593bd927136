"""The reading side of a memory folder: names to files (never out of the folder through a
symbolic link), one memory, the list of them and their counts, with no index involved.

:class:`FolderFiles` is what :class:`~noteseek.sources.memory.folder.MemoryFolder` (the writing
side) builds on; a file that cannot be read is reported, never fatal to a listing.
"""

from __future__ import annotations

import builtins
import dataclasses
import datetime as dt
import os
import unicodedata
from collections import Counter
from collections.abc import Iterable, Iterator
from dataclasses import dataclass, field
from pathlib import Path

from noteseek.sources.memory import format as fmt
from noteseek.sources.memory.format import (
    MEMORY_STATUSES,
    MEMORY_TYPES,
    TRASH,
    MemoryFolderError,
    MemoryKind,
    NotFound,
)
from noteseek.sources.memory.record import MemoryRecord, build_record, fields_match


@dataclass(slots=True)
class ListResult:
    records: list[MemoryRecord] = field(default_factory=list)
    """Newest first, without bodies."""
    problems: list[tuple[str, str]] = field(default_factory=list)
    """(name, reason) of files that could not be read: reported, never fatal."""


@dataclass(frozen=True, slots=True)
class MemoryStats:
    memories: int
    """Memory files outside the trash, daily logs and the long-term file included."""
    by_type: dict[str, int]
    by_status: dict[str, int]
    daily_logs: int
    total_bytes: int
    trash: int
    oldest: dt.datetime | None
    newest: dt.datetime | None
    problems: int


class FolderFiles:
    """A memory folder's files as memories: read, listed and counted (see
    :class:`~noteseek.sources.memory.folder.MemoryFolder` for the layout and the names)."""

    def __init__(self, path: Path | str, *, max_bytes: int = 262_144) -> None:
        if max_bytes < 1:
            raise ValueError("max_bytes must be positive")
        self.path = Path(os.path.abspath(Path(path).expanduser()))
        self.max_bytes = max_bytes
        self.max_file_bytes = max_bytes * 4

    def read(self, name: str) -> MemoryRecord:
        """One memory with its body (a trash name ``.trash/...`` reads a deleted one)."""
        trashed = isinstance(name, str) and name.startswith(TRASH + "/")
        if trashed:
            rel, original = fmt.parse_trash_name(name)
        else:
            rel = original = fmt.check_name(name)
        base = os.path.realpath(self.path)
        if not trashed:
            rel = original = self._present(base, rel)
        apparent, real = self._resolve(base, rel, trash=trashed)
        if not os.path.isfile(real):
            raise NotFound(f"no memory named {name!r}; list the memories to see their names")
        shown = f"{TRASH}/{rel}" if trashed else rel
        kind = fmt.memory_kind(f"{original}.md") or "memory"
        return self._record(apparent, real, shown, kind, trashed)

    def stats(self) -> MemoryStats:
        """Counts over the folder (trash apart), and how many files could not be read."""
        listed = self.list(include_trash=True)
        live = [r for r in listed.records if not r.trashed]
        created = [r.created_at for r in live]
        return MemoryStats(
            memories=len(live),
            by_type=dict(Counter(r.type for r in live)),
            by_status=dict(Counter(r.status for r in live)),
            daily_logs=sum(r.kind == "daily" for r in live),
            total_bytes=sum(r.size for r in live),
            trash=len(listed.records) - len(live),
            oldest=min(created, default=None),
            newest=max(created, default=None),
            problems=len(listed.problems),
        )

    def list(
        self,
        *,
        type: str | None = None,
        tags: Iterable[str] | str = (),
        status: str | None = None,
        after: dt.datetime | None = None,
        before: dt.datetime | None = None,
        include_trash: bool = False,
    ) -> ListResult:
        """Memories (without bodies), newest first, filtered: every tag must be present (case
        apart; ``project`` matches ``project/atlas``), created at or after ``after`` and before
        ``before``. Files that cannot be read are reported in ``problems``."""
        want_type = None if type is None else fmt.check_choice("type", type, MEMORY_TYPES)
        want_status = (
            None if status is None else fmt.check_choice("status", status, MEMORY_STATUSES)
        )
        want_tags = [t.casefold() for t in fmt.clean_tags(tags)]
        start, end = (None if v is None else fmt.local_time(v) for v in (after, before))
        result = ListResult()
        base = os.path.realpath(self.path)
        for name, apparent, real, kind, trashed in self._memory_files(
            base, include_trash, result.problems
        ):
            try:
                record = self._record(apparent, real, name, kind, trashed)
            except (MemoryFolderError, OSError) as exc:
                result.problems.append((name, reason(exc)))
                continue
            if fields_match(
                record, type=want_type, status=want_status, tags=want_tags, after=start, before=end
            ):
                result.records.append(dataclasses.replace(record, body=None))
        result.records.sort(key=lambda r: r.name)
        result.records.sort(key=lambda r: r.created_at, reverse=True)
        return result

    def _resolve(self, base: str, rel: str, *, trash: bool = False) -> tuple[str, str]:
        """(path as named, real path) of a memory's file, refused when symbolic links take it
        out of the folder, or onto a file that is not a memory (or not in the trash)."""
        prefix = TRASH + "/" if trash else ""
        apparent = os.path.join(base, f"{prefix}{rel}.md")
        real = os.path.realpath(apparent)
        real_rel = os.path.relpath(real, base).replace(os.sep, "/")
        inner = real_rel.removeprefix(prefix)
        if trash and inner.endswith(".md"):
            inner = fmt.split_trash_name(inner[:-3])[0] + ".md"
        if (
            not real_rel.startswith(prefix)
            or real_rel.startswith("../")
            or not fmt.memory_kind(inner)
        ):
            raise fmt.InvalidName(
                f"memory name {rel!r} leads outside the memory folder (or to a file that is not "
                "a memory) through a symbolic link; choose another name"
            )
        return apparent, real

    def _read_file(self, path: str, name: str) -> tuple[bytes, os.stat_result]:
        with open(path, "rb") as fh:
            st = os.fstat(fh.fileno())
            data = fh.read(self.max_file_bytes + 1)
        if len(data) > self.max_file_bytes:
            raise fmt.TooLarge(
                f"{name} is larger than the limit of {self.max_file_bytes} bytes per file "
                "(4 x max_bytes); split it by hand"
            )
        return data, st

    def _record(
        self, apparent: str, real: str, name: str, kind: MemoryKind, trashed: bool
    ) -> MemoryRecord:
        data, st = self._read_file(real, name)
        return build_record(name, Path(apparent), kind, data, mtime_of(st), trashed=trashed)

    def _memory_files(
        self, base: str, include_trash: bool, problems: builtins.list[tuple[str, str]]
    ) -> Iterator[tuple[str, str, str, MemoryKind, bool]]:
        """(name, path, real path, kind, trashed) of every memory file, in name order; links
        leading out of the folder and links to folders are reported, not followed."""
        tops = [(base, False)]
        if include_trash and os.path.isdir(os.path.join(base, TRASH)):
            tops.append((os.path.join(base, TRASH), True))
        for top, trashed in tops:
            for dirpath, dirnames, filenames in os.walk(top):
                rel_dir = os.path.relpath(dirpath, top).replace(os.sep, "/")
                prefix = "" if rel_dir == "." else rel_dir + "/"
                dirnames[:] = sorted(d for d in dirnames if not d.startswith((".", "~")))
                for d in [d for d in dirnames if os.path.islink(os.path.join(dirpath, d))]:
                    problems.append((prefix + d, "a symbolic link to a folder; not followed"))
                for filename in sorted(filenames):
                    rel = prefix + filename
                    original = fmt.split_trash_name(rel[:-3])[0] + ".md" if trashed else rel
                    kind = fmt.memory_kind(original) if rel.endswith(".md") else None
                    if kind is None:
                        continue
                    name = f"{TRASH}/{rel[:-3]}" if trashed else rel[:-3]
                    try:
                        real = self._resolve(base, rel[:-3], trash=trashed)[1]
                    except fmt.InvalidName:
                        problems.append((name, "a symbolic link leading out of the memory folder"))
                        continue
                    yield name, os.path.join(dirpath, filename), real, kind, trashed

    def _present(self, base: str, rel: str) -> str:
        """``rel``, or the form of it (NFC or NFD) that names a file there: ``café`` typed
        with a combining accent finds the file written with one code point, and the other way
        round (macOS keeps names decomposed)."""
        if os.path.lexists(os.path.join(base, f"{rel}.md")):
            return rel
        for form in ("NFC", "NFD"):
            other = unicodedata.normalize(form, rel)
            if other != rel and os.path.lexists(os.path.join(base, f"{other}.md")):
                return other
        return rel


def mtime_of(st: os.stat_result) -> dt.datetime:
    return dt.datetime.fromtimestamp(int(st.st_mtime)).astimezone()


def reason(exc: BaseException) -> str:
    return (exc.strerror or str(exc)) if isinstance(exc, OSError) else str(exc)
