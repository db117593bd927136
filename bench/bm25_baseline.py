"""A plain BM25 baseline (bm25s + PyStemmer) on a BEIR dataset, to check that our analyzer and
field weighting lose no BM25 quality.

    .venv/bin/python bench/bm25_baseline.py [--dataset scifact-dev]

Indexes title + text of every corpus document with bm25s (Lucene BM25, k1 1.5, b 0.75,
English stop words, Snowball stemming) and prints nDCG@10, Recall@10, Recall@100 and MRR@10
with the same metric code ``noteseek eval`` uses.
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

import bm25s
import Stemmer

from noteseek.eval.datasets import load_dataset
from noteseek.eval.runner import score_ranking

DATA = Path(__file__).resolve().parent.parent.parent / "shared" / "data"


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--dataset", default="scifact-dev")
    args = ap.parse_args()
    folder = DATA / args.dataset
    if not folder.is_dir():
        print(f"skip: {folder} is absent")
        return 0
    ds = load_dataset(folder)
    assert ds.corpus_file is not None, "needs a BEIR corpus.jsonl"
    ids: list[str] = []
    texts: list[str] = []
    with ds.corpus_file.open(encoding="utf-8") as fh:
        for line in fh:
            if line.strip():
                doc = json.loads(line)
                ids.append(str(doc["_id"]))
                texts.append(f"{doc.get('title', '')} {doc.get('text', '')}")
    stemmer = Stemmer.Stemmer("english")
    retriever = bm25s.BM25(k1=1.5, b=0.75, method="lucene")
    retriever.index(bm25s.tokenize(texts, stopwords="en", stemmer=stemmer, show_progress=False))
    qids = list(ds.queries)
    tokens = bm25s.tokenize(
        [ds.queries[q] for q in qids], stopwords="en", stemmer=stemmer, show_progress=False
    )
    results, _ = retriever.retrieve(tokens, k=100, show_progress=False)
    totals = {"ndcg@10": 0.0, "recall@10": 0.0, "recall@100": 0.0, "mrr@10": 0.0}
    for row, qid in enumerate(qids):
        ranked = [ids[int(i)] for i in results[row]]
        for key, value in score_ranking(ranked, ds.qrels.get(qid, {})).items():
            totals[key] += value
    n = len(qids)
    print(f"{args.dataset} ({n} queries), bm25s {bm25s.__version__} lucene k1=1.5 b=0.75:")
    print(" ".join(f"{k} {v / n:.4f}" for k, v in totals.items()))
    return 0


if __name__ == "__main__":
    sys.exit(main())
