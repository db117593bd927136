"""Hostile file trees: what a walk of a root reads, reports and skips.

A name that is not valid UTF-8, a link that leads out of the root, loops of any shape, trees
too deep or too large, FIFOs and devices: each is reported with a reason (in the run, in
``noteseek status``, ``index_status`` over MCP and ``/status``) and skipped on its own, and
nothing outside a root is ever read. The doors run as real processes where the finding was
seen through them.
"""

from __future__ import annotations

import json
import os
import time
from collections.abc import Callable, Iterable, Iterator
from pathlib import Path

import pytest

from noteseek.engine.live import IndexService
from noteseek.operations.admin import index_status
from noteseek.operations.context import Context
from noteseek.operations.params import NoParams
from noteseek.sources import base
from noteseek.sources.registry import register_source, unregister_source
from tests.helpers import engine_for, project, run_cli, write
from tests.mcp_client import call, eventually, mcp_project, run, session
from tests.test_serve import serve_env, serving

BAD_NAME = b"bad_\xff.md"
BAD_SHOWN = "bad_\\xff.md"
"""How the undecodable name is shown and stored: its byte written as ``\\xNN``."""


def bad_named(folder: Path, *names: bytes, text: bytes = b"# Bad\n\nzebra\n") -> None:
    """A file at ``folder/names...``, given as raw bytes (not valid UTF-8)."""
    path = os.path.join(os.fsencode(folder), *(names or (BAD_NAME,)))
    os.makedirs(os.path.dirname(path), exist_ok=True)
    fd = os.open(path, os.O_CREAT | os.O_WRONLY, 0o644)
    try:
        os.write(fd, text)
    finally:
        os.close(fd)


def good_notes(folder: Path, count: int) -> set[str]:
    for i in range(count):
        write(folder / f"good{i:03d}.md", f"# Good {i}\n\nzebra number {i}\n")
    return {f"good{i:03d}.md" for i in range(count)}


def wait_for(check: Callable[[], bool], timeout: float = 10.0) -> None:
    deadline = time.monotonic() + timeout
    while not check():
        assert time.monotonic() < deadline, f"condition not met within {timeout} s"
        time.sleep(0.1)


def reasons(problems: Iterable[dict[str, str]]) -> dict[str, str]:
    return {p["path"]: p["reason"] for p in problems}


# -- 1. names that are not valid UTF-8 ----------------------------------------------------------


def test_a_file_name_that_is_not_utf8_is_skipped_alone_and_shown_by_status(
    tmp_path: Path,
) -> None:
    """It used to fail its whole batch: exit 2, "'utf-8' codec can't encode", nothing indexed."""
    notes = tmp_path / "notes"
    expected = good_notes(notes, 40)
    bad_named(notes)
    bad_named(notes, b"sub", b"caf\xe9", b"x.md")  # a folder named so is reported, not entered
    folder = project(tmp_path, {"notes": notes}, "[embedding]\nenabled = false\n")

    index = run_cli(["index", "--json"], folder)
    report = json.loads(index.stdout)
    assert report["added"] == len(expected)
    why = reasons(report["problems"])
    assert "not valid UTF-8" in why[BAD_SHOWN]
    assert "not valid UTF-8" in why["sub/caf\\xe9"]

    status = json.loads(run_cli(["status", "--json"], folder).stdout)
    assert status["documents"] == len(expected)
    assert "not valid UTF-8" in reasons(status["failures"])[BAD_SHOWN]
    plain = run_cli(["status"], folder).stdout
    assert BAD_SHOWN in plain and "Traceback" not in plain

    found = run_cli(["search", "zebra", "--json", "--top-k", "100"], folder).stdout
    assert {r["path"] for r in json.loads(found)["results"]} == expected
    # A second run reads nothing again and keeps the problem listed.
    again = json.loads(run_cli(["index", "--json"], folder).stdout)
    assert again["added"] == 0 and BAD_SHOWN in reasons(again["problems"])


def test_index_status_over_mcp_reports_the_bad_name(tmp_path: Path) -> None:
    notes = tmp_path / "notes"
    expected = good_notes(notes, 5)
    bad_named(notes)
    folder = mcp_project(tmp_path, notes)

    async def main() -> None:
        async with session(folder) as client:
            status: dict = {}

            async def indexed() -> bool:
                status.update(await call(client, "index_status"))
                return status["status"] == "ready" and status["documents"] > 0

            await eventually(indexed, timeout=30)
            assert status["documents"] == len(expected)
            assert "not valid UTF-8" in reasons(status["failures"])[BAD_SHOWN]

    run(main)


def test_status_over_http_reports_the_bad_name(tmp_path: Path) -> None:
    """Under serve every reconciliation used to fail while /status said ready, no failures."""
    notes = tmp_path / "notes"
    expected = good_notes(notes, 5)
    bad_named(notes)
    folder = project(tmp_path, {"notes": notes})
    with serving(folder, env=serve_env(tmp_path / "home")) as server, server.client() as client:
        status = server.wait_ready(client)
        assert status["documents"] == len(expected)
        assert "not valid UTF-8" in reasons(status["failures"])[BAD_SHOWN]
        assert status["service"]["last_error"] is None

        # Created together, a good note and a badly named one: the watcher cannot even name
        # the second (watchfiles raises for the whole batch), yet the first is found.
        write(notes / "later.md", "# Later\n\nquokka\n")
        bad_named(notes, b"worse_\xfe.md")

        def found() -> bool:
            out = client.post("/query_documents", json={"query": "quokka"}).json()
            return [r["path"] for r in out["results"]] == ["later.md"]

        wait_for(found, timeout=30)
        status = client.get("/status").json()
        assert "not valid UTF-8" in reasons(status["failures"])["worse_\\xfe.md"]


class OddSource:
    """A source (the plugin protocol, as a registered kind sees it) whose documents are kept
    in memory, with names the store may refuse, or a scan that fails."""

    kind = "oddtest"

    def __init__(self, name: str, docs: dict[str, bytes], fail: list[str]) -> None:
        self.name = name
        self.docs = docs
        self.fail = fail
        self.location = f"{self.kind}:{name}"

    def scan(self) -> base.ScanResult:
        if self.fail:
            raise RuntimeError(self.fail[0])
        return base.ScanResult(
            files=[
                base.FoundFile(self.name, path, "", 1, len(data))
                for path, data in sorted(self.docs.items())
            ]
        )

    def scan_paths(self, rels: Iterable[str]) -> base.PathScan:
        return base.PathScan(needs_full_scan=True)

    def read(self, path: str, limit: int | None = None) -> bytes:
        return self.docs[path][: limit if limit is not None else None]

    def fingerprint(self, path: str) -> base.Fingerprint | None:
        return base.Fingerprint(1, len(self.docs[path])) if path in self.docs else None

    def inside(self, path: str) -> bool:
        return True

    def locate(self, disk_path: Path) -> str | None:
        return None

    def watch_folder(self) -> Path | None:
        return None


@pytest.fixture
def odd(tmp_path: Path) -> Iterator[tuple[Path, dict[str, bytes], list[str]]]:
    """A project whose one root is an :class:`OddSource`: its documents and its failure."""
    docs: dict[str, bytes] = {}
    fail: list[str] = []
    register_source(OddSource.kind, lambda name, _root, _ctx: OddSource(name, docs, fail))
    extra = f'kind = "{OddSource.kind}"\n[embedding]\nenabled = false\n'
    try:
        yield project(tmp_path, {"odd": tmp_path / "odd"}, extra), docs, fail
    finally:
        unregister_source(OddSource.kind)


def test_a_file_the_store_rejects_costs_only_that_file(
    odd: tuple[Path, dict[str, bytes], list[str]],
) -> None:
    """Every file of a batch is written in a savepoint of its own."""
    folder, docs, _fail = odd
    for i in range(30):
        docs[f"good{i:02d}.md"] = f"# Good {i}\n\nzebra {i}\n".encode()
    docs["bad_\udcff.md"] = b"# Bad\n\nzebra\n"  # a name SQLite cannot take as text
    with engine_for(folder) as engine:
        report = engine.index()
        assert report.added == 30 and report.skipped == 1
        why = reasons(report.problems)
        assert why[BAD_SHOWN].startswith("could not be stored")
        hits = engine.search("zebra", top_k=100).hits
        assert len(hits) == 30
        stored = reasons(engine.status()["problems"])
        assert stored[BAD_SHOWN].startswith("could not be stored")


def test_a_failed_run_shows_in_status_until_a_run_succeeds(
    odd: tuple[Path, dict[str, bytes], list[str]],
) -> None:
    """The live writer used to fail every reconciliation while status said ready, no failures."""
    folder, docs, fail = odd
    docs["a.md"] = b"# A\n\nzebra\n"
    config = engine_for(folder).config
    service = IndexService(config, watch=False)
    reader = engine_for(folder)
    try:
        assert service.start() == "writer"
        ctx = Context(reader, service)
        wait_for(lambda: reader.index_exists and index_status(ctx, NoParams())["documents"] == 1)
        fail.append("the disk is on fire")
        service.reindex()
        wait_for(lambda: bool(index_status(ctx, NoParams())["failures"]))
        status = index_status(ctx, NoParams())
        [failure] = status["failures"]
        assert failure["root"] == "odd" and failure["severity"] == "error"
        assert failure["reason"] == "indexing failed: RuntimeError: the disk is on fire"
        assert status["service"]["jobs"][-1]["state"] == "failed"
        fail.clear()
        service.reindex()
        wait_for(lambda: not index_status(ctx, NoParams())["failures"])
    finally:
        service.stop()
        reader.close()
