"""Duplicate removal (optional): the diversity stage drops a result that repeats a kept one.

* ``dedupe`` (``search.dedupe``): the same section text (content hash);
* ``near-duplicates`` (``search.near_duplicate``): word 3-grams overlapping by that Jaccard
  similarity or more (an edited copy);
* ``semantic-duplicates`` (``search.semantic_duplicate``): embeddings at that cosine or more
  (results without a vector are never semantic duplicates).
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
import numpy.typing as npt

from noteseek.config import SearchSettings
from noteseek.search.compress import shingles, similar
from noteseek.search.stages.registry import DuplicateRule, register
from noteseek.store.base import VectorIndex
from noteseek.store.rows import ChunkRow


@register
class ExactDuplicates(DuplicateRule):
    name = "dedupe"
    setting = "search.dedupe"

    def __init__(self) -> None:
        self.seen: set[str] = set()

    @classmethod
    def for_settings(
        cls, settings: SearchSettings, vectors: VectorIndex | None
    ) -> ExactDuplicates | None:
        return cls() if settings.dedupe else None

    def duplicate(self, rowid: int, row: ChunkRow) -> bool:
        return row.content_hash in self.seen

    def keep(self, rowid: int, row: ChunkRow) -> None:
        self.seen.add(row.content_hash)


@register
class NearDuplicates(DuplicateRule):
    name = "near-duplicates"
    setting = "search.near_duplicate"

    def __init__(self, threshold: float) -> None:
        self.threshold = threshold
        self.kept: list[frozenset[int]] = []
        self.last: tuple[int, frozenset[int]] = (-1, frozenset())

    @classmethod
    def for_settings(
        cls, settings: SearchSettings, vectors: VectorIndex | None
    ) -> NearDuplicates | None:
        return cls(settings.near_duplicate) if settings.near_duplicate else None

    def duplicate(self, rowid: int, row: ChunkRow) -> bool:
        grams = shingles(row.text)
        self.last = (rowid, grams)
        return any(similar(grams, other, self.threshold) for other in self.kept)

    def keep(self, rowid: int, row: ChunkRow) -> None:
        self.kept.append(self.last[1] if self.last[0] == rowid else shingles(row.text))


@register
class SemanticDuplicates(DuplicateRule):
    name = "semantic-duplicates"
    setting = "search.semantic_duplicate"

    def __init__(self, threshold: float, vectors: VectorIndex | None) -> None:
        self.threshold = threshold
        self.vectors = vectors  # None (no embeddings): no result is a semantic duplicate
        self.window_vectors: dict[int, npt.NDArray[np.float32]] = {}
        self.kept: npt.NDArray[np.float32] | None = None  # the kept results' vectors, by row
        self.kept_n = 0

    @classmethod
    def for_settings(
        cls, settings: SearchSettings, vectors: VectorIndex | None
    ) -> SemanticDuplicates | None:
        threshold = settings.semantic_duplicate
        return cls(threshold, vectors) if threshold else None

    def window(self, rowids: Sequence[int]) -> None:
        if self.vectors is not None:
            self.window_vectors.update(self.vectors.vectors_for(list(rowids)))

    def duplicate(self, rowid: int, row: ChunkRow) -> bool:
        vec = self.window_vectors.get(rowid)
        return bool(
            vec is not None
            and self.kept is not None
            and self.kept_n
            and float(np.max(self.kept[: self.kept_n] @ vec)) >= self.threshold
        )

    def keep(self, rowid: int, row: ChunkRow) -> None:
        vec = self.window_vectors.get(rowid)
        if vec is None:
            return
        if self.kept is None or self.kept_n == len(self.kept):
            grown = np.empty((max(16, 2 * self.kept_n), vec.shape[0]), dtype=np.float32)
            if self.kept is not None:
                grown[: self.kept_n] = self.kept[: self.kept_n]
            self.kept = grown
        self.kept[self.kept_n] = vec
        self.kept_n += 1
