"""Diversity: no duplicate of a better-ranked result, a bounded number per document.

With the per-document limit (``search.max_per_document``, 1 by default) results are grouped by
document: a document's best section is the result, and the further sections of it that ranked
before the last result are listed under it ("also in this document", at most ``ALSO_MAX``)
instead of filling the list with one document's weaker sections.
"""

from __future__ import annotations

from typing import Any

import numpy as np
import numpy.typing as npt

from noteseek.config import SearchSettings
from noteseek.search.compress import shingles, similar
from noteseek.search.fusion import Fused
from noteseek.search.rows import CandidateRows
from noteseek.search.stages.base import StageContext
from noteseek.store.base import VectorIndex

ALSO_MAX = 3
"""Most further sections listed under a result of a document at its limit."""


def _diversifying(settings: SearchSettings) -> bool:
    return bool(
        settings.dedupe
        or settings.near_duplicate
        or settings.semantic_duplicate
        or settings.max_per_document
    )


def diversify(
    rows: CandidateRows,
    fused: list[Fused],
    k: int,
    settings: SearchSettings,
    vectors: VectorIndex | None = None,
    also: dict[int, list[int]] | None = None,
) -> list[Fused]:
    """The first ``k`` results without duplicates of a better-ranked result and with at most
    ``max_per_document`` sections per document (0: no limit).

    A duplicate is, by the switches on: the same section text (``dedupe``, content hash), word
    3-grams overlapping by ``near_duplicate`` Jaccard or more, or embeddings at
    ``semantic_duplicate`` cosine or more (results without a vector are never semantic
    duplicates). Rows and vectors are read in windows, so a long list costs only what it takes
    to keep ``k``.
    ``also``, when given, receives for a kept result the rowids of its document's sections
    that the per-document limit left out (see the module docstring).
    """
    near, semantic, per_document = (
        settings.near_duplicate,
        settings.semantic_duplicate if vectors is not None else 0.0,
        settings.max_per_document,
    )
    out: list[Fused] = []
    seen_text: set[str] = set()
    kept_grams: list[frozenset[int]] = []
    kept_mat: npt.NDArray[np.float32] | None = None  # the kept results' vectors, row by row
    kept_n = 0
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
        vecs = vectors.vectors_for(present) if semantic and vectors is not None else {}
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
                if semantic and vectors is not None:
                    vecs.update(vectors.vectors_for([item.rowid]))
            if settings.dedupe and row.content_hash in seen_text:
                continue
            if per_document and places.full(row.file_id):
                places.list_under(row.file_id, item.rowid, row.content_hash not in seen_text)
                continue
            grams = shingles(row.text) if near else frozenset()
            if near and any(similar(grams, other, near) for other in kept_grams):
                continue
            vec = vecs.get(item.rowid)
            if (
                vec is not None
                and kept_mat is not None
                and kept_n
                and float(np.max(kept_mat[:kept_n] @ vec)) >= semantic
            ):
                continue
            seen_text.add(row.content_hash)
            kept_grams.append(grams)
            if vec is not None:
                if kept_mat is None:
                    kept_mat = np.empty((k, vec.shape[0]), dtype=np.float32)
                kept_mat[kept_n] = vec
                kept_n += 1
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

    def enabled(self, candidates: list[Fused], context: StageContext) -> bool:
        return _diversifying(context.settings)

    def apply(self, candidates: list[Fused], context: StageContext) -> list[Fused]:
        vectors = context.resources.vectors
        return diversify(
            context.rows,
            candidates,
            context.request.k,
            context.settings,
            vectors.index if vectors else None,
            context.also,
        )

    def explain(self, item: Fused) -> dict[str, Any]:
        return {}
