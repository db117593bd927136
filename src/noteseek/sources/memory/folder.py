"""Writing an agent memory folder as plain files: create, append, update, delete and restore,
with no index involved (reading, listing and counting are :mod:`~noteseek.sources.memory.
reading`'s).

The files stay the source of truth that a person can read, diff and edit; the index is derived
from them by the scanning source. So every write is atomic (a hidden temporary file in the same
folder, fsync, rename, fsync of the folder), holds the folder's lock file (agents in several
processes may write at once), is bounded in size, and never rewrites a file it cannot read
faithfully (invalid frontmatter, not UTF-8): such a file is reported, and left for a person to
fix. The layout, the names, the field values, the errors and :class:`MemoryRecord` are in
:mod:`noteseek.sources.memory.format`.

A write costs the same however many memories the folder holds: the folder's table
(:mod:`~noteseek.sources.memory.table`) says which memory already holds a text and which name
looks like a new one, so no write reads the other files (should the table be unusable, a
create reads them all, as it did before the table).
"""

from __future__ import annotations

import builtins
import dataclasses
import datetime as dt
import logging
import os
from collections.abc import Callable, Iterable, Iterator
from contextlib import ExitStack, contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import filelock

from noteseek.sources.memory import format as fmt
from noteseek.sources.memory import names as nm
from noteseek.sources.memory.durable import fsync_dir, make_dirs, write_atomic
from noteseek.sources.memory.format import (
    MEMORY_STATUSES,
    MEMORY_TYPES,
    TRASH,
    InvalidMemory,
    MemoryFolderError,
    NotFound,
)
from noteseek.sources.memory.reading import (
    FolderFiles,
    ListResult,
    MemoryStats,
    mtime_of,
    reason,
)
from noteseek.sources.memory.table import FolderTable, TableError, text_key

__all__ = ["ListResult", "MemoryFolder", "MemoryStats", "WriteResult"]

log = logging.getLogger(__name__)


@dataclass(frozen=True, slots=True)
class WriteResult:
    """What a write did. ``created`` is True when the call added something (a memory, a log
    entry); False when it was there already (identical, or ``duplicate_of`` another memory),
    and for update, delete and restore."""

    name: str
    path: Path
    created: bool
    duplicate_of: str | None
    message: str
    changed: bool = True
    """False when the write found nothing to change (an update to the values already there)."""


@dataclass(slots=True)
class _Held:
    """The folder held by one write: its real path, its table (None when unusable), and the
    memories the write changed (entered into the table before the lock is given up)."""

    base: str
    table: FolderTable | None
    changed: list[str] = field(default_factory=list)


@dataclass
class _DailyPart:
    """One file of a day's log: its name, its text (None: no file yet, or ``full``: grown past
    the limit by hand, never rewritten), and its paths as named and real."""

    name: str
    text: str | None
    full: bool
    apparent: str
    real: str


class MemoryFolder(FolderFiles):
    """An agent memory folder (``MEMORY.md``, ``memory/YYYY-MM-DD.md``, named memories,
    ``.trash/``), written and read as plain files.

    Names are paths relative to the folder without ``.md`` (a trailing ``.md`` is accepted);
    daily logs are ``memory/YYYY-MM-DD`` and the long-term file is ``MEMORY``. ``max_bytes``
    bounds one text; a file may grow to four times that by appending. ``clock`` gives the
    current time (aware, or naive meaning local time).
    """

    def __init__(
        self,
        path: Path | str,
        *,
        max_bytes: int = 262_144,
        lock_timeout: float = 10.0,
        clock: Callable[[], dt.datetime] | None = None,
    ) -> None:
        super().__init__(path, max_bytes=max_bytes)
        self.lock_timeout = lock_timeout
        self._clock = clock or dt.datetime.now
        # Writes hold the lock for milliseconds: poll often, so waiting writers follow soon.
        lock_path = str(self.path / fmt.LOCK_NAME)
        self._lock = filelock.FileLock(lock_path, timeout=lock_timeout, poll_interval=0.005)

    # -- writing -----------------------------------------------------------------------------

    def create(
        self,
        name: str,
        body: str,
        *,
        type: str = "fact",
        tags: Iterable[str] | str = (),
        status: str = "active",
        links: Iterable[str] | str = (),
        title: str | None = None,
    ) -> WriteResult:
        """Write a new named memory. An existing memory of that name is returned unchanged
        when it holds the same (type, status, tags, title, text), and is a :class:`Conflict`
        otherwise; a memory that already holds the same text is returned as ``duplicate_of``.
        ``links`` become a last line ``Related: [[a]], [[b]]``. The name is written in NFC; one
        that differs from an existing memory's or folder's only in how its letters are
        composed names that memory; one that only looks like it (look-alike letters, letter
        case) is a :class:`Conflict`."""
        rel = fmt.check_name(name, new=True)
        kind_type = fmt.check_choice("type", type, MEMORY_TYPES)
        kind_status = fmt.check_choice("status", status, MEMORY_STATUSES)
        tag_list, link_list = fmt.clean_tags(tags), fmt.clean_links(links)
        heading, text = fmt.take_title(
            fmt.clean_title(title), fmt.clean_text("body", body, self.max_bytes)
        )
        related = ", ".join(f"[[{link}]]" for link in link_list)
        rest = "\n\n".join(p for p in (text, related and f"Related: {related}") if p)
        with self._writing() as held:
            base = held.base
            rel = self._present(base, rel)
            apparent, real = self._resolve(base, rel)
            if os.path.lexists(apparent):
                wanted = (kind_type, kind_status, tag_list, heading, rest)
                return self._same_or_conflict(apparent, real, rel, wanted)
            self._refuse_look_alike(held, rel)
            duplicate = self._find_duplicate(held, text) if text else None
            if duplicate is not None:
                message = f"memory {duplicate!r} already holds this text; nothing written"
                path = Path(base, f"{duplicate}.md")
                return WriteResult(duplicate, path, False, duplicate, message, changed=False)
            held.changed.append(rel)
            now = self._now()
            keys = ("type", "status", "tags", "created_at", "updated_at")
            values: tuple[Any, ...] = (kind_type, kind_status, tag_list, now, now)
            frontmatter = dict(zip(keys, values, strict=True))
            top = f"# {heading}" if heading else ""
            body_text = "\n\n".join(p for p in (top, rest) if p)
            self._write(real, f"{fmt.render_frontmatter(frontmatter)}\n{body_text}\n", rel)
        return WriteResult(rel, Path(apparent), True, None, f"created memory {rel!r}")

    def append(
        self, text: str, *, title: str | None = None, when: dt.datetime | None = None
    ) -> WriteResult:
        """Append an entry (``## HH:MM title``) to the daily log of ``when`` (default now),
        creating the folder and the log as needed; an entry already in that log is skipped."""
        entry_text = fmt.clean_text("text", text, self.max_bytes)
        heading = fmt.clean_title(title)
        moment = fmt.local_time(when) if when is not None else self._now()
        header = f"## {moment:%H:%M}" + (f" {heading}" if heading else "")

        def add(old: str | None) -> str | None:
            if old is not None and fmt.has_entry(old, entry_text):
                return None
            log = f"# {moment.date().isoformat()}\n" if old is None else old
            log += "" if log.endswith("\n") or not log else "\n"
            return log + f"\n{header}\n\n{entry_text}\n"

        done = self.edit_daily(moment.date(), add, holds=lambda log: fmt.has_entry(log, entry_text))
        if not done.created:
            return dataclasses.replace(
                done, message=f"{done.name} already has this entry; nothing written"
            )
        return dataclasses.replace(done, message=f"appended an entry to {done.name}")

    def edit_daily(
        self,
        day: dt.date,
        edit: Callable[[str | None], str | None],
        *,
        holds: Callable[[str], bool] | None = None,
        leave: Callable[[str], str | None] | None = None,
    ) -> WriteResult:
        """Read, change and write the daily log of ``day`` under the folder's lock: ``edit``
        gets its text (None when there is no log yet) and returns the new text, or None to
        leave it as it is. Bytes that are not UTF-8 come back as they were.

        A day's log runs on in continuation files (``memory/YYYY-MM-DD-2``, ``-3``...) once a
        file would pass the limit per file: ``edit`` gets the last file that ``holds`` its
        text (an entry to bring up to date where it is), else the day's last file; when the
        result would be too large there, it gets the day's last file (if another) and then a
        new continuation (None). Text that moved out of a file that held it is taken out of it
        by ``leave`` (None: kept)."""
        first = fmt.daily_name(day)
        with self._writing() as held:
            parts = self._daily_parts(held.base, first)
            target = parts[-1]
            if holds is not None:
                holding = [p for p in parts if p.text is not None and holds(p.text)]
                target = holding[-1] if holding else target
            tries = [target] if target is parts[-1] else [target, parts[-1]]
            following = f"{first}-{len(parts) + 1}"
            # A name through a symbolic link out of the folder is refused here.
            tries.append(_DailyPart(following, None, False, *self._resolve(held.base, following)))
            for part in tries:
                if part.full:
                    continue
                new = edit(part.text)
                if new is None or new == part.text:
                    return WriteResult(
                        part.name,
                        Path(part.apparent),
                        False,
                        None,
                        f"{part.name} is unchanged",
                        changed=False,
                    )
                data = new.encode("utf-8", "surrogateescape")
                if len(data) > self.max_file_bytes and part is not tries[-1]:
                    continue  # too large here: on to the day's last file, or a new one
                held.changed.append(part.name)
                self._write(part.real, data, part.name)
                if part is not target and target.text is not None and leave is not None:
                    rest = leave(target.text)
                    if rest is not None and rest != target.text:
                        held.changed.append(target.name)
                        self._write(
                            target.real, rest.encode("utf-8", "surrogateescape"), target.name
                        )
                return WriteResult(part.name, Path(part.apparent), True, None, f"wrote {part.name}")
        raise AssertionError("unreachable: the last try writes or raises")

    def _daily_parts(self, base: str, first: str) -> builtins.list[_DailyPart]:
        """The files of a day's log: ``first`` (its text None when there is none yet), then
        its continuations ``first-2``, ``first-3``... as far as they run without a gap."""
        parts: builtins.list[_DailyPart] = []
        n = 1
        while True:
            name = first if n == 1 else f"{first}-{n}"
            apparent, real = self._resolve(base, name)
            if not os.path.lexists(apparent):
                if n == 1:
                    parts.append(_DailyPart(name, None, False, apparent, real))
                    n += 1
                    continue
                return parts
            try:
                text = self._read_file(real, name)[0].decode("utf-8", "surrogateescape")
                parts.append(_DailyPart(name, text, False, apparent, real))
            except fmt.TooLarge:  # grown past the limit by hand: full, never rewritten
                parts.append(_DailyPart(name, None, True, apparent, real))
            n += 1

    def update(
        self,
        name: str,
        *,
        body: str | None = None,
        type: str | None = None,
        tags: Iterable[str] | str | None = None,
        status: str | None = None,
        title: str | None = None,
        append_text: str | None = None,
    ) -> WriteResult:
        """Change a memory: ``body`` replaces the text after its title heading (a Related line
        included), ``append_text`` adds a paragraph, ``title`` sets the heading; frontmatter
        keys a person added and ``created_at`` are kept, ``updated_at`` is set. A daily log or
        the long-term file without frontmatter gets some only when type, tags or status is set.
        """
        rel = fmt.check_name(name)
        if all(v is None for v in (body, type, tags, status, title, append_text)):
            raise InvalidMemory(
                "nothing to update: give body, append_text, title, type, tags or status"
            )
        fields: dict[str, Any] = {}
        if type is not None:
            fields["type"] = fmt.check_choice("type", type, MEMORY_TYPES)
        if status is not None:
            fields["status"] = fmt.check_choice("status", status, MEMORY_STATUSES)
        if tags is not None:
            fields["tags"] = fmt.clean_tags(tags)
        new_body = None if body is None else fmt.clean_text("body", body, self.max_bytes)
        extra = None
        if append_text is not None:
            extra = fmt.clean_text("append_text", append_text, self.max_bytes)
        heading = fmt.clean_title(title)
        with self._writing() as held:
            rel = self._present(held.base, rel)
            apparent, real = self._resolve(held.base, rel)
            if not os.path.isfile(real):
                raise NotFound(f"no memory named {rel!r}; list the memories to see their names")
            data, st = self._read_file(real, rel)
            doc = fmt.parse_text(fmt.decode_text(data, rel), rel, "it was not changed")
            raw = fmt.raw_frontmatter(doc.yaml)
            out_body = doc.body
            text_changed = heading is not None or new_body is not None or extra is not None
            if text_changed:
                top, rest = fmt.split_heading(doc.body)
                if heading is not None:
                    top = f"# {heading}"
                    if "title" in raw:
                        raw["title"] = heading
                rest = rest.strip("\n") if new_body is None else new_body
                if extra is not None:
                    rest = fmt.add_paragraph(rest, extra)
                out_body = (f"{top}\n\n" if top else "") + rest + "\n"
            if "tags" in fields:
                raw.pop("tag", None)  # one place for tags: both keys would be read as one list
            if not text_changed and doc.yaml is not None and _holds(raw, fields):
                message = f"memory {rel!r} already has these values; nothing written"
                return WriteResult(rel, Path(apparent), False, None, message, changed=False)
            raw.update(fields)
            named = fmt.memory_kind(f"{rel}.md") == "memory"
            if doc.yaml is not None or fields or named:
                if named and "created_at" not in raw:
                    raw["created_at"] = mtime_of(st)  # what listings showed as its creation
                raw["updated_at"] = self._now()
                if doc.yaml is not None and not text_changed:
                    out = fmt.render_frontmatter(raw) + doc.body  # the text exactly as it was
                else:
                    out = fmt.render_frontmatter(raw) + "\n" + out_body.lstrip("\n")
            elif fmt.split_frontmatter(out_body)[0] is not None:
                raise InvalidMemory(
                    f"{rel}: the new text would start with a '---' block that reads as "
                    "frontmatter; start it with something else"
                )
            else:
                out = out_body
            held.changed.append(rel)
            self._write(real, out, rel)
        return WriteResult(rel, Path(apparent), False, None, f"updated memory {rel!r}")

    def delete(self, name: str) -> WriteResult:
        """Move a memory into ``.trash/`` at the same relative path (with a ``~timestamp``
        suffix when an older copy is already there); the result's name is the trash name."""
        rel = fmt.check_name(name)
        with self._writing() as held:
            base = held.base
            rel = self._present(base, rel)
            apparent = self._resolve(base, rel)[0]
            if not os.path.isfile(apparent):
                raise NotFound(f"no memory named {rel!r}; list the memories to see their names")
            held.changed.append(rel)
            trash_rel = rel
            if self._trash_versions(base, rel):
                stamp, n = fmt.trash_stamp(self._now()), 1
                trash_rel = f"{rel}~{stamp}"
                while os.path.lexists(self._resolve(base, trash_rel, trash=True)[0]):
                    n += 1
                    trash_rel = f"{rel}~{stamp}-{n}"
            target = self._resolve(base, trash_rel, trash=True)[0]
            self._move(apparent, target, rel)
        trashed = f"{TRASH}/{trash_rel}"
        message = f"moved {rel!r} to the trash as {trashed!r}; restore brings it back"
        return WriteResult(trashed, Path(target), False, None, message)

    def restore(self, name: str) -> WriteResult:
        """Move a trashed memory back: ``name`` is its trash name (``.trash/...``) or its
        original name (then the most recently deleted copy); refused when the name is taken."""
        chosen: str | None = None
        if isinstance(name, str) and name.startswith(TRASH + "/"):
            chosen, original = fmt.parse_trash_name(name)
        else:
            original = fmt.check_name(name)
        with self._writing() as held:
            base = held.base
            if chosen is None:
                versions = self._trash_versions(base, original)
                if not versions:
                    raise NotFound(
                        f"no deleted memory named {original!r} is in the trash; list with "
                        "include_trash to see what is there"
                    )
                chosen = versions[0]
            source = self._resolve(base, chosen, trash=True)[0]
            if not os.path.isfile(source):
                raise NotFound(f"{TRASH}/{chosen} is not in the trash")
            target = self._resolve(base, original)[0]
            if os.path.lexists(target):
                raise fmt.Conflict(
                    f"cannot restore {original!r}: a memory with that name exists; delete or "
                    "update that one instead"
                )
            held.changed.append(original)
            self._move(source, target, original)
        message = f"restored {TRASH}/{chosen} as {original!r}"
        return WriteResult(original, Path(target), False, None, message)

    @contextmanager
    def _writing(self) -> Iterator[_Held]:
        """Hold the folder's lock (creating the folder first) with its table brought up to
        date; the memories the write lists in ``changed`` are entered into the table before
        the lock is given up."""
        try:
            make_dirs(str(self.path))
        except OSError as exc:
            raise MemoryFolderError(f"cannot create the memory folder: {reason(exc)}") from exc
        try:
            self._lock.acquire()
        except filelock.Timeout:
            raise fmt.Busy(
                f"another writer has held the memory folder's lock for {self.lock_timeout:g} s; "
                "try again in a moment"
            ) from None
        try:
            base = os.path.realpath(self.path)
            with self._table(base) as table:
                held = _Held(base, table)
                try:
                    yield held
                finally:
                    if table is not None:
                        for name in held.changed:
                            table.record(name)
        finally:
            self._lock.release()

    @contextmanager
    def _table(self, base: str) -> Iterator[FolderTable | None]:
        """The folder's table, or None when it cannot be used (said in the log: creates then
        read the folder to find an identical text)."""
        stack = ExitStack()
        try:
            table: FolderTable | None = stack.enter_context(
                FolderTable.opened(base, lambda name: self._digest(base, name))
            )
        except TableError as exc:
            log.warning("%s; looking for identical texts in the files", exc)
            table = None
        try:
            with stack:
                yield table
        except TableError as exc:
            log.warning("%s; the next write lists the folder again", exc)

    def _digest(self, base: str, name: str) -> str | None:
        """The text key of the memory ``name`` as its file holds it (see ``table.py``); None
        where the file is not one memory's text (``format.holds_one_text``)."""
        if not fmt.holds_one_text(fmt.memory_kind(f"{name}.md")):
            return None
        try:
            real = self._resolve(base, name)[1]
            data = self._read_file(real, name)[0]
            doc = fmt.parse_text(fmt.decode_text(data, name), name, "")
        except (MemoryFolderError, OSError):
            return None
        return text_key(fmt.core_text(fmt.split_heading(doc.body)[1].strip("\n")))

    def _refuse_look_alike(self, held: _Held, rel: str) -> None:
        """:class:`Conflict` when a file or folder there looks like ``rel`` or a folder in it."""
        alike = held.table.find_alike(rel) if held.table is not None else None
        if alike is None:
            return
        part, existing = alike
        what = "memory" if part == rel else "folder"
        raise fmt.Conflict(
            f"memory name {rel!r}: {part!r} looks like the existing {what} {existing!r} "
            f"({nm.why_alike(part, existing)}); use {existing!r}, or a name that looks different"
        )

    def _now(self) -> dt.datetime:
        return fmt.local_time(self._clock()).replace(microsecond=0)

    def _write(self, path: str, text: str | bytes, name: str) -> None:
        data = text.encode() if isinstance(text, str) else text
        if len(data) > self.max_file_bytes:
            raise fmt.TooLarge(
                f"{name} would grow to {len(data)} bytes, past the limit of "
                f"{self.max_file_bytes} bytes per file (4 x max_bytes); start a new memory, or "
                "flush the log into a summary"
            )
        try:
            write_atomic(path, data)
        except OSError as exc:
            raise MemoryFolderError(f"could not write {name}: {reason(exc)}") from exc

    def _move(self, source: str, target: str, name: str) -> None:
        try:
            make_dirs(os.path.dirname(target))
            os.rename(source, target)
        except OSError as exc:
            raise MemoryFolderError(f"could not move {name}: {reason(exc)}") from exc
        fsync_dir(os.path.dirname(source))
        fsync_dir(os.path.dirname(target))

    def _find_duplicate(self, held: _Held, text: str) -> str | None:
        """The memory that holds ``text`` already: from the table, else by reading them all."""
        if held.table is not None:
            return held.table.find_text(text_key(fmt.core_text(text)))
        want = fmt.normalise(fmt.core_text(text))
        for name, apparent, real, kind, _ in self._memory_files(held.base, False, []):
            if not fmt.holds_one_text(kind):  # as the table
                continue
            try:
                record = self._record(apparent, real, name, kind, False)
            except (MemoryFolderError, OSError):
                continue
            if fmt.normalise(fmt.core_text(record.body or "")) == want:
                return record.name
        return None

    def _same_or_conflict(
        self, apparent: str, real: str, rel: str, wanted: tuple[Any, ...]
    ) -> WriteResult:
        """The memory already at ``rel``: returned when it holds ``wanted`` (type, status,
        tags, title, text), else :class:`Conflict`."""
        kind = fmt.memory_kind(f"{rel}.md") or "memory"
        try:
            r = self._record(apparent, real, rel, kind, False)
        except (MemoryFolderError, OSError) as exc:
            raise fmt.Conflict(f"a memory named {rel!r} already exists ({reason(exc)})") from exc
        type_, status, tags, title, rest = wanted
        if (
            (r.type, r.status, r.title) == (type_, status, title)
            and [t.casefold() for t in r.tags] == [t.casefold() for t in tags]
            and fmt.normalise(r.body or "") == fmt.normalise(rest)
        ):
            message = f"memory {rel!r} exists with this content"
            return WriteResult(rel, r.path, False, None, message, changed=False)
        raise fmt.Conflict(
            f"a memory named {rel!r} already exists with different content; use update to "
            "change it, or choose another name"
        )

    def _trash_versions(self, base: str, rel: str) -> builtins.list[str]:
        """Trash names of the deleted copies of ``rel``, most recently deleted first."""
        folder, _, stem = rel.rpartition("/")
        try:
            entries = os.listdir(os.path.join(base, TRASH, folder))
        except OSError:
            return []
        return [f"{folder}/{v}" if folder else v for v in fmt.trash_versions(entries, stem)]


def _holds(raw: dict[Any, Any], fields: dict[str, Any]) -> bool:
    """Whether frontmatter ``raw`` has every value of ``fields`` already (tags in one key)."""
    if "tags" in fields and "tag" in raw:
        return False
    return all(raw.get(key) == value for key, value in fields.items())
