"""Index throughput and query latency at scale: the embedded SQLite index against Milvus Lite
and Milvus's C++ engine over TCP.

    .venv/bin/python bench/milvus_scale.py [--chunks 50000,200000] [--queries 200]
        [--backends sqlite,milvus,engine] [--json OUT.json] [--work DIR] [--tgz PATH]

``milvus`` is Milvus Lite 3 (pure Python, in process, a file); ``engine`` is Milvus's C++
engine that milvus-lite 2.5.1 ships (``tests/milvus_engine.py``: prepared by
``./scripts/test`` in ``.cache/milvus-engine``), started for the run on a loopback port with
its data on disk in the work folder, and reached over TCP as a Milvus Server would be.

One run: unpacks windows-powershell-docs into a temporary folder, counts every file's chunks
once (a keyword-only SQLite index of the whole corpus), then for each ``--chunks`` size takes
the smallest prefix of a fixed shuffle of the files that holds that many chunks and, for each
backend in turn, indexes that same folder into a fresh index and times ``--queries`` keyword,
semantic and hybrid queries (``top_k=10``, snippets on, a few warm-up queries first). Prints a
markdown table and, for Milvus, the bytes one chunk costs in each part of the collections.

Vectors are STAND-INS: a deterministic hashed bag-of-words projection to 384 dimensions
(:class:`HashedEmbedder`), not the embedding model, for documents and queries alike. Embedding
200k chunks with the bundled model takes hours here (docs/benchmarks.md: 53.8 chunks/s on
short chunks, 21.5 to 34.5 on real ones), so the index throughput measures the store (rows,
keyword lane, vector writes and indexes), not the model; the stand-in's own seconds are
printed and subtracted as ``store s``. Semantic and hybrid latency embed each query with the
same stand-in (microseconds; the bundled model takes about 4 ms per query).

Milvus Lite serves one process at a time: each (size, backend) runs in a child process of its
own, one after the other, and only that child ever opens the Milvus Lite file (the parent
reads sizes on disk after the child has exited). Queries are real: titles, synopses and
frontmatter descriptions of the pages in the indexed subset, drawn with a fixed seed.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import random
import re
import resource
import shutil
import sqlite3
import subprocess
import sys
import tempfile
import time
import zlib
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np
import numpy.typing as npt

from noteseek.engine import SearchRequest

REPO = Path(__file__).resolve().parent.parent
DEFAULT_TGZ = REPO.parent / "shared" / "data" / "scale" / "windows-powershell-docs.tgz"
DIMENSION = 384
STANDIN_MODEL = "hashed-bow-384"
MODES = ("keyword", "semantic", "hybrid")
BACKENDS = ("sqlite", "milvus", "engine")
"""SQLite, Milvus Lite (a file), Milvus's C++ engine over TCP."""
LABELS = {"sqlite": "SQLite", "milvus": "Milvus Lite", "engine": "Milvus engine (TCP)"}
WARMUP = 5
MODEL_CHUNKS_PER_S = "53.8 (400 short chunks) to 21.5-34.5 (real sets)"
"""The bundled model's measured embedding throughput (docs/benchmarks.md, issue 3)."""
BOILERPLATE = "use this topic to help manage"
"""The frontmatter description most pages of this corpus share: not a query."""
WORD = re.compile(r"\w+")


class HashedEmbedder:
    """A stand-in embedder: every word hashed (CRC-32) to one of 384 dimensions with a sign,
    counts summed, the row normalised. Texts sharing words get close vectors, so an ANN index
    has real neighbourhoods to find; it costs microseconds per chunk and downloads nothing."""

    model_id = f"remote:{STANDIN_MODEL}"
    dimension = DIMENSION

    def __init__(self) -> None:
        self.seconds = 0.0
        self._slots: dict[str, tuple[int, float]] = {}

    def _slot(self, word: str) -> tuple[int, float]:
        slot = self._slots.get(word)
        if slot is None:
            h = zlib.crc32(word.encode("utf-8"))
            slot = self._slots[word] = (h % DIMENSION, 1.0 if h & 0x80000000 else -1.0)
        return slot

    def embed_documents(self, texts: Sequence[str]) -> npt.NDArray[np.float32]:
        started = time.perf_counter()
        out = np.zeros((len(texts), DIMENSION), dtype=np.float32)
        for row, text in enumerate(texts):
            for word in WORD.findall(text.lower()):
                index, sign = self._slot(word)
                out[row, index] += sign
        norms = np.linalg.norm(out, axis=1, keepdims=True)
        norms[norms == 0] = 1.0
        out /= norms
        self.seconds += time.perf_counter() - started
        return out

    def embed_query(self, text: str) -> npt.NDArray[np.float32]:
        return self.embed_documents([text])[0]

    def close(self) -> None:
        pass


# -- the parent: corpus, subsets, queries, children, table --------------------------------


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawTextHelpFormatter)
    ap.add_argument("--tgz", type=Path, default=DEFAULT_TGZ)
    ap.add_argument("--chunks", default="50000,200000", help="comma-separated sizes")
    ap.add_argument("--queries", type=int, default=200, help="queries per mode and size")
    ap.add_argument("--backends", default="sqlite,milvus,engine")
    ap.add_argument(
        "--budget",
        type=float,
        default=0,
        help="seconds per mode and run after which the remaining queries are left out "
        "(0: none; the table says how many were timed)",
    )
    ap.add_argument(
        "--set",
        action="append",
        default=[],
        metavar="KEY=VALUE",
        help="a setting for every index (repeatable), e.g. memory.enabled=false",
    )
    ap.add_argument("--json", type=Path, help="also write every result here (after each run)")
    ap.add_argument("--work", type=Path, help="work folder (default: a temporary one)")
    ap.add_argument("--child", help=argparse.SUPPRESS)
    args = ap.parse_args()
    if args.child:
        return child(json.loads(args.child))
    if not args.tgz.is_file():
        print(f"skip: {args.tgz} not found (the shared data folder is absent)")
        return 0
    sizes = [int(s) for s in args.chunks.split(",") if s.strip()]
    backends = [b.strip() for b in args.backends.split(",") if b.strip()]
    if not sizes or any(b not in BACKENDS for b in backends):
        ap.error(f"--chunks needs sizes and --backends is some of {', '.join(BACKENDS)}")
    if any("=" not in item for item in args.set):
        ap.error("--set takes KEY=VALUE")
    if args.work:
        args.work.mkdir(parents=True, exist_ok=True)
        return run(args, sizes, backends, args.work)
    with tempfile.TemporaryDirectory(prefix="noteseek-milvus-scale-") as tmp:
        return run(args, sizes, backends, Path(tmp))


def run(args: argparse.Namespace, sizes: list[int], backends: list[str], work: Path) -> int:
    say(
        f"machine: {platform.platform()}, {os.cpu_count()} cpus, Python "
        f"{platform.python_version()}, load average {os.getloadavg()[0]:.1f}"
    )
    say(
        f"vectors: STAND-IN hashed bag-of-words, {DIMENSION} dims (documents and queries); "
        f"index throughput measures the store, not the model (bundled model: "
        f"{MODEL_CHUNKS_PER_S} chunks/s)"
    )
    unpacked = work / "unpacked"
    if not unpacked.is_dir():
        from index_scale import unpack

        unpack(args.tgz, unpacked)
    pages = sorted(p.relative_to(unpacked) for p in unpacked.rglob("*.md"))
    random.Random(16).shuffle(pages)
    settings = dict(item.split("=", 1) for item in args.set)
    counts = chunk_counts(unpacked, work, settings)
    total = sum(counts.values())
    say(f"corpus: {len(pages)} files, {total} chunks")
    results: list[dict[str, Any]] = []
    for size in sizes:
        if size > total:
            say(
                f"size {size}: skipped, the corpus holds {total} chunks with these settings "
                "(small sections merged by default: --set chunking.merge_small=false)"
            )
            continue
        subset = take(pages, counts, size)
        corpus = work / f"corpus-{size}"
        if not corpus.is_dir():
            for rel in subset:
                (corpus / rel).parent.mkdir(parents=True, exist_ok=True)
                os.link(unpacked / rel, corpus / rel)
        queries = sample_queries(corpus, subset, args.queries + WARMUP, seed=size)
        held = sum(counts.get(str(p), 0) for p in subset)
        say(f"size {size}: {len(subset)} files, {held} chunks, {len(queries) - WARMUP} queries")
        for backend in backends:
            place = work / f"{backend}-{size}"
            shutil.rmtree(place, ignore_errors=True)
            spec = {"backend": backend, "corpus": str(corpus), "place": str(place)}
            spec["queries"] = queries
            spec["budget"] = args.budget
            spec["flags"] = settings
            server = None
            if backend == "engine":  # the C++ engine, its data on disk, for this run alone
                server = engine_server(place / "engine")
                spec["uri"] = server.uri
            try:
                result = run_child(spec)
            finally:
                if server is not None:
                    server.stop()
            result.update(size=size, backend=backend, disk_bytes=disk_bytes(place, backend))
            results.append(result)
            say(summary(result))
            if args.json:
                args.json.write_text(json.dumps(results, indent=1))
            shutil.rmtree(place, ignore_errors=True)
    print()
    print(table(results))
    for r in results:
        if "per_chunk" in r:
            print()
            print(per_chunk_table(r))
    return 0


def say(line: str) -> None:
    print(line, flush=True)


def chunk_counts(unpacked: Path, work: Path, settings: dict[str, str]) -> dict[str, int]:
    """Every file's chunk count (by root-relative path), from one keyword-only SQLite index
    of the whole corpus built in a child process with ``settings`` (the chunker decides, not
    an estimate)."""
    tag = zlib.crc32(json.dumps(sorted(settings.items())).encode())
    saved = work / f"chunk_counts-{tag:08x}.json"
    if saved.is_file():
        counts: dict[str, int] = json.loads(saved.read_text())
        return counts
    place = work / "count-index"
    started = time.perf_counter()
    env = {
        **os.environ,
        "NOTESEEK_INDEX__DIR": str(place),
        "NOTESEEK_EMBEDDING__ENABLED": "false",
        "XDG_DATA_HOME": str(work / "xdg"),
        **{"NOTESEEK_" + k.upper().replace(".", "__"): v for k, v in settings.items()},
    }
    cli = [sys.executable, "-m", "noteseek.interfaces.cli", "index", str(unpacked), "--json"]
    subprocess.run(cli, env=env, capture_output=True, text=True, check=True)
    with sqlite3.connect(place / "index.db") as db:
        rows = db.execute(
            "SELECT f.path, count(c.id) FROM files f LEFT JOIN chunks c ON c.file_id = f.id "
            "GROUP BY f.id"
        ).fetchall()
    counts = {str(path): int(n) for path, n in rows}
    saved.write_text(json.dumps(counts))
    shutil.rmtree(place, ignore_errors=True)
    say(f"counted chunks per file in {time.perf_counter() - started:.0f} s")
    return counts


def take(pages: list[Path], counts: dict[str, int], size: int) -> list[Path]:
    """The shortest prefix of ``pages`` holding at least ``size`` chunks (all if fewer)."""
    total = 0
    for n, page in enumerate(pages, 1):
        total += counts.get(str(page), 0)
        if total >= size:
            return pages[:n]
    return list(pages)


def sample_queries(corpus: Path, subset: list[Path], n: int, seed: int) -> list[str]:
    """Distinct real queries from the subset's pages: the title (a cmdlet or topic name), the
    one-line synopsis under ``## SYNOPSIS``, and the frontmatter description when it is not
    the corpus's boilerplate."""
    rng = random.Random(seed)
    order = list(subset)
    rng.shuffle(order)
    seen: set[str] = set()
    out: list[str] = []
    for rel in order:
        text = (corpus / rel).read_text(encoding="utf-8-sig", errors="replace")
        candidates = page_queries(text)
        rng.shuffle(candidates)
        for q in candidates[:1]:
            if q.lower() not in seen:
                seen.add(q.lower())
                out.append(q)
        if len(out) >= n:
            break
    return out


def page_queries(text: str) -> list[str]:
    lines = text.replace("\r\n", "\n").split("\n")
    found: list[str] = []
    if lines and lines[0].strip() == "---":
        for line in lines[1:80]:
            if line.strip() == "---":
                break
            key, _, value = line.partition(":")
            value = value.strip().strip("'\"")
            if key.strip() == "title" and value:
                found.append(value)
            if key.strip() == "description" and value and BOILERPLATE not in value.lower():
                found.append(value)
    for i, line in enumerate(lines):
        if line.strip().upper() == "## SYNOPSIS":
            synopsis = next((x.strip() for x in lines[i + 1 : i + 6] if x.strip()), "")
            if synopsis and not synopsis.startswith(("#", "`", "{{")):
                found.append(synopsis[:200])
            break
    return found


def run_child(spec: dict[str, Any]) -> dict[str, Any]:
    """One (size, backend) in a process of its own: the only process to open that store."""
    cmd = [sys.executable, str(Path(__file__).resolve()), "--child", json.dumps(spec)]
    started = time.perf_counter()
    proc = subprocess.run(cmd, stdout=subprocess.PIPE, text=True)  # progress: stderr, as is
    if proc.returncode != 0 or not proc.stdout.strip():
        return {"error": f"child failed (exit {proc.returncode}); its stderr is above"}
    result: dict[str, Any] = json.loads(proc.stdout.strip().splitlines()[-1])
    result["wall_s"] = time.perf_counter() - started
    return result


def engine_server(folder: Path) -> Any:
    """Milvus's C++ engine started on a free loopback port, its data in ``folder``."""
    sys.path.insert(0, str(REPO))
    from tests.milvus_engine import MISSING, Engine, available

    if not available():
        raise SystemExit(MISSING)
    return Engine(folder).start()


def disk_bytes(place: Path, backend: str) -> int:
    """Bytes on disk of the store: the index folder (SQLite) or the Milvus Lite data (the
    index folder of a Milvus index holds only local caches and the writer lock)."""
    top = place / {"milvus": "milvus.db", "engine": "engine"}.get(backend, "index")
    if top.is_file():
        return top.stat().st_size
    return sum(p.stat().st_size for p in top.rglob("*") if p.is_file()) if top.exists() else 0


def summary(r: dict[str, Any]) -> str:
    if "error" in r:
        return f"  {r['backend']} {r['size']}: {r['error']}"
    q = r["queries"]
    lat = "; ".join(
        f"{m} p50 {q[m]['p50']:.1f} / p95 {q[m]['p95']:.1f} ms ({q[m]['n']})" for m in q
    )
    return (
        f"  {r['backend']:6s} {r['chunks']} chunks: index {r['index_s']:.1f} s "
        f"({r['chunks_per_s']:.0f} chunks/s, {r['files_per_s']:.1f} files/s, stand-in "
        f"{r['standin_s']:.1f} s), disk {r['disk_bytes'] / 1e6:.0f} MB, peak RSS "
        f"{r['peak_rss_mb']:.0f} MB; {lat}"
    )


def table(results: list[dict[str, Any]]) -> str:
    head = (
        "| chunks | files | backend | index s | index CPU s | store s | chunks/s | files/s | "
        "keyword p50 / p95 ms | semantic p50 / p95 ms | hybrid p50 / p95 ms | disk MB | "
        "peak RSS MB | queries timed |"
    )
    lines = [head, "|" + "---|" * 14]
    for r in results:
        if "error" in r:
            lines.append(f"| {r['size']} | - | {r['backend']} | failed: {r['error'][:80]} |")
            continue
        q = r["queries"]
        lat = " | ".join(f"{q[m]['p50']:.1f} / {q[m]['p95']:.1f}" if m in q else "-" for m in MODES)
        lines.append(
            f"| {r['chunks']:,} | {r['files']:,} | {LABELS[r['backend']]} | {r['index_s']:.1f} | "
            f"{r.get('index_cpu_s', 0):.1f} | "
            f"{r['index_s'] - r['standin_s']:.1f} | {r['chunks_per_s']:.0f} | "
            f"{r['files_per_s']:.1f} | {lat} | {r['disk_bytes'] / 1e6:.0f} | "
            f"{r['peak_rss_mb']:.0f} | {' / '.join(str(q[m]['n']) for m in MODES if m in q)} |"
        )
    return "\n".join(lines)


def per_chunk_table(r: dict[str, Any]) -> str:
    pc = r["per_chunk"]
    lines = [
        f"{LABELS[r['backend']]}: bytes per chunk at {r['chunks']:,} chunks (raw field data, "
        f"mean over {pc['sampled']} chunk rows; index structures not included):",
        "",
        "| part | bytes per chunk |",
        "|---|---|",
    ]
    for key, value in pc["bytes"].items():
        lines.append(f"| {key} | {value:.0f} |")
    lines.append(f"| (sparse nonzeros per chunk: {pc['sparse_nonzeros']:.1f}) | |")
    lines.append(f"| (distinct terms in the index: {pc['terms']:,}) | |")
    lines.append(f"| on disk, everything (after a flush) | {r['disk_bytes'] / r['chunks']:.0f} |")
    return "\n".join(lines)


# -- the child: one backend, one size -----------------------------------------------------


def child(spec: dict[str, Any]) -> int:
    from noteseek.engine import open_engine

    place = Path(spec["place"])
    place.mkdir(parents=True, exist_ok=True)
    flags: dict[str, Any] = {
        "index.dir": str(place / "index"),
        "roots.docs.path": spec["corpus"],
        "embedding.enabled": True,
        "embedding.provider": "remote",
        "embedding.model": STANDIN_MODEL,
        "embedding.base_url": "http://127.0.0.1:9/never-called",
        "search.time_limit": 3600,  # the default 10 s stops Milvus Lite's slowest queries
    }
    flags.update(spec.get("flags") or {})
    if spec["backend"] in ("milvus", "engine"):
        flags["milvus.uri"] = spec.get("uri") or str(place / "milvus.db")
        flags["milvus.collection"] = "bench"
        flags["milvus.timeout"] = 600
    engine = open_engine(place, flags=flags, environ={})
    embedder = HashedEmbedder()
    engine._state._embedder = embedder  # the stand-in instead of the remote client
    cpu = cpu_seconds()
    started = time.perf_counter()
    report = engine.index(
        progress=Ticker("files", started), embed_progress=Ticker("vectors", started)
    )
    took = time.perf_counter() - started
    cpu = cpu_seconds() - cpu
    status = engine.status()
    files, chunks = int(status["files"]), int(status["chunks"])
    embedded = status.get("embedding", {}).get("embedded")
    out: dict[str, Any] = {
        "files": files,
        "chunks": chunks,
        "vectors": embedded,
        "index_s": took,
        "standin_s": embedder.seconds,
        "index_cpu_s": cpu,
        "chunks_per_s": chunks / took,
        "files_per_s": files / took,
        "index_errors": (report.embedding or {}).get("error"),
    }
    note(
        f"{spec['backend']}: indexed {files} files, {chunks} chunks in {took:.1f} s "
        f"({cpu:.1f} s of CPU)"
    )
    queries: list[str] = spec["queries"]
    budget = float(spec.get("budget") or 0)
    out["queries"] = {}
    for mode in MODES:
        for q in queries[:WARMUP]:
            search(engine, q, mode)
        times: list[float] = []
        empty = failed = 0
        began = time.perf_counter()
        for q in queries[WARMUP:]:
            t = time.perf_counter()
            hits = search(engine, q, mode)
            times.append((time.perf_counter() - t) * 1000)
            empty += hits == 0
            failed += hits < 0
            if len(times) % 25 == 0:
                note(
                    f"  {mode}: {len(times)} queries, p50 so far {np.percentile(times, 50):.1f} ms"
                )
            if budget and time.perf_counter() - began > budget:
                break
        out["queries"][mode] = {
            "n": len(times),
            "p50": float(np.percentile(times, 50)),
            "p95": float(np.percentile(times, 95)),
            "max": max(times),
            "empty": empty,
            "failed": failed,
        }
        note(f"  {mode}: {out['queries'][mode]}")
    if spec["backend"] in ("milvus", "engine"):
        out["per_chunk"] = milvus_per_chunk(engine.store, engine.model_id, chunks, files)
        out["collections"] = engine.store.details().get("collections")
        for collection in engine.store.client.list_collections():
            engine.store.client.flush(collection)  # what is on disk, not in memory tables
    engine.close()
    out["peak_rss_mb"] = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    print(json.dumps(out))
    return 0


def cpu_seconds() -> float:
    """CPU seconds of this process (every thread: Milvus Lite's server is one) and of its
    finished children (the indexer's parser workers): on a busy machine, the measure that
    does not depend on what else runs."""
    me, kids = (
        resource.getrusage(resource.RUSAGE_SELF),
        resource.getrusage(resource.RUSAGE_CHILDREN),
    )
    return me.ru_utime + me.ru_stime + kids.ru_utime + kids.ru_stime


class Ticker:
    """Index progress on stderr about once a minute (what a run cut short had reached)."""

    def __init__(self, what: str, started: float) -> None:
        self.what, self.started, self.last = what, started, started

    def __call__(self, done: int, total: int, _item: str) -> None:
        now = time.perf_counter()
        if now - self.last >= 60 or done == total:
            self.last = now
            note(f"  {self.what}: {done} of {total} after {now - self.started:.0f} s")


def search(engine: Any, query: str, mode: str) -> int:
    """Run one query: its number of hits, or -1 when it failed (counted, and timed as is)."""
    try:
        return len(engine.search(SearchRequest(query, top_k=10, mode=mode)).hits)
    except Exception as exc:  # one failed query must not lose the run
        note(f"  {mode} query {query!r} failed: {exc}")
        return -1


def note(line: str) -> None:
    print(line, file=sys.stderr, flush=True)


def milvus_per_chunk(store: Any, model: str, chunks: int, files: int) -> dict[str, Any]:
    """Raw bytes per chunk in Milvus, from a sample of the rows as stored: the chunk row's
    scalar fields, its sparse keyword vector (nonzeros x (uint32 index + float32 weight)), the
    dense vector row (key + float32 x dimension), and the file rows and term rows shared out
    per chunk. Index structures (HNSW graph, inverted lists) come on top: see
    docs/deploy-milvus.md."""
    from noteseek.store.milvus import schema

    client = store.client
    prefix = store.prefix
    sample = client.query(
        schema.name(prefix, schema.CHUNKS), filter="rowid >= 0", output_fields=["*"], limit=2000
    )
    scalar = sparse = text = 0.0
    nnz = 0
    for row in sample:
        for key, value in row.items():
            if key == "sp":
                n = len(value) if hasattr(value, "__len__") else 0
                nnz += n
                sparse += 8 * n
            else:
                size = field_bytes(value)
                scalar += size
                if key == "text":
                    text += size
    k = max(len(sample), 1)
    file_rows = client.query(
        schema.name(prefix, schema.FILES), filter="file_id >= 0", output_fields=["*"], limit=500
    )
    per_file = sum(
        field_bytes(v) if key != "sp" else 8 * len(v) for row in file_rows for key, v in row.items()
    ) / max(len(file_rows), 1)
    term_table = schema.name(prefix, schema.TERMS)
    terms = int(client.query(term_table, filter="", output_fields=["count(*)"])[0]["count(*)"])
    words = client.query(term_table, filter='term != ""', output_fields=["term"], limit=2000)
    # a term row: the word, cdf and ddf, and the 2-dimension placeholder vector every table has
    term_row = sum(field_bytes(w["term"]) for w in words) / max(len(words), 1) + 8 + 8 + 8
    dense_key = field_bytes(sample[0].get("embed_key", "")) if sample else 0
    return {
        "sampled": len(sample),
        "sparse_nonzeros": nnz / k,
        "terms": terms,
        "bytes": {
            "chunk scalar fields (all)": scalar / k,
            "  of which chunk text": text / k,
            "sparse keyword vector": sparse / k,
            f"dense vector ({DIMENSION} x float32 + key)": DIMENSION * 4 + dense_key,
            "file row, shared per chunk": per_file * files / max(chunks, 1),
            "term statistics, shared per chunk": terms * term_row / max(chunks, 1),
        },
    }


def field_bytes(value: Any) -> int:
    """Raw bytes of one field value as Milvus stores it (strings as UTF-8 plus a 4-byte
    offset, numbers 8 bytes, JSON as its text, arrays as their elements)."""
    if isinstance(value, str):
        return len(value.encode("utf-8")) + 4
    if isinstance(value, bool):
        return 1
    if isinstance(value, int | float):
        return 8
    if isinstance(value, list):
        return sum(field_bytes(v) for v in value) + 4
    return len(json.dumps(value, ensure_ascii=False).encode("utf-8")) + 4


if __name__ == "__main__":
    sys.path.insert(0, str(REPO / "bench"))
    sys.exit(main())
