"""The backend object the store factory returns (``store/backend.py``): the engine asks it to
open, find, delete and describe the index and to coordinate writers, and never asks which
backend it has. SQLite is a file in the index folder with one writer; Milvus Lite runs here
in-process, standing for any Milvus (a server's URI is only described, never reached)."""

from __future__ import annotations

import ast
import sqlite3
import subprocess
import sys
from pathlib import Path

import pytest
from pydantic import SecretStr

from noteseek.config import Settings
from noteseek.config.milvus import MilvusSettings
from noteseek.eval.coverage import partial_index
from noteseek.store.backend import INDEX_FILE, SQLiteBackend
from noteseek.store.base import Store
from noteseek.store.errors import UNREADABLE, StoreError, is_interrupt
from noteseek.store.factory import backend_for
from noteseek.store.migrate import MigrateError, target
from tests.store_conformance.build import MODEL, fill, store_vectors

PACKAGE = Path(__file__).resolve().parents[1] / "src" / "noteseek"


def never() -> Store:
    """A store opener that must not be called: the backend has nothing to ask the store."""
    raise AssertionError("the store was opened")


def milvus_settings(uri: str, token: str = "") -> Settings:
    return Settings(milvus=MilvusSettings(uri=uri, token=SecretStr(token) if token else None))


def test_the_embedded_index_is_a_file_in_the_folder_with_one_writer(tmp_path: Path) -> None:
    backend = backend_for(Settings(), tmp_path)
    assert (backend.name, backend.shared, backend.folder) == ("sqlite", False, tmp_path)
    assert backend.file == tmp_path / INDEX_FILE
    assert str(tmp_path) in backend.location
    assert not backend.present()
    # Nothing to take per root, no foreign roots, no graph lease: the store is not opened.
    assert backend.hold_roots(never, ["notes"]) == {}
    assert backend.foreign_roots(never) == set()
    assert backend.describe(never) == {"backend": "sqlite"}
    store, notice = backend.open()
    assert notice is None and backend.present()
    with backend.writing_graph(store):
        fill(store)
    reader = backend.reader()
    assert reader.roots() == store.roots()
    reader.close()
    store.close()
    removed = backend.remove()
    assert INDEX_FILE in removed and not backend.present()
    assert backend.remove() == []  # nothing left to delete
    assert backend.identity() == SQLiteBackend(tmp_path).identity()


def test_a_milvus_server_is_described_without_its_secrets(tmp_path: Path) -> None:
    uri = "https://user:hunter2@milvus.example:19530/?token=s3cret"
    backend = backend_for(milvus_settings(uri, token="tok-123"), tmp_path)
    assert (backend.name, backend.shared, backend.folder, backend.file) == (
        "milvus",
        True,
        None,
        None,
    )
    assert backend.present()  # created on first use
    assert backend.remove() == []  # cleared and written again, never deleted
    said = [str(backend.describe()), backend.location, backend.usage()]
    for text in said:
        assert "hunter2" not in text and "s3cret" not in text and "tok-123" not in text
    assert backend.describe() == {
        "backend": "milvus",
        "uri": "https://milvus.example:19530/?token=***",
        "collection": "noteseek",
        "location": "Milvus at https://milvus.example:19530/?token=*** (collections noteseek_*)",
    }


def test_milvus_lite_is_shared_and_coordinates_writers_by_leases(tmp_path: Path) -> None:
    backend = backend_for(milvus_settings(str(tmp_path / "m.db")), tmp_path / "index")
    assert (backend.name, backend.shared, backend.remove()) == ("milvus-lite", True, [])
    assert backend.file == tmp_path / "m.db"
    first, notice = backend.open()
    second = backend.reader()
    try:
        assert notice is None
        fill(first)
        assert backend.hold_roots(lambda: first, ["notes", "docs"]) == {}
        busy = backend.hold_roots(lambda: second, ["docs", "other"])
        assert list(busy) == ["docs"] and isinstance(busy["docs"], StoreError)
        with backend.writing_graph(first):
            pass
        assert backend.foreign_roots(lambda: first) == set()  # every root was added here
        described = backend.describe(lambda: first)
        assert described["backend"] == "milvus-lite" and described["collection"] == "noteseek"
        assert "server_version" in described and described["collections"]
        held = {lease["resource"] for lease in described["leases"]}
        assert {"root:notes", "root:docs"} <= held
    finally:
        second.close()
        first.close()


def test_a_target_is_a_backend_by_the_migrate_rule(tmp_path: Path) -> None:
    settings = Settings()
    lite = target(str(tmp_path / "copy.db"), settings, collection="other")
    assert lite.name == "milvus-lite" and lite.identity()[-1] == "other"
    embedded = target(f"sqlite:{tmp_path / 'folder'}", settings)
    assert embedded.name == "sqlite" and embedded.folder == tmp_path / "folder"
    assert embedded.identity() != backend_for(settings, tmp_path).identity()
    server = target("http://localhost:19530", settings)
    assert server.name == "milvus" and server.shared
    with pytest.raises(MigrateError, match="starts with http"):
        target("ftp://user:pw@x/y", settings)
    with pytest.raises(MigrateError) as bad:
        target("ftp://user:pw@x/y", settings)
    assert "pw" not in str(bad.value)


def test_the_embedded_index_is_copied_with_part_of_its_vectors(tmp_path: Path) -> None:
    index = tmp_path / "index"
    store, _ = SQLiteBackend(index).open()
    fill(store)
    store_vectors(store)
    total = len(store.vector_chunk_keys(MODEL))
    store.close()
    (index / "beside.txt").write_text("kept", encoding="utf-8")
    copy = partial_index(index, 0.5)
    assert (copy / "beside.txt").read_text(encoding="utf-8") == "kept"
    with sqlite3.connect(copy / INDEX_FILE) as conn:
        kept = conn.execute("SELECT count(*) FROM vectors").fetchone()[0]
    original, _ = SQLiteBackend(index).open(readonly=True)
    assert len(original.vector_chunk_keys(MODEL)) == total  # the source keeps every vector
    original.close()
    assert 0 < kept < total


def test_interrupts_and_unmapped_database_errors_are_recognised_by_the_store() -> None:
    assert is_interrupt(sqlite3.OperationalError("interrupted"))
    assert not is_interrupt(sqlite3.OperationalError("database is locked"))
    assert not is_interrupt(RuntimeError("interrupted"))
    assert issubclass(sqlite3.DatabaseError, UNREADABLE) and issubclass(StoreError, UNREADABLE)


def test_nothing_above_the_store_asks_which_backend_it_has() -> None:
    """No module outside store/ imports a backend's driver or package, names MilvusConfig or
    asks whether the backend is a string (the old "sqlite" marker)."""
    found = []
    for path in PACKAGE.rglob("*.py"):
        if path.relative_to(PACKAGE).parts[0] == "store":
            continue
        tree = ast.parse(path.read_text(encoding="utf-8"))
        for node in ast.walk(tree):
            names: list[str] = []
            if isinstance(node, ast.Import):
                names = [a.name for a in node.names]
            elif isinstance(node, ast.ImportFrom):
                names = [node.module or ""] + [a.name for a in node.names]
            bad = [
                n
                for n in names
                if n == "sqlite3"
                or n == "MilvusConfig"
                or n.startswith(("noteseek.store.sqlite", "noteseek.store.milvus"))
            ]
            if (
                isinstance(node, ast.Call)
                and getattr(node.func, "id", "") == "isinstance"
                and "backend" in ast.unparse(node.args[0])
            ):
                bad.append(ast.unparse(node))
            found += [f"{path.relative_to(PACKAGE)}:{node.lineno}: {b}" for b in bad]
    assert found == []


def test_the_embedded_index_never_loads_the_milvus_client(tmp_path: Path) -> None:
    script = (
        "import sys\n"
        "from pathlib import Path\n"
        "from noteseek.config import Settings\n"
        "from noteseek.store.factory import backend_for\n"
        f"backend = backend_for(Settings(), Path({str(tmp_path)!r}))\n"
        "store, _ = backend.open()\n"
        "backend.describe(lambda: store); backend.hold_roots(lambda: store, ['x'])\n"
        "store.close(); backend.remove()\n"
        "loaded = [m for m in sys.modules if m.startswith(('pymilvus', 'noteseek.store.milvus'))]\n"
        "assert not loaded, loaded\n"
    )
    subprocess.run([sys.executable, "-c", script], check=True, timeout=120)
