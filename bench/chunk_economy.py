"""Chunk counts with and without merging small sections, and how many embedding calls the
embedding cache and shared boilerplate vectors save.

    .venv/bin/python bench/chunk_economy.py FOLDER [FOLDER ...] [--small 300] [--max-chars 900]

Every file is read, parsed and chunked exactly as ``noteseek index`` does (``prepare_file``,
the folder's style detected as ``auto`` detects it), once with ``chunking.merge_small`` off and
once on. For each it prints: files, chunks, chunks per file, distinct embedding inputs (what is
embedded: the cache key is the input's hash, so identical inputs are embedded once) and
distinct chunk texts (whitespace collapsed: what is embedded when identical text shares one
vector whatever its heading context, see ``noteseek.indexing.embedding``). A ``.tgz`` is
unpacked to a temporary folder first. No model runs.

``--through-index`` also builds a real keyword index of each folder (merge on, a temporary
index folder) and runs the embedding phase over it with an embedder that only counts the
texts it is asked to embed (and returns constant vectors): the model calls the indexer
would make, through the store's pending list and the bounded table of recent texts.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import tarfile
import tempfile
import time
from collections.abc import Sequence
from pathlib import Path

import numpy as np

from noteseek.analysis import get_analyzer
from noteseek.chunking import text_key
from noteseek.indexing.prepare import PrepareSettings, prepare_file, read_path
from noteseek.indexing.styles import resolve_style
from noteseek.parse import default_registry
from noteseek.sources.base import FoundFile


def found_files(folder: Path) -> list[FoundFile]:
    out = []
    for path in sorted(folder.rglob("*")):
        if path.is_file() and path.suffix in (".md", ".markdown", ".txt"):
            st = path.stat()
            rel = path.relative_to(folder).as_posix()
            out.append(FoundFile("r", rel, str(path), st.st_mtime_ns, st.st_size))
    return out


def measure(folder: Path, files: list[FoundFile], merge_below: int, max_chars: int) -> dict:
    style = resolve_style("auto", folder)
    settings = PrepareSettings(
        language="english",
        stopwords=True,
        max_chars=max_chars,
        max_file_size=5_000_000,
        merge_below=merge_below,
        styles={"r": style},
    )
    analyzer = get_analyzer("english", True)
    registry = default_registry()
    chunks = 0
    sizes: list[int] = []
    inputs: set[str] = set()
    texts: set[str] = set()
    started = time.perf_counter()
    for found in files:
        outcome = prepare_file(found, None, settings, analyzer, registry, read_path)
        if outcome.prepared is None:
            continue
        for indexed in outcome.prepared.chunks:
            chunks += 1
            sizes.append(len(indexed.chunk.text))
            inputs.add(indexed.embed_key)
            texts.add(hashlib.blake2b(text_key(indexed.chunk.text).encode()).hexdigest())
    sizes.sort()
    return {
        "merge_below": merge_below,
        "style": style,
        "files": len(files),
        "chunks": chunks,
        "chunks_per_file": round(chunks / max(1, len(files)), 2),
        "median_chars": sizes[len(sizes) // 2] if sizes else 0,
        "distinct_inputs": len(inputs),
        "distinct_texts": len(texts),
        "seconds": round(time.perf_counter() - started, 1),
    }


class CountingEmbedder:
    """Counts what it is asked to embed; every vector is the same unit vector."""

    model_id = "counting"
    dimension = 8

    def __init__(self) -> None:
        self.texts = 0

    def embed_documents(self, texts: Sequence[str]) -> np.ndarray:
        self.texts += len(texts)
        out = np.zeros((len(texts), self.dimension), np.float32)
        out[:, 0] = 1.0
        return out

    def embed_query(self, text: str) -> np.ndarray:
        return self.embed_documents([text])[0]

    def close(self) -> None:
        pass


def through_index(folder: Path, small: int, max_chars: int) -> dict[str, object]:
    from noteseek.engine import open_engine
    from noteseek.indexing.embedding import embed_pending

    with tempfile.TemporaryDirectory() as tmp:
        (Path(tmp) / ".noteseek.toml").write_text(
            f'[roots.r]\npath = "{folder.resolve().as_posix()}"\n', encoding="utf-8"
        )
        flags = {
            "embedding.enabled": False,
            "chunking.small_chars": small,
            "chunking.max_chars": max_chars,
        }
        engine = open_engine(Path(tmp), flags=flags, environ={})
        try:
            started = time.perf_counter()
            engine.index()
            seconds = time.perf_counter() - started
            counting = CountingEmbedder()
            report = embed_pending(engine.store, counting)
            return {
                "chunks": engine.store.vector_progress("none")[1],
                "index_seconds": round(seconds, 1),
                "pending_inputs": report.pending,
                "model_calls": counting.texts,
                "shared": report.shared,
            }
        finally:
            engine.close()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("folders", nargs="+", type=Path)
    parser.add_argument("--small", type=int, default=300, help="chunking.small_chars")
    parser.add_argument("--max-chars", type=int, default=900, help="chunking.max_chars")
    parser.add_argument("--through-index", action="store_true", help="count through an index")
    args = parser.parse_args()
    for folder in args.folders:
        with tempfile.TemporaryDirectory() as tmp:
            root = folder
            if folder.name.endswith(".tgz"):
                with tarfile.open(folder) as tar:
                    tar.extractall(tmp, filter="data")
                root = Path(tmp)
            files = found_files(root)
            if args.through_index:
                row = through_index(root, args.small, args.max_chars)
                print(json.dumps({"folder": folder.name, "through_index": row}), flush=True)
                continue
            for merge_below in (0, args.small):
                row = measure(root, files, merge_below, args.max_chars)
                print(json.dumps({"folder": folder.name, **row}), flush=True)


if __name__ == "__main__":
    main()
