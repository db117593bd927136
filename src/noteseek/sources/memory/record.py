"""One memory as read: its record (fields, title, body) and its fields with the folder's
defaults, shared by the folder's listings and the index's memory filters, so both read a
memory the same way."""

from __future__ import annotations

import datetime as dt
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from noteseek.parse.frontmatter import frontmatter_tags
from noteseek.sources.memory.format import (
    MemoryKind,
    as_datetime,
    daily_date,
    decode_text,
    heading_title,
    local_time,
    parse_text,
    split_heading,
)

_DEFAULT_TYPE: dict[MemoryKind, str] = {"daily": "journal", "long_term": "fact", "memory": "fact"}


@dataclass(frozen=True, slots=True)
class MemoryRecord:
    """One memory file as read. ``body`` is the text after the frontmatter and the leading
    ``# title`` heading (None in listings); ``frontmatter`` is JSON-safe. A daily log was
    created on its date; other files without ``created_at``/``updated_at`` at their mtime."""

    name: str
    path: Path
    kind: MemoryKind
    type: str
    status: str
    tags: tuple[str, ...]
    created_at: dt.datetime
    updated_at: dt.datetime
    title: str | None
    body: str | None
    frontmatter: dict[str, Any]
    size: int
    trashed: bool = False


@dataclass(frozen=True, slots=True)
class MemoryFields:
    """A memory's fields with the folder's defaults: a daily log is a ``journal`` created on
    its date, no ``status`` is ``active``, no ``created_at`` is the file's time."""

    type: str
    status: str
    tags: tuple[str, ...]
    created_at: dt.datetime


def memory_fields(
    name: str, kind: MemoryKind, fm: dict[str, Any], mtime: dt.datetime
) -> MemoryFields:
    """The fields of the memory ``name`` (its path without ``.md``) of ``kind``."""
    day = daily_date(name.rsplit("/", 1)[-1].split("~")[0]) if kind == "daily" else None
    if day is not None:
        created = local_time(dt.datetime.combine(day, dt.time()))
    else:
        created = as_datetime(fm.get("created_at")) or mtime
    type_, status = _scalar(fm.get("type")) or _DEFAULT_TYPE[kind], _scalar(fm.get("status"))
    tags = tuple(dict.fromkeys(frontmatter_tags(fm)))
    return MemoryFields(type_, status or "active", tags, created)


def fields_match(
    fields: MemoryFields | MemoryRecord,
    *,
    type: str | None = None,
    status: str | None = None,
    tags: Iterable[str] = (),
    after: dt.datetime | None = None,
    before: dt.datetime | None = None,
) -> bool:
    """Whether a memory passes: every tag present (case apart; ``project`` matches
    ``project/atlas``), created at or after ``after`` and before ``before``."""
    have = [t.casefold() for t in fields.tags]
    wanted = [t.lstrip("#").casefold() for t in tags]
    return (
        type in (None, fields.type)
        and status in (None, fields.status)
        and all(any(h == t or h.startswith(t + "/") for h in have) for t in wanted)
        and (after is None or fields.created_at >= after)
        and (before is None or fields.created_at < before)
    )


def build_record(
    name: str, path: Path, kind: MemoryKind, data: bytes, mtime: dt.datetime, *, trashed: bool
) -> MemoryRecord:
    """The record of a memory file's bytes; :class:`InvalidMemory` when they are not UTF-8
    or the frontmatter is invalid."""
    doc = parse_text(decode_text(data, name), name, "fix it by hand")
    fm = doc.frontmatter
    heading, rest = split_heading(doc.body)
    fields = memory_fields(name, kind, fm, mtime)
    return MemoryRecord(
        name=name,
        path=path,
        kind=kind,
        type=fields.type,
        status=fields.status,
        tags=fields.tags,
        created_at=fields.created_at,
        updated_at=as_datetime(fm.get("updated_at")) or mtime,
        title=_scalar(fm.get("title")) or heading_title(heading),
        body=rest.strip("\n"),
        frontmatter=fm,
        size=len(data),
        trashed=trashed,
    )


def _scalar(value: Any) -> str | None:
    if isinstance(value, bool) or not isinstance(value, str | int | float) or value == "":
        return None
    return str(value)
