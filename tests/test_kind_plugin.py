"""A fourth kind is one package and one registration: a package outside ``noteseek`` declares a
``noteseek.kinds`` entry point, and its documents are indexed and answer search on every door
(CLI, MCP over stdio, HTTP), reading and the page's rendering, with nothing in noteseek
knowing its name.

The package is written by the test into a folder of its own with a ``.dist-info`` (what an
install leaves), put on ``PYTHONPATH`` of the processes it starts: the real entry-point
machinery finds it, as it would find an installed plugin.
"""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

import anyio

from tests.helpers import project, run_cli, write
from tests.mcp_client import call, session
from tests.test_serve import serve_env, serving

PLUGIN = '''
"""Tickets: one JSON object per line of tickets.jsonl, one document per ticket."""
import json
import os
from pathlib import Path

from noteseek.sources.base import Fingerprint, FoundFile, PathScan, ReadError, ScanResult
from noteseek.sources.spec import KindSpec, Profile


class TicketSource:
    kind = "tickets"

    def __init__(self, name, root, context):
        self.name = name
        self.file = Path(root.path).expanduser() / "tickets.jsonl"
        self.location = str(self.file)

    def _tickets(self):
        if not self.file.exists():
            return {}
        rows = [json.loads(line) for line in self.file.read_text().splitlines() if line.strip()]
        return {f"{row['id']}.md": row for row in rows}

    def _found(self, path, row):
        data = self._render(row)
        return FoundFile(self.name, path, "", int(os.stat(self.file).st_mtime_ns), len(data))

    def _render(self, row):
        return f"# {row['title']}\\n\\n{row['body']}\\n".encode()

    def scan(self):
        return ScanResult(files=[self._found(p, r) for p, r in sorted(self._tickets().items())])

    def scan_paths(self, rels):
        tickets = self._tickets()
        scan = PathScan()
        for rel in sorted(set(rels)):
            if rel in tickets:
                scan.files.append(self._found(rel, tickets[rel]))
            else:
                scan.gone.append(rel)
        return scan

    def read(self, path, limit=None):
        row = self._tickets().get(path)
        if row is None:
            raise ReadError("no such ticket")
        return self._render(row)[:limit]

    def fingerprint(self, path):
        row = self._tickets().get(path)
        return None if row is None else Fingerprint(os.stat(self.file).st_mtime_ns, 0)

    def inside(self, path):
        return path in self._tickets()

    def locate(self, disk_path):
        return None

    def watch_folder(self):
        return None


SPEC = KindSpec(
    "tickets",
    TicketSource,
    scope="tickets",
    profile=lambda settings: Profile(expand_chars=400, max_per_document=1),
    joins_graph=False,
)
'''

TICKETS = [
    {"id": "T-1", "title": "Login fails after upgrade", "body": "The walrus token expired."},
    {"id": "T-2", "title": "Export is slow", "body": "CSV export takes minutes for large vaults."},
]


def _plugin(tmp_path: Path) -> dict[str, str]:
    """The plugin as an installed distribution on PYTHONPATH, and the server's environment."""
    site = tmp_path / "site"
    write(site / "ns_tickets" / "__init__.py", PLUGIN)
    info = site / "ns_tickets-1.0.dist-info"
    write(info / "METADATA", "Metadata-Version: 2.1\nName: ns-tickets\nVersion: 1.0\n")
    write(info / "entry_points.txt", "[noteseek.kinds]\ntickets = ns_tickets:SPEC\n")
    env = serve_env(tmp_path / "home")
    env["PYTHONPATH"] = os.pathsep.join(
        [str(site), *filter(None, [os.environ.get("PYTHONPATH", "")])]
    )
    return env


def _folder(tmp_path: Path) -> Path:
    notes = tmp_path / "notes"
    write(notes / "walrus.md", "# Walrus\n\nA walrus note among the documents.\n")
    desk = tmp_path / "desk"
    write(desk / "tickets.jsonl", "\n".join(json.dumps(t) for t in TICKETS) + "\n")
    extra = f'[roots.desk]\npath = "{desk.as_posix()}"\nkind = "tickets"\n'
    return project(tmp_path, {"notes": notes}, extra + "[embedding]\nenabled = false\n")


def _found(results: list[dict[str, Any]]) -> list[str]:
    return [r["doc_id"] for r in results]


def test_a_kind_from_an_installed_package_works_on_every_door(tmp_path: Path) -> None:
    env = _plugin(tmp_path)
    folder = _folder(tmp_path)
    indexed = json.loads(run_cli(["index", "--json"], folder, env=env).stdout)
    assert indexed["added"] == 3 and "desk" in indexed["roots"], indexed
    # CLI: the kind's own scope holds its tickets alone; documents leave them out.
    cli = json.loads(
        run_cli(
            ["search", "walrus", "--source", "tickets", "--json", "--mode", "keyword"],
            folder,
            env=env,
        ).stdout
    )
    assert _found(cli["results"]) == ["desk/T-1.md"]
    docs = json.loads(
        run_cli(["search", "walrus", "--json", "--mode", "keyword"], folder, env=env).stdout
    )
    assert _found(docs["results"]) == ["notes/walrus.md"]
    everything = json.loads(
        run_cli(
            ["search", "walrus", "--source", "all", "--json", "--mode", "keyword"],
            folder,
            env=env,
        ).stdout
    )
    assert set(_found(everything["results"])) == {"desk/T-1.md", "notes/walrus.md"}
    shown = run_cli(["get", "desk/T-2.md"], folder, env=env).stdout
    assert "CSV export takes minutes" in shown

    async def over_mcp() -> None:
        async with session(folder, env=env) as client:
            out = await call(
                client,
                "query_documents",
                {"query": "walrus", "source": "tickets", "mode": "keyword"},
            )
            assert _found(out["results"]) == ["desk/T-1.md"]
            doc = await call(client, "get_document", {"path": "desk/T-1.md"})
            assert "walrus token" in doc["content"]

    anyio.run(over_mcp)
    with serving(folder, env=env) as server, server.client() as client:
        server.wait_ready(client)
        body = {"query": "slow export", "source": "tickets", "mode": "keyword"}
        reply = client.post("/query_documents", json=body)
        assert reply.status_code == 200, reply.text
        assert _found(reply.json()["results"]) == ["desk/T-2.md"]
        # The page reads a note through the render operation's route.
        page = client.get("/render/desk/T-2.md")
        assert page.status_code == 200, page.text
        assert page.json()["title"] == "Export is slow"
        assert "<h1" in page.json()["html"] and "CSV export" in page.json()["html"]
        # The page's "Search in" list comes from the status: the kind's scope is there.
        scopes = client.get("/status").json()["scopes"]
        assert {"name": "tickets", "kinds": ["tickets"], "operation": None} in scopes
        bad = client.post("/query_documents", json={**body, "source": "nowhere"})
        assert bad.status_code == 400
        assert "tickets" in bad.json()["error"]


def test_without_the_package_the_kind_is_a_clear_error(tmp_path: Path) -> None:
    folder = _folder(tmp_path)
    proc = run_cli(["index"], folder, env=serve_env(tmp_path / "home"), code=2)
    assert "kind 'tickets'" in proc.stderr and "known kinds are" in proc.stderr
    assert "Traceback" not in proc.stderr
