"""Turn user-facing filter arguments (dates, ``key=value``) into :class:`Filters`."""

from __future__ import annotations

import re
import time
from collections.abc import Iterable
from datetime import datetime, timedelta

from noteseek.globs import GlobError, check_patterns
from noteseek.types import Filters

SOURCES = ("docs", "memory", "commits", "all")
"""What a search looks in: documents (every root but memory folders and git histories),
memories, commits, or everything."""
MEMORY_KINDS = frozenset({"memory"})
"""Root kinds that hold memories rather than documents."""
COMMIT_KINDS = frozenset({"git"})
"""Root kinds that hold commits rather than documents."""
_SOURCE_KINDS = {"memory": MEMORY_KINDS, "commits": COMMIT_KINDS}

_RELATIVE_RE = re.compile(r"^(\d+)\s*(h|d|w|m|y)$")
_UNIT_DAYS = {"h": 1 / 24, "d": 1, "w": 7, "m": 30, "y": 365}


class FilterError(ValueError):
    """A filter argument is malformed; the message names the argument and the expected form."""


def parse_when(value: str, *, now: float | None = None) -> float:
    """A point in time: ISO date or date-time, ``today``, ``yesterday``, or an age (``7d``)."""
    text = value.strip().lower()
    now = time.time() if now is None else now
    midnight = datetime.fromtimestamp(now).replace(hour=0, minute=0, second=0, microsecond=0)
    if text == "today":
        return midnight.timestamp()
    if text == "yesterday":
        return (midnight - timedelta(days=1)).timestamp()
    m = _RELATIVE_RE.match(text)
    if m:
        return now - int(m.group(1)) * _UNIT_DAYS[m.group(2)] * 86400
    try:
        return datetime.fromisoformat(value.strip().replace("Z", "+00:00")).timestamp()
    except ValueError:
        raise FilterError(
            f"cannot read the date {value!r}: use YYYY-MM-DD, an ISO date-time, 'today', "
            "'yesterday' or an age like 7d, 2w, 6m, 1y"
        ) from None


def parse_where(items: Iterable[str]) -> list[tuple[str, str, str]]:
    """``key=value`` / ``key!=value`` frontmatter conditions."""
    out: list[tuple[str, str, str]] = []
    for item in items:
        m = re.match(r"^\s*([^=!\s][^=!]*?)\s*(!=|=)\s*(.*?)\s*$", item)
        if not m:
            raise FilterError(f"cannot read the condition {item!r}: use key=value or key!=value")
        out.append((m.group(1), m.group(2), m.group(3)))
    return out


def build_filters(
    *,
    paths: Iterable[str] = (),
    tags: Iterable[str] = (),
    roots: Iterable[str] = (),
    after: str | float | None = None,
    before: str | float | None = None,
    where: Iterable[str] = (),
    exclude_paths: Iterable[str] = (),
    kinds: Iterable[str] = (),
    doc_ids: Iterable[str] | None = None,
    authors: Iterable[str] = (),
    changed: Iterable[str] = (),
) -> Filters:
    def when(v: str | float | None) -> float | None:
        if v is None or v == "":
            return None
        return float(v) if isinstance(v, int | float) else parse_when(v)

    path_patterns = [p for p in paths if p]
    excluded = [p.replace("\\", "/") for p in exclude_paths if p.strip()]
    changed_patterns = [p.replace("\\", "/") for p in changed if p.strip()]
    for patterns in (path_patterns, excluded, changed_patterns):
        try:
            check_patterns(patterns)
        except GlobError as exc:
            raise FilterError(str(exc)) from None
    return Filters(
        paths=path_patterns,
        tags=[t.lstrip("#") for t in tags if t.strip("#")],
        roots=[r for r in roots if r],
        after=when(after),
        before=when(before),
        where=parse_where(where),
        exclude_paths=excluded,
        kinds=sorted(set(kinds)),
        doc_ids=None if doc_ids is None else list(doc_ids),
        authors=[a.strip() for a in authors if a.strip()],
        changed=changed_patterns,
    )


def kinds_for(source: str, root_kinds: Iterable[str]) -> list[str]:
    """The root kinds a search of ``source`` looks in, given the kinds the index has; empty
    when every root qualifies (no filter needed). Raises FilterError for an unknown source."""
    if source not in SOURCES:
        raise FilterError(f"source must be one of {', '.join(SOURCES)}, got {source!r}")
    present = set(root_kinds)
    if source == "all":
        return []
    wanted = _SOURCE_KINDS.get(source) or present - MEMORY_KINDS - COMMIT_KINDS
    if present <= wanted:
        return []
    # Nothing of that source indexed: a kind no root has lets nothing through.
    return sorted(wanted & present) or sorted(wanted) or ["files"]
