"""The conformance suite: one set of tests that every store backend must pass.

Each test takes the ``store`` fixture (a fresh index opened by a ``store.backend.Backend``),
which runs once per backend in :data:`BACKENDS`. A new backend joins the list and must pass every
test here unchanged; what is specific to one backend (SQL plans, file recovery) is tested
elsewhere. The data is tiny and made by hand (``build.py``), so the suite takes seconds and
does not depend on the parser or the analyzer: a store indexes the terms it is given.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from dataclasses import replace
from pathlib import Path

import pytest

from noteseek.store.backend import Backend, MilvusBackend, SQLiteBackend
from noteseek.store.base import Store
from noteseek.store.milvus import MilvusConfig

BACKENDS = ["sqlite", "milvus-lite", "milvus-engine"]
"""SQLite, Milvus Lite 3 (in process) and Milvus's C++ engine over TCP (as a server)."""
PREFIX = "conformance"


@pytest.fixture(params=BACKENDS)
def backend(request: pytest.FixtureRequest, tmp_path: Path, index_dir: Path) -> Backend:
    """The SQLite index in ``index_dir``, a Milvus Lite index in the test's folder, or an
    index of the test's own on the session's engine (``engine_prefix``)."""
    if request.param == "sqlite":
        return SQLiteBackend(index_dir)
    if request.param == "milvus-engine":
        engine = request.getfixturevalue("milvus_engine")
        prefix = request.getfixturevalue("engine_prefix")
        return MilvusBackend(MilvusConfig(uri=engine.uri, prefix=prefix))
    return MilvusBackend(MilvusConfig(uri=str(tmp_path / "milvus.db"), prefix=PREFIX))


def another(backend: Backend, folder: Path, prefix: str) -> Backend:
    """A second index of the same backend: in ``folder`` (SQLite), or under the collection
    ``prefix`` beside the first (Milvus)."""
    if isinstance(backend, MilvusBackend):
        mine = backend.config.prefix
        if mine != PREFIX:  # an engine shared by the session: a name under the test's prefix
            prefix = (
                mine + prefix[len(PREFIX) :] if prefix.startswith(PREFIX) else f"{mine}_{prefix}"
            )
        return MilvusBackend(replace(backend.config, prefix=prefix))
    return SQLiteBackend(folder)


@pytest.fixture
def index_dir(tmp_path: Path) -> Path:
    return tmp_path / "index"


@pytest.fixture
def store(backend: Backend) -> Iterator[Store]:
    opened: Store
    opened, notice = backend.open()
    assert notice is None
    yield opened
    opened.close()


@pytest.fixture
def second_handle(backend: Backend, store: Store) -> Iterator[Callable[[], Store]]:
    """Opens more read-only handles on the store's index (all closed after the test)."""
    handles: list[Store] = []

    def open_one() -> Store:
        handle = backend.reader()
        handles.append(handle)
        return handle

    yield open_one
    for handle in handles:
        handle.close()
