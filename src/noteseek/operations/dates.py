"""Date parameters (``after``, ``before``): the shapes every door accepts, declared once.

Agents send dates as text (``2026-01-31``, an ISO time, an age such as ``7d``) or, as the
seed's schema has it, as Unix timestamps: JSON numbers, integers or floats, in seconds. A
number is carried to the search as ``@seconds`` text (what :func:`~noteseek.search.filters.
parse_when` reads, as the CLI's ``--after @1767139200`` does), so a query string's
``20250101`` stays the date it spells: only a JSON number is a number.
"""

from __future__ import annotations

from typing import Annotated, Any

from pydantic import BeforeValidator, WithJsonSchema


def _when(value: Any) -> Any:
    """Text as it is; a JSON number (not true or false) checked and carried as ``@seconds``."""
    if isinstance(value, bool):
        raise ValueError("expected a date or Unix time in seconds, not true or false")
    if isinstance(value, int | float):
        from noteseek.search.filters import FilterError, unix_seconds

        try:
            unix_seconds(value)
        except FilterError as exc:
            raise ValueError(str(exc)) from None
        return f"@{value}" if isinstance(value, int) else f"@{value:.6f}"
    return value


When = Annotated[
    str | None,
    BeforeValidator(_when),
    WithJsonSchema({"anyOf": [{"type": "string"}, {"type": "number"}, {"type": "null"}]}),
]
"""after / before: YYYY-MM-DD, an ISO time, an age (7d), or Unix time in seconds (a JSON
number, ``@1735689600``, or text of at least nine digits), on every door alike."""
WHEN_FORMS = "YYYY-MM-DD, an ISO time, an age (7d), or Unix time in seconds"
