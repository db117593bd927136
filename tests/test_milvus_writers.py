"""Several writers into one Milvus index at once (``store/milvus/leases.py``).

Milvus Lite serves one process at a time, so the writers here are threads of one process,
each with its own engine (its own store handle and Milvus client) on the one Lite file, as
separate processes or machines would each have against a Milvus Server: they share nothing
but what is stored in Milvus (leases, id blocks, per-root statistics, the version).
"""

from __future__ import annotations

import itertools
import os
import re
import socket
import subprocess
import sys
import threading
import time
from collections import Counter
from pathlib import Path
from typing import Any

import pytest

from noteseek.analysis import get_analyzer
from noteseek.engine import Engine, live, open_engine
from noteseek.operations.errors import as_operation_error
from noteseek.search.keyword import weights_of
from noteseek.search.query import parse_query
from noteseek.store.milvus import MilvusConfig, MilvusStore, MilvusUnavailable
from noteseek.store.milvus.leases import LeaseHeld, LeaseLost
from noteseek.types import Filters
from tests.helpers import engine_for, project, write

ROOTS = ("alpha", "beta", "gamma")
FILES = 24
WORDS = ["lease", "writer", "commit", "search", "token", "ranking"]
WORDS += ["vector", "chunk", "ledger", "harbor", "quartz"]
PART = re.compile(r"version(\d) part(\d) of (\d)")


def note(root: str, i: int, version: int) -> str:
    """A note whose every chunk says its version, its part and how many parts there are."""
    parts = 3 if version == 1 else 4
    out = [f"# {root} note {i}\n"]
    for k in range(1, parts + 1):
        words = " ".join(WORDS[(i * k + j) % len(WORDS)] for j in range(6 + k))
        out.append(f"\n## Part {k}\n\nversion{version} part{k} of {parts} {root}{i} {words}\n")
    return "".join(out)


def make_root(base: Path, root: str) -> Path:
    folder = base / root
    for i in range(FILES):
        write(folder / f"n{i:02}.md", note(root, i, 1))
    return folder


def edit_root(folder: Path, root: str) -> None:
    """Version 2 of most notes, three deleted, three added."""
    for i in range(FILES):
        path = folder / f"n{i:02}.md"
        if i % 8 == 7:
            path.unlink()
        else:
            write(path, note(root, i, 2), mtime=time.time() + 5)
    for i in range(FILES, FILES + 3):
        write(folder / f"n{i:02}.md", note(root, i, 2))


def engine(tmp: Path, name: str, uri: str, roots: dict[str, Path], prefix: str) -> Engine:
    folder = tmp / f"project-{name}"
    folder.mkdir()
    project(folder, roots)
    flags: dict[str, Any] = {"milvus.uri": uri, "milvus.collection": prefix}
    return engine_for(folder, **flags)


def parts_of(texts: list[str]) -> set[tuple[int, int, int]]:
    return {tuple(int(x) for x in m.groups()) for t in texts for m in PART.finditer(t)}  # type: ignore[misc]


def whole(texts: list[str]) -> str | None:
    """Why a file's chunks are not one whole version (None when they are)."""
    found = parts_of(texts)
    versions = {v for v, _, _ in found}
    if len(versions) != 1:
        return f"versions {sorted(versions)}"
    v, _, n = next(iter(found))
    if {k for _, k, _ in found} != set(range(1, n + 1)):
        return f"version {v} parts {sorted(k for _, k, _ in found)} of {n}"
    return None


def deleted(path: str) -> bool:
    """Whether :func:`edit_root` deletes the note at ``path``."""
    return int(path.removeprefix("n").removesuffix(".md")) % 8 == 7 and path < f"n{FILES:02}"


def read_loop(
    store: MilvusStore,
    stop: threading.Event,
    seen: list[str],
    reads: list[int],
    deleting: dict[str, threading.Event],
) -> None:
    """Read every file whole, and the whole index's chunks, until told to stop.

    A file listed and then read without chunks is being deleted: it passes when its row is
    gone by the time it is looked up again, or when it is one the second run deletes and that
    run has begun (once in CI, Milvus Lite answered the row's lookup as before the delete after
    the chunks' read had found none). Any other file read without chunks, in either run, is
    reported."""
    while not stop.is_set():
        for file in store.iter_files():
            texts = [c.text for c in store.file_chunks(file.file_id)]
            if not texts and store.file_row(file.file_id) is None:
                continue  # deleted since it was listed
            if not texts and deleted(file.path) and deleting[file.root].is_set():
                continue  # its deletion is under way
            problem = whole(texts)
            if problem:
                seen.append(f"{file.root}/{file.path}: {problem}")
        by_file: dict[int, list[str]] = {}
        for chunk in store.chunk_rows(store.filtered_chunk_ids(Filters())):
            by_file.setdefault(chunk.file_id, []).append(chunk.text)
        for file_id, texts in by_file.items():
            if len({v for v, _, _ in parts_of(texts)}) > 1:
                seen.append(f"file {file_id}: a mix of versions")
        reads[0] += 1


def terms(store: MilvusStore) -> dict[str, tuple[int, int]]:
    """Every term's document frequencies over chunks and files (per-root rows summed)."""
    out: Counter[tuple[str, int]] = Counter()
    for row in store._scan("terms", "", ["term", "cdf", "ddf"]):
        out[(str(row["term"]), 0)] += int(row["cdf"])
        out[(str(row["term"]), 1)] += int(row["ddf"])
    names = {t for t, _ in out}
    return {t: (out[(t, 0)], out[(t, 1)]) for t in names if out[(t, 0)] or out[(t, 1)]}


def bm25(eng: Engine, query: str) -> list[tuple[str, str, int, float]]:
    """The keyword lane's BM25 scores of every chunk matching ``query`` (and of files)."""
    settings = eng.settings
    analyzer = get_analyzer(settings.analysis.language, settings.analysis.stopwords)
    parsed, weights = parse_query(query, analyzer), weights_of(settings.search)
    store = eng.store
    found = dict(store.keyword_search(parsed, "any", Filters(), 500, weights))
    rows = store.chunk_rows(list(found))
    out = [(c.root, c.path, c.ordinal, round(found[c.rowid], 9)) for c in rows]
    files = {f.file_id: f for f in store.iter_files()}
    docs = store.document_scores(parsed, Filters(), 500, weights)
    out += [(files[i].root, files[i].path, -1, round(s, 9)) for i, s in docs.items()]
    return sorted(out)


@pytest.mark.parametrize("where", ["milvus-lite", "milvus-engine"])
def test_writers_on_different_roots_at_once_while_a_reader_searches(
    tmp_path: Path, where: str, request: pytest.FixtureRequest
) -> None:
    uri, shared, fresh_prefix = str(tmp_path / "milvus" / "index.db"), "shared", "fresh"
    if where == "milvus-engine":  # the C++ engine over TCP, as a Milvus Server
        uri = request.getfixturevalue("milvus_engine").uri
        shared = request.getfixturevalue("engine_prefix")
        fresh_prefix = f"{shared}_fresh"
    folders = {r: make_root(tmp_path / "notes", r) for r in ROOTS}
    writers = {r: engine(tmp_path, r, uri, {r: folders[r]}, shared) for r in ROOTS}
    reader = MilvusStore(MilvusConfig(uri=uri, prefix=shared), readonly=True)
    errors: list[str] = []
    barrier = threading.Barrier(len(ROOTS))
    deleting = {r: threading.Event() for r in ROOTS}

    def index(root: str) -> None:
        try:
            eng = writers[root]
            barrier.wait()
            first = eng.index([root], keyword_only=True)
            assert first.added == FILES, first.to_dict()
            deleting[root].set()
            edit_root(folders[root], root)
            again = eng.index([root], keyword_only=True)
            assert (again.updated, again.removed, again.added) == (21, 3, 3), again.to_dict()
        except BaseException as exc:  # reported by the main thread
            errors.append(f"{root}: {type(exc).__name__}: {exc}")

    stop, seen, reads = threading.Event(), list[str](), [0]
    looking = threading.Thread(target=read_loop, args=(reader, stop, seen, reads, deleting))
    looking.start()
    threads = [threading.Thread(target=index, args=(r,)) for r in ROOTS]
    for t in threads:
        t.start()
    for t in threads:
        t.join(300)
    stop.set()
    looking.join(60)
    assert not errors, errors
    assert not seen, seen[:5]
    assert reads[0] >= 2  # the reader read while the writers wrote

    # Nothing lost, duplicated or half written; every id unique.
    files = list(reader.iter_files())
    for root in ROOTS:
        paths = sorted(f.path for f in files if f.root == root)
        assert paths == sorted(p.name for p in folders[root].iterdir())
    chunk_ids = reader.filtered_chunk_ids(Filters())
    ids = [f.file_id for f in files] + chunk_ids
    assert len(ids) == len(set(ids))
    for file in files:
        texts = [c.text for c in reader.file_chunks(file.file_id)]
        assert whole(texts) is None and "version2" in texts[-1], file.path
    stats = reader.stats()
    assert stats["files"] == len(ROOTS) * FILES and stats["chunks"] == len(chunk_ids)

    # The keyword statistics equal a fresh single writer's index of the same files.
    fresh = engine(tmp_path, "fresh", uri, folders, fresh_prefix)
    fresh.index(keyword_only=True)
    fresh_store = fresh.store
    assert isinstance(fresh_store, MilvusStore)
    assert reader._stats() == fresh_store._stats()
    assert terms(reader) == terms(fresh_store)
    for query in ("lease ranking", "harbor", "quartz ledger", "version2 part4", "alpha3"):
        got = bm25(writers["alpha"], query)
        assert got and got == bm25(fresh, query), query
    for eng in (*writers.values(), fresh):
        eng.close()
    reader.close()


def stores(tmp_path: Path, n: int) -> list[MilvusStore]:
    config = MilvusConfig(uri=str(tmp_path / "m.db"), prefix="leases")
    return [MilvusStore(config) for _ in range(n)]


def test_a_second_writer_on_a_root_is_refused_naming_the_holder(tmp_path: Path) -> None:
    folder = make_root(tmp_path / "notes", "alpha")
    uri = str(tmp_path / "milvus.db")
    first = engine(tmp_path, "first", uri, {"alpha": folder}, "noteseek")
    second = engine(tmp_path, "second", uri, {"alpha": folder}, "noteseek")
    first.index(["alpha"], keyword_only=True)  # holds the root until it closes
    with pytest.raises(LeaseHeld) as refused:
        second.index(["alpha"], keyword_only=True)
    said = str(refused.value)
    assert "root 'alpha'" in said and f"pid {os.getpid()} on {socket.gethostname()}" in said
    error = as_operation_error(refused.value)  # every door: a conflict (CLI exit 4, HTTP 409)
    assert error is not None and error.kind == "conflict" and str(error) == said
    # status names the holder, for every process reading the index
    leases = second.status()["store"]["leases"]
    assert [(x["resource"], x["pid"]) for x in leases] == [("root:alpha", os.getpid())]
    # Of several roots, those another writer holds are left out and reported.
    beta = make_root(tmp_path / "notes", "beta")
    both = second.index(["alpha", str(beta)], keyword_only=True)
    assert both.roots == ["beta"] and both.added == FILES
    assert [(p["root"], p["severity"]) for p in both.problems] == [("alpha", "error")]
    assert f"pid {os.getpid()}" in both.problems[0]["reason"]
    first.close()
    report = second.index(["alpha"], keyword_only=True)  # free again
    assert report.unchanged == FILES
    held = {x["resource"] for x in second.status()["store"]["leases"]}
    assert held == {"root:alpha", "root:beta"}
    second.close()


def test_a_waiting_writer_gets_the_root_when_it_is_released(tmp_path: Path) -> None:
    a, b = stores(tmp_path, 2)
    a.hold_roots(["r"])
    threading.Timer(0.5, lambda: a.leases.release(["root:r"])).start()
    started = time.monotonic()
    b.hold_roots(["r"], wait=10)
    assert 0.4 < time.monotonic() - started < 5
    assert [h.token for h in b.leases.holders("root")] == [b.leases.token]
    a.close()
    b.close()


def test_an_expired_lease_is_taken_over_and_its_old_holder_writes_nothing(
    tmp_path: Path,
) -> None:
    a, b = stores(tmp_path, 2)
    a.leases.ttl = 1.0
    a.hold_roots(["r"])
    a.leases._stop.set()  # the holder stalls (or died): it renews no more
    with pytest.raises(LeaseHeld):
        b.hold_roots(["r"])
    time.sleep(1.3)
    b.hold_roots(["r"])  # expired: taken over
    assert [h.token for h in b.leases.holders("root")] == [b.leases.token]
    with pytest.raises(LeaseLost):
        a.ensure_root("r", str(tmp_path))
    with pytest.raises(LeaseLost):
        a.set_meta("x", "1")  # any commit of a handle that lost a lease fails
    assert b.meta("x") is None
    b.ensure_root("r", str(tmp_path))
    assert a.roots() == {"r": str(tmp_path)}
    a.close()
    b.close()


def test_a_holder_busy_with_its_own_commits_keeps_its_lease(tmp_path: Path) -> None:
    # An index run holds the handle's lock for one commit after another; the renewing thread
    # must not wait for it (it did, and a 200k-chunk Milvus Lite run lost its root).
    (a,) = stores(tmp_path, 1)
    a.leases.ttl = 1.0
    a.hold_roots(["r"])
    with a._lock:  # three times the ttl inside the handle's lock
        time.sleep(3.0)
        a.leases.check()  # still this handle's: renewed meanwhile
    a.ensure_root("r", str(tmp_path))
    assert [h.token for h in a.leases.holders("root")] == [a.leases.token]
    a.close()


def test_a_killed_holder_on_this_machine_is_taken_over_at_once(tmp_path: Path) -> None:
    a, b = stores(tmp_path, 2)
    dead = subprocess.run(
        [sys.executable, "-c", "import os; print(os.getpid())"],
        check=True,
        capture_output=True,
        text=True,
    )
    a.leases.info["pid"] = int(dead.stdout)  # as if `noteseek index` there was killed
    a.hold_roots(["r"])
    a.leases._stop.set()
    b.hold_roots(["r"])  # no need to wait for its lease to run out
    assert [h.token for h in b.leases.holders("root")] == [b.leases.token]
    a.leases.info["host"] = "another-machine"  # there, a pid says nothing here: it waits
    a.leases.held.clear()
    c = stores(tmp_path, 1)[0]
    a.hold_roots(["s"])
    with pytest.raises(LeaseHeld):
        c.hold_roots(["s"])
    for store in (a, b, c):
        store.close()


def test_claims_at_once_give_one_holder_and_distinct_id_blocks(tmp_path: Path) -> None:
    handles = stores(tmp_path, 4)
    won: list[int] = []
    firsts: dict[int, list[int]] = {}
    barrier = threading.Barrier(len(handles))

    def claim(i: int, store: MilvusStore) -> None:
        barrier.wait()
        try:
            store.hold_roots(["contended"])
            won.append(i)
        except LeaseHeld:
            pass
        firsts[i] = [store._new_ids(40_000) for _ in range(3)]

    threads = [threading.Thread(target=claim, args=(i, s)) for i, s in enumerate(handles)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(60)
    assert len(won) == 1
    ranges = sorted((f, f + 40_000) for got in firsts.values() for f in got)
    assert len(ranges) == 12
    assert all(end <= nxt for (_, end), (nxt, _) in itertools.pairwise(ranges))
    holders = handles[0].lease_holders()
    assert [h["resource"] for h in holders] == ["root:contended"]
    for store in handles:
        store.close()


def test_roots_another_machine_added_are_not_indexed_here(tmp_path: Path) -> None:
    uri = str(tmp_path / "milvus.db")
    mine = make_root(tmp_path / "notes", "mine")
    elsewhere = MilvusStore(MilvusConfig(uri=uri, prefix="noteseek"))
    elsewhere.leases.info["host"] = "another-machine"
    elsewhere.ensure_root("theirs", "/srv/their/notes")  # added by `noteseek index` there
    elsewhere.ensure_root("adhoc", str(mine))
    elsewhere.leases.info["host"] = socket.gethostname()
    elsewhere.ensure_root("earlier", str(tmp_path / "notes" / "earlier"))  # added here before
    eng = engine(tmp_path, "here", uri, {"mine": mine}, "noteseek")
    assert set(eng._state.roots()) - {"memory"} == {"mine", "earlier"}
    report = eng.index(keyword_only=True)  # their roots are neither indexed nor leased
    assert set(report.roots) - {"memory"} == {"earlier", "mine"} and report.added == FILES
    assert elsewhere.root_hosts()["mine"] == socket.gethostname()
    eng.close()
    elsewhere.close()


def test_collections_of_an_earlier_build_are_one_clear_error(tmp_path: Path) -> None:
    from pymilvus import DataType

    config = MilvusConfig(uri=str(tmp_path / "m.db"), prefix="old")
    store = MilvusStore(config)
    client = store.client
    client.drop_collection("old_terms")  # as an earlier build made it: one row per term
    old = client.create_schema(auto_id=False, enable_dynamic_field=False)
    old.add_field("term", DataType.VARCHAR, is_primary=True, max_length=64)
    old.add_field("cdf", DataType.INT64)
    old.add_field("_v", DataType.FLOAT_VECTOR, dim=2)
    index = client.prepare_index_params()
    index.add_index("_v", index_type="FLAT", metric_type="L2")
    client.create_collection("old_terms", schema=old, index_params=index)
    store.close()
    with pytest.raises(MilvusUnavailable) as refused:
        MilvusStore(config)
    said = str(refused.value)
    assert "earlier noteseek build" in said and "milvus.collection" in said


def test_watch_holds_its_roots_and_a_second_one_waits_for_them(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Two live services (two machines' `noteseek watch`: each its own index folder and
    lock) on one root of one Milvus index: the second names the first and takes over once
    it stops."""
    monkeypatch.setattr(live, "DAMAGE_RETRY", 0.2)  # the pause after a failed run
    notes = make_root(tmp_path / "notes", "notes")
    env = {"NOTESEEK_MILVUS__URI": str(tmp_path / "milvus.db")}
    services = []
    for name in ("first", "second"):
        folder = tmp_path / name
        folder.mkdir()
        extra = "[memory]\nenabled = false\n[embedding]\nenabled = false\n"
        project(folder, {"notes": notes}, extra + "[watch]\nreconcile_interval = 0.3\n")
        config = open_engine(folder, environ=env).config
        services.append(live.IndexService(config, watch=name == "first", command="watch"))
    first, second = services
    reader = engine(tmp_path, "reader", env["NOTESEEK_MILVUS__URI"], {}, "noteseek")
    assert reader.status()["files"] == 0  # opened before the services' threads open theirs
    try:
        assert first.start() == "writer"
        wait_until(lambda: reader.status()["files"] == FILES)
        write(notes / "late.md", "# Late\n\nwritten while watched\n")
        wait_until(lambda: reader.status()["files"] == FILES + 1)  # the watcher's batch
        assert second.start() == "writer"  # of its own folder: the root is the first's
        wait_until(lambda: "root 'notes'" in (second.last_error or ""))
        assert f"a noteseek writer (pid {os.getpid()}" in str(second.last_error)
        assert roots_held(reader) == [("root:notes", os.getpid())]
        first.stop()  # releases the root
        wait_until(lambda: any(j["state"] == "done" for j in second.state()["jobs"]))
        assert roots_held(reader) == [("root:notes", os.getpid())]
    finally:
        first.stop()
        second.stop()
        reader.close()
    assert reader.status()["store"]["leases"] == []


def roots_held(eng: Engine) -> list[tuple[str, int]]:
    leases = eng.status()["store"]["leases"]
    return [(x["resource"], x["pid"]) for x in leases if x["resource"].startswith("root:")]


def wait_until(check: Any, timeout: float = 60.0) -> None:
    started = time.monotonic()
    while not check():
        assert time.monotonic() - started < timeout, "condition not met in time"
        time.sleep(0.1)
