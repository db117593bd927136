"""Milvus's vector index seam: a restricted search whose allowed keys span several filter
expressions (batches) finds the same neighbours as one expression."""

from __future__ import annotations

from pathlib import Path
from typing import Any

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


def test_a_new_index_uses_safe_keys_without_reading_its_own_row_back(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Milvus's C++ engine sometimes does not return a row just upserted: a new index that read
    its ``safe_keys`` row back and missed it was taken for an old one and wrote raw keys (a
    quote in one failed the commit). The miss is made here, in front of a real Milvus Lite."""
    from noteseek.store.milvus import core, schema

    real = core.MilvusCore._query

    def missing_safe_keys(self: Any, table: str, expr: str, *args: Any, **kwargs: Any) -> Any:
        if schema.SAFE_KEYS in expr:
            return []
        return real(self, table, expr, *args, **kwargs)

    monkeypatch.setattr(core.MilvusCore, "_query", missing_safe_keys)
    store, _ = MilvusBackend(MilvusConfig(uri=str(tmp_path / "m.db"))).open()
    try:
        assert store._safe_keys  # type: ignore[attr-defined]
        assert store._key(schema.KEYED[0], "it's") == schema.safe_key("it's")  # type: ignore[attr-defined]
    finally:
        store.close()
    # An existing index is read as it says (here: as if it had no such row, an old index).
    store, _ = MilvusBackend(MilvusConfig(uri=str(tmp_path / "m.db"))).open()
    try:
        assert not store._safe_keys  # type: ignore[attr-defined]
    finally:
        store.close()
