"""Opening an index: what is committed is there when it is opened again, by any handle."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import pytest

from noteseek.store.base import Store
from noteseek.store.factory import open_reader, open_store
from tests.store_conformance.build import MODEL, fill, store_vectors
from tests.store_conformance.conftest import Backend


def test_an_index_opens_again_with_everything_in_it(backend: Backend, index_dir: Path) -> None:
    first, notice = open_store(index_dir, backend=backend)
    assert notice is None
    try:
        ids = fill(first)
        store_vectors(first)
        first.set_manifest({"spec_version": 3})
        chunks = first.stats()["chunks"]
    finally:
        first.close()
    again, notice = open_store(index_dir, backend=backend)
    try:
        assert notice is None
        assert again.check() is None  # a sound index passes the full check
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


def test_an_unknown_backend_is_refused(tmp_path: Path) -> None:
    with pytest.raises(ValueError, match="unknown store backend 'nosuch'"):
        open_store(tmp_path, backend="nosuch")
    with pytest.raises(ValueError, match="unknown store backend"):
        open_reader(tmp_path, backend="nosuch")
