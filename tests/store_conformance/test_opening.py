"""Opening an index: what is committed is there when it is opened again, by any handle."""

from __future__ import annotations

from collections.abc import Callable

from noteseek.store.backend import Backend
from noteseek.store.base import Store
from tests.store_conformance.build import MODEL, fill, store_vectors


def test_an_index_opens_again_with_everything_in_it(backend: Backend) -> None:
    first, notice = backend.open()
    assert notice is None
    try:
        ids = fill(first)
        store_vectors(first)
        first.set_manifest({"spec_version": 3})
        chunks = first.stats()["chunks"]
    finally:
        first.close()
    assert backend.present()
    again, notice = backend.open()
    try:
        assert notice is None
        assert again.check() is None  # a sound index passes the full check
        assert again.verify() is None  # and the thorough one, which records nothing against it
        assert again.manifest() == {"spec_version": 3}
        assert {f.doc_id: f.file_id for f in again.iter_files()} == ids
        assert again.stats()["chunks"] == chunks
        assert again.vector_progress(MODEL) == (chunks, chunks)
    finally:
        again.close()


def test_a_reader_opens_beside_the_writer(store: Store, second_handle: Callable[[], Store]) -> None:
    ids = fill(store)
    reader = second_handle()
    assert {f.doc_id: f.file_id for f in reader.iter_files()} == ids
    assert reader.roots() == store.roots()
