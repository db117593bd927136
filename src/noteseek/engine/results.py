"""What the engine returns and raises: search responses, fetched text, lookup errors."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from noteseek.types import Hit

if TYPE_CHECKING:  # the analyzer's users load with a search, not with `noteseek status`
    from noteseek.search.typos import Correction


class NotFound(LookupError):
    """The requested chunk, document or line does not exist in the index."""


class Ambiguous(LookupError):
    """A path names files in several roots; the message lists them."""


@dataclass
class SearchResponse:
    query: str
    hits: list[Hit]
    took_ms: float
    total_candidates: int
    warnings: list[str] = field(default_factory=list)
    mode: str = "keyword"
    """The mode asked for; ``lanes`` says which retrievers actually ran."""
    lanes: dict[str, int] = field(default_factory=dict)
    timings_ms: dict[str, float] = field(default_factory=dict)
    compression: dict[str, Any] | None = None
    """What ``compressed=True`` removed and the tokens it saved."""
    expansion: list[str] = field(default_factory=list)
    """Words query expansion added to the keyword lane (``search.expansion_terms``)."""
    expand_chars: int = 0
    """How far each result's text was grown (asked for, or the searched kind's profile)."""
    corrections: list[Correction] = field(default_factory=list)
    """Query words that matched nothing and the spellings searched besides them."""

    @property
    def did_you_mean(self) -> str:
        """The query with each corrected word replaced by its best alternative ('' if none)."""
        from noteseek.search.typos import did_you_mean

        return did_you_mean(self.query, self.corrections)

    def spelling(self) -> dict[str, Any]:
        """The response's typo-tolerance fields (none when no word was corrected)."""
        if not self.corrections:
            return {}
        return {
            "corrections": [c.to_dict() for c in self.corrections],
            "did_you_mean": self.did_you_mean,
        }

    def to_dict(self) -> dict[str, Any]:
        out = {
            "query": self.query,
            "mode": self.mode,
            "took_ms": round(self.took_ms, 2),
            "lanes": self.lanes,
            "timings_ms": self.timings_ms,
            "results": [h.to_dict() for h in self.hits],
            "warnings": self.warnings,
        }
        if self.compression is not None:
            out["compression"] = self.compression
        if self.expansion:
            out["expansion"] = self.expansion
        out.update(self.spelling())
        return out


@dataclass
class GetResult:
    kind: str
    """``chunk``, ``section`` or ``document``."""
    root: str
    path: str
    doc_id: str
    title: str
    heading_path: tuple[str, ...]
    start_line: int
    end_line: int
    text: str
    chunk_ids: list[str]
    stale: bool = False
    """The file changed since it was indexed (the text shown is what was indexed)."""

    def to_dict(self) -> dict[str, Any]:
        return {
            "kind": self.kind,
            "root": self.root,
            "path": self.path,
            "doc_id": self.doc_id,
            "title": self.title,
            "heading_path": list(self.heading_path),
            "start_line": self.start_line,
            "end_line": self.end_line,
            "chunk_ids": self.chunk_ids,
            "stale": self.stale,
            "text": self.text,
        }
