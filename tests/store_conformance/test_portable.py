"""The portable role: files read as stored and written into another index with their ids, so
the copy (``store/migrate.py``) holds and answers exactly what the original does."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from noteseek.store.backend import Backend
from noteseek.store.base import Store
from noteseek.store.migrate import copy_index, counts, is_empty
from noteseek.store.rows import EdgeRow
from noteseek.types import Filters
from tests.store_conformance.build import (
    DIM,
    MODEL,
    ROOTS,
    WEIGHTS,
    fill,
    make_file,
    store_vectors,
    words,
)
from tests.store_conformance.conftest import PREFIX, another


@pytest.fixture
def other(backend: Backend, tmp_path: Path) -> Iterator[Store]:
    """A second, empty index of the same backend."""
    opened, _ = another(backend, tmp_path / "copy", "copy").open()
    yield opened
    opened.close()


def populated(store: Store) -> dict[str, int]:
    ids = fill(store)
    alpha, guide = ids["notes/job/alpha.md"], ids["docs/guide.md"]
    store.write_graph(
        {guide: [EdgeRow(guide, "notes/job/alpha.md", alpha, "links_to", 2, "Goals", "see")]},
        {guide: ["alpha", "x" * 2000]},
        {guide: "guide|Guide", alpha: "alpha|Alpha"},
        sorted(ids.values()),
    )
    store.set_communities({alpha: 0, guide: 0})
    store.set_meta("embedding_model", MODEL)
    store.set_problems("notes", "bad.md", [("skipped", "too large")], 7, 8)
    store.record_run(1.0, 2.0, {"added": 4})
    store_vectors(store)
    return ids


def test_files_come_back_as_they_were_written(store: Store) -> None:
    ids = populated(store)
    assert store.file_ids() == sorted(ids.values())
    alpha = ids["notes/job/alpha.md"]
    (exported,) = store.export_files([alpha, 10**9])  # a missing id is left out
    assert exported.file_id == alpha and exported.kind == "files"
    rec = exported.prepared.record
    assert (rec.root, rec.path, rec.doc_id) == ("notes", "job/alpha.md", "notes/job/alpha.md")
    assert list(exported.rowids) == store.file_chunk_rowids(alpha)
    assert [c.chunk.chunk_id for c in exported.prepared.chunks] == [
        r.chunk_id for r in store.file_chunks(alpha)
    ]
    assert all(len(c.fields) == 6 for c in exported.prepared.chunks)
    assert exported.node == "alpha|Alpha" and exported.taken
    guide = store.export_files([ids["docs/guide.md"]])[0]
    assert [e.target for e in guide.edges] == ["notes/job/alpha.md"]
    assert "alpha" in guide.keys
    assert store.meta_values()["embedding_model"] == MODEL
    assert "manifest" not in store.meta_values()
    assert store.vector_dimensions() == {MODEL: DIM}


def test_a_copy_holds_and_answers_what_the_original_does(store: Store, other: Store) -> None:
    populated(store)
    assert is_empty(other) and not is_empty(store)
    other.import_files([])  # nothing to write: still empty
    assert is_empty(other)
    copy_index(store, other, batch=2)
    assert counts(other) == counts(store)
    ids = store.file_ids()
    assert other.file_ids() == ids
    mine, theirs = store.export_files(ids), other.export_files(ids)
    for a, b in zip(mine, theirs, strict=True):
        # A key too long for one backend is kept as a digest there: that file stays marked.
        assert (a.file_id, a.prepared, a.rowids, a.edges, a.node) == (
            b.file_id,
            b.prepared,
            b.rowids,
            b.edges,
            b.node,
        )
    assert other.meta_values() == store.meta_values()
    assert other.roots() == ROOTS and other.root_kinds() == store.root_kinds()
    assert other.stored_communities() == store.stored_communities()
    assert other.last_run() == store.last_run()
    assert other.skipped_states("notes") == {"bad.md": (7, 8)}
    rowids = [r for f in mine for r in f.rowids]
    assert other.chunk_vectors(MODEL, rowids) == store.chunk_vectors(MODEL, rowids)
    for mode in ("all", "any"):
        query = words("alpha", "beta")
        a = store.keyword_search(query, mode, Filters(), 10, WEIGHTS)
        assert other.keyword_search(query, mode, Filters(), 10, WEIGHTS) == a
    # Ids handed out after the copy are above every copied one.
    with other.transaction():
        other.ensure_root("more", "/data/more")
    new = other.write_file(make_file("more", "n.md", [("S", "fresh words")]), 3.0, None)
    assert new > max(ids) and min(other.file_chunk_rowids(new)) > max(rowids)


def test_wipe_leaves_nothing(store: Store) -> None:
    populated(store)
    store.wipe()
    assert is_empty(store)
    assert counts(store) == dict.fromkeys(counts(store), 0)
    assert store.meta_values() == {} and store.vector_dimensions() == {}
    assert store.stored_communities() is None and store.last_run() is None
    fill(store)  # still usable
    assert len(store.file_ids()) == 4


def test_wipe_leaves_another_index_alone(store: Store, backend: Backend, tmp_path: Path) -> None:
    """Another index beside it (in Milvus: a prefix that starts with this one's) keeps all."""
    beside, _ = another(backend, tmp_path / "beside", f"{PREFIX}_x").open()
    try:
        populated(beside)
        before = counts(beside)
        populated(store)
        store.wipe()
        assert is_empty(store) and counts(beside) == before
    finally:
        beside.close()
