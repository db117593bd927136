"""Embedding throughput and peak memory of each bundled model on real chunks.

    .venv/bin/python bench/embed_throughput.py [--chunks 400] [--threads 0]

Chunks come from hugo-docs-kis (real Markdown documentation), cut by noteseek's own chunker
and fed through the same input builder the indexer uses. Each model runs in a fresh process so
its peak RSS is its own. Target (issue 3): the default model >= 15 chunks/s on 2 cores.
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import time
from pathlib import Path

DATA = Path(__file__).resolve().parent.parent.parent / "shared" / "data"


def child(model: str, n: int, threads: int) -> None:
    import resource

    from noteseek.chunking import chunk_document, embedding_input
    from noteseek.embed.onnx import MODELS, OnnxEmbedder
    from noteseek.parse import default_registry

    registry = default_registry()
    texts: list[str] = []
    for path in sorted((DATA / "hugo-docs-kis" / "vault").rglob("*.md")):
        rel = path.relative_to(DATA / "hugo-docs-kis" / "vault").as_posix()
        parser = registry.parser_for(rel)
        assert parser is not None
        doc = parser(path.read_text(encoding="utf-8"), rel)
        for c in chunk_document(doc, rel, 900):
            texts.append(embedding_input(doc.title, rel, c.heading_path, c.text))
        if len(texts) >= n:
            break
    texts = texts[:n]
    embedder = OnnxEmbedder(MODELS[model], threads=threads)
    embedder.embed_documents(texts[:16])
    started = time.perf_counter()
    embedder.embed_documents(texts)
    took = time.perf_counter() - started
    q = time.perf_counter()
    for _ in range(50):
        embedder.embed_query("how do I add a custom output format")
    query_ms = (time.perf_counter() - q) / 50 * 1000
    rss = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    mean_chars = sum(map(len, texts)) / len(texts)
    print(
        json.dumps(
            {
                "model": model,
                "chunks": len(texts),
                "mean_chars": round(mean_chars),
                "chunks_per_s": round(len(texts) / took, 1),
                "query_ms": round(query_ms, 1),
                "peak_rss_mb": round(rss),
            }
        )
    )


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--chunks", type=int, default=400)
    ap.add_argument("--threads", type=int, default=0)
    ap.add_argument("--child", default=None)
    args = ap.parse_args()
    if args.child:
        child(args.child, args.chunks, args.threads)
        return 0
    if not (DATA / "hugo-docs-kis").is_dir():
        print("skip: ../shared/data/hugo-docs-kis is absent")
        return 0
    print("| model | chunks | mean chars | chunks/s | query ms | peak RSS MB |")
    print("|---|---|---|---|---|---|")
    for model in ("bge-small-en", "minilm-l6"):
        out = subprocess.run(
            [
                sys.executable,
                __file__,
                "--child",
                model,
                "--chunks",
                str(args.chunks),
                "--threads",
                str(args.threads),
            ],
            capture_output=True,
            text=True,
            check=True,
        )
        r = json.loads(out.stdout)
        print(
            f"| {r['model']} | {r['chunks']} | {r['mean_chars']} | {r['chunks_per_s']} | "
            f"{r['query_ms']} | {r['peak_rss_mb']} |",
            flush=True,
        )
    return 0


if __name__ == "__main__":
    sys.exit(main())
