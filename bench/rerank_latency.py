"""Cross-encoder re-ranking cost: milliseconds to score 10 and 20 candidate sections.

    .venv/bin/python bench/rerank_latency.py [--rounds 30]

Candidates are real sections of the bundled example vault (chunked as noteseek does), each
round a different query with the next 10 or 20 sections; prints p50 and p95 per candidate
count and token limit (rerank.max_tokens).
"""

from __future__ import annotations

import argparse
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

from noteseek.engine import open_engine
from noteseek.search.rerank import CrossEncoder

REPO = Path(__file__).resolve().parent.parent
QUERIES = [
    "how do keys expire in redis",
    "rate limiting with a sliding window",
    "recover a commit after a bad rebase",
    "what does a kubernetes controller do",
    "retry with exponential backoff",
    "postgres index for a slow query",
]


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--rounds", type=int, default=30)
    args = ap.parse_args()
    with tempfile.TemporaryDirectory(prefix="noteseek-rerank-") as tmp:
        engine = open_engine(
            Path(tmp),
            flags={
                "index.dir": str(Path(tmp) / "index"),
                "roots.notes.path": str(REPO / "examples" / "vault"),
                "embedding.enabled": False,
            },
            environ={},
        )
        engine.index()
        texts = [
            c.text for f in engine.store.iter_files() for c in engine.store.file_chunks(f.file_id)
        ]
        engine.close()
    print(f"{len(texts)} sections, mean {np.mean([len(t) for t in texts]):.0f} characters")
    print("| max_tokens | candidates | p50 ms | p95 ms |")
    print("|---|---|---|---|")
    for max_tokens in (256, 128):
        ce = CrossEncoder(max_tokens=max_tokens)
        ce.scores("warm up", texts[:2])
        for n in (10, 20):
            times = []
            for r in range(args.rounds):
                start = (r * n) % max(1, len(texts) - n)
                t = time.perf_counter()
                ce.scores(QUERIES[r % len(QUERIES)], texts[start : start + n])
                times.append((time.perf_counter() - t) * 1000)
            print(
                f"| {max_tokens} | {n} | {np.percentile(times, 50):.0f} | "
                f"{np.percentile(times, 95):.0f} |"
            )
    return 0


if __name__ == "__main__":
    sys.exit(main())
