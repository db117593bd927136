"""The CLI end to end, in subprocesses, on the example vault and on real third-party vaults."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from tests.conftest import EXAMPLE_VAULT, shared
from tests.helpers import run_cli

run = run_cli


def test_quick_start_flow_on_the_example_vault(tmp_path: Path) -> None:
    first = json.loads(run(["index", str(EXAMPLE_VAULT), "--json"], tmp_path).stdout)
    assert first["added"] == 36 and first["skipped"] == 0
    second = json.loads(run(["index", str(EXAMPLE_VAULT), "--json"], tmp_path).stdout)
    assert second["unchanged"] == 36 and second["added"] == 0

    # Without a project file, later commands find the index used last.
    res = json.loads(run(["search", "redis ttl", "--json"], tmp_path).stdout)
    top = res["results"][0]
    assert top["path"] == "notes/redis.md" and top["root"] == "vault"
    assert set(top) >= {
        "doc_id",
        "title",
        "heading_path",
        "start_line",
        "end_line",
        "score",
        "snippet",
        "chunk_id",
    }

    text = run(["search", "redis ttl"], tmp_path).stdout
    assert "notes/redis.md" in text and "Expiry and TTL" in text

    got = run(["get", "notes/redis.md:12"], tmp_path).stdout
    assert "EXPIRE" in got
    got_json = json.loads(run(["get", top["chunk_id"], "--json"], tmp_path).stdout)
    assert got_json["kind"] == "chunk"

    status = json.loads(run(["status", "--json"], tmp_path).stdout)
    assert status["documents"] == 36 and status["chunks"] > 36
    assert status["last_run"]["unchanged"] == 36
    assert any(p["path"] == "notes/kafka.md" for p in status["failures"])
    assert "vault" in run(["status"], tmp_path).stdout


def test_exit_codes(tmp_path: Path) -> None:
    run(["search", "anything"], tmp_path, code=3)  # no index yet
    run(["index", "/definitely/not/here"], tmp_path, code=2)
    run(["index", str(EXAMPLE_VAULT)], tmp_path)
    run(["search", "qqqqzzzzxxxx"], tmp_path, code=1)
    run(["search", "redis", "--after", "someday"], tmp_path, code=2)
    run(["search", "redis", "--where", "=x"], tmp_path, code=2)
    run(["search", "--top-k", "0", "redis"], tmp_path, code=2)
    run(["get", "notes/none.md"], tmp_path, code=1)
    proc = run(["search", "redis", "--where", "novalue"], tmp_path, code=2)
    assert "Traceback" not in proc.stderr and "key=value" in proc.stderr


def test_batch_queries_print_one_json_line_each(tmp_path: Path) -> None:
    run(["index", str(EXAMPLE_VAULT)], tmp_path)
    queries = EXAMPLE_VAULT.parent / "queries.jsonl"
    lines = run(["search", "--queries", str(queries), "-k", "3"], tmp_path).stdout.splitlines()
    ids = [json.loads(line)["_id"] for line in queries.read_text().splitlines() if line.strip()]
    records = [json.loads(line) for line in lines]
    assert [r["query_id"] for r in records] == ids
    assert all(len(r["results"]) <= 3 for r in records)
    assert records[0]["results"][0]["path"] == "notes/redis.md"
    bad = tmp_path / "bad.jsonl"
    bad.write_text('{"text": "no id"}\n')
    assert "_id" in run(["search", "--queries", str(bad)], tmp_path, code=2).stderr


def test_init_and_config_show_report_layers(tmp_path: Path) -> None:
    run(["init", "--path", "notes"], tmp_path)
    assert (tmp_path / ".noteseek.toml").is_file()
    run(["init"], tmp_path, code=2)  # refuses to overwrite
    (tmp_path / "notes").mkdir()
    (tmp_path / "notes" / "a.md").write_text("# A\n\norchid\n")
    env = {"NOTESEEK_SEARCH__SNIPPET_CHARS": "99"}
    shown = json.loads(run(["config", "show", "--json"], tmp_path, env).stdout)
    layers = {v["key"]: (v["value"], v["layer"]) for v in shown["values"]}
    assert layers["roots.notes.path"] == (str(tmp_path / "notes"), "project")
    assert layers["search.snippet_chars"] == (99, "env")
    assert layers["search.top_k"] == (10, "default")
    assert shown["index_dir"] == str(tmp_path / ".noteseek")
    flag = json.loads(run(["--index-dir", "idx", "config", "show", "--json"], tmp_path).stdout)
    assert {v["key"]: v["layer"] for v in flag["values"]}["index.dir"] == "flag"
    run(["index"], tmp_path)
    assert (tmp_path / ".noteseek" / "index.db").is_file()
    assert json.loads(run(["search", "orchid", "--json"], tmp_path).stdout)["results"]


@pytest.mark.parametrize("name, expect_files", [("foam", 95), ("dendron-site", 1000)])
def test_real_vaults(tmp_path: Path, name: str, expect_files: int) -> None:
    folder = shared(f"vaults/{name}")
    report = json.loads(run(["index", str(folder), "--json"], tmp_path).stdout)
    assert report["added"] >= expect_files
    # Every file the scan found is indexed or reported with its reason.
    assert report["added"] + report["skipped"] == report["scanned"]
    query = "wikilinks" if name == "foam" else "schema"
    res = json.loads(run(["search", query, "--json", "-k", "5"], tmp_path).stdout)
    assert len(res["results"]) == 5
    assert all(query[:5] in (r["snippet"] + r["title"]).lower() for r in res["results"])


def test_search_expand_prints_the_grown_text(tmp_path: Path) -> None:
    notes = tmp_path / "notes"
    notes.mkdir()
    filler = " ".join(["filler"] * 150)
    (notes / "a.md").write_text(
        f"# A\n\n## Part\n\nfirst {filler}\n\nsecond mention of platypus {filler}\n\nthird end\n",
        encoding="utf-8",
    )
    run(["index", str(notes)], tmp_path)
    plain = run(["search", "platypus", "-m", "keyword"], tmp_path).stdout
    grown = run(["search", "platypus", "-m", "keyword", "--expand", "5000"], tmp_path).stdout
    assert "third end" not in plain
    assert "third end" in grown and "first" in grown
