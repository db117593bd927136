"""Every result set names the index that answered (folder and roots), in every door: the
index used last may belong to another vault than the one meant."""

from __future__ import annotations

import json
import os
from pathlib import Path

from tests.helpers import project, run_cli, write
from tests.mcp_client import call, eventually, mcp_project, run, session
from tests.test_serve import serving_example_vault


def _tilde(folder: str) -> str:
    home = os.environ["HOME"]
    assert folder.startswith(home + os.sep), (folder, home)
    return "~" + folder[len(home) :]


def _two_roots(tmp_path: Path) -> Path:
    write(tmp_path / "notes" / "tea.md", "# Tea\n\nGreen tea is steeped at low temperature.\n")
    write(tmp_path / "docs" / "kettle.md", "# Kettle\n\nThe kettle boils water for tea.\n")
    return project(tmp_path, {"notes": tmp_path / "notes", "docs": tmp_path / "docs"})


def test_the_cli_names_the_index_and_its_roots(tmp_path: Path) -> None:
    cwd = _two_roots(tmp_path)
    run_cli(["index"], cwd)
    index_dir = json.loads(run_cli(["status", "--json"], cwd).stdout)["index_dir"]

    data = json.loads(run_cli(["search", "tea", "--json"], cwd).stdout)
    assert data["index"] == {"dir": index_dir, "roots": ["docs", "notes"]}

    shown = run_cli(["search", "tea"], cwd)
    header = f"index {index_dir} (roots: docs, notes)"  # the project's own, outside home
    assert shown.stderr.splitlines()[0] == header
    assert "tea.md" in shown.stdout and "index " not in shown.stdout  # stdout: results only

    quiet = run_cli(["search", "tea", "--quiet"], cwd)
    assert "tea.md" in quiet.stdout
    assert "(roots:" not in quiet.stderr


def test_the_index_used_last_is_named_where_it_answers(tmp_path: Path) -> None:
    # No project file: `index FOLDER` remembers its index, a later search elsewhere uses it.
    vault = tmp_path / "vault"
    write(vault / "tea.md", "# Tea\n\nGreen tea is steeped at low temperature.\n")
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    run_cli(["index", str(vault)], elsewhere)
    data = json.loads(run_cli(["search", "tea", "--json"], elsewhere).stdout)
    assert data["index"]["roots"] == ["vault"]
    shown = run_cli(["search", "tea"], elsewhere)
    # The index lives in the user data folder, under home: shown with ~.
    assert shown.stderr.startswith(f"index {_tilde(data['index']['dir'])} (roots: vault)")


def test_mcp_results_name_the_index(vault: Path, tmp_path: Path) -> None:
    folder = mcp_project(tmp_path, vault)

    async def main() -> None:
        async with session(folder) as client:

            async def indexed() -> bool:
                status = await call(client, "index_status")
                return bool(status["status"] == "ready" and status["documents"] > 0)

            await eventually(indexed, timeout=30)
            status = await call(client, "index_status")
            result = await client.call_tool("query_documents", {"query": "redis ttl"})
            out = result.structured_content
            assert out["index"] == {"dir": status["index_dir"], "roots": ["notes"]}
            text = result.content[0].text
            assert f"index {status['index_dir']} (roots: notes)" in text

    run(main)


def test_http_results_name_the_index(tmp_path: Path) -> None:
    with serving_example_vault(tmp_path) as server, server.client() as client:
        index_dir = client.get("/status").json()["index_dir"]
        found = client.post("/query_documents", json={"query": "redis ttl"})
        assert found.status_code == 200
        assert found.json()["index"] == {"dir": index_dir, "roots": ["notes"]}
        with client.stream("POST", "/query_documents_stream", json={"query": "redis"}) as r:
            events = [line for line in r.iter_lines() if line.startswith("data:")]
        done = json.loads(events[-1].removeprefix("data:"))
        assert done["index"] == {"dir": index_dir, "roots": ["notes"]}
