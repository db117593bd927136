"""``noteseek migrate``: an index copied SQLite -> Milvus Lite -> SQLite with its vectors (no
re-embedding), ids, links and graph; searches on the copy answer as on the original; a
target that holds something is refused without --replace; the errors say what to fix.

Milvus Lite is slow (pure Python), so the corpus is a part of the example vault.
"""

from __future__ import annotations

import json
import shutil
import sys
from pathlib import Path
from typing import Any

import pytest

from noteseek.engine import Engine, SearchRequest
from noteseek.operations import NO_LIMITS, Context, OperationError, execute, parse
from noteseek.store.base import Store
from noteseek.store.factory import open_store
from tests.conftest import EXAMPLE_VAULT
from tests.helpers import engine_for, project, refused_port, run_cli, writer_elsewhere

QUERIES = ("redis cache expiry", "project roadmap decisions", "how do we deploy the service")
MODES = ("keyword", "semantic", "hybrid")


def small_vault(tmp: Path) -> Path:
    """The example vault without most of notes/: 15 documents, a warning among them."""
    vault = tmp / "vault"
    shutil.copytree(EXAMPLE_VAULT, vault, ignore=shutil.ignore_patterns("notes"))
    (vault / "notes").mkdir()
    for name in ("redis.md", "kafka.md"):
        shutil.copy(EXAMPLE_VAULT / "notes" / name, vault / "notes" / name)
    return vault


def migrate(engine: Engine, **arguments: Any) -> dict[str, Any]:
    """The migrate operation, run as every door runs it."""
    op, params = parse("migrate", arguments)
    return execute(op, Context(engine, None, NO_LIMITS), params)


def answers(engine: Engine) -> dict[tuple[str, str], list[tuple[str, float, dict[str, int]]]]:
    out = {}
    for query in QUERIES:
        for mode in MODES:
            hits = engine.search(SearchRequest(query, mode=mode, top_k=10)).hits
            out[query, mode] = [(h.chunk_id, round(h.score, 6), dict(h.lanes)) for h in hits]
    return out


def reads(engine: Engine) -> dict[str, Any]:
    got = engine.get("notes/redis.md")
    return {
        "get": (got.kind, got.doc_id, got.text, got.chunk_ids),
        "section": engine.get("notes/redis.md:5").chunk_ids,
        "links": engine.links("notes/redis.md"),
        "status": {k: engine.status()[k] for k in ("files", "chunks", "links")},
    }


def stored(store: Store) -> dict[str, Any]:
    """Everything the portable role reads, and the rest of what a copy carries."""
    models = sorted(store.vector_models())
    ids = store.file_ids()
    rowids = [r for f in store.export_files(ids) for r in f.rowids]
    return {
        "files": store.export_files(ids),
        "vectors": {m: sorted(store.chunk_vectors(m, rowids)) for m in models},
        "meta": store.meta_values(),
        "manifest": store.manifest(),
        "roots": (store.roots(), store.root_kinds()),
        "communities": store.stored_communities(),
        "dirty": store.graph_dirty(),
        "problems": [(p.root, p.path, p.severity, p.reason) for p in store.problems()],
        "last_run": store.last_run(),
    }


@pytest.mark.embeddings
@pytest.mark.parametrize("where", ["milvus-lite", "milvus-engine"])
def test_round_trip_sqlite_milvus_sqlite(
    tmp_path: Path, where: str, request: pytest.FixtureRequest
) -> None:
    """SQLite -> Milvus (a Lite file, or the C++ engine over TCP) -> SQLite: nothing lost."""
    vault = small_vault(tmp_path)
    folder = project(tmp_path, {"vault": vault})
    lite = str(tmp_path / "milvus" / "index.db")
    collection: dict[str, str] = {}
    backend, kind = "milvus-lite", "Milvus Lite at "
    if where == "milvus-engine":
        lite = request.getfixturevalue("milvus_engine").uri
        collection = {"milvus.collection": request.getfixturevalue("engine_prefix")}
        backend, kind = "milvus", "Milvus at "
    back = tmp_path / "back"
    with engine_for(folder, embeddings=True) as engine:
        engine.index()
        before = answers(engine)
        read_before = reads(engine)
        source = stored(engine.store)
        named = {"collection": collection["milvus.collection"]} if collection else {}
        data = migrate(engine, to=lite, **named)
    counts = data["counts"]
    assert counts["source"] == counts["target"]
    assert counts["source"]["files"] == 15 and counts["source"]["problems"] == 1
    assert counts["source"]["vectors"] == counts["source"]["chunks"] > 0
    assert counts["source"]["edges"] > 0 and counts["source"]["links"] > 0
    assert data["target"].startswith(kind) and "milvus.uri = " in data["next"]

    with engine_for(folder, embeddings=True, **{"milvus.uri": lite, **collection}) as engine:
        assert engine.status()["store"]["backend"] == backend
        assert engine.status()["embedding"]["pending"] == 0  # vectors came along
        assert answers(engine) == before
        assert reads(engine) == read_before
        assert stored(engine.store) == source  # Milvus holds what SQLite held, ids included
        data = migrate(engine, to=f"sqlite:{back}")
    assert data["counts"]["source"] == data["counts"]["target"] == counts["source"]

    with engine_for(folder, embeddings=True, **{"index.dir": str(back)}) as engine:
        assert engine.index_dir == back
        assert answers(engine) == before
        assert reads(engine) == read_before
    copy, _ = open_store(back, readonly=True)
    try:
        assert stored(copy) == source
    finally:
        copy.close()


def test_a_target_that_holds_an_index_is_refused_unless_replaced(tmp_path: Path) -> None:
    folder = project(tmp_path, {"vault": small_vault(tmp_path)})
    (tmp_path / "other").mkdir()
    other = project(tmp_path / "other", {"notes": EXAMPLE_VAULT / "daily"})
    target = tmp_path / "target"
    with engine_for(other, **{"index.dir": str(target)}) as engine:
        engine.index()
        held = engine.status()
    with engine_for(folder) as engine:
        engine.index()
        source = stored(engine.store)
        with pytest.raises(OperationError) as refused:
            migrate(engine, to=str(target))
        assert refused.value.kind == "invalid"
        message = str(refused.value)
        assert held["files"] == 3
        assert f" 3 files, {held['chunks']} chunks" in message and "is not empty (" in message
        assert "--replace" in message
        with engine_for(other, **{"index.dir": str(target)}) as kept:
            assert kept.status()["files"] == 3  # the refused target is untouched
        data = migrate(engine, to=str(target), replace=True)
        assert data["replaced"] and data["counts"]["target"]["files"] == 15
        assert stored(engine.store) == source  # the source was only read
    copy, _ = open_store(target, readonly=True)
    try:
        assert stored(copy) == source  # the other index's root and files are gone
    finally:
        copy.close()


@pytest.mark.parametrize(
    ("to", "kind", "words"),
    [
        ("{idx}", "invalid", "the target is the source"),
        ("sqlite:{idx}/index.db", "invalid", "sqlite: takes the index folder"),
        ("{idx}/index.db", "invalid", "is the file the source (sqlite) keeps its index in"),
        ("ftp://example.invalid/x", "invalid", "starts with http:// or https://"),
        ("milvus:{tmp}/lite", "invalid", "ends in .db"),
        ("  ", "invalid", "--to is empty"),
        ("http://127.0.0.1:{refused}", "unavailable", "check --to"),
    ],
    ids=["same", "sqlite file", "source file", "scheme", "lite name", "empty", "unreachable"],
)
def test_errors_say_what_to_fix(tmp_path: Path, to: str, kind: str, words: str) -> None:
    folder = project(tmp_path, {"vault": small_vault(tmp_path)})
    with engine_for(folder) as engine, refused_port() as port:
        engine.index()
        target = to.format(idx=engine.index_dir, tmp=tmp_path, refused=port)
        with pytest.raises(OperationError) as failed:
            migrate(engine, to=target)
    assert failed.value.kind == kind
    assert words in str(failed.value)


def test_other_refusals(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    folder = project(tmp_path, {"vault": small_vault(tmp_path)})
    with engine_for(folder) as engine:
        with pytest.raises(OperationError, match="no index to migrate"):
            migrate(engine, to=str(tmp_path / "copy"))
        engine.index()
        with pytest.raises(OperationError, match=r"milvus\.collection must start with a letter"):
            migrate(engine, to=str(tmp_path / "x.db"), collection="9bad")
        with pytest.raises(OperationError, match="names a Milvus collection prefix"):
            migrate(engine, to=str(tmp_path / "copy"), collection="other")
        monkeypatch.setitem(sys.modules, "pymilvus", None)  # the extra is not installed
        with pytest.raises(OperationError) as failed:
            migrate(engine, to=str(tmp_path / "x.db"))
        assert failed.value.kind == "unavailable"
        assert "pip install 'noteseek[milvus]'" in str(failed.value)
        assert not (tmp_path / "copy").exists() and not (tmp_path / "x.db").exists()


def test_vectors_of_one_model_with_another_dimension_are_named(tmp_path: Path) -> None:
    folder = project(tmp_path, {"vault": small_vault(tmp_path)})
    target = tmp_path / "target"
    store, _ = open_store(target)
    store.put_vectors("bge-small-en-v1/int8", [("k", bytes(4 * 768))])
    store.close()
    with engine_for(folder) as engine:
        engine.index()
        engine.store.put_vectors("bge-small-en-v1/int8", [("k", bytes(4 * 384))])
        with pytest.raises(OperationError) as refused:
            migrate(engine, to=f"sqlite:{target}")
    message = str(refused.value)
    assert "vectors of bge-small-en-v1/int8 have 768 dimensions, the source's 384" in message


def test_cli_migrates_to_milvus_lite_and_status_shows_it(tmp_path: Path) -> None:
    vault = small_vault(tmp_path)
    env = {"NOTESEEK_EMBEDDING__ENABLED": "false"}
    run_cli(["index", str(vault), "--json"], tmp_path, env)
    lite = str(tmp_path / "lite.db")
    proc = run_cli(["migrate", "--to", lite, "--json"], tmp_path, env)
    data = json.loads(proc.stdout)
    assert data["counts"]["source"] == data["counts"]["target"]
    assert data["counts"]["target"]["files"] == 15

    milvus = {**env, "NOTESEEK_MILVUS__URI": lite}
    status = json.loads(run_cli(["status", "--json"], tmp_path, milvus).stdout)
    assert status["store"]["backend"] == "milvus-lite"
    assert status["documents"] == 15 and status["chunks"] == data["counts"]["target"]["chunks"]
    assert status["store"]["collections"]["noteseek_files"] == 15
    search = ["search", "redis", "--json"]
    found = json.loads(run_cli(search, tmp_path, milvus).stdout)["results"]
    assert found and found == json.loads(run_cli(search, tmp_path, env).stdout)["results"]
    links = ["links", "notes/redis.md", "--json"]
    assert run_cli(links, tmp_path, milvus).stdout == run_cli(links, tmp_path, env).stdout

    again = run_cli(["migrate", "--to", lite], tmp_path, env, code=2)
    assert "is not empty" in again.stderr and "--replace" in again.stderr
    assert "Traceback" not in again.stderr
    text = run_cli(["migrate", "--to", lite, "--replace"], tmp_path, env).stdout
    assert "copied the SQLite index in" in text and "files" in text
    index_dir = Path(json.loads(run_cli(["status", "--json"], tmp_path, env).stdout)["index_dir"])
    with writer_elsewhere(index_dir, "watch"):
        busy = run_cli(["migrate", "--to", lite, "--replace"], tmp_path, env, code=4)
    assert "noteseek watch" in busy.stderr
