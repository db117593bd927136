"""A named index is what it is named (issue 44): ``--index NAME`` opens it with its own roots
whatever folder the command starts in, and its roots change only by ``noteseek roots add`` and
``noteseek roots remove``, which drops everything the root indexed, on SQLite and in Milvus.

Vectors come from a stand-in of an OpenAI-compatible embeddings server on loopback
(``tests/test_remote_embed.py``): the remote embedder, the index and the CLI are real, and no
ONNX model is loaded.
"""

from __future__ import annotations

import json
import threading
from collections.abc import Iterator
from http.server import ThreadingHTTPServer
from pathlib import Path
from typing import Any

import pytest

from noteseek.config import ConfigError
from noteseek.engine import Engine, NotFound, SearchRequest, open_engine
from tests.helpers import engine_for, project, run_cli, write
from tests.mcp_client import call, eventually, run, session
from tests.test_remote_embed import Behaviour, Handler

NO_VECTORS = {"NOTESEEK_EMBEDDING__ENABLED": "false"}
MODEL = "remote:nomic-embed-text"


@pytest.fixture
def embeddings_url() -> Iterator[str]:
    """The base URL of a loopback embeddings server (deterministic bag-of-words vectors)."""
    httpd = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    httpd.behaviour = Behaviour()  # type: ignore[attr-defined]
    thread = threading.Thread(target=httpd.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{httpd.server_address[1]}/v1"
    finally:
        httpd.shutdown()
        httpd.server_close()
        thread.join(5)


def remote_env(url: str) -> dict[str, str]:
    return {
        "NOTESEEK_EMBEDDING__ENABLED": "true",
        "NOTESEEK_EMBEDDING__PROVIDER": "remote",
        "NOTESEEK_EMBEDDING__MODEL": "nomic-embed-text",
        "NOTESEEK_EMBEDDING__BASE_URL": url,
    }


def a_project(tmp_path: Path) -> Path:
    """A project with roots of its own (docs) and a memory folder, as a coding agent's."""
    folder = tmp_path / "proj"
    write(folder / "docs" / "plan.md", "# Plan\n\nThe roadmap of the project, by quarter.\n")
    write(folder / ".memories" / "decision.md", "# Decision\n\nThe roadmap review is on Fridays.\n")
    project(folder, {"docs": folder / "docs"})
    return folder


def roots_of(cwd: Path, name: str, env: dict[str, str]) -> dict[str, str]:
    """The roots ``noteseek --index NAME status --json`` lists (name -> folder)."""
    status = json.loads(run_cli(["--index", name, "status", "--json"], cwd, env).stdout)
    return {r["name"]: r["path"] for r in status["roots"]}


def listed_roots(cwd: Path) -> dict[str, dict[str, str]]:
    """Each named index's roots as ``noteseek indexes --json`` lists them."""
    return {e["name"]: e["roots"] for e in json.loads(run_cli(["indexes", "--json"], cwd).stdout)}


def found(
    cwd: Path, name: str, query: str, env: dict[str, str], code: int = 0, mode: str = "keyword"
) -> list[str]:
    """The documents ``noteseek --index NAME search QUERY -m MODE --json`` finds."""
    proc = run_cli(["--index", name, "search", query, "-m", mode, "--json"], cwd, env, code=code)
    return [r["doc_id"] for r in json.loads(proc.stdout)["results"]]


def test_mcp_started_in_a_project_keeps_a_named_index_to_its_own_roots(tmp_path: Path) -> None:
    """The report: ``noteseek index vault --name tiny``, then ``noteseek mcp --index tiny`` in a
    folder holding a ``.noteseek.toml`` made the roots of tiny ``memory, notes, vault``."""
    vault, elsewhere = tmp_path / "vault", tmp_path / "elsewhere"
    write(vault / "garden.md", "# Garden\n\nTomatoes along the roadmap of the beds.\n")
    elsewhere.mkdir()
    folder = a_project(tmp_path)
    run_cli(["index", str(vault), "--name", "tiny"], elsewhere, NO_VECTORS)

    async def main() -> None:
        # Watching (the default): the live writer reconciles the index with its roots.
        async with session(folder, "--index", "tiny", env=NO_VECTORS) as client:

            async def reconciled() -> bool:
                status = await call(client, "index_status")
                service = status["service"] or {}
                return status["status"] == "ready" and service.get("last_reconcile") is not None

            await eventually(reconciled, timeout=30)
            status = await call(client, "index_status")
            assert [r["name"] for r in status["roots"]] == ["vault"]
            assert status["index_dir_reason"] == "the index named tiny, opened with --index"
            out = await call(client, "query_documents", {"query": "roadmap", "source": "all"})
            assert [r["doc_id"] for r in out["results"]] == ["vault/garden.md"]
            memories = await call(client, "query_documents", {"query": "Fridays", "source": "all"})
            assert memories["results"] == []

    run(main)

    assert roots_of(folder, "tiny", NO_VECTORS) == {"vault": str(vault.resolve())}
    assert listed_roots(folder) == {"tiny": {"vault": str(vault.resolve())}}
    assert found(folder, "tiny", "quarter", NO_VECTORS, code=1) == []
    # The project's own index is untouched by all this: it was never created.
    assert not (folder / ".noteseek").exists()
    listed = run_cli(["indexes"], folder).stdout
    assert "(roots: vault)" in listed


def test_roots_add_then_remove_from_a_project_folder(tmp_path: Path, embeddings_url: str) -> None:
    env = remote_env(embeddings_url)
    vault, extra, elsewhere = tmp_path / "vault", tmp_path / "zoo", tmp_path / "elsewhere"
    write(vault / "garden.md", "# Garden\n\nTomatoes and basil in the raised beds.\n")
    write(extra / "zebra.md", "# Zebra\n\nZebras graze the savanna beside the [[garden]].\n")
    elsewhere.mkdir()
    folder = a_project(tmp_path)
    run_cli(["index", str(vault), "--name", "tiny"], elsewhere, env)

    added = json.loads(
        run_cli(["roots", "add", str(extra), "--index", "tiny", "--json"], folder, env).stdout
    )
    assert (added["root"], added["path"], added["kind"]) == ("zoo", str(extra.resolve()), "files")
    assert (added["added"], added["embedding"]["embedded"], added["named"]) == (1, 1, ["tiny"])
    assert found(folder, "tiny", "zebras savanna", env) == ["zoo/zebra.md"]
    both = {"vault": str(vault.resolve()), "zoo": str(extra.resolve())}
    assert roots_of(folder, "tiny", env) == both
    assert listed_roots(folder) == {"tiny": both}
    with open_engine(name="tiny") as engine:
        zebra = _only_file(engine, "zoo")
        assert engine.store.vector_models() == {MODEL: 2}
        assert [e.target for e in engine.store.graph_edges() if e.file_id == zebra] == [
            "vault/garden.md"
        ]

    removed = json.loads(
        run_cli(["roots", "remove", "zoo", "--index", "tiny", "--json"], folder, env).stdout
    )
    assert removed == {
        "root": "zoo",
        "path": str(extra.resolve()),
        "kind": "files",
        "files": 1,
        "chunks": 1,
        "vectors": 1,
        "named": ["tiny"],
    }
    assert found(folder, "tiny", "zebras savanna", env, code=1) == []
    assert found(folder, "tiny", "zebras tomatoes", env, mode="semantic") == ["vault/garden.md"]
    assert roots_of(folder, "tiny", env) == {"vault": str(vault.resolve())}
    assert listed_roots(folder) == {"tiny": {"vault": str(vault.resolve())}}
    assert (extra / "zebra.md").is_file()  # the folder itself is left alone
    with open_engine(name="tiny") as engine:
        store = engine.store
        assert [f.doc_id for f in store.iter_files()] == ["vault/garden.md"]
        assert store.stats()["chunks"] == 1
        assert store.vector_models() == {MODEL: 1}
        (garden_chunk,) = store.file_chunk_rowids(_only_file(engine, "vault"))
        assert [rowid for rowid, _ in store.vector_chunk_keys(MODEL)] == [garden_chunk]
        assert store.graph_edges() == []
        assert store.graph_dirty() == []

    gone = run_cli(["roots", "remove", "zoo", "--index", "tiny"], folder, env, code=1)
    assert "'zoo' is not a root of this index (its roots: vault)" in gone.stderr
    # An index run of the named index from the project indexes its own roots only.
    again = json.loads(run_cli(["--index", "tiny", "index", "--json"], folder, env).stdout)
    assert again["roots"] == ["vault"]


def test_a_root_the_settings_give_is_not_removed(tmp_path: Path) -> None:
    """Outside a named index, a configured root (or the project's memory folder) would come
    back with the next run: removing it is refused with the setting to change."""
    folder = a_project(tmp_path)
    run_cli(["index"], folder, NO_VECTORS)
    configured = run_cli(["roots", "remove", "docs"], folder, NO_VECTORS, code=2)
    assert (
        "'docs' would come back with the next run: it is configured ([roots.docs] in the "
        "project settings)" in configured.stderr
    )
    memory = run_cli(["roots", "remove", "memory"], folder, NO_VECTORS, code=2)
    assert "the settings of its kind (memory) add it to every index" in memory.stderr
    listed = json.loads(run_cli(["roots", "list", "--json"], folder, NO_VECTORS).stdout)
    assert [(r["name"], r["files"]) for r in listed] == [("docs", 1), ("memory", 1)]
    both = run_cli(["--index", "x", "--index-dir", "y", "status"], folder, code=2)
    assert "not both" in both.stderr


def test_the_hooks_open_the_named_index_they_are_given(tmp_path: Path) -> None:
    """``noteseek --index NAME hook ...`` (and ``hook ... --index NAME``) in a project: the
    hook opens the named index, not the project's, and adds none of the project's roots."""
    vault, elsewhere = tmp_path / "vault", tmp_path / "elsewhere"
    write(vault / "garden.md", "# Garden\n\nTomatoes.\n")
    elsewhere.mkdir()
    folder = a_project(tmp_path)
    run_cli(["index", str(vault), "--name", "tiny"], elsewhere, NO_VECTORS)
    run_cli(["roots", "add", "--kind", "memory", "--index", "tiny"], elsewhere, NO_VECTORS)
    payload = json.dumps({"hook_event_name": "SessionStart", "cwd": str(folder)})
    for args in (
        ["--index", "tiny", "hook", "session-start", "--strict"],
        ["hook", "session-start", "--strict", "--index", "tiny"],
    ):
        proc = _run_with_input(args, folder, payload)
        assert proc.returncode == 0, proc.stderr
        # Oriented on tiny's memory folder, not the project's .memories.
        assert "noteseek/memories/" in proc.stdout and str(folder) not in proc.stdout
    assert set(roots_of(folder, "tiny", NO_VECTORS)) == {"memory", "vault"}
    assert not (folder / ".noteseek").exists()


@pytest.mark.parametrize("backend", ["sqlite", "milvus-lite"])
def test_remove_root_drops_everything_the_root_indexed(
    tmp_path: Path, backend: str, embeddings_url: str
) -> None:
    """The engine's ``remove_root`` on both backends: files, chunks, keyword entries, vectors
    and graph edges of the root go; the other roots keep theirs."""
    vault, extra = tmp_path / "vault", tmp_path / "zoo"
    write(vault / "garden.md", "# Garden\n\nTomatoes and basil in the raised beds.\n")
    write(extra / "zebra.md", "# Zebra\n\nZebras graze the savanna beside the [[garden]].\n")
    write(extra / "okapi.md", "# Okapi\n\nThe okapi hides in the forest. [[zebra]]\n")
    (tmp_path / "proj").mkdir()
    folder = project(tmp_path / "proj", {"vault": vault})
    flags: dict[str, Any] = {
        "embedding.provider": "remote",
        "embedding.model": "nomic-embed-text",
        "embedding.base_url": embeddings_url,
    }
    if backend == "milvus-lite":
        flags |= {"milvus.uri": str(tmp_path / "milvus.db"), "milvus.collection": "roots"}
    with engine_for(folder, embeddings=True, **flags) as engine:
        engine.index()
        added = engine.add_root(str(extra))
        report = added.report
        assert (added.name, added.path, added.kind) == ("zoo", str(extra.resolve()), "files")
        assert (report.added, report.embedding and report.embedding["embedded"]) == (2, 2)
        store = engine.store
        assert store.vector_models() == {MODEL: 3}
        assert _hits(engine, "zebras okapi", "keyword") == ["zoo/okapi.md", "zoo/zebra.md"]
        assert "zoo/zebra.md" in _hits(engine, "savanna zebras", "semantic")
        assert len(store.graph_edges()) == 2

        removed = engine.remove_root("zoo")
        assert removed.to_dict() == {
            "root": "zoo",
            "path": str(extra.resolve()),
            "kind": "files",
            "files": 2,
            "chunks": 2,
            "vectors": 2,
        }
        held = {"memory": str((folder / ".memories").resolve()), "vault": str(vault.resolve())}
        assert store.roots() == held
        assert [f.doc_id for f in store.iter_files()] == ["vault/garden.md"]
        assert _hits(engine, "zebras okapi", "keyword") == []
        assert not [h for h in _hits(engine, "savanna zebras", "semantic") if h.startswith("zoo/")]
        assert store.vector_models() == {MODEL: 1}
        assert store.graph_edges() == []
        assert [r["name"] for r in engine.status()["roots"]] == ["memory", "vault"]
        assert engine.roots().keys() == {"vault", "memory"}  # configured and implicit: not zoo
        with pytest.raises(NotFound):
            engine.remove_root("zoo")
        with pytest.raises(ConfigError, match="it is configured"):
            engine.remove_root("vault")
        assert store.roots() == held


def _hits(engine: Engine, query: str, mode: str) -> list[str]:
    return sorted(h.doc_id for h in engine.search(SearchRequest(query, mode=mode)).hits)


def _only_file(engine: Engine, root: str) -> int:
    (row,) = engine.store.iter_files(root)
    return row.file_id


def _run_with_input(args: list[str], cwd: Path, payload: str) -> Any:
    import os
    import subprocess
    import sys

    return subprocess.run(
        [sys.executable, "-m", "noteseek.interfaces.cli", *args],
        cwd=cwd,
        env={**os.environ, **NO_VECTORS},
        input=payload,
        capture_output=True,
        text=True,
        timeout=120,
    )
