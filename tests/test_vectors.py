"""Vector search over a real SQLite index: exact, filtered, incremental, float16 and HNSW.

Vectors here are random unit vectors stored under each chunk's embedding key, so results can
be checked against a brute-force computation; the model itself is tested elsewhere.
"""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from noteseek.engine import Engine
from noteseek.search.ask import Filter
from noteseek.search.filters import build_filters
from noteseek.store.ann import InMemoryVectorIndex
from noteseek.store.factory import open_reader
from tests.helpers import engine_for, project, write

DIM = 32
MODEL = "test-model"


def fill_vectors(engine: Engine, seed: int = 0) -> dict[int, np.ndarray]:
    """A random unit vector for every chunk key without one; returns rowid -> vector."""
    rng = np.random.default_rng(seed)
    store = engine.store
    pending = store.pending_embeddings(MODEL)
    items = []
    for key, _ in pending:
        v = rng.normal(size=DIM).astype(np.float32)
        items.append((key, (v / np.linalg.norm(v)).tobytes()))
    store.put_vectors(MODEL, items)
    out = {}
    for rowid, _key, blob in store.all_chunk_vectors(MODEL):
        out[rowid] = np.frombuffer(blob, dtype=np.float32)
    return out


def vector_index(engine: Engine, **options: Any) -> InMemoryVectorIndex:
    """The index the engine's store hands out, built here to pass test options (a clock)."""
    return InMemoryVectorIndex(
        engine.store, MODEL, DIM, open_reader=lambda: open_reader(engine.index_dir), **options
    )


def brute_force(vectors: dict[int, np.ndarray], q: np.ndarray, k: int) -> list[int]:
    scored = sorted(vectors, key=lambda r: -float(vectors[r] @ q))
    return scored[:k]


@pytest.fixture
def notes_engine(tmp_path: Path) -> Engine:
    notes = tmp_path / "notes"
    for i in range(60):
        folder = "work" if i % 3 == 0 else "home"
        tag = "#urgent" if i % 10 == 0 else ""
        write(notes / folder / f"n{i:02d}.md", f"# Note {i}\n\nBody of note {i}. {tag}\n")
    engine = engine_for(project(tmp_path, {"n": notes}))
    engine.index()
    return engine


def query(seed: int) -> np.ndarray:
    v = np.random.default_rng(seed).normal(size=DIM).astype(np.float32)
    return v / np.linalg.norm(v)


def test_exact_search_matches_brute_force(notes_engine: Engine) -> None:
    vectors = fill_vectors(notes_engine)
    index = vector_index(notes_engine)
    for seed in range(5):
        q = query(100 + seed)
        got = index.search(q, 10)
        assert [r for r, _ in got] == brute_force(vectors, q, 10)
        assert got[0][1] == pytest.approx(float(vectors[got[0][0]] @ q), abs=1e-5)


def test_filters_never_starve_the_results(notes_engine: Engine) -> None:
    vectors = fill_vectors(notes_engine)
    index = vector_index(notes_engine)
    allowed = notes_engine.store.filtered_chunk_ids(build_filters(Filter(tags=["urgent"])))
    assert len(allowed) == 6
    q = query(1)
    got = index.search(q, 10, allowed)
    # Every allowed chunk comes back (only 6 exist), best first, however far they are.
    assert sorted(r for r, _ in got) == sorted(allowed)
    assert [r for r, _ in got] == brute_force({r: vectors[r] for r in allowed}, q, 10)
    assert index.search(q, 10, []) == []


def test_engine_filters_apply_to_the_semantic_lane(notes_engine: Engine) -> None:
    fill_vectors(notes_engine)
    allowed = set(notes_engine.store.filtered_chunk_ids(build_filters(Filter(paths=["work/**"]))))
    index = vector_index(notes_engine)
    got = index.search(query(3), 50, sorted(allowed))
    assert len(got) == len(allowed) == 20


def test_index_follows_the_store_incrementally(notes_engine: Engine, tmp_path: Path) -> None:
    fill_vectors(notes_engine)
    index = vector_index(notes_engine)
    index.sync()
    assert index.size == 60
    loads = []
    original = index._load_all
    index._load_all = lambda: (loads.append(1), original())  # type: ignore[method-assign]
    notes = tmp_path / "notes"
    (notes / "home" / "n01.md").unlink()
    write(notes / "home" / "new.md", "# New\n\nA new note.\n")
    notes_engine.index()
    index.sync()
    assert index.size == 59  # one gone; the new chunk has no vector yet
    vectors = fill_vectors(notes_engine, seed=5)
    index.sync()
    assert index.size == 60 and not loads  # updated in place, never reloaded
    q = query(9)
    assert [r for r, _ in index.search(q, 5)] == brute_force(vectors, q, 5)


def test_float16_matrix_ranks_like_float32(notes_engine: Engine) -> None:
    vectors = fill_vectors(notes_engine)
    index = vector_index(notes_engine, dtype="float16")
    q = query(4)
    got = [r for r, _ in index.search(q, 5)]
    assert got == brute_force(vectors, q, 5)


def test_hnsw_above_the_threshold_agrees_with_exact(notes_engine: Engine) -> None:
    vectors = fill_vectors(notes_engine)
    index = vector_index(notes_engine, hnsw_threshold=10)
    index.sync()
    assert index.wait_for_hnsw(60)  # built on a background thread
    hits = 0
    for seed in range(20):
        q = query(200 + seed)
        got = {r for r, _ in index.search(q, 10)}
        hits += len(got & set(brute_force(vectors, q, 10)))
    assert hits / 200 >= 0.95
    # A filter on HNSW still returns every allowed chunk (falls back to exact when needed).
    allowed = notes_engine.store.filtered_chunk_ids(build_filters(Filter(tags=["urgent"])))
    assert len(index.search(query(5), 10, allowed)) == 6


@pytest.mark.parametrize("hnsw", [0, 10])
def test_chunks_with_one_vector_share_it_and_are_all_found(tmp_path: Path, hnsw: int) -> None:
    # Docs repeat themselves: 30 pages carry the same boilerplate section, embedded to one
    # vector (boilerplate is embedded once). It is held once (one node of the graph), and a
    # search finds every page's copy of it.
    notes = tmp_path / "notes"
    boiler = "## Notes\n\nThis cmdlet is part of the shared module; see the module page.\n"
    for i in range(30):
        write(notes / f"p{i:02d}.md", f"# Page {i}\n\nThe page about topic {i}.\n\n{boiler}")
    engine = engine_for(project(tmp_path, {"n": notes}), **{"chunking.merge_small": False})
    engine.index()
    store = engine.store
    rng = np.random.default_rng(4)
    same = query(9).tobytes()
    items = []
    for key, rowid in store.pending_embeddings(MODEL):
        text = store.chunk_rows([rowid])[0].text
        v = rng.normal(size=DIM).astype(np.float32)
        items.append((key, same if "shared module" in text else (v / np.linalg.norm(v)).tobytes()))
    store.put_vectors(MODEL, items)
    vectors = {r: np.frombuffer(b, dtype=np.float32) for r, _, b in store.all_chunk_vectors(MODEL)}
    copies = sorted(r for r, v in vectors.items() if v.tobytes() == same)
    assert len(vectors) == 60 and len(copies) == 30

    index = vector_index(engine, hnsw_threshold=hnsw)
    index.sync()
    if hnsw:
        assert index.wait_for_hnsw(60)
    assert index.size == 60
    assert index._rows.distinct == 31  # 30 page bodies and one shared section
    got = index.search(query(9), 40)  # the shared vector itself: its 30 copies tie at the top
    assert [r for r, _ in got[:30]] == copies
    assert all(s == pytest.approx(1.0, abs=1e-5) for _, s in got[:30])
    others = [r for r in brute_force(vectors, query(9), 60) if r not in copies]
    assert [r for r, _ in got[30:]] == others[:10]
    # A filter lets through only some copies: exactly those come back.
    allowed = copies[::7]
    assert [r for r, _ in index.search(query(9), 10, allowed)] == allowed


def test_usearch_before_onnxruntime_does_not_crash_the_process() -> None:
    # Loading onnxruntime after usearch segfaults; store/ann.py must load them in the safe order.
    code = (
        "import numpy as np\n"
        "from noteseek.store.hnsw import build_hnsw\n"
        "v = np.eye(4, dtype=np.float32)\n"
        "build_hnsw(np.arange(4, dtype=np.int64), v, 4)\n"
        "import onnxruntime\n"
        "print('alive')\n"
    )
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60)
    assert proc.returncode == 0, proc.stderr[-2000:]
    assert proc.stdout.strip() == "alive"


@pytest.mark.parametrize("threshold", [0, 1])
def test_a_rewritten_chunk_that_keeps_its_rowid_gets_its_new_vector(
    tmp_path: Path, threshold: int
) -> None:
    # SQLite hands the highest rowid out again once its row is deleted, so a chunk rewritten
    # after an edit can keep its rowid: the index must notice the new key all the same.
    notes = tmp_path / "notes"
    write(notes / "only.md", "# Only\n\nThe first version.\n")
    engine = engine_for(project(tmp_path, {"n": notes}))
    engine.index()
    before = fill_vectors(engine, seed=1)
    index = vector_index(engine, hnsw_threshold=threshold)
    (rowid,) = before
    assert index.search(before[rowid], 1)[0][1] == pytest.approx(1.0, abs=1e-5)
    index.wait_for_hnsw(30)
    write(notes / "only.md", "# Only\n\nThe second version, rewritten.\n")
    engine.index()
    after = fill_vectors(engine, seed=2)
    assert list(after) == [rowid]  # the scenario under test: same rowid, new key
    assert not np.allclose(before[rowid], after[rowid])
    hits = index.search(after[rowid], 1)
    assert hits[0][0] == rowid
    assert hits[0][1] == pytest.approx(1.0, abs=1e-5)
    engine.close()


def test_mmr_moves_a_near_copy_below_a_different_result(notes_engine: Engine) -> None:
    from noteseek.search.fusion import Fused
    from noteseek.search.stages.mmr import mmr

    store = notes_engine.store
    keyed = [(key, i) for i, (key, _) in enumerate(store.pending_embeddings(MODEL)[:3])]
    same = np.zeros(DIM, dtype=np.float32)
    same[0] = 1.0
    other = np.zeros(DIM, dtype=np.float32)
    other[1] = 1.0
    store.put_vectors(
        MODEL,
        [
            (keyed[0][0], same.tobytes()),
            (keyed[1][0], same.tobytes()),
            (keyed[2][0], other.tobytes()),
        ],
    )
    index = vector_index(notes_engine)
    by_key = {}
    for rowid, key in store.vector_chunk_keys(MODEL):
        by_key.setdefault(key, rowid)
    a, b, c = (by_key[k] for k, _ in keyed)
    fused = [Fused(a, 0.9, 0.9), Fused(b, 0.85, 0.85), Fused(c, 0.8, 0.8), Fused(999999, 0.1, 0.1)]
    order = mmr([Fused(f.rowid, f.fused, f.score) for f in fused], index, 0.5, 3)
    assert [f.rowid for f in order] == [a, c, b, 999999]
    assert [f.score for f in order] == [0.9, 0.85, 0.8, 0.1]  # scores stay positional
    plain = mmr([Fused(f.rowid, f.fused, f.score) for f in fused], index, 1.0, 3)
    assert [f.rowid for f in plain] == [a, b, c, 999999]


def test_semantic_duplicates_are_dropped_by_cosine(notes_engine: Engine) -> None:
    from noteseek.search.fusion import Fused
    from noteseek.search.rows import CandidateRows
    from noteseek.search.stages.diversify import diversify

    store = notes_engine.store
    keyed = [key for key, _ in store.pending_embeddings(MODEL)[:3]]
    a_vec = np.zeros(DIM, dtype=np.float32)
    a_vec[0] = 1.0
    near = np.zeros(DIM, dtype=np.float32)
    near[0], near[1] = 0.96, 0.28  # cosine 0.96 to a_vec
    far = np.zeros(DIM, dtype=np.float32)
    far[2] = 1.0
    store.put_vectors(
        MODEL, [(k, v.tobytes()) for k, v in zip(keyed, (a_vec, near, far), strict=True)]
    )
    index = vector_index(notes_engine)
    by_key = {}
    for rowid, key in store.vector_chunk_keys(MODEL):
        by_key.setdefault(key, rowid)
    a, b, c = (by_key[k] for k in keyed)
    fused = [Fused(a, 0.9, 0.9), Fused(b, 0.85, 0.85), Fused(c, 0.8, 0.8)]
    settings = notes_engine.settings.search

    def kept(threshold: float) -> list[int]:
        chosen = settings.model_copy(update={"semantic_duplicate": threshold})
        return [f.rowid for f in diversify(CandidateRows(store), list(fused), 10, chosen, index)]

    assert kept(0.95) == [a, c]  # b says what a says
    assert kept(0.97) == [a, b, c]
    assert kept(0.0) == [a, b, c]  # off


class FakeClock:
    def __init__(self) -> None:
        self.now = 1000.0

    def __call__(self) -> float:
        return self.now


def test_an_expensive_update_runs_in_the_background(
    notes_engine: Engine, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Once keeping a large index in step costs more than THROTTLE_FROM (a bulk change),
    searches stop waiting for it: the update runs on a background thread, at most once per its
    own duration, and searches use the last complete state until it lands."""
    import threading

    from noteseek.store import ann as vector

    monkeypatch.setattr(vector, "BACKGROUND_FROM_ROWS", 10)  # this index counts as large
    fill_vectors(notes_engine)
    clock = FakeClock()
    index = vector_index(notes_engine, clock=clock)
    real_changes = index._changes
    release = threading.Event()
    release.set()
    readers: list[str] = []

    def slow_changes(*args):  # type: ignore[no-untyped-def]
        readers.append(threading.current_thread().name)
        assert release.wait(30)
        out = real_changes(*args)
        clock.now += 2.0  # it takes 2 s of the (fake) clock
        return out

    index._changes = slow_changes  # type: ignore[method-assign]
    index.sync()
    first = index.size

    def add_note(name: str, seed: int) -> None:
        write(tmp_path / "notes" / "home" / f"{name}.md", f"# {name}\n\nFresh words.\n")
        notes_engine.index()
        fill_vectors(notes_engine, seed=seed)

    add_note("new-a", 1)
    index.sync()  # the last update was cheap: done inside the call
    assert index.size == first + 1 and readers == [threading.current_thread().name]
    add_note("new-b", 2)
    clock.now += 1.0  # within 2 s of the last (2 s) update: nothing yet
    assert index.search(query(3), 100)
    assert index.size == first + 1 and len(readers) == 1
    clock.now += 1.5
    release.clear()
    assert index.search(query(3), 100)  # answers from the last state, not waiting
    assert index.size == first + 1
    release.set()
    index.wait_for_refresh(30)
    assert readers[-1] == "noteseek-vectors"
    assert index.size == first + 2 and index.refresh_error is None
    vectors = {
        r: np.frombuffer(b, dtype=np.float32)
        for r, _k, b in notes_engine.store.all_chunk_vectors(MODEL)
    }
    q = query(4)
    assert [r for r, _ in index.search(q, 5)] == brute_force(vectors, q, 5)


def test_fetching_many_vectors_starts_from_the_chunks(notes_engine: Engine) -> None:
    """SQLite's planner scanned every vector of the model (blobs included) for a few hundred
    rowids, 19 s per 900 at 107k vectors; chunk_vectors keeps chunks as the outer loop."""
    fill_vectors(notes_engine)
    store = notes_engine.store
    statements: list[str] = []
    store._conn.set_trace_callback(statements.append)
    try:
        rowids = [rowid for rowid, _key in store.vector_chunk_keys(MODEL)]
        got = store.chunk_vectors(MODEL, [*rowids, *range(10**6, 10**6 + 400)])
    finally:
        store._conn.set_trace_callback(None)
    assert sorted(r for r, _k, _v in got) == sorted(rowids)
    fetch = next(s for s in statements if "v.vector" in s and " IN (" in s)
    plan = [row[3] for row in store._conn.execute("EXPLAIN QUERY PLAN " + fetch)]
    assert plan[0].startswith("SEARCH c USING INTEGER PRIMARY KEY"), plan


def test_a_bulk_change_drops_the_graph_until_writes_are_quiet(
    notes_engine: Engine, tmp_path: Path
) -> None:
    """Inserting a large change into HNSW would hold searches for tens of seconds: the graph
    is dropped (exact search meanwhile) and built again once no bulk change came for a while."""
    from noteseek.store import ann as vector

    vectors = fill_vectors(notes_engine)
    clock = FakeClock()
    index = vector_index(notes_engine, hnsw_threshold=10, clock=clock)
    index.sync()
    assert index.wait_for_hnsw(60)
    # A small change is applied to the graph in place.
    write(tmp_path / "notes" / "home" / "one-more.md", "# One more\n\nText.\n")
    notes_engine.index()
    fill_vectors(notes_engine, seed=1)
    index.sync()
    assert index.uses_hnsw
    # A bulk change (a tenth of the notes rewritten) drops it; searches stay exact and right.
    for i in range(0, 60, 10):
        folder = "work" if i % 3 == 0 else "home"
        write(tmp_path / "notes" / folder / f"n{i:02d}.md", f"# Note {i}\n\nRewritten {i}.\n")
    notes_engine.index()
    vectors = fill_vectors(notes_engine, seed=2)
    q = query(7)
    assert [r for r, _ in index.search(q, 5)] == brute_force(vectors, q, 5)
    assert not index.uses_hnsw and index._builder is None
    clock.now += vector.HNSW_QUIET_SECONDS - 1
    index.search(q, 5)
    assert index._builder is None  # not quiet long enough yet
    clock.now += 2
    index.search(q, 5)
    assert index.wait_for_hnsw(60)  # built again in the background
    got = {r for r, _ in index.search(q, 10)}
    assert len(got & set(brute_force(vectors, q, 10))) >= 9


def test_an_expensive_vector_count_is_redone_in_the_background(
    notes_engine: Engine, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """On a large index, searches and status may use the last count while a new one runs in
    the background; the indexer (allow_stale=False) always gets an exact count."""
    from noteseek.store import ann as vector

    monkeypatch.setattr(vector, "BACKGROUND_FROM_ROWS", 10)  # this index counts as large
    engine = notes_engine
    fill_vectors(engine)
    engine.settings.embedding.model = MODEL  # count this test's vectors
    assert engine.embedding_progress() == (60, 60)
    count = engine._state.values._progress  # the derived value holding the count
    first = count._held
    assert first is not None
    count._held = first._replace(seconds=3.0)  # as if counting took 3 s
    write(tmp_path / "notes" / "home" / "new.md", "# New\n\nNo vector yet.\n")
    engine.index()
    monkeypatch.setattr(vector, "BACKGROUND_FROM_ROWS", 10**6)  # a small index: counted now
    assert engine.embedding_progress(allow_stale=True) == (60, 61)
    count._held = first._replace(seconds=3.0)
    monkeypatch.setattr(vector, "BACKGROUND_FROM_ROWS", 10)
    assert engine.embedding_progress(allow_stale=True) == (60, 60)  # the last count, at once
    counter = count._thread
    assert counter is not None and counter.name == "noteseek-count"
    counter.join(30)
    assert engine.embedding_progress(allow_stale=True) == (60, 61)
    assert engine.embedding_progress() == (60, 61)


@pytest.mark.parametrize("dtype", ["float32", "float16"])
@pytest.mark.parametrize("hnsw", [0, 10], ids=["exact", "hnsw"])
def test_a_filter_letting_most_rows_through_gives_what_brute_force_does(
    notes_engine: Engine, dtype: str, hnsw: int
) -> None:
    """A filter that lets most chunks through (``home/**``: two thirds, as ``source = docs``
    beside a few memories) is scored over the whole matrix and masked, or filtered from the
    graph by binary search; unsorted, sorted-array and list forms of the rows agree."""
    vectors = fill_vectors(notes_engine)
    index = vector_index(notes_engine, dtype=dtype, hnsw_threshold=hnsw)
    index.sync()
    if hnsw:
        assert index.wait_for_hnsw(60)
    allowed = notes_engine.store.filtered_chunk_ids(build_filters(Filter(paths=["home/**"])))
    assert len(vectors) // 2 < len(allowed) < len(vectors)
    for seed in range(5):
        q = query(300 + seed)
        want = brute_force({r: vectors[r] for r in allowed}, q, 10)
        for form in (list(reversed(allowed)), np.sort(np.asarray(allowed, dtype=np.int64))):
            got = [r for r, _ in index.search(q, 10, form)]
            assert len(got) == 10 and set(got) <= set(allowed)
            if hnsw:  # approximate: most of the true ten
                assert len(set(got) & set(want)) >= 8
            else:
                assert got == want


def test_allowed_rows_are_kept_until_the_index_changes(
    notes_engine: Engine, tmp_path: Path
) -> None:
    from noteseek.search.allowed import AllowedRows

    allowed_rows = AllowedRows()  # one per opened index, as the engine keeps it
    store = notes_engine.store
    filters = build_filters(Filter(paths=["work/**"]))
    first = allowed_rows(store, filters)
    assert first is not None and list(first) == sorted(store.filtered_chunk_ids(filters))
    assert allowed_rows(store, filters) is first  # kept: no scan of the chunk rows again
    assert allowed_rows(store, build_filters()) is None  # no filter, no restriction
    write(tmp_path / "notes" / "work" / "new.md", "# New\n\nA new note.\n")
    notes_engine.index()
    again = allowed_rows(store, filters)
    assert again is not first and again is not None and again.size == first.size + 1
