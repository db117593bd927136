"""Keyword ranking from the saved postings against FTS5's, on the same index, paired per query.

    .venv/bin/python bench/keyword_postings.py [DATASET ...] [--work DIR]
    .venv/bin/python bench/keyword_postings.py --build INDEX_DIR

Each DATASET (default: ``../shared/data/scifact-dev`` and ``hugo-docs-kis``; any BEIR or vault
folder ``noteseek eval`` reads, such as the set ``bench/dendron_known_item.py`` writes) is
indexed keyword-only with the postings saved whatever its size. Every query then runs in keyword
mode (top 10, no snippets) twice on that one index: answered from the postings, and with the
postings switched off so FTS5 answers. Printed per dataset: nDCG@10 of each and the difference,
the share of queries whose top 10 is identical, and the mean milliseconds per query of each.
Rankings differ only through phrases (words of one hyphenated or compound word, quoted
phrases), whose count in a row the postings estimate (``store/sqlite/postings_search.py``).

``--build INDEX_DIR``: build and save the postings of an existing index as its writer does at
the end of a run (the saved file is replaced), and print the seconds, the file's size and the
process's memory before, at its peak and after.
"""

from __future__ import annotations

import argparse
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

from noteseek.engine import SearchRequest
from noteseek.eval.parity import KEYWORD_ONLY
from noteseek.eval.runner import eval_engine, ranked_documents, score_ranking
from noteseek.store.sqlite import postings_state
from noteseek.store.sqlite.postings_state import PostingsState

DATA = Path(__file__).resolve().parent.parent.parent / "shared" / "data"


def run(store: Any, engine: Any, dataset: Any, fts5: bool) -> tuple[dict[str, list[str]], float]:
    kept = store._postings_state
    if fts5:
        store._postings_state = PostingsState(Path(tempfile.mkdtemp(prefix="no-postings-")))
    try:
        runs: dict[str, list[str]] = {}
        started = time.perf_counter()
        for qid, text in dataset.queries.items():
            hits = engine.search(SearchRequest(text, top_k=10, snippets=False, mode="keyword")).hits
            runs[qid] = ranked_documents(hits, dataset)[:10]
        return runs, (time.perf_counter() - started) * 1000 / max(1, len(runs))
    finally:
        store._postings_state = kept


def ndcg(runs: dict[str, list[str]], qrels: dict[str, dict[str, int]]) -> float:
    scores = [score_ranking(r, qrels.get(q, {}))["ndcg@10"] for q, r in runs.items()]
    return sum(scores) / max(1, len(scores))


def build_only(index_dir: Path) -> None:
    import resource
    import sqlite3

    import psutil

    process = psutil.Process()
    before = process.memory_info().rss
    saver = PostingsState(index_dir)
    reader = sqlite3.connect(f"file:{index_dir / 'index.db'}?mode=ro", uri=True)
    started = time.perf_counter()
    try:
        saver.save(reader)
    finally:
        reader.close()
    seconds = time.perf_counter() - started
    peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024
    print(
        f"built and saved in {seconds:.1f} s: {saver.path.stat().st_size / 2**20:.0f} MiB; "
        f"RSS {before / 2**20:.0f} MB before, peak {peak / 2**20:.0f} MB, "
        f"{process.memory_info().rss / 2**20:.0f} MB after"
    )


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("datasets", nargs="*", type=Path)
    ap.add_argument("--work", type=Path, default=None)
    ap.add_argument("--build", type=Path, default=None, help="build an index's postings only")
    args = ap.parse_args()
    if args.build:
        build_only(args.build)
        return 0
    datasets = args.datasets or [DATA / "scifact-dev", DATA / "hugo-docs-kis"]
    work = args.work or Path(tempfile.mkdtemp(prefix="keyword-postings-"))
    postings_state.FROM_ROWS = 0
    for folder in datasets:
        dataset, engine = eval_engine(folder, work / folder.name, flags=KEYWORD_ONLY)
        try:
            engine.index()
            store: Any = engine.store
            run(store, engine, dataset, fts5=False)  # warm both paths once
            fast, fast_ms = run(store, engine, dataset, fts5=False)
            slow, slow_ms = run(store, engine, dataset, fts5=True)
        finally:
            engine.close()
        same = sum(fast[q] == slow[q] for q in fast) / max(1, len(fast))
        a, b = ndcg(fast, dataset.qrels), ndcg(slow, dataset.qrels)
        print(
            f"{folder.name}: {len(fast)} queries; nDCG@10 postings {a:.4f}, FTS5 {b:.4f} "
            f"(difference {a - b:+.4f}); identical top 10: {same:.1%}; "
            f"ms per query: postings {fast_ms:.2f}, FTS5 {slow_ms:.2f}"
        )
    return 0


if __name__ == "__main__":
    sys.exit(main())
