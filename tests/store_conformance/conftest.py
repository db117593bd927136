"""The conformance suite: one set of tests that every store backend must pass.

Each test takes the ``store`` fixture (a fresh index opened through ``store.factory``), which
runs once per backend in :data:`BACKENDS`. A new backend joins the list and must pass every
test here unchanged; what is specific to one backend (SQL plans, file recovery) is tested
elsewhere. The data is tiny and made by hand (``build.py``), so the suite takes seconds and
does not depend on the parser or the analyzer: a store indexes the terms it is given.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

from noteseek.store.base import Store
from noteseek.store.factory import open_reader, open_store
from noteseek.store.milvus import MilvusConfig

Backend = str | MilvusConfig

BACKENDS = ["sqlite", "milvus-lite"]


@pytest.fixture(params=BACKENDS)
def backend(request: pytest.FixtureRequest, tmp_path: Path) -> Backend:
    """``sqlite``, or a Milvus Lite index in the test's folder."""
    if request.param == "sqlite":
        return "sqlite"
    return MilvusConfig(uri=str(tmp_path / "milvus.db"), prefix="conformance")


@pytest.fixture
def index_dir(tmp_path: Path) -> Path:
    return tmp_path / "index"


@pytest.fixture
def store(backend: Backend, index_dir: Path) -> Iterator[Store]:
    opened: Store
    opened, notice = open_store(index_dir, backend=backend)
    assert notice is None
    yield opened
    opened.close()


@pytest.fixture
def second_handle(backend: Backend, index_dir: Path, store: Store) -> Iterator[Callable[[], Store]]:
    """Opens more read-only handles on the store's index (all closed after the test)."""
    handles: list[Store] = []

    def open_one() -> Store:
        handle = open_reader(index_dir, backend=backend)
        handles.append(handle)
        return handle

    yield open_one
    for handle in handles:
        handle.close()
