"""``noteseek migrate`` throughput and peak memory: SQLite -> Milvus Lite -> SQLite.

    .venv/bin/python bench/migrate_throughput.py [--folder DIR] [--copies N] [--work DIR]

Indexes the Markdown folder (default: ``hugo-docs-kis/vault`` of the shared data) ``--copies``
times over (``copy_0/`` ...: more chunks, same text) keyword-only into SQLite, stores a
384-dimension unit vector for every chunk under the bundled model's id (random: the copy moves
bytes, it does not read them; embedding thousands of chunks would take longer than the copy),
then runs ``noteseek migrate`` to a Milvus Lite file, from there back to a SQLite folder, and
from SQLite to another SQLite folder, each in a process of its own, and prints per direction:
files, chunks, vectors, seconds, chunks per second and the process's peak resident memory.
Run it at two ``--copies`` to see whether the memory grows with the index (the copy reads a
batch of 256 files at a time): the resident peak includes SQLite's page cache and memory map
(bounded by its pragmas) and Milvus Lite's collections, so one more SQLite-to-SQLite run
reports the peak of Python's own allocations (tracemalloc).
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

DATA = Path(__file__).resolve().parent.parent.parent / "shared" / "data"
MODEL = "bge-small-en-v1/int8"
DIM = 384


def build(folder: Path, copies: int, work: Path) -> Path:
    """The SQLite index of ``copies`` copies of ``folder``, with a vector per chunk."""
    from noteseek.engine import open_engine

    corpus = work / "corpus"
    for i in range(copies):
        shutil.copytree(folder, corpus / f"copy_{i}")
    flags = {"index.dir": str(work / "sqlite"), "embedding.enabled": False}
    with open_engine(work, flags=flags, roots=[str(corpus)], environ={}) as engine:
        engine.index([str(corpus)])
        store = engine.store
        keys = [key for key, _ in store.pending_embeddings(MODEL)]
        rng = np.random.default_rng(0)
        for start in range(0, len(keys), 2000):
            part = keys[start : start + 2000]
            vectors = rng.standard_normal((len(part), DIM)).astype(np.float32)
            vectors /= np.linalg.norm(vectors, axis=1, keepdims=True)
            store.put_vectors(MODEL, [(k, v.tobytes()) for k, v in zip(part, vectors, strict=True)])
        store.set_meta("embedding_model", MODEL)
    return work / "sqlite"


def run(index_dir: str, uri: str, to: str, trace: bool) -> dict[str, object]:
    """One migration in this process (the child's side); with ``trace``, the peak of Python's
    own allocations too (tracemalloc: slower, so not timed)."""
    import tracemalloc

    from noteseek.config import load_settings
    from noteseek.engine.migrate import migrate

    if trace:
        tracemalloc.start()

    flags = {"index.dir": index_dir, "embedding.enabled": False, "milvus.uri": uri}
    settings = load_settings(Path(index_dir), None, flags, {}).settings
    started = time.perf_counter()
    report = migrate(settings, Path(index_dir), to)
    seconds = time.perf_counter() - started
    counts = report["counts"]["target"]
    if trace:
        return {"python_peak_mb": round(tracemalloc.get_traced_memory()[1] / 2**20, 1)}
    return {
        "files": counts["files"],
        "chunks": counts["chunks"],
        "vectors": counts["vectors"],
        "seconds": round(seconds, 1),
        "chunks_per_second": round(counts["chunks"] / seconds, 1),
        "peak_rss_mb": round(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024, 1),
    }


def child(index_dir: Path, uri: str, to: str, trace: bool = False) -> dict[str, object]:
    out = subprocess.run(
        [sys.executable, __file__, "--child", str(index_dir), uri, to, "trace" if trace else ""],
        capture_output=True,
        text=True,
        check=True,
        env={**os.environ, "PYTHONUNBUFFERED": "1"},
    )
    result: dict[str, object] = json.loads(out.stdout.strip().splitlines()[-1])
    return result


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--folder", default=str(DATA / "hugo-docs-kis" / "vault"))
    ap.add_argument("--copies", type=int, default=1)
    ap.add_argument("--work", default="")
    ap.add_argument("--child", nargs=4, metavar=("INDEX_DIR", "URI", "TO", "TRACE"))
    args = ap.parse_args()
    if args.child:
        index_dir, uri, to, trace = args.child
        print(json.dumps(run(index_dir, uri, to, trace == "trace")))
        return 0
    work = Path(args.work or tempfile.mkdtemp(prefix="migrate-bench-"))
    for name in ("XDG_CONFIG_HOME", "XDG_DATA_HOME"):  # the registry of indexes stays here
        os.environ[name] = str(work / name.lower())
    started = time.perf_counter()
    sqlite = build(Path(args.folder), args.copies, work)
    lite = str(work / "milvus.db")
    out = {
        "folder": args.folder,
        "copies": args.copies,
        "build_seconds": round(time.perf_counter() - started, 1),
        "sqlite_to_milvus_lite": child(sqlite, "", lite),
        "milvus_lite_to_sqlite": child(sqlite, lite, f"sqlite:{work / 'back'}"),
        # Milvus Lite keeps its collections in the process: SQLite to SQLite shows what the
        # copy itself holds.
        "sqlite_to_sqlite": child(sqlite, "", f"sqlite:{work / 'copy'}"),
        "sqlite_to_sqlite_traced": child(sqlite, "", f"sqlite:{work / 'traced'}", trace=True),
    }
    json.dump(out, sys.stdout, indent=2)
    print()
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
