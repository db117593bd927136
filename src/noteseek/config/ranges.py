"""A parameter's bounds, read from the settings field that holds its default.

A request's ``top_k`` defaults to ``search.top_k`` and may be what that setting may be; the
engine, every operation's parameters (so the CLI, MCP, HTTP and the page) and the JSON schemas
agents read all take the numbers from here, so no door accepts what another refuses.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import annotated_types
from pydantic import BaseModel

from noteseek.config.search import SearchSettings


@dataclass(frozen=True, slots=True)
class Range:
    """The least and greatest value of one parameter (both included)."""

    name: str
    low: int | float
    high: int | float

    def check(self, value: int | float) -> None:
        """Raise ValueError naming the parameter when ``value`` is outside the range."""
        if not self.low <= value <= self.high:
            raise ValueError(
                f"{self.name} must be between {self.low:g} and {self.high:g}, got {value!r}"
            )

    def schema(self) -> dict[str, Any]:
        """JSON schema keywords."""
        return {"minimum": self.low, "maximum": self.high}


def range_of(section: type[BaseModel], field: str, name: str | None = None) -> Range:
    """The bounds a settings field declares (``ge``/``le``), as parameter ``name``."""
    low = high = None
    for rule in section.model_fields[field].metadata:
        if isinstance(rule, annotated_types.Ge):
            low = rule.ge
        elif isinstance(rule, annotated_types.Le):
            high = rule.le
    if low is None or high is None:
        raise TypeError(f"{section.__name__}.{field} declares no ge and le bounds")
    return Range(name or field, low, high)  # type: ignore[arg-type]


TOP_K = range_of(SearchSettings, "top_k")
"""Results one search returns: ``search.top_k``'s bounds, on every door and the library."""
EXPAND_CHARS = range_of(SearchSettings, "expand_chars")
"""How far a result grows: ``search.expand_chars``'s bounds (``memory.expand_chars``, the
memory kind's default, is declared with the same)."""
SIMILARITY = range_of(SearchSettings, "near_duplicate", "similarity_threshold")
"""A word 3-gram Jaccard similarity: ``search.near_duplicate``'s bounds."""
SCORE = Range("min_score", 0.0, 1.0)
"""A relevance score (0-1): ``min_score``; no setting holds a default for it."""
