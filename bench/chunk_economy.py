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
"""

from __future__ import annotations

import argparse
import hashlib
import json
import tarfile
import tempfile
import time
from pathlib import Path

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


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("folders", nargs="+", type=Path)
    parser.add_argument("--small", type=int, default=300, help="chunking.small_chars")
    parser.add_argument("--max-chars", type=int, default=900, help="chunking.max_chars")
    args = parser.parse_args()
    for folder in args.folders:
        with tempfile.TemporaryDirectory() as tmp:
            root = folder
            if folder.name.endswith(".tgz"):
                with tarfile.open(folder) as tar:
                    tar.extractall(tmp, filter="data")
                root = Path(tmp)
            files = found_files(root)
            for merge_below in (0, args.small):
                row = measure(root, files, merge_below, args.max_chars)
                print(json.dumps({"folder": folder.name, **row}), flush=True)


if __name__ == "__main__":
    main()
