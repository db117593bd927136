"""Shared fixtures: isolated user dirs, example vault, shared data locations."""

from __future__ import annotations

import shutil
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests import milvus_engine as engines

REPO = Path(__file__).resolve().parent.parent
EXAMPLE_VAULT = REPO / "examples" / "vault"
SHARED_DATA = REPO.parent / "shared" / "data"


@pytest.fixture(autouse=True)
def isolated_user_dirs(
    request: pytest.FixtureRequest,
    tmp_path_factory: pytest.TempPathFactory,
    monkeypatch: pytest.MonkeyPatch,
) -> Path:
    """No test reads or writes the real user config/data dirs or NOTESEEK_* settings.

    Embeddings are off unless a test is marked ``embeddings``: keyword behaviour does not need
    the model, and embedding every temporary vault would cost seconds per test.
    """
    home = tmp_path_factory.mktemp("home")
    monkeypatch.setenv("XDG_CONFIG_HOME", str(home / "config"))
    monkeypatch.setenv("XDG_DATA_HOME", str(home / "data"))
    monkeypatch.setenv("HOME", str(home))
    import os

    for key in list(os.environ):
        if key.upper().startswith("NOTESEEK_"):
            monkeypatch.delenv(key)
    if request.node.get_closest_marker("embeddings") is None:
        monkeypatch.setenv("NOTESEEK_EMBEDDING__ENABLED", "false")
    # Rankings must not depend on today's date; tests of recency turn it on themselves.
    monkeypatch.setenv("NOTESEEK_SEARCH__RECENCY", "off")
    return home


@pytest.fixture
def vault(tmp_path: Path) -> Path:
    """A private copy of the example vault that a test may change."""
    target = tmp_path / "vault"
    shutil.copytree(EXAMPLE_VAULT, target)
    return target


def shared(path: str) -> Path:
    """A folder of ../shared/data, or skip the test with a clear message when it is absent."""
    target = SHARED_DATA / path
    if not target.exists():
        pytest.skip(f"shared data {target} is absent (CI has it)")
    return target


# -- Milvus's C++ engine over TCP (tests/milvus_engine.py) -----------------------------------


@pytest.fixture(scope="session")
def milvus_engine(tmp_path_factory: pytest.TempPathFactory) -> Iterator[engines.Engine]:
    """One engine per test session (per xdist worker), on a free loopback port; stopped by
    its process id at the end. Skips the test when ``./scripts/test`` has not prepared it."""
    if not engines.available():
        pytest.skip(engines.MISSING)
    with engines.running(tmp_path_factory.mktemp("milvus-engine")) as engine:
        yield engine


@pytest.fixture
def engine_prefix(milvus_engine: engines.Engine) -> Iterator[str]:
    """A collection prefix of the test's own on the shared engine, dropped afterwards."""
    prefix = engines.unique_prefix()
    yield prefix
    milvus_engine.drop(prefix)


# -- the fast inner loop: `pytest -m "not slow"` ---------------------------------------------

SLOW_FILES = {
    "test_web.py": "drives the page in Chromium",
    "test_embed_onnx.py": "loads the ONNX embedding models",
    "test_claude_code.py": "installs and runs the Claude Code CLI",
}
SLOW_FIXTURES = {"embedder": "loads the ONNX embedding model"}


def slow_reason(item: pytest.Item) -> str | None:
    """Why a test belongs to the slow set (``-m "not slow"`` leaves it out), or None.

    Keyed by file and fixture rather than marked test by test: the browser tests, the
    reliability suite (kills, crashes, soak, a full disk, signals), everything run against
    Milvus Lite (its files, and the conformance, parity and sync tests' Milvus parameter),
    and tests that load the embedding model (marked ``embeddings``, or taking ``embedder``).
    """
    path = Path(str(item.path))
    if "reliability" in path.parts:
        return "reliability"
    if path.name in SLOW_FILES:
        return SLOW_FILES[path.name]
    if "milvus" in path.name or "milvus_lite" in getattr(item, "originalname", item.name):
        return "Milvus Lite"
    callspec = getattr(item, "callspec", None)
    if callspec is not None and any(
        value in ("milvus-lite", "milvus-engine") or type(value).__name__ == "MilvusConfig"
        for value in callspec.params.values()
    ):
        return "Milvus Lite"
    if item.get_closest_marker("embeddings") is not None:
        return "loads the ONNX embedding model"
    for name in getattr(item, "fixturenames", ()):
        if name in SLOW_FIXTURES:
            return SLOW_FIXTURES[name]
    return None


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    for item in items:
        if item.get_closest_marker("slow") is None and slow_reason(item) is not None:
            item.add_marker(pytest.mark.slow)
