"""The team tier against a real Milvus engine over TCP (``tests/milvus_engine.py``): what the
server offers is probed, not assumed; secrets never reach any output; a Milvus index keeps
its own local state folder and is named as itself.

The engine here is Milvus's C++ engine as milvus-lite 2.5.1 ships it: it does not implement
``GetVersion`` or ``list_databases``, and refuses HNSW ("local mode only support FLAT IVF_FLAT
AUTOINDEX"), as Zilliz Cloud offers AUTOINDEX only.
"""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest

from noteseek.store.milvus import MilvusConfig, MilvusStore
from noteseek.store.milvus.capabilities import (
    MissingCapability,
    essential,
    refused,
    server_version,
)
from noteseek.store.milvus.errors import milvus_errors
from tests.helpers import project, run_cli, write, writer_elsewhere
from tests.milvus_engine import Engine, direct_client, free_port
from tests.test_serve import serve_env, serving

NOTES = {
    "redis.md": "# Redis\n\nEXPIRE sets the time to live of a key.\n\nSee [[kafka]].\n",
    "kafka.md": "# Kafka\n\nA topic is split into partitions.\n",
}


def env_for(uri: str, collection: str, **more: str) -> dict[str, str]:
    return {
        "NOTESEEK_MILVUS__URI": uri,
        "NOTESEEK_MILVUS__COLLECTION": collection,
        "NOTESEEK_EMBEDDING__ENABLED": "false",
        **more,
    }


def vault_project(tmp_path: Path) -> Path:
    vault = tmp_path / "vault"
    for name, text in NOTES.items():
        write(vault / name, text)
    folder = tmp_path / "project"
    folder.mkdir()
    return project(folder, {"notes": vault})


# -- 1. capabilities, not versions ----------------------------------------------------------------


def test_the_engine_is_used_for_what_it_offers_and_status_says_what_was_chosen(
    milvus_engine: Engine, engine_prefix: str
) -> None:
    store = MilvusStore(MilvusConfig(uri=milvus_engine.uri, prefix=engine_prefix))
    try:
        vectors = np.eye(4, 8, dtype=np.float32)
        store.put_vectors("m", [(f"k{i}", v.tobytes()) for i, v in enumerate(vectors)])
        details = store.details()
        # No version is reported (GetVersion is not implemented), and that is no error.
        assert details["server_version"] == "not reported"
        assert "does not implement GetVersion" in details["server"]
        assert milvus_engine.uri in details["server"]
        # HNSW was refused, so the next index in the order was taken: AUTOINDEX.
        [(collection, kind)] = details["vector_index"].items()
        assert collection.startswith(f"{engine_prefix}_vec_") and kind == "AUTOINDEX"
        nearest = store._search_params(collection, 100)
        assert nearest == {"ef": 100}  # the engine builds AUTOINDEX as a graph
        found = store.client.search(
            collection, data=[vectors[2].tolist()], anns_field="vector", limit=1,
            output_fields=["key"], search_params={"metric_type": "COSINE", "params": nearest},
        )  # fmt: skip
        assert found[0][0]["entity"]["key"] == "k2"
    finally:
        store.close()


def test_a_refusal_is_told_from_an_unreachable_server(milvus_engine: Engine) -> None:
    from pymilvus import MilvusClient

    client = direct_client(milvus_engine.uri, timeout=5)
    try:
        assert server_version(client) is None  # UNIMPLEMENTED: no version, no error
        with pytest.raises(milvus_errors()) as caught:
            client.list_databases()
        assert refused(caught.value)
        # An essential the server does not offer is one error naming it.
        with pytest.raises(MissingCapability) as missing:
            essential(milvus_engine.uri, "databases", client.list_databases)
        message = str(missing.value)
        assert "does not offer databases" in message and "milvus.uri" in message
        assert "\n" not in message and "Traceback" not in message
    finally:
        client.close()
    with pytest.raises(milvus_errors()) as unreachable:
        MilvusClient(uri=f"http://127.0.0.1:{free_port()}", timeout=1)
    assert not refused(unreachable.value)


# -- 5. secrets never shown -----------------------------------------------------------------------

PASSWORD, TOKEN, QUERY, FRAGMENT = "Pa55-w0rd-x", "TokSecret-9", "QueryTok-7", "FragTok-5"


def leaks(text: str, secrets: tuple[str, ...]) -> list[str]:
    return [s for s in secrets if s in text]


def test_no_output_shows_a_password_or_token(
    tmp_path: Path, milvus_engine: Engine, engine_prefix: str
) -> None:
    """Every place noteseek prints settings, status, errors or logs, with credentials in
    ``milvus.uri`` (a password, a ``token=`` query and fragment) and ``milvus.token``."""
    folder = vault_project(tmp_path)
    port = milvus_engine.port
    secrets = (PASSWORD, TOKEN, QUERY, FRAGMENT)
    uri = f"http://root:{PASSWORD}@127.0.0.1:{port}/?token={QUERY}#token={FRAGMENT}"
    env = env_for(
        uri,
        engine_prefix,
        NOTESEEK_MILVUS__TOKEN=f"root:{TOKEN}",
        NOTESEEK_EMBEDDING__ENABLED="true",  # a vector collection, so its index is shown
    )
    outputs: dict[str, str] = {}

    def record(name: str, args: list[str], code: int = 0, where: dict[str, str] = env) -> str:
        proc = run_cli(args, folder, where, code=code)
        outputs[name] = proc.stdout + proc.stderr
        return outputs[name]

    record("index", ["index"])
    record("config show", ["config", "show"])
    shown = json.loads(record("config show --json", ["config", "show", "--json"]))
    values = {v["key"]: v["value"] for v in shown["values"]}
    assert values["milvus.uri"] == f"http://127.0.0.1:{port}/?token=***#***"
    # status names the server (no version: GetVersion is not implemented) and the vector
    # index chosen for it (HNSW refused: AUTOINDEX).
    text = record("status", ["status"])
    assert "does not implement GetVersion" in text and "vector index AUTOINDEX" in text
    store = json.loads(record("status --json", ["status", "--json"]))["store"]
    assert store["backend"] == "milvus" and store["server_version"] == "not reported"
    assert set(store["vector_index"].values()) == {"AUTOINDEX"}
    record("search", ["search", "partitions"])
    with serving(folder, env=serve_env(tmp_path / "home", **env)) as server:
        with server.client() as client:
            for path in ("/status", "/health"):
                outputs[path] = client.get(path).text
            outputs["POST /query_documents"] = client.post(
                "/query_documents", json={"query": "partitions"}
            ).text
        assert (
            "partitions" in outputs["POST /query_documents"]
            or "kafka" in (outputs["POST /query_documents"])
        )
    outputs["serve log"] = server.log

    # Errors: a password holding "@" and "/" (URL parsers split it in the wrong place, and
    # pymilvus then names a piece of it as the host), a wrong port, a bad token.
    broken = {
        "password with @ and /": f"http://root:p@ss/{PASSWORD}@127.0.0.1:{port}",
        "refused port": f"http://root:{PASSWORD}@127.0.0.1:{free_port()}/#token={FRAGMENT}",
    }
    for name, bad in broken.items():
        where = {**env, "NOTESEEK_MILVUS__URI": bad, "NOTESEEK_MILVUS__TIMEOUT": "2"}
        record(f"search ({name})", ["search", "x"], code=3, where=where)
    record("status (refused)", ["status", "--json"], code=3, where=where)
    for name, text in outputs.items():
        assert not leaks(text, (*secrets, "p@ss")), (name, leaks(text, secrets), text[-2000:])
        assert "Traceback" not in text, (name, text[-2000:])
    assert "milvus.uri = http://127.0.0.1:" in outputs["search (refused port)"]


# -- 6. a Milvus index's own local state folder ---------------------------------------------------


def test_a_milvus_index_keeps_its_own_folder_not_the_named_index_in_use(
    tmp_path: Path, milvus_engine: Engine, engine_prefix: str
) -> None:
    vault, elsewhere = tmp_path / "vault", tmp_path / "cwd"
    for name, text in NOTES.items():
        write(vault / name, text)
    elsewhere.mkdir()
    plain = {"NOTESEEK_EMBEDDING__ENABLED": "false"}
    run_cli(["index", str(vault), "--name", "notes"], elsewhere, plain)  # SQLite, in use
    named = json.loads(run_cli(["status", "--json"], elsewhere, plain).stdout)

    env = env_for(milvus_engine.uri, engine_prefix)
    run_cli(["index", str(vault)], elsewhere, env)
    status = json.loads(run_cli(["status", "--json"], elsewhere, env).stdout)
    assert status["index_dir"] != named["index_dir"]
    assert "keyed by milvus.uri, db_name and collection" in status["index_dir_reason"]
    assert status["store"]["location"] == (
        f"Milvus at {milvus_engine.uri} (collections {engine_prefix}_*)"
    )
    header = run_cli(["search", "partitions"], elsewhere, env).stderr.splitlines()[0]
    assert (
        header
        == f"index Milvus at {milvus_engine.uri} (collections {engine_prefix}_*) (roots: vault)"
    )
    text = run_cli(["status"], elsewhere, env).stdout.splitlines()[0]
    assert text.startswith(f"index Milvus at {milvus_engine.uri}") and "local state in" in text

    # A writer on the named index's folder does not block a migration of the Milvus index.
    with writer_elsewhere(Path(named["index_dir"]), "index"):
        moved = run_cli(
            ["migrate", "--to", f"sqlite:{tmp_path / 'copy'}", "--json"], elsewhere, env
        )
    data = json.loads(moved.stdout)
    assert data["source"] == status["store"]["location"]
    assert data["counts"]["source"]["files"] == 2


# -- keys the C++ engine mishandles ----------------------------------------------------------------


def test_quotes_and_accents_in_keys_are_written_once(
    tmp_path: Path, milvus_engine: Engine, engine_prefix: str
) -> None:
    """The engine's upsert deletes the old row by an expression it does not escape: a key with
    a quote failed the whole commit, one with an accent got a second row (term statistics
    counted twice). Keys now go through ``schema.safe_key``: indexing, editing and indexing
    again equals a fresh index of the same files."""
    from tests.test_milvus_engine_faults import snapshot

    vault = tmp_path / "vault"
    write(vault / "it's ünï.md", "# Café\n\nNaïve café crème, see [[Don't panic]] and [[Ünï]].\n")
    write(vault / "Don't panic.md", "# Don't panic\n\nThe café's 東京 brûlée: [[it's ünï]].\n")
    write(vault / "bad.md", "---\ntitle: [unclosed\n---\n# Bad 'frontmatter' ü\n\ncafé\n")
    folder = tmp_path / "project"
    folder.mkdir()
    project(folder, {"notes": vault})
    env = env_for(milvus_engine.uri, engine_prefix)
    run_cli(["index"], folder, env)
    write(vault / "it's ünï.md", "# Café\n\n東京 café au lait, see [[Don't panic]].\n", mtime=2e9)
    run_cli(["index"], folder, env)
    fresh = f"{engine_prefix}_fresh"
    run_cli(["index"], folder, {**env, "NOTESEEK_MILVUS__COLLECTION": fresh})
    edited, again = snapshot(milvus_engine.uri, engine_prefix), snapshot(milvus_engine.uri, fresh)
    assert edited == again
    assert edited["terms"]["東京/c"] == 2  # once per chunk that says it, not twice
    links = json.loads(run_cli(["links", "Don't panic.md", "--json"], folder, env).stdout)
    assert [b["doc_id"] for b in links["backlinks"]] == ["notes/it's ünï.md"]
