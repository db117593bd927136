"""A fresh process's first semantic query at 300k vectors, with and without the saved graph.

    .venv/bin/python bench/ann_cold.py [--vectors 300000] [--runs 3] [--threshold 200000]
        [--keep DIR]

The index is synthetic, and says so: `--vectors` chunks are written as Markdown files of 30
short sections each and indexed keyword-only through the CLI (`noteseek index
--keyword-only`), then every chunk gets a random unit vector of 384 dimensions put into the
store with `put_vectors` (computing 300k real embeddings takes hours on this machine). Then:

1. a writer process (the vector index with `may_save`) builds the HNSW graph and saves the
   graph, the matrix and the row keys in the index folder; the build and the save are timed;
2. `--runs` fresh processes each open the index read-only, make the vector index and time its
   first search (a random query vector: no query embedding, no model loaded), with the saved
   files present, and the same with them moved aside (today's behaviour: the vectors read from
   SQLite, exact search until the graph is built in the background; the time until searches
   use the graph is printed with `--wait`; the writer's build time in step 1 says it otherwise).
   Each prints its peak RSS.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

REPO = Path(__file__).resolve().parent.parent
MODEL = "synthetic-384"
DIM = 384
SECTIONS = 30

CHILD = """
import json, resource, sys, time
t0 = time.perf_counter()
from pathlib import Path
import numpy as np
from noteseek.store.factory import open_reader
folder = Path(sys.argv[1])
store = open_reader(folder)
index = store.vector_index(sys.argv[2], int(sys.argv[3]), hnsw_threshold=int(sys.argv[5]))
q = np.random.default_rng(int(sys.argv[4])).normal(size=int(sys.argv[3])).astype(np.float32)
q /= np.linalg.norm(q)
t1 = time.perf_counter()
hits = index.search(q, 10)
t2 = time.perf_counter()
out = {"open_s": t1 - t0, "first_query_s": t2 - t1, "saved": index.loaded_saved,
       "hnsw_first": index.uses_hnsw, "hits": len(hits)}
if sys.argv[6] == "wait":
    index.wait_for_hnsw()
out["hnsw_ready_s"] = time.perf_counter() - t1 if index.uses_hnsw else None
t4 = time.perf_counter()
index.search(q, 10)
out["second_query_ms"] = (time.perf_counter() - t4) * 1000
out["peak_rss_mb"] = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
print(json.dumps(out))
"""

WRITER = """
import sys, time
from pathlib import Path
from noteseek.store.factory import open_store
folder = Path(sys.argv[1])
store, _ = open_store(folder)
index = store.vector_index(sys.argv[2], int(sys.argv[3]), hnsw_threshold=int(sys.argv[4]),
                           may_save=lambda: True)
t0 = time.perf_counter()
index.settle()  # as at the end of an index run: load, build the graph, save
print(f"writer: loaded, built and saved the graph in {time.perf_counter() - t0:.1f} s")
"""


def build(work: Path, vectors: int) -> Path:
    notes = work / "notes"
    files = vectors // SECTIONS
    words = [f"w{i}" for i in range(5000)]
    rng = np.random.default_rng(5)
    for f in range(files):
        folder = notes / f"d{f // 500:03d}"
        folder.mkdir(parents=True, exist_ok=True)
        parts = [f"# File {f}\n"]
        for s in range(SECTIONS):
            text = " ".join(words[i] for i in rng.integers(0, 5000, 12))
            parts.append(f"## Section {f} {s}\n\nPart {f}-{s}: {text}.\n")
        (folder / f"f{f:05d}.md").write_text("\n".join(parts), encoding="utf-8")
    (work / ".noteseek.toml").write_text(
        f'[roots.notes]\npath = "{notes.as_posix()}"\n\n[index]\ndir = ".noteseek"\n\n'
        # one chunk per section, as the sizes above say (small sections are merged by default)
        "[chunking]\nmerge_small = false\n",
        encoding="utf-8",
    )
    env = {**os.environ, "XDG_DATA_HOME": str(work / "xdg"), "NO_COLOR": "1"}
    t = time.perf_counter()
    subprocess.run(
        [sys.executable, "-m", "noteseek.interfaces.cli", "index", "--keyword-only"],
        cwd=work,
        env=env,
        check=True,
        capture_output=True,
    )
    print(f"keyword index of {files:,} files: {time.perf_counter() - t:.0f} s", flush=True)
    index_dir = work / ".noteseek"
    sys.path.insert(0, str(REPO / "src"))
    from noteseek.store.factory import open_store

    store, _ = open_store(index_dir)
    pending = store.pending_embeddings(MODEL)
    rng = np.random.default_rng(6)
    for start in range(0, len(pending), 20_000):
        part = pending[start : start + 20_000]
        m = rng.normal(size=(len(part), DIM)).astype(np.float32)
        m /= np.linalg.norm(m, axis=1, keepdims=True)
        store.put_vectors(MODEL, [(k, m[i].tobytes()) for i, (k, _) in enumerate(part)])
    print(f"synthetic vectors put: {len(pending):,}", flush=True)
    store.close()
    return index_dir


def _s(seconds: float | None) -> str:
    return "not yet (building)" if seconds is None else f"{seconds:.1f}"


def run(argv: list[str]) -> str:
    done = subprocess.run(argv, capture_output=True, text=True, check=True)
    return done.stdout.strip().splitlines()[-1]


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--vectors", type=int, default=300_000)
    ap.add_argument("--runs", type=int, default=3)
    ap.add_argument(
        "--wait", action="store_true", help="without saved files, wait for the graph build too"
    )
    ap.add_argument("--threshold", type=int, default=200_000, help="HNSW from this many")
    ap.add_argument("--keep", type=Path, default=None, help="build here once, reuse after")
    args = ap.parse_args()
    work = args.keep or Path(tempfile.mkdtemp(prefix="ann-cold-"))
    index_dir = work / ".noteseek"
    if not (index_dir / "index.db").exists():
        work.mkdir(parents=True, exist_ok=True)
        build(work, args.vectors)
    saved = list(index_dir.glob("vectors-*"))
    if not saved:
        print(
            run(
                [sys.executable, "-c", WRITER, str(index_dir), MODEL, str(DIM), str(args.threshold)]
            ),
            flush=True,
        )
    aside = work / "aside"
    aside.mkdir(exist_ok=True)
    sizes = sum(p.stat().st_size for p in index_dir.glob("vectors-*")) / 2**20
    print(f"saved files: {sizes:.0f} MB")
    print("| saved graph | open s | first query s | HNSW at first | HNSW ready s | peak RSS MB |")
    print("|---|---|---|---|---|---|")
    for with_saved in (True, False):
        if not with_saved:
            for p in index_dir.glob("vectors-*"):
                shutil.move(str(p), aside / p.name)
        try:
            for r in range(args.runs):
                child = [sys.executable, "-c", CHILD, str(index_dir), MODEL, str(DIM), str(r)]
                child += [str(args.threshold), "wait" if with_saved or args.wait else "-"]
                out = json.loads(run(child))
                print(
                    f"| {'yes' if out['saved'] else 'no'} | {out['open_s']:.2f} | "
                    f"{out['first_query_s']:.3f} | {out['hnsw_first']} | "
                    f"{_s(out['hnsw_ready_s'])} | {out['peak_rss_mb']:.0f} |",
                    flush=True,
                )
                if not with_saved:
                    break  # without the files, one run (a minute of graph building) says it
        finally:
            for p in aside.glob("vectors-*"):
                shutil.move(str(p), index_dir / p.name)
    if args.keep is None:
        shutil.rmtree(work, ignore_errors=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
