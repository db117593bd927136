"""Vector store and vector index: vectors by key, progress, pending texts, nearest neighbours."""

from __future__ import annotations

import numpy as np
import pytest

from noteseek.store.base import Store
from noteseek.types import Filters
from tests.store_conformance.build import (
    DIM,
    MODEL,
    fill,
    make_file,
    store_vectors,
    unit,
)


def brute_force(vectors: dict[int, np.ndarray], q: np.ndarray, k: int) -> list[int]:
    return sorted(vectors, key=lambda r: -float(vectors[r] @ q))[:k]


def test_pending_texts_are_distinct_keys_shortest_first(store: Store) -> None:
    shared = ("", "the same words")
    fill(
        store,
        [
            make_file("notes", "a.md", [("", "a much longer section of text"), shared]),
            make_file("notes", "b.md", [shared]),
        ],
    )
    pending = store.pending_embeddings(MODEL)
    assert len(pending) == 2  # the shared section is embedded once
    texts = [store.chunk_rows([rowid])[0].text for _, rowid in pending]
    assert texts == ["the same words", "a much longer section of text"]
    key, rowid = pending[0]
    assert store.chunk_rows([rowid])[0].embed_key == key
    assert rowid == min(
        r.rowid
        for f in store.iter_files()
        for r in store.file_chunks(f.file_id)
        if r.embed_key == key
    )


def test_stored_vectors_count_for_every_chunk_with_their_key(store: Store) -> None:
    shared = ("", "the same words")
    fill(
        store,
        [make_file("notes", "a.md", [shared, ("", "other")]), make_file("notes", "b.md", [shared])],
    )
    assert store.vector_progress(MODEL) == (0, 3)
    assert store.vector_models() == {}
    b_id = store.find_files("b.md")[0].file_id
    key = store.file_chunks(b_id)[0].embed_key
    store.put_vectors(MODEL, [(key, unit(1).tobytes())])
    assert store.vector_progress(MODEL) == (2, 3)  # both chunks with the shared text
    assert store.vector_models() == {MODEL: 1}
    assert key not in [k for k, _ in store.pending_embeddings(MODEL)]
    store_vectors(store)
    assert store.vector_progress(MODEL) == (3, 3)
    assert store.pending_embeddings(MODEL) == []
    assert store.vector_progress("another-model") == (0, 3)
    store.put_vectors(MODEL, [(key, unit(2).tobytes())])  # replaced, not added
    assert store.vector_models() == {MODEL: 2}


def test_a_chunk_without_a_key_is_never_embedded_nor_awaited(store: Store) -> None:
    """A chunk with no embedding key (a commit's hunk under ``git.embed_diffs = false``) is
    not pending and does not count as waiting for a vector: the index is fully embedded
    without it."""
    prepared = make_file("notes", "a.md", [("", "a message"), ("", "a hunk's changed lines")])
    prepared.chunks[1].embed_key = ""
    fill(store, [prepared])
    assert [store.chunk_rows([r])[0].text for _, r in store.pending_embeddings(MODEL)] == [
        "a message"
    ]
    assert store.vector_progress(MODEL) == (0, 1)
    store.put_vectors(MODEL, [(prepared.chunks[0].embed_key, unit(1).tobytes())])
    assert store.vector_progress(MODEL) == (1, 1)
    assert store.pending_embeddings(MODEL) == []


def test_vectors_by_rowid(store: Store) -> None:
    fill(store)
    vectors = store_vectors(store)
    keys = store.vector_chunk_keys(MODEL)
    assert [r for r, _ in keys] == sorted(vectors)
    assert all(store.chunk_rows([r])[0].embed_key == k for r, k in keys)
    everything = store.all_chunk_vectors(MODEL)
    assert [r for r, _, _ in everything] == sorted(vectors)
    wanted = sorted(vectors)[1:3]
    got = store.chunk_vectors(MODEL, [*wanted, *range(10**6, 10**6 + 1000)])  # batched lookups
    assert sorted(r for r, _, _ in got) == wanted
    for rowid, key, blob in got:
        assert dict(keys)[rowid] == key
        assert np.array_equal(np.frombuffer(blob, dtype=np.float32), vectors[rowid])
    assert store.chunk_vectors(MODEL, []) == []
    assert store.chunk_vectors("another-model", wanted) == []


def test_drop_and_prune(store: Store) -> None:
    ids = fill(store)
    store_vectors(store)
    store.put_vectors(
        "old-model", [(k, unit(9).tobytes()) for k, _ in store.vector_chunk_keys(MODEL)]
    )
    assert store.drop_vectors(keep_model=MODEL) == 6
    assert set(store.vector_models()) == {MODEL}
    with store.transaction():
        store.delete_file(ids["docs/guide.md"])
    assert store.prune_vectors(MODEL) == 2  # the guide's two sections
    assert store.vector_models() == {MODEL: 4}
    assert store.prune_vectors(MODEL) == 0
    assert store.drop_vectors() == 4
    assert store.vector_models() == {}
    assert store.prune_vectors(MODEL) == 0  # a model with no vector stored: nothing to prune
    assert store.prune_vectors("never-used") == 0


# -- the vector index seam ----------------------------------------------------------------------


def test_search_finds_the_nearest_vectors(store: Store) -> None:
    fill(store)
    vectors = store_vectors(store)
    index = store.vector_index(MODEL, DIM)
    try:
        for seed in range(5):
            q = unit(100 + seed)
            hits = index.search(q, 3)
            assert [r for r, _ in hits] == brute_force(vectors, q, 3)
            assert hits[0][1] == pytest.approx(float(vectors[hits[0][0]] @ q), abs=1e-5)
        assert index.size == len(vectors) == 6
        assert index.search(unit(1), 0) == []
        assert len(index.search(unit(1), 100)) == 6
    finally:
        index.close()


def test_search_within_an_allowed_set(store: Store) -> None:
    fill(store)
    vectors = store_vectors(store)
    index = store.vector_index(MODEL, DIM)
    allowed = store.filtered_chunk_ids(Filters(roots=["docs"]))
    q = unit(7)
    hits = index.search(q, 5, allowed)
    assert [r for r, _ in hits] == brute_force({r: vectors[r] for r in allowed}, q, 5)
    assert len(hits) == len(allowed) == 2  # never starved by the restriction
    assert index.search(q, 5, []) == []
    assert index.search(q, 5, [10**9]) == []
    index.close()


@pytest.mark.parametrize("ann_limit", [16_384, 2])
def test_search_within_large_allowed_sets(
    store: Store, monkeypatch: pytest.MonkeyPatch, ann_limit: int
) -> None:
    # Milvus searches without the filter when it lets many chunks through (more than
    # KEY_BATCH: 1 here), fetching more until enough allowed chunks are among the nearest,
    # and falls back to filtered searches once it has fetched ANN_LIMIT without finding them.
    import noteseek.store.milvus.vectors as milvus_vectors

    monkeypatch.setattr(milvus_vectors, "KEY_BATCH", 1)
    monkeypatch.setattr(milvus_vectors, "ANN_LIMIT", ann_limit)
    fill(store)
    vectors = store_vectors(store)
    index = store.vector_index(MODEL, DIM)
    try:
        q = unit(11)
        ranked = brute_force(vectors, q, len(vectors))
        for allowed in (ranked, ranked[1:], ranked[-2:], ranked[::2]):
            hits = index.search(q, 3, sorted(allowed))
            assert [r for r, _ in hits] == brute_force({r: vectors[r] for r in allowed}, q, 3)
            assert hits[0][1] == pytest.approx(float(vectors[hits[0][0]] @ q), abs=1e-5)
    finally:
        index.close()


def test_vectors_for_rows(store: Store) -> None:
    fill(store)
    vectors = store_vectors(store)
    index = store.vector_index(MODEL, DIM)
    some = sorted(vectors)[:2]
    got = index.vectors_for([*some, 10**9])
    assert sorted(got) == some
    for rowid in some:
        assert got[rowid].dtype == np.float32
        assert np.allclose(got[rowid], vectors[rowid])
    assert index.vectors_for([]) == {}
    index.close()


def test_the_index_follows_adds_and_deletes(store: Store) -> None:
    ids = fill(store)
    store_vectors(store)
    index = store.vector_index(MODEL, DIM)
    index.sync()
    assert index.size == 6
    gone = set(store.file_chunk_rowids(ids["notes/job/alpha.md"]))
    with store.transaction():
        store.delete_file(ids["notes/job/alpha.md"])
    (new_id,) = fill(store, [make_file("notes", "new.md", [("", "brand new words")])]).values()
    index.settle(60)  # catches up like sync, and finishes any background work
    assert index.size == 4  # two gone; the new section has no vector yet
    vectors = store_vectors(store, seed=50)
    (new_row,) = store.file_chunk_rowids(new_id)
    gone.discard(new_row)  # a backend may hand a freed rowid out again
    index.sync()
    assert index.size == 5
    hits = index.search(vectors[new_row], 5)
    assert hits[0][0] == new_row and hits[0][1] == pytest.approx(1.0, abs=1e-5)
    assert not {r for r, _ in hits} & gone
    assert index.vectors_for(sorted(gone)) == {}
    index.close()


def test_an_index_reads_only_its_model(store: Store) -> None:
    fill(store)
    store_vectors(store)
    other = store.vector_index("another-model", DIM)
    assert other.search(unit(1), 5) == [] and other.size == 0
    other.close()
