"""Embedding throughput levers of the default model, measured A/B interleaved on real chunks.

    .venv/bin/python bench/embed_levers.py [--source scifact|hugo] [--chunks 600] [--rounds 2]

Texts are real chunks (SciFact abstracts as Markdown, or hugo-docs-kis pages) cut by
noteseek's own chunker and built by the indexer's input builder, then ordered shortest first
as the index's pending list is. Every variant runs once per round, in turn, so a busy shared
machine slows all variants alike; the table prints the best round of each. Vectors of every
variant are compared with the baseline's (min cosine).
"""

from __future__ import annotations

import argparse
import json
import random
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np

DATA = Path(__file__).resolve().parent.parent.parent / "shared" / "data"


def real_texts(source: str, n: int) -> list[str]:
    from noteseek.chunking import chunk_document, embedding_input
    from noteseek.parse import default_registry

    registry = default_registry()
    docs: list[tuple[str, str]] = []
    if source == "scifact":
        with open(DATA / "scifact-dev" / "corpus.jsonl", encoding="utf-8") as fh:
            for line in fh:
                d = json.loads(line)
                docs.append((f"{d['_id']}.md", f"# {d['title']}\n\n{d['text']}\n"))
    else:
        root = DATA / "hugo-docs-kis" / "vault"
        for path in sorted(root.rglob("*.md")):
            docs.append((path.relative_to(root).as_posix(), path.read_text(encoding="utf-8")))
    random.Random(17).shuffle(docs)
    texts: list[str] = []
    for rel, body in docs:
        parser = registry.parser_for(rel)
        assert parser is not None
        doc = parser(body, rel)
        for c in chunk_document(doc, rel, 900):
            texts.append(embedding_input(doc.title, rel, c.heading_path, c.text))
        if len(texts) >= n:
            break
    return sorted(texts[:n], key=len)


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--source", choices=("scifact", "hugo"), default="scifact")
    ap.add_argument("--chunks", type=int, default=600)
    ap.add_argument("--rounds", type=int, default=2)
    ap.add_argument("--only", default="", help="comma-separated variant names")
    args = ap.parse_args()
    if not (DATA / "scifact-dev").is_dir():
        print("skip: ../shared/data/scifact-dev is absent")
        return 0
    from noteseek.embed.onnx import MODELS, OnnxEmbedder

    texts = real_texts(args.source, args.chunks)
    spec = MODELS["bge-small-en"]
    probe = OnnxEmbedder(spec, max_tokens=512)
    lengths = np.array([sum(e.attention_mask) for e in probe._tokenizer.encode_batch(texts)])
    print(
        f"{len(texts)} {args.source} chunks; tokens p50 {int(np.median(lengths))}, "
        f"p90 {int(np.percentile(lengths, 90))}, max {lengths.max()}, "
        f"over 256: {(lengths > 256).mean():.1%}"
    )
    probe.close()

    def make(**kw: Any) -> Callable[[], OnnxEmbedder]:
        return lambda: OnnxEmbedder(spec, **kw)

    variants: dict[str, Callable[[], OnnxEmbedder]] = {
        "baseline (batch 16)": make(batch_size=16),
        "batch 1": make(batch_size=1),
        "batch 4": make(batch_size=4),
        "batch 8": make(batch_size=8),
        "batch 32": make(batch_size=32),
        "batch 64": make(batch_size=64),
        "threads 2": make(threads=2, batch_size=16),
        "threads 1": make(threads=1, batch_size=16),
        "token budget 1024": make(token_budget=1024),
        "token budget 2048": make(token_budget=2048),
        "token budget 4096": make(token_budget=4096),
        "arena on": make(arena=True, batch_size=16),
        "max_tokens 128": make(max_tokens=128, batch_size=16),
    }
    if args.only:
        keep = set(args.only.split(","))
        variants = {k: v for k, v in variants.items() if k in keep or k.startswith("baseline")}
    embedders = {name: build() for name, build in variants.items()}
    for e in embedders.values():
        e.embed_documents(texts[:8])
    best: dict[str, float] = {}
    cpu: dict[str, float] = {}
    vectors: dict[str, np.ndarray] = {}
    for _ in range(args.rounds):
        for name, e in embedders.items():
            started = time.perf_counter()
            cpu0 = time.process_time()
            # Calls of 64, as the indexer commits them.
            out = np.vstack(
                [e.embed_documents(texts[i : i + 64]) for i in range(0, len(texts), 64)]
            )
            rate = len(texts) / (time.perf_counter() - started)
            cpu_ms = (time.process_time() - cpu0) / len(texts) * 1000
            best[name] = max(best.get(name, 0.0), rate)
            cpu[name] = min(cpu.get(name, 1e9), cpu_ms)
            vectors[name] = out
            print(f"  {name}: {rate:.1f} chunks/s, {cpu_ms:.0f} CPU ms/chunk", file=sys.stderr)
    base = vectors[next(iter(vectors))]
    print("| variant | chunks/s (best round) | CPU ms/chunk (best) | vs baseline (CPU) | min cos |")
    print("|---|---|---|---|---|")
    for name, rate in best.items():
        cos = float((vectors[name] * base).sum(axis=1).min())
        speed = cpu[next(iter(cpu))] / cpu[name]
        print(f"| {name} | {rate:.1f} | {cpu[name]:.0f} | {speed:.2f}x | {cos:.4f} |")
    return 0


if __name__ == "__main__":
    sys.exit(main())
