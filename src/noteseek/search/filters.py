"""Compile a search's :class:`~noteseek.search.request.Filter` (dates, ``key=value``, glob
patterns) into the store's :class:`~noteseek.types.Filters`."""

from __future__ import annotations

import re
import time
import unicodedata
from collections.abc import Iterable
from datetime import UTC, datetime, timedelta

from noteseek.analysis import unicode_text
from noteseek.globs import GlobError, check_patterns
from noteseek.search.ask import Filter
from noteseek.types import Filters

_RELATIVE_RE = re.compile(r"^(\d+)\s*(h|d|w|m|y)$")
_UNIT_DAYS = {"h": 1 / 24, "d": 1, "w": 7, "m": 30, "y": 365}
MAX_AGE_DAYS = 3_660_000
"""Longest age (``after=7d``): about 10,000 years, the span of the dates one can write."""
MAX_CONDITIONS = 64
"""Most tags, ``where`` conditions, roots or authors one search may filter on: each is a
condition in the SQL statement, and SQLite refuses an expression over 1,000 deep."""
_DAY = 86400.0
NO_FILTER = Filter()


class FilterError(ValueError):
    """A filter argument is malformed; the message names the argument and the expected form."""


def _shown(value: str) -> str:
    """A value as messages quote it: whole when short, else its start (a message never
    repeats a megabyte back)."""
    return repr(value) if len(value) <= 80 else repr(value[:77]) + "..."


_UNIX_RE = re.compile(r"@?([+-]?\d+(?:\.\d*)?)")
_UNIX_DIGITS = 9
"""Digits a bare number needs to be read as Unix time (``1735689600``): a shorter one is more
likely a year (``2025``) than a moment of 1970, so it is refused, not misread."""
MAX_UNIX = 253_402_300_799.0
"""9999-12-31T23:59:59Z, the last second ``datetime`` holds; -62,135,596,800 is 0001-01-01."""
MIN_UNIX = -62_135_596_800.0


def unix_seconds(value: float | int, shown: str | None = None) -> float:
    """``value`` as seconds since 1970 (Unix time), or :class:`FilterError` when it is no
    moment a date can name (not finite, before year 1 or after year 9999)."""
    try:
        seconds = float(value)
    except OverflowError:
        seconds = float("inf")
    if not MIN_UNIX <= seconds <= MAX_UNIX:  # NaN included
        raise FilterError(
            f"the Unix time {shown or value!r} is not a moment between the years 1 and 9999: "
            f"give seconds since 1970 from {MIN_UNIX:,.0f} to {MAX_UNIX:,.0f}"
        )
    return seconds


def parse_when(value: str, *, now: float | None = None) -> float:
    """A point in time: ISO date or date-time, ``today``, ``yesterday``, an age (``7d``), or
    Unix time in seconds (``@1735689600``, or a bare number of at least nine digits).

    Every date from 0001-01-01 to 9999-12-31 can be written; a date without a time zone is
    local time.
    """
    text = value.strip().lower()
    now = time.time() if now is None else now
    midnight = datetime.fromtimestamp(now).replace(hour=0, minute=0, second=0, microsecond=0)
    if text == "today":
        return midnight.timestamp()
    if text == "yesterday":
        return (midnight - timedelta(days=1)).timestamp()
    m = _RELATIVE_RE.match(text)
    if m:
        digits, unit = m.group(1), m.group(2)
        # int() of thousands of digits is slow and their product overflows a float.
        days = int(digits) * _UNIT_DAYS[unit] if len(digits) <= 10 else float("inf")
        if days > MAX_AGE_DAYS:
            raise FilterError(
                f"the age {_shown(value.strip())} reaches back more than 10,000 years; "
                f"give at most {MAX_AGE_DAYS:,}d (or a date)"
            )
        return now - days * _DAY
    try:
        return timestamp(datetime.fromisoformat(value.strip().replace("Z", "+00:00")))
    except ValueError:
        pass
    m = _UNIX_RE.fullmatch(text) if len(text) <= 40 else None
    if m and (text.startswith("@") or len(m.group(1).lstrip("+-").split(".")[0]) >= _UNIX_DIGITS):
        return unix_seconds(float(m.group(1)), text)
    raise FilterError(
        f"cannot read the date {_shown(value)}: use YYYY-MM-DD, an ISO date-time, 'today', "
        "'yesterday', an age like 7d, 2w, 6m, 1y, or Unix time in seconds (@1735689600, or a "
        "number of at least 9 digits)"
    )


_EPOCH = datetime(1970, 1, 1, tzinfo=UTC)


def when_datetime(value: str) -> datetime:
    """:func:`parse_when` as an aware datetime (local time); a moment before year 1 or after
    year 9999 (an age of 3,000 years, 0001-01-01 east of Greenwich) is clamped to the first
    or last one ``datetime`` holds."""
    seconds = parse_when(value)
    try:
        return datetime.fromtimestamp(seconds).astimezone()
    except (OverflowError, ValueError, OSError):
        return (datetime.min if seconds < 0 else datetime.max).replace(tzinfo=UTC)


def timestamp(moment: datetime) -> float:
    """Seconds since the epoch, for any date ``datetime`` holds.

    ``datetime.timestamp`` converts a naive (local) time through the C library, which fails
    within a day of year 1 and year 9999 ("year 0 is out of range" for 0001-01-01); there the
    local offset is that of two days inward (no time zone moved its clocks in year 1).
    """
    if moment.tzinfo is not None:
        return (moment - _EPOCH).total_seconds()
    try:
        return moment.timestamp()
    except (OverflowError, ValueError, OSError):
        shift = timedelta(days=2) if moment.year < 5000 else timedelta(days=-2)
        return (moment + shift).timestamp() - shift.total_seconds()


def parse_where(items: Iterable[str]) -> list[tuple[str, str, str]]:
    """``key=value`` / ``key!=value`` frontmatter conditions.

    Read by hand, not by a regular expression: a lazy pattern over a megabyte of spaces
    backtracks quadratically.
    """
    out: list[tuple[str, str, str]] = []
    for item in items:
        cut = next((i for i, c in enumerate(item) if c in "=!"), -1)
        op = "!=" if item.startswith("!=", cut) else "=" if cut >= 0 and item[cut] == "=" else ""
        key = item[:cut].strip() if cut >= 0 else ""
        if not op or not key:
            raise FilterError(
                f"cannot read the condition {_shown(item)}: use key=value or key!=value"
            )
        bad = next((c for c in key if unicodedata.category(c) in ("Cc", "Cs")), None)
        if bad is not None:
            raise FilterError(
                f"the key of the condition {_shown(item)} holds the control character "
                f"U+{ord(bad):04X}; frontmatter keys are text"
            )
        out.append((key, op, item[cut + len(op) :].strip()))
    return out


def _texts(values: Iterable[str]) -> list[str]:
    """The values as valid text; one string is one value (not its characters)."""
    if isinstance(values, str):
        values = [values]
    return [unicode_text(v) for v in values]


def _bounded(what: str, values: list[str]) -> list[str]:
    if len(values) > MAX_CONDITIONS:
        raise FilterError(
            f"{len(values)} {what} given; a search filters on at most {MAX_CONDITIONS}"
        )
    return values


def build_filters(asked: Filter = NO_FILTER, kinds: Iterable[str] = ()) -> Filters:
    """``asked`` compiled for the store: dates read, patterns checked, text made valid.

    ``kinds``: only roots of these source kinds (the search's scope). Raises
    :class:`FilterError` naming a malformed value.
    """

    def when(v: str | float | None) -> float | None:
        if v is None or v == "":
            return None
        if isinstance(v, bool):
            raise FilterError("a date cannot be true or false")
        return unix_seconds(v) if isinstance(v, int | float) else parse_when(unicode_text(v))

    # Lone surrogates (bytes that were not UTF-8) cannot be bound to SQL: U+FFFD instead.
    paths, tags, roots = map(_texts, (asked.paths, asked.tags, asked.roots))
    where, exclude_paths = _texts(asked.where), _texts(asked.exclude_paths)
    authors, changed = _texts(asked.authors), _texts(asked.changed)
    doc_ids = [asked.doc_ids] if isinstance(asked.doc_ids, str) else asked.doc_ids
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
        tags=_bounded("tags", [t.lstrip("#") for t in tags if t.strip("#")]),
        roots=_bounded("roots", [r for r in roots if r]),
        after=when(asked.after),
        before=when(asked.before),
        where=parse_where(_bounded("conditions", list(where))),
        exclude_paths=excluded,
        kinds=sorted(set(kinds)),
        doc_ids=None if doc_ids is None else list(doc_ids),
        authors=_bounded("authors", [a.strip() for a in authors if a.strip()]),
        changed=changed_patterns,
    )


def kinds_for(wanted: Iterable[str], root_kinds: Iterable[str]) -> list[str]:
    """The root kinds a search looks in: ``wanted`` (its scope's kinds), given the kinds the
    index has; empty when every root qualifies (no filter needed)."""
    wanted, present = set(wanted), set(root_kinds)
    if present <= wanted:
        return []
    # Nothing of that scope indexed: a kind no root has lets nothing through.
    return sorted(wanted & present) or sorted(wanted)
