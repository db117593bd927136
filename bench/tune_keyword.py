"""Measure keyword-ranking choices on real data: field weights, stop words, all-words-first.

    .venv/bin/python bench/tune_keyword.py [--datasets hugo-docs-kis scifact-dev]

Each dataset is indexed once per analyzer setting into a temporary folder; query-time
settings (weights, all_terms_first, common-term pruning) are varied on the same index.
Prints nDCG@10, Recall@10, MRR@10 and p50 latency per variant (docs/evaluation.md).
"""

from __future__ import annotations

import argparse
import sys
import tempfile
from pathlib import Path
from typing import Any

from noteseek.engine import Engine, open_engine
from noteseek.eval.datasets import load_dataset, materialise_corpus
from noteseek.eval.runner import evaluate

DATA = Path(__file__).resolve().parent.parent.parent / "shared" / "data"

WEIGHTS: dict[str, dict[str, float]] = {
    "flat 1/1/1/1/1/1": dict(title=1, aliases=1, headings=1, tags=1, body=1, code=1),
    "title 5, aliases 5, headings 2, tags 2": dict(
        title=5, aliases=5, headings=2, tags=2, body=1, code=1
    ),
    "title 10, aliases 8, headings 3, tags 3": dict(
        title=10, aliases=8, headings=3, tags=3, body=1, code=1
    ),
    "title 10, aliases 8, headings 3, tags 3, code 0.5": dict(
        title=10, aliases=8, headings=3, tags=3, body=1, code=0.5
    ),
    "title 20, aliases 10, headings 5, tags 3": dict(
        title=20, aliases=10, headings=5, tags=3, body=1, code=1
    ),
    "title 3, aliases 3, headings 1.5, tags 1.5": dict(
        title=3, aliases=3, headings=1.5, tags=1.5, body=1, code=1
    ),
}


def engine(folder: Path, index: Path, stopwords: bool, **flags: Any) -> Engine:
    return open_engine(
        index.parent,
        flags={
            "index.dir": str(index),
            f"roots.{folder.name.replace('.', '-')}.path": str(folder),
            "analysis.stopwords": stopwords,
            **flags,
        },
        environ={},
    )


def row(label: str, res: Any) -> str:
    return (
        f"| {label} | {res.ndcg10:.4f} | {res.recall10:.4f} | {res.recall100:.4f} | "
        f"{res.mrr10:.4f} | {res.p50_ms:.1f} |"
    )


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--datasets", nargs="+", default=["hugo-docs-kis", "scifact-dev"])
    args = ap.parse_args()
    for name in args.datasets:
        folder = DATA / name
        if not folder.is_dir():
            print(f"skip {name}: {folder} is absent")
            continue
        ds = load_dataset(folder)
        with tempfile.TemporaryDirectory(prefix="noteseek-tune-") as tmp:
            docs = ds.vault
            if docs is None:
                assert ds.corpus_file is not None
                docs = Path(tmp) / "corpus"
                materialise_corpus(ds.corpus_file, docs)
            print(f"\n## {name} ({len(ds.queries)} queries, split {ds.split})\n")
            print("| variant | nDCG@10 | R@10 | R@100 | MRR@10 | p50 ms |")
            print("|---|---|---|---|---|---|")
            for stopwords in (False, True):
                index = Path(tmp) / f"index-{stopwords}"
                eng = engine(docs, index, stopwords)
                eng.index()
                eng.close()
                for label, weights in WEIGHTS.items():
                    if stopwords and not label.startswith(("title 10, aliases 8", "title 20")):
                        continue
                    flags = {f"search.weights.{k}": v for k, v in weights.items()}
                    eng = engine(docs, index, stopwords, **flags)
                    res = evaluate(eng, ds)
                    eng.close()
                    print(
                        row(f"{label}; stopwords {'on' if stopwords else 'off'}", res), flush=True
                    )
            index = Path(tmp) / "index-False"
            for atf in (0, 2, 4, 8):
                eng = engine(docs, index, False, **{"search.all_terms_first": atf})
                print(row(f"all_terms_first {atf}", evaluate(eng, ds)), flush=True)
                eng.close()
            eng = engine(
                docs,
                index,
                False,
                **{"search.common_term_min": 0, "search.common_term_fraction": 0.05},
            )
            print(row("common-term pruning forced on (min 0, 5%)", evaluate(eng, ds)), flush=True)
            eng.close()
    return 0


if __name__ == "__main__":
    sys.exit(main())
