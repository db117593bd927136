"""The vector index saved in the index folder (store/ann_saved.py): mapped, never trusted.

A real SQLite index of 60 notes with random unit vectors (as in test_vectors.py), an HNSW
threshold of 10 so the graph is built, saved by the writer, and mapped by fresh processes.
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from noteseek.engine import Engine
from noteseek.store import ann, ann_saved
from noteseek.store.ann import HNSW_QUIET_SECONDS, InMemoryVectorIndex
from noteseek.store.exact import row_idents
from noteseek.store.factory import open_reader
from tests.helpers import write
from tests.test_vectors import DIM, MODEL, brute_force, fill_vectors, notes_engine, query

__all__ = ["notes_engine"]  # the fixture, imported for its use here


class Clock:
    def __init__(self) -> None:
        self.now = 1000.0

    def __call__(self) -> float:
        return self.now


def index_for(engine: Engine, *, writer: bool, **options: Any) -> InMemoryVectorIndex:
    return InMemoryVectorIndex(
        engine.store,
        MODEL,
        DIM,
        open_reader=lambda: open_reader(engine.index_dir),
        folder=engine.index_dir,
        may_save=lambda: writer,
        **{"hnsw_threshold": 10, **options},
    )


def saved_files(engine: Engine) -> list[str]:
    return sorted(p.name for p in engine.index_dir.glob("vectors-*"))


def save_as_writer(engine: Engine) -> InMemoryVectorIndex:
    index = index_for(engine, writer=True)
    index.sync()
    assert index.wait_for_hnsw(60)
    return index


def top(index: InMemoryVectorIndex, seed: int, k: int = 10) -> list[int]:
    return [r for r, _ in index.search(query(seed), k)]


FRESH = """
import json, sys
from pathlib import Path
import numpy as np
from noteseek.store.ann import InMemoryVectorIndex
from noteseek.store.factory import open_reader
folder = Path(sys.argv[1])
store = open_reader(folder)
index = InMemoryVectorIndex(store, "test-model", 32, open_reader=lambda: open_reader(folder),
                            hnsw_threshold=int(sys.argv[2]), folder=folder)
rng = np.random.default_rng(7)
q = rng.normal(size=32).astype(np.float32)
hits = [r for r, _ in index.search(q / np.linalg.norm(q), 10)]
print(json.dumps({"saved": index.loaded_saved, "hnsw": index.uses_hnsw,
                  "building": index._builder is not None, "hits": hits}))
"""


def fresh_process(folder: Path, prefix: str = "", hnsw_threshold: int = 10) -> dict[str, Any]:
    code = f"{sys.executable} -c '{FRESH}' '{folder}' {hnsw_threshold}"
    argv = ["sh", "-c", f"{prefix}{code}"]
    if prefix:
        argv = ["unshare", "-rm", *argv]
    done = subprocess.run(argv, capture_output=True, text=True, timeout=120, check=False)
    assert done.returncode == 0, done.stderr
    result: dict[str, Any] = json.loads(done.stdout.strip().splitlines()[-1])
    return result


def test_a_fresh_process_maps_the_saved_graph_without_building(notes_engine: Engine) -> None:
    vectors = fill_vectors(notes_engine)
    save_as_writer(notes_engine)
    names = saved_files(notes_engine)
    assert any(n.endswith(".usearch") for n in names) and "vectors-test-model.json" in names
    found = fresh_process(notes_engine.index_dir)
    assert (found["saved"], found["hnsw"], found["building"]) == (True, True, False)
    rng = np.random.default_rng(7)
    q = rng.normal(size=DIM).astype(np.float32)
    assert found["hits"] == brute_force(vectors, q / np.linalg.norm(q), 10)


def test_readers_never_write_the_files(notes_engine: Engine) -> None:
    fill_vectors(notes_engine)
    reader = index_for(notes_engine, writer=False)
    reader.sync()
    assert reader.wait_for_hnsw(60)
    assert saved_files(notes_engine) == []
    assert not reader.loaded_saved


def test_a_stale_file_is_ignored_and_built_again(notes_engine: Engine) -> None:
    fill_vectors(notes_engine)
    save_as_writer(notes_engine)
    # The index changes while no writer saves: a note rewritten, its chunk embedded again.
    write(notes_engine.index_dir.parent / "notes" / "home" / "n01.md", "# Changed\n\nNew text.\n")
    notes_engine.index()
    vectors = fill_vectors(notes_engine, seed=3)
    stale = index_for(notes_engine, writer=False)
    assert top(stale, 1) == brute_force(vectors, query(1), 10)
    assert not stale.loaded_saved
    assert stale.wait_for_hnsw(60)  # built again from the store
    assert top(stale, 2) == brute_force(vectors, query(2), 10)
    # The writer builds and saves again; then a new process maps it.
    save_as_writer(notes_engine)
    assert fresh_process(notes_engine.index_dir)["saved"] is True


def test_a_large_saved_state_answers_at_once_and_is_checked_behind(
    notes_engine: Engine, monkeypatch: pytest.MonkeyPatch
) -> None:
    # From BACKGROUND_FROM_ROWS rows a saved state is mapped without reading the store's rows
    # first (most of a new process's first query at 165k rows); a check in the background
    # then brings it in step, as background updates keep large indexes in step.
    fill_vectors(notes_engine)
    save_as_writer(notes_engine)
    write(notes_engine.index_dir.parent / "notes" / "home" / "n01.md", "# Changed\n\nNew text.\n")
    notes_engine.index()
    vectors = fill_vectors(notes_engine, seed=3)
    monkeypatch.setattr(ann, "BACKGROUND_FROM_ROWS", 10)  # this index counts as large
    reader = index_for(notes_engine, writer=False, hnsw_threshold=0)
    reader.sync()
    assert reader.loaded_saved  # mapped although the store moved on since it was saved
    reader.wait_for_refresh(60)
    assert reader.refresh_error is None
    assert sorted(reader._rows.ids.tolist()) == sorted(vectors)  # in step with the store now
    for seed in (1, 2, 3):
        assert top(reader, seed) == brute_force(vectors, query(seed), 10)
    # Below BACKGROUND_FROM_ROWS the same stale state is checked first, and not mapped.
    monkeypatch.setattr(ann, "BACKGROUND_FROM_ROWS", 10**6)
    small = index_for(notes_engine, writer=False, hnsw_threshold=0)
    assert top(small, 1) == brute_force(vectors, query(1), 10)
    assert not small.loaded_saved


@pytest.mark.parametrize("damage", ["graph", "matrix", "keys", "sidecar", "truncated graph"])
def test_a_damaged_file_is_ignored(notes_engine: Engine, damage: str) -> None:
    vectors = fill_vectors(notes_engine)
    save_as_writer(notes_engine)
    folder = notes_engine.index_dir
    meta = json.loads((folder / "vectors-test-model.json").read_text(encoding="utf-8"))
    if damage == "sidecar":
        (folder / "vectors-test-model.json").write_text("{not json", encoding="utf-8")
    elif damage == "truncated graph":
        path = folder / meta["files"]["graph"]
        path.write_bytes(path.read_bytes()[:-100])
    else:
        path = folder / meta["files"][damage.split()[0]]
        data = bytearray(path.read_bytes())
        for i in range(200, len(data), 97):
            data[i] ^= 0x5A
        path.write_bytes(bytes(data))
    index = index_for(notes_engine, writer=False)
    assert top(index, 4) == brute_force(vectors, query(4), 10)
    assert not index.loaded_saved
    assert fresh_process(folder)["saved"] is False


def test_updates_over_a_mapped_graph_equal_exact_search(notes_engine: Engine) -> None:
    fill_vectors(notes_engine)
    save_as_writer(notes_engine)
    clock = Clock()
    writer = index_for(notes_engine, writer=True, clock=clock)
    writer.sync()
    assert writer.loaded_saved and writer.uses_hnsw
    for step in range(3):
        name = f"extra{step}.md"
        write(notes_engine.index_dir.parent / "notes" / name, f"# Extra {step}\n\nMore {step}.\n")
        notes_engine.index()
        vectors = fill_vectors(notes_engine, seed=10 + step)
        assert top(writer, 20 + step) == brute_force(vectors, query(20 + step), 10)
        # the mapped graph copied and brought up to date
        assert writer.wait_for_hnsw(60), (  # what a failure (once in many runs) looked like
            step,
            writer.hnsw_error,
            writer.refresh_error,
            writer._builder,
            writer._last_bulk,
            writer._generation,
            writer.size,
            writer._rows.distinct,
        )
        for seed in range(5):
            assert top(writer, 30 + seed) == brute_force(vectors, query(30 + seed), 10)
    # Once writes are quiet, the writer saves again, and a fresh process maps the new state.
    assert fresh_process(notes_engine.index_dir)["saved"] is False
    clock.now += HNSW_QUIET_SECONDS + 1
    writer.sync()
    writer.wait_for_save(60)
    found = fresh_process(notes_engine.index_dir)
    assert found["saved"] is True and found["hnsw"] is True
    assert len(saved_files(notes_engine)) == 4  # the old state's files were deleted


def test_a_mapped_graph_whose_file_another_writer_replaced_is_built_again(
    notes_engine: Engine,
) -> None:
    """A process maps the saved graph; another writer saves a newer state, deleting that
    file; a change then needs an in-memory copy of the graph: it is built from the rows
    instead (once in about twenty runs, the engine's own save did this to the next test)."""
    fill_vectors(notes_engine)
    save_as_writer(notes_engine)
    mapped = index_for(notes_engine, writer=True, clock=Clock())
    mapped.sync()
    assert mapped.loaded_saved and mapped.uses_hnsw
    for name in saved_files(notes_engine):
        if name.endswith(".usearch"):
            (notes_engine.index_dir / name).unlink()  # as the other writer's save does
    write(notes_engine.index_dir.parent / "notes" / "extra.md", "# Extra\n\nMore.\n")
    notes_engine.index()
    vectors = fill_vectors(notes_engine, seed=11)
    assert top(mapped, 21) == brute_force(vectors, query(21), 10)  # exact meanwhile
    assert mapped.wait_for_hnsw(60) and mapped.hnsw_error is None
    for seed in range(3):
        assert top(mapped, 40 + seed) == brute_force(vectors, query(40 + seed), 10)


def test_a_reader_in_a_read_only_folder_maps_the_saved_graph(notes_engine: Engine) -> None:
    fill_vectors(notes_engine)
    save_as_writer(notes_engine)
    notes_engine.close()
    folder = notes_engine.index_dir
    ro = f"mount --bind '{folder}' '{folder}' && mount -o remount,bind,ro '{folder}' && "
    found = fresh_process(folder, prefix=ro)
    assert found["saved"] is True and found["hnsw"] is True
    # Without saved files, a reader there still searches (it builds in memory, saves nothing).
    for path in folder.glob("vectors-*"):
        path.unlink()
    found = fresh_process(folder, prefix=ro)
    assert found["saved"] is False and len(found["hits"]) == 10


def test_a_state_for_another_model_dimension_or_dtype_is_not_loaded(
    notes_engine: Engine,
) -> None:
    fill_vectors(notes_engine)
    save_as_writer(notes_engine)
    idents = row_idents(open_reader(notes_engine.index_dir).vector_chunk_keys(MODEL))
    folder = notes_engine.index_dir

    def load(model: str = MODEL, dim: int = DIM, dtype: Any = np.float32) -> Any:
        return ann_saved.load(folder, model, dim, dtype, idents, want_graph=True)

    assert load() is not None
    assert load(dim=DIM + 1) is None and load(dtype=np.float16) is None
    assert load(model="other") is None
    assert ann_saved.load(folder, MODEL, DIM, np.float32, idents[1:], want_graph=True) is None


def test_settle_saves_at_once_for_the_writer_only(notes_engine: Engine) -> None:
    fill_vectors(notes_engine)
    index_for(notes_engine, writer=False).settle(60)
    assert saved_files(notes_engine) == []
    index_for(notes_engine, writer=True).settle(60)  # no quiet period: the end of a run
    assert len(saved_files(notes_engine)) == 4
    assert fresh_process(notes_engine.index_dir)["saved"] is True


def test_without_a_graph_the_matrix_is_saved_and_mapped(
    notes_engine: Engine, monkeypatch: pytest.MonkeyPatch
) -> None:
    # Below the HNSW threshold (or with HNSW off) there is no graph, but reading every vector
    # from the store took a new process 5 s at 165k rows: from SAVE_FROM_ROWS the writer
    # saves the matrix alone, and a fresh process maps it.
    vectors = fill_vectors(notes_engine)
    index_for(notes_engine, writer=True, hnsw_threshold=0).settle(60)
    assert saved_files(notes_engine) == []  # 60 rows: fewer than SAVE_FROM_ROWS
    monkeypatch.setattr(ann, "SAVE_FROM_ROWS", 10)
    index_for(notes_engine, writer=True, hnsw_threshold=0).settle(60)
    names = saved_files(notes_engine)
    assert len(names) == 3 and not any(n.endswith(".usearch") for n in names)
    found = fresh_process(notes_engine.index_dir, hnsw_threshold=0)
    assert (found["saved"], found["hnsw"]) == (True, False)
    rng = np.random.default_rng(7)
    q = rng.normal(size=DIM).astype(np.float32)
    assert found["hits"] == brute_force(vectors, q / np.linalg.norm(q), 10)


EXIT_MID_BUILD = """
import threading
import numpy as np
from noteseek.store import hnsw
rows = np.random.default_rng(1).random((8000, 32), dtype=np.float32)
def build():
    try:
        hnsw.build_hnsw(np.arange(8000), rows, 32)
    except RuntimeError:  # stopped at exit
        pass
builder = threading.Thread(target=build, daemon=True)
hnsw.stop_at_exit(builder)
builder.start()
builder.join(0.5)
print("alive" if builder.is_alive() else "done")
"""


def test_a_process_exiting_while_a_graph_is_built_exits_cleanly() -> None:
    # usearch's worker destroyed mid-build aborted the process (SIGABRT, "terminate called
    # without an active exception") after a one-shot command had answered. The abort is a
    # race, so three processes must all exit cleanly.
    for _ in range(3):
        done = subprocess.run(
            [sys.executable, "-c", EXIT_MID_BUILD], capture_output=True, text=True, timeout=120
        )
        assert done.returncode == 0, done.stderr
        assert done.stdout.strip() == "alive"  # the build was still running at exit
        assert "terminate called" not in done.stderr
