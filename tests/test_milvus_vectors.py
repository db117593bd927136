"""Milvus's vector index seam: a restricted search whose allowed keys span several filter
expressions (batches) finds the same neighbours as one expression."""

from __future__ import annotations

from pathlib import Path

import pytest

from noteseek.store.backend import MilvusBackend
from noteseek.store.milvus import MilvusConfig, vectors
from noteseek.types import Filters
from tests.store_conformance.build import DIM, MODEL, fill, store_vectors, unit


def test_a_restricted_search_in_batches_of_keys(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    store, _ = MilvusBackend(MilvusConfig(uri=str(tmp_path / "m.db"))).open()
    try:
        fill(store)
        stored = store_vectors(store)
        allowed = store.filtered_chunk_ids(Filters(roots=["notes"]))
        index = store.vector_index(MODEL, DIM)
        whole = index.search(unit(3), 3, allowed)
        monkeypatch.setattr(vectors, "KEY_BATCH", 1)
        batched = index.search(unit(3), 3, allowed)
        assert [r for r, _ in batched] == [r for r, _ in whole]
        best = sorted(allowed, key=lambda r: -float(stored[r] @ unit(3)))[:3]
        assert [r for r, _ in batched] == best
        index.close()
    finally:
        store.close()
