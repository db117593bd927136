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
import socket
import time
from collections.abc import Callable, Iterable, Iterator
from pathlib import Path
from typing import Any

import pytest

from noteseek.engine import NotFound, SearchRequest
from noteseek.engine.live import IndexService
from noteseek.operations.admin import index_status
from noteseek.operations.context import Context
from noteseek.operations.params import NoParams
from noteseek.sources import base
from noteseek.sources.base import ReadError
from noteseek.sources.folder import read_regular
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


async def indexed_status(client: Any) -> dict[str, Any]:
    """MCP ``index_status`` once the index is ready and holds documents."""
    status: dict[str, Any] = {}

    async def indexed() -> bool:
        status.update(await call(client, "index_status"))
        return status["status"] == "ready" and status["documents"] > 0

    await eventually(indexed, timeout=30)
    return status


def test_index_status_over_mcp_reports_the_bad_name(tmp_path: Path) -> None:
    notes = tmp_path / "notes"
    expected = good_notes(notes, 5)
    bad_named(notes)
    folder = mcp_project(tmp_path, notes)

    async def main() -> None:
        async with session(folder) as client:
            status = await indexed_status(client)
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
        hits = engine.search(SearchRequest("zebra", top_k=100)).hits
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


# -- 2. nothing outside the roots is read ------------------------------------------------------

SECRET = "xylophonesecret"


@pytest.fixture
def escapes(tmp_path: Path) -> Path:
    """A project whose root has links that lead out of it (to a file, to /etc/passwd, to a
    folder, to /) and one that stays inside it (to a folder the root excludes)."""
    outside = tmp_path / "outside"
    write(outside / "secret.md", f"# Secret\n\n{SECRET} pin 1234\n")
    write(outside / "folder" / "more.md", f"# More\n\n{SECRET} again\n")
    notes = tmp_path / "notes"
    write(notes / "plain.md", "# Plain\n\nan ordinary note\n")
    write(notes / "drafts" / "final.md", "# Final\n\nreached only through a link\n")
    os.symlink(outside / "secret.md", notes / "secret.md")
    os.symlink("/etc/passwd", notes / "passwd.md")
    os.symlink(outside / "folder", notes / "folder")
    os.symlink("/", notes / "slash")
    os.symlink(notes / "drafts", notes / "published")  # inside: keeps working
    toml = (
        f'[roots.notes]\npath = "{notes.as_posix()}"\nexclude = ["drafts/"]\n'
        "[embedding]\nenabled = false\n"
    )
    (tmp_path / ".noteseek.toml").write_text(toml, encoding="utf-8")
    return tmp_path


OUTSIDE_LINKS = {"secret.md", "passwd.md", "folder", "slash"}


def test_links_out_of_the_root_are_reported_and_never_read(escapes: Path) -> None:
    folder = escapes
    with engine_for(folder) as engine:
        report = engine.index()
        assert report.seconds < 10  # a link to / used to walk the whole file system
        why = reasons(report.problems)
        for link in OUTSIDE_LINKS:
            assert why[link].startswith("symbolic link leads outside the root"), link
        indexed = {f.path for f in engine.store.iter_files()}
        assert indexed == {"plain.md", "published/final.md"}
        assert (
            not engine.search(SearchRequest(SECRET)).hits
            and not engine.search(SearchRequest("root")).hits
        )
        # The link inside the root works like any file.
        assert engine.get("published/final.md").text.startswith("# Final")

    # The command line: nothing found, nothing to get.
    found = run_cli(["search", SECRET, "--json"], folder, code=1)
    assert SECRET not in found.stdout.replace(f'"{SECRET}"', "")
    got = run_cli(["get", "passwd.md"], folder, code=1)
    assert "root:x:0:0" not in got.stdout + got.stderr


def test_links_out_of_the_root_are_never_served_over_mcp_or_http(escapes: Path) -> None:
    folder = escapes

    async def main() -> None:
        async with session(folder) as client:
            status = await indexed_status(client)
            assert set(reasons(status["failures"])) >= OUTSIDE_LINKS
            for query in (SECRET, "root nologin", "pin 1234"):
                out = await call(client, "query_documents", {"query": query})
                assert not out["results"], out

    run(main)
    env = serve_env(folder / "home")
    with serving(folder, env=env) as server, server.client() as client:
        server.wait_ready(client)
        for route in ("/query_documents", "/query_documents_stream"):
            response = client.post(route, json={"query": f"{SECRET} root nologin"})
            assert response.status_code == 200
            assert SECRET not in response.text.replace(f"{SECRET} root", "")
            assert "root:x:0" not in response.text


def test_text_indexed_from_outside_is_refused_at_read_time(escapes: Path) -> None:
    """An index built while links out of the root were followed (the old default) keeps
    their rows until the next run; reading them back is refused meanwhile."""
    folder = escapes
    os.unlink(folder / "notes" / "slash")  # followed, it would walk the whole file system
    with engine_for(folder, **{"index.follow_symlinks_outside": True}) as engine:
        engine.index()
        chunk = engine.search(SearchRequest(SECRET)).hits[0]
        assert chunk.path in {"secret.md", "folder/more.md"}
        assert engine.get("secret.md").text.startswith("# Secret")  # allowed on purpose
    with engine_for(folder) as engine:
        for ref in ("secret.md", "secret.md:3", "folder/more.md", chunk.chunk_id):
            with pytest.raises(NotFound, match="leads outside its root"):
                engine.get(ref)
        with pytest.raises(NotFound, match="leads outside its root"):
            engine.section("passwd.md", 1)
        with pytest.raises(NotFound, match="leads outside its root"):
            engine.read_document("passwd.md")
        # The next run drops them.
        engine.index()
        assert not engine.search(SearchRequest(SECRET)).hits


# -- 3. loops, duplicates and bounds ------------------------------------------------------------


def test_loops_of_any_shape_walk_each_folder_once(tmp_path: Path) -> None:
    """Six folders that each link to all the others: the old walk followed every path that
    did not repeat a folder of its own (thousands), indexing each note thousands of times."""
    notes = tmp_path / "notes"
    names = [f"d{i}" for i in range(6)]
    for name in names:
        for j in range(3):
            write(notes / name / f"note{j}.md", f"# {name} {j}\n\nzebra\n")
    for name in names:
        for other in names:
            if other != name:
                os.symlink(notes / other, notes / name / f"to-{other}")
    os.symlink(notes, notes / "d0" / "up")
    folder = project(tmp_path, {"notes": notes})
    with engine_for(folder) as engine:
        report = engine.index()
        assert report.added == 18
        why = reasons(report.problems)
        assert why["d0/up"] == "symbolic link loop (points to a parent folder)"
        assert why["d1/to-d2"] == "duplicate folder (the same folder as d2, walked there)"
        assert len(why) == 31


def test_one_real_file_is_indexed_once_whatever_its_names(tmp_path: Path) -> None:
    notes = tmp_path / "notes"
    write(notes / "zeta" / "real.md", "# Real\n\nzebra\n")
    os.symlink(notes / "zeta" / "real.md", notes / "alias.md")  # sorts before its target
    os.symlink(notes / "zeta" / "real.md", notes / "zeta" / "another.md")
    os.link(notes / "zeta" / "real.md", notes / "zeta" / "hard.md")
    os.symlink(notes / "zeta", notes / "again")
    folder = project(tmp_path, {"notes": notes})
    with engine_for(folder) as engine:
        report = engine.index()
        assert [h.path for h in engine.search(SearchRequest("zebra")).hits] == ["zeta/hard.md"]
        why = reasons(report.problems)
        assert why["alias.md"] == "duplicate (the same file as zeta/hard.md, indexed there)"
        assert why["zeta/another.md"] == why["alias.md"]
        assert why["zeta/real.md"] == why["alias.md"]
        assert why["again"] == "duplicate folder (the same folder as zeta, walked there)"


def test_walks_are_bounded_in_depth_and_entries(tmp_path: Path) -> None:
    notes = tmp_path / "notes"
    deep = notes
    for level in range(8):
        deep = deep / f"l{level}"
        write(deep / "n.md", f"# Level {level}\n\nzebra\n")
    for i in range(30):
        write(notes / "wide" / f"w{i:02d}.md", f"# Wide {i}\n\nzebra\n")
    folder = project(tmp_path, {"notes": notes})
    with engine_for(folder, **{"index.max_depth": 3}) as engine:
        report = engine.index()
        assert report.added == 3 + 30
        assert reasons(report.problems) == {
            "l0/l1/l2/l3": "too deep (more than index.max_depth = 3 folders)"
        }
    with engine_for(folder) as engine:
        assert engine.index().added == 5
    with engine_for(folder, **{"index.max_entries": 20}) as engine:
        report = engine.index()
        [(where, why)] = reasons(report.problems).items()
        assert where == "wide"
        assert why.startswith("walk stopped (more than index.max_entries = 20 entries")
        # What was indexed from the folders it did not walk is kept, not deleted.
        assert report.removed == 0
        assert engine.status()["files"] == 38


def test_a_link_to_the_root_of_the_file_system_stops_at_the_bound(tmp_path: Path) -> None:
    """Followed on purpose, a link to / is still bounded (it walked 700k folders in 60 s)."""
    notes = tmp_path / "notes"
    write(notes / "a.md", "# A\n\nzebra\n")
    os.symlink("/", notes / "slash")
    folder = project(tmp_path, {"notes": notes})
    flags = {"index.follow_symlinks_outside": True, "index.max_entries": 3000}
    with engine_for(folder, **flags) as engine:
        started = time.monotonic()
        report = engine.index()
        assert time.monotonic() - started < 20
        assert any(p["reason"].startswith("walk stopped") for p in report.problems)


# -- 4. FIFOs, sockets and devices ----------------------------------------------------------------


def test_fifos_sockets_and_devices_are_reported_and_never_opened(tmp_path: Path) -> None:
    notes = tmp_path / "notes"
    write(notes / "a.md", "# A\n\nzebra\n")
    os.mkfifo(notes / "pipe.md")  # opening it would wait for a writer forever
    listener = socket.socket(socket.AF_UNIX)
    listener.bind(str(notes / "sock.md"))
    os.symlink("/dev/zero", notes / "zero.md")  # endless, if it were read
    os.mkfifo(notes / "ignored.fifo")  # not something the rules would index: not reported
    folder = project(tmp_path, {"notes": notes})
    try:
        flags = {"index.follow_symlinks_outside": True}
        with engine_for(folder, **flags) as engine:
            report = engine.index()
            assert report.added == 1
            assert reasons(report.problems) == {
                "pipe.md": "not a regular file (FIFO; never opened)",
                "sock.md": "not a regular file (socket; never opened)",
                "zero.md": "not a regular file (character device; never opened)",
            }
            assert set(reasons(engine.status()["problems"])) == {"pipe.md", "sock.md", "zero.md"}
    finally:
        listener.close()


def test_reading_a_file_swapped_for_a_fifo_does_not_block(tmp_path: Path) -> None:
    """The walk saw a file; by the time it is read it is a FIFO (or a link to a device)."""
    notes = tmp_path / "notes"
    write(notes / "a.md", "# A\n\nzebra\n")
    folder = project(tmp_path, {"notes": notes})
    with engine_for(folder) as engine:
        engine.index()
        os.unlink(notes / "a.md")
        os.mkfifo(notes / "a.md")
        with pytest.raises(ReadError, match="FIFO"):
            read_regular(str(notes / "a.md"))
        source = engine.source("notes")
        with pytest.raises(ReadError, match="FIFO"):
            source.read("a.md")
        # The document's text is no longer on disk: get falls back to the index, not a hang.
        assert engine.get("a.md").stale
