"""Diversity: a bounded number per document, and (optional) no duplicate of a better one.

With the per-document limit (``search.max_per_document``, 1 by default) results are grouped by
document: a document's best section is the result, and the further sections of it that ranked
before the last result are listed under it ("also in this document", at most ``ALSO_MAX``)
instead of filling the list with one document's weaker sections. The duplicate rules
(``stages/duplicates.py``) are optional stages: they run here only when a setting names them.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from noteseek.config import SearchSettings
from noteseek.search.fusion import Fused
from noteseek.search.rows import CandidateRows
from noteseek.search.stages.base import StageContext
from noteseek.search.stages.registry import DuplicateRule, duplicate_rules
from noteseek.store.base import VectorIndex

ALSO_MAX = 3
"""Most further sections listed under a result of a document at its limit."""


def diversify(
    rows: CandidateRows,
    fused: list[Fused],
    k: int,
    settings: SearchSettings,
    vectors: VectorIndex | None = None,
    also: dict[int, list[int]] | None = None,
    duplicates: Sequence[DuplicateRule] | None = None,
) -> list[Fused]:
    """The first ``k`` results with at most ``max_per_document`` sections per document (0: no
    limit) and, when a duplicate rule is on (``stages/duplicates.py``; by default none), without
    duplicates of a better-ranked result.

    ``duplicates``: the rules in force (default: the ones ``settings`` name, comparing
    embeddings from ``vectors``). Rows are read in windows, so a long list costs only what it
    takes to keep ``k``. ``also``, when given, receives for a kept result the rowids of its
    document's sections that the per-document limit left out (see the module docstring).
    """
    rules = duplicate_rules(settings, vectors) if duplicates is None else duplicates
    per_document = settings.max_per_document
    out: list[Fused] = []
    seen_text: set[str] = set()
    places = _Places(per_document, also)
    step = max(k * 2, 50)
    for start in range(0, len(fused), step):
        window = fused[start : start + step]
        wanted = [f.rowid for f in window]
        files: dict[int, int] = {}
        if per_document:
            # File ids (known from the lanes, or read alone) tell which sections cannot be
            # kept nor listed: their whole rows are not read.
            files = rows.file_ids(wanted)
            wanted = places.with_room(wanted, files)
        by_id = rows.get(wanted)  # read window by window: k kept is enough
        present = [f.rowid for f in window if f.rowid in by_id]
        for rule in rules:
            rule.window(present)
        for item in window:
            row = by_id.get(item.rowid)
            if row is None:
                file_id = files.get(item.rowid)
                if file_id is None or places.room(file_id) <= 0:
                    continue  # deleted since the lanes ran, or its document is complete
                # Room was left by a duplicate dropped in this window: read it after all.
                row = rows.get([item.rowid]).get(item.rowid)
                if row is None:
                    continue
                for rule in rules:
                    rule.window([item.rowid])
            if per_document and places.full(row.file_id):
                places.list_under(row.file_id, item.rowid, row.content_hash not in seen_text)
                continue
            if any(rule.duplicate(item.rowid, row) for rule in rules):
                continue
            seen_text.add(row.content_hash)
            for rule in rules:
                rule.keep(item.rowid, row)
            places.keep(row.file_id, item.rowid)
            out.append(item)
            if len(out) >= k:
                return out
    return out


class _Places:
    """Each document's places in the results: its kept sections (at most ``per_document``)
    and, under its best one, the further sections listed in ``also`` (at most ``ALSO_MAX``)."""

    def __init__(self, per_document: int, also: dict[int, list[int]] | None) -> None:
        self.per_document = per_document
        self.also = also
        self.kept: dict[int, int] = {}  # file id -> sections kept
        self.first_of: dict[int, int] = {}  # file id -> the rowid of its best kept result

    def full(self, file_id: int) -> bool:
        """Whether the document has all the results it may have."""
        return self.kept.get(file_id, 0) >= self.per_document

    def keep(self, file_id: int, rowid: int) -> None:
        self.kept[file_id] = self.kept.get(file_id, 0) + 1
        self.first_of.setdefault(file_id, rowid)

    def list_under(self, file_id: int, rowid: int, new_text: bool) -> None:
        """List a section left out by the limit under its document's result (a section whose
        text a kept result already shows is not listed)."""
        if self.also is not None:
            listed = self.also.setdefault(self.first_of[file_id], [])
            if len(listed) < ALSO_MAX and new_text:
                listed.append(rowid)

    def room(self, file_id: int) -> int:
        """How many more sections of the document could be kept or listed."""
        room = self.per_document - self.kept.get(file_id, 0)
        if self.also is not None:
            first = self.first_of.get(file_id)
            room += ALSO_MAX - (len(self.also.get(first, ())) if first is not None else 0)
        return room

    def with_room(self, rowids: list[int], files: dict[int, int]) -> list[int]:
        """``rowids`` without the sections that come after their document's room is used up,
        as if every section before them took a place (one dropped as a duplicate does not:
        then :func:`diversify` reads the next one after all)."""
        left: dict[int, int] = {}
        out: list[int] = []
        for rowid in rowids:
            file_id = files.get(rowid)
            if file_id is None:
                out.append(rowid)
                continue
            room = left.get(file_id)
            if room is None:
                room = self.room(file_id)
            if room > 0:
                out.append(rowid)
            left[file_id] = room - 1
        return out


class Diversify:
    name = "diversify"
    full_rows = False  # reads whole rows only of the windows it gets through

    def __init__(self, duplicates: Sequence[DuplicateRule] = ()) -> None:
        self.duplicates = duplicates
        """The duplicate rules the settings name (optional stages; none by default)."""

    def enabled(self, candidates: list[Fused], context: StageContext) -> bool:
        return bool(context.settings.max_per_document or self.duplicates)

    def apply(self, candidates: list[Fused], context: StageContext) -> list[Fused]:
        vectors = context.resources.vectors
        return diversify(
            context.rows,
            candidates,
            context.request.k,
            context.settings,
            vectors.index if vectors else None,
            context.also,
            self.duplicates,
        )

    def explain(self, item: Fused) -> dict[str, Any]:
        return {}
