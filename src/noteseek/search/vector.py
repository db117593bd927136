"""TRANSITIONAL (issue 13): engine.py still builds its vector index here.

The index moved to ``noteseek.store.ann`` and a store hands it out (``Store.vector_index``), so a
backend with its own ANN index plugs in. Delete this module once the engine asks its store
(``self.store.vector_index(model, dimension, dtype=..., hnsw_threshold=...)``) and imports
``in_background`` from ``noteseek.store.ann``.
"""

from __future__ import annotations

from pathlib import Path

from noteseek.store import factory
from noteseek.store.ann import InMemoryVectorIndex, in_background
from noteseek.store.base import VectorDType
from noteseek.store.sqlite import SQLiteStore

__all__ = ["VectorIndex", "in_background"]


class VectorIndex(InMemoryVectorIndex):
    """What ``SQLiteStore.vector_index`` returns, under the engine's old constructor."""

    def __init__(
        self,
        store: SQLiteStore,
        model: str,
        dimension: int,
        *,
        dtype: VectorDType = "float32",
        hnsw_threshold: int = 0,
    ) -> None:
        index_dir = Path(store.path).parent
        super().__init__(
            store,
            model,
            dimension,
            open_reader=lambda: factory.open_reader(index_dir),
            dtype=dtype,
            hnsw_threshold=hnsw_threshold,
        )
