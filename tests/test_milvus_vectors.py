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


class _Flaky:
    """The store's client, whose next upserts fail as Milvus's C++ engine sometimes answers a
    busy write ("internal error", code 5) -- or with ``message``. That engine's passing error
    cannot be produced on demand, so it is injected here, in front of a real Milvus Lite."""

    def __init__(self, client: object, failures: int, message: str = "internal error") -> None:
        self._client, self.failures, self.message, self.sent = client, failures, message, 0

    def upsert(self, *args: object, **kwargs: object) -> object:
        from pymilvus.exceptions import MilvusException

        self.sent += 1
        if self.failures > 0:
            self.failures -= 1
            raise MilvusException(code=5, message=self.message)
        return self._client.upsert(*args, **kwargs)  # type: ignore[attr-defined]

    def __getattr__(self, name: str) -> object:
        return getattr(self._client, name)


def test_an_upsert_the_server_fails_for_a_moment_is_sent_again(tmp_path: Path) -> None:
    store, _ = MilvusBackend(MilvusConfig(uri=str(tmp_path / "m.db"))).open()
    try:
        flaky = _Flaky(store.client, failures=2)
        store.client = flaky  # type: ignore[assignment]
        fill(store)  # every write of a whole index goes through, each sent up to 3 times
        assert flaky.failures == 0 and flaky.sent > 2
        assert store.filtered_chunk_ids(Filters(roots=["notes"]))
    finally:
        store.close()


@pytest.mark.parametrize(("failures", "message"), [(3, "internal error"), (1, "no such field")])
def test_an_upsert_that_keeps_failing_or_is_refused_raises(
    tmp_path: Path, failures: int, message: str
) -> None:
    from pymilvus.exceptions import MilvusException

    store, _ = MilvusBackend(MilvusConfig(uri=str(tmp_path / "m.db"))).open()
    try:
        flaky = _Flaky(store.client, failures, message)
        store.client = flaky  # type: ignore[assignment]
        with pytest.raises(Exception) as raised:
            fill(store)
        assert isinstance(raised.value, MilvusException) or message in str(raised.value)
        assert flaky.sent == min(failures, 3)
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
