"""The CLI end to end with the index in Milvus Lite (``NOTESEEK_MILVUS__URI``), and the one
precise error every kind of unusable Milvus gives (exit 3, the setting named, no traceback)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from noteseek.engine import SearchRequest
from tests.conftest import EXAMPLE_VAULT
from tests.helpers import engine_for, project, refused_port, run_cli


def milvus_env(uri: str, **more: str) -> dict[str, str]:
    return {"NOTESEEK_MILVUS__URI": uri, "NOTESEEK_EMBEDDING__ENABLED": "false", **more}


def test_index_search_get_and_status_with_milvus_lite(tmp_path: Path) -> None:
    env = milvus_env(str(tmp_path / "lite" / "index.db"))
    first = json.loads(run_cli(["index", str(EXAMPLE_VAULT), "--json"], tmp_path, env).stdout)
    assert first["added"] == 36 and first["skipped"] == 0
    again = json.loads(run_cli(["index", str(EXAMPLE_VAULT), "--json"], tmp_path, env).stdout)
    assert again["unchanged"] == 36 and again["added"] == 0  # fingerprints live in Milvus

    res = json.loads(run_cli(["search", "redis ttl", "--json"], tmp_path, env).stdout)
    assert res["results"][0]["path"] == "notes/redis.md"
    got = run_cli(["get", "notes/redis.md:12"], tmp_path, env).stdout
    assert "TTL" in got or "ttl" in got.lower()

    status = json.loads(run_cli(["status", "--json"], tmp_path, env).stdout)
    store = status["store"]
    assert store["backend"] == "milvus-lite"
    assert store["uri"] == str(tmp_path / "lite" / "index.db")
    assert store["server_version"].startswith("milvus_lite")
    assert store["leases"] == []  # each `index` released its roots' leases when it exited
    assert store["collections"]["noteseek_files"] == 36
    assert store["collections"]["noteseek_chunks"] == status["chunks"] > 36
    # The index runs kept the link graph in Milvus: every write taken in, edges and nodes.
    assert store["collections"]["noteseek_graph_dirty"] == 0
    assert store["collections"]["noteseek_graph_nodes"] == 36
    assert store["collections"]["noteseek_graph_edges"] > 0
    assert store["collections"]["noteseek_communities"] > 0
    text = run_cli(["status"], tmp_path, env).stdout
    assert "milvus-lite" in text and "noteseek_chunks" in text

    # The SQLite index of the same folder was never created: everything is in Milvus.
    sqlite = json.loads(run_cli(["status", "--json"], tmp_path).stdout)
    assert sqlite["store"] == {"backend": "sqlite"}

    # The kept graph answers as SQLite's does (indexed now, in another index).
    run_cli(["index", str(EXAMPLE_VAULT), "--json"], tmp_path)
    for args in (["links", "notes/redis.md", "--json"], ["graph", "notes/redis.md", "--json"]):
        kept = json.loads(run_cli(args, tmp_path, env).stdout)
        assert kept == json.loads(run_cli(args, tmp_path).stdout)
        assert kept.get("backlinks") or kept.get("edges")


def sealed_rows(lite_dir: Path, collection: str) -> int:
    """Rows of ``collection`` in Milvus Lite's segment files (not its in-memory table)."""
    import pyarrow.parquet as pq

    data = lite_dir / "collections" / collection / "partitions" / "_default" / "data"
    return sum(pq.read_metadata(f).num_rows for f in data.glob("*.parquet"))


def test_an_index_run_leaves_milvus_lite_searching_sealed_segments(tmp_path: Path) -> None:
    """Milvus Lite searches rows it has not flushed by rebuilding an index over all of them
    for every search (tens of seconds per query at 50k chunks): an index run ends with what
    it wrote flushed, while the process that wrote it still has Lite open."""
    lite = tmp_path / "lite.db"
    project(tmp_path, {"docs": EXAMPLE_VAULT})
    engine = engine_for(tmp_path, **{"milvus.uri": str(lite), "milvus.collection": "seal"})
    try:
        assert sealed_rows(lite, "seal_chunks") == 0
        engine.index()
        chunks = int(engine.status()["chunks"])
        assert chunks > 36
        assert sealed_rows(lite, "seal_chunks") == chunks
        assert sealed_rows(lite, "seal_files") == 36
        assert (
            engine.search(SearchRequest("redis ttl", mode="keyword")).hits[0].path
            == "notes/redis.md"
        )
    finally:
        engine.close()


@pytest.mark.parametrize(
    ("uri", "words"),
    [
        ("http://127.0.0.1:{refused}", "milvus.uri"),
        ("ftp://example.invalid/x", "milvus.uri"),
    ],
    ids=["refused connection", "wrong scheme"],
)
def test_an_unusable_milvus_is_one_precise_error(tmp_path: Path, uri: str, words: str) -> None:
    with refused_port() as port:
        env = milvus_env(uri.format(refused=port), NOTESEEK_MILVUS__TOKEN="user:secret-password")
        for args in (["index", str(EXAMPLE_VAULT)], ["search", "redis"], ["status"]):
            proc = run_cli(args, tmp_path, env, code=3)
            said = proc.stdout + proc.stderr
            assert words in said and "cannot be used" in said
            assert "Traceback" not in said and "secret-password" not in said


def test_a_lite_file_held_by_another_process_is_named(tmp_path: Path) -> None:
    import subprocess
    import sys

    uri = str(tmp_path / "held.db")
    holder = subprocess.Popen(
        [
            sys.executable,
            "-c",
            f"from pymilvus import MilvusClient; MilvusClient({uri!r}); "
            "print('open', flush=True); import time; time.sleep(60)",
        ],
        stdout=subprocess.PIPE,
        stderr=subprocess.DEVNULL,
        text=True,
    )
    try:
        assert holder.stdout is not None and holder.stdout.readline().strip() == "open"
        proc = run_cli(["search", "redis"], tmp_path, milvus_env(uri), code=3)
        said = proc.stdout + proc.stderr
        assert "another process may have this Milvus Lite file open" in said
        assert "Traceback" not in said
    finally:
        holder.kill()
        holder.wait(10)
