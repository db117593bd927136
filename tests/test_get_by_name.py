"""A note found by its name: title, file name or alias, in any case, through every door.

The CLI in a subprocess, MCP through the official SDK client over stdio, HTTP against a
running server on loopback. A name two notes answer to is the operations' 'ambiguous' error,
listing both.
"""

from __future__ import annotations

from pathlib import Path

from tests.helpers import engine_for, project, run_cli, write
from tests.mcp_client import call, error_of, eventually, mcp_project, run, session
from tests.test_serve import serve_env, serving


def _vault(tmp: Path) -> Path:
    notes = tmp / "notes"
    write(
        notes / "db/redis.md",
        "---\ntitle: Redis\naliases: [redis-server, Remote Dictionary Server]\n---\n"
        "# Redis\n\nAn in-memory store.\n",
    )
    write(
        notes / "projects/kebab-name.md", "---\ntitle: Fancy Title\n---\nBody of the fancy note.\n"
    )
    write(notes / "a/Ideas.md", "# Ideas A\n\nFirst list of ideas.\n")
    write(notes / "b/ideas.md", "# Ideas B\n\nSecond list of ideas.\n")
    return notes


def test_engine_resolves_title_stem_and_alias(tmp_path: Path) -> None:
    engine = engine_for(project(tmp_path, {"notes": _vault(tmp_path)}))
    engine.index()
    for name in ("redis", "REDIS-SERVER", "remote dictionary server", "db/redis", "Redis.md"):
        assert engine.get(name).path == "db/redis.md", name
    assert engine.get("fancy title").path == "projects/kebab-name.md"
    assert engine.get("KEBAB-NAME").path == "projects/kebab-name.md"
    assert engine.get("a/ideas").path == "a/Ideas.md"  # the folder tells them apart


def test_cli_get_by_name_and_ambiguous(tmp_path: Path) -> None:
    folder = project(tmp_path, {"notes": _vault(tmp_path)}, "[embedding]\nenabled = false\n")
    run_cli(["index"], folder)
    got = run_cli(["get", "Remote Dictionary Server"], folder)
    assert "An in-memory store." in got.stdout and "notes/db/redis.md" in got.stderr
    bad = run_cli(["get", "ideas"], folder, code=1)
    assert "notes/a/Ideas.md (file name)" in bad.stderr
    assert "notes/b/ideas.md (file name)" in bad.stderr
    assert "Traceback" not in bad.stderr
    missing = run_cli(["get", "no such note"], folder, code=1)
    assert "nor one with that title, file name or alias" in missing.stderr


def test_mcp_get_document_by_alias(tmp_path: Path) -> None:
    folder = mcp_project(tmp_path, _vault(tmp_path))

    async def main() -> None:
        async with session(folder) as client:
            await call(client, "reindex")  # queued: the index fills in the background

            async def indexed() -> bool:
                status = await call(client, "index_status")
                return bool(status["documents"] == 4 and status["status"] == "ready")

            await eventually(indexed, timeout=60)
            doc = await call(client, "get_document", {"path": "redis-server"})
            assert doc["doc_id"] == "notes/db/redis.md" and "in-memory" in doc["content"]
            message = await error_of(client, "get_document", {"path": "Ideas"})
            assert "names several documents" in message
            assert "notes/a/Ideas.md" in message and "notes/b/ideas.md" in message

    run(main)


def test_http_documents_by_title(tmp_path: Path) -> None:
    folder = project(tmp_path, {"notes": _vault(tmp_path)})
    with serving(folder, env=serve_env(tmp_path / "home")) as server, server.client() as client:
        server.wait_ready(client)
        doc = client.get("/documents/Fancy Title").json()
        assert doc["doc_id"] == "notes/projects/kebab-name.md"
        ambiguous = client.get("/documents/ideas")
        assert ambiguous.status_code == 409, ambiguous.text
        assert "names several documents" in ambiguous.json()["error"]
