"""Sections per document: how many distinct documents the top 5 and top 10 hold, by cap.

    .venv/bin/python bench/per_document.py DATASET --index DIR [--caps 0 1 2 3] [--mode keyword]
        [--set section.key=value ...]

DATASET is a vault dataset for ``noteseek eval`` (``vault/``, ``queries.jsonl``, ``qrels/``:
hugo-docs-kis, or the dendron-kis that ``bench/dendron_known_item.py`` builds). Every query is
searched with ``top_k`` 10 once per ``search.max_per_document`` cap, and printed per cap: the
mean number of distinct documents in the top 5 and top 10, the share of queries whose top 5 is
one document's sections only, and the known item's recall@5 and @10 *as the results show
it* (the document among the first 5 or 10 results, not among 5 or 10 distinct documents).
Indexes once into DIR (kept; the folder ``noteseek eval --index`` uses).
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
from pathlib import Path

from noteseek.engine import SearchRequest
from noteseek.eval.runner import eval_engine


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("dataset", type=Path)
    parser.add_argument("--index", type=Path, required=True)
    parser.add_argument("--caps", type=int, nargs="+", default=[0, 1, 2, 3])
    parser.add_argument("--mode", default="keyword")
    parser.add_argument("--set", dest="sets", action="append", default=[])
    parser.add_argument("--json", action="store_true")
    args = parser.parse_args(argv)
    base: dict[str, object] = {
        "embedding.enabled": args.mode != "keyword",
        "search.recency": "off",
    }
    for item in args.sets:
        key, _, value = item.partition("=")
        base[key] = value
    rows = []
    for cap in args.caps:
        dataset, engine = eval_engine(
            args.dataset, args.index, flags={**base, "search.max_per_document": cap}
        )
        if cap == args.caps[0]:
            engine.index()
        distinct5, distinct10, single5, found5, found10 = [], [], 0, 0, 0
        for qid, text in dataset.queries.items():
            hits = engine.search(SearchRequest(text, top_k=10, mode=args.mode, snippets=False)).hits
            docs = [dataset.doc_id_of(h.path) for h in hits]
            distinct5.append(len(set(docs[:5])))
            distinct10.append(len(set(docs[:10])))
            single5 += len(docs) >= 5 and len(set(docs[:5])) == 1
            judged = dataset.qrels.get(qid, {})
            found5 += any(d in judged for d in docs[:5])
            found10 += any(d in judged for d in docs[:10])
        n = len(dataset.queries)
        rows.append(
            {
                "cap": cap,
                "distinct_top5": round(statistics.fmean(distinct5), 3),
                "distinct_top10": round(statistics.fmean(distinct10), 3),
                "one_document_top5": round(single5 / n, 4),
                "shown_recall@5": round(found5 / n, 4),
                "shown_recall@10": round(found10 / n, 4),
            }
        )
        engine.close()
    if args.json:
        json.dump({"dataset": args.dataset.name, "mode": args.mode, "rows": rows}, sys.stdout)
        print()
        return 0
    print(f"{args.dataset.name} ({len(dataset.queries)} queries, {args.mode})")
    print("cap  distinct@5  distinct@10  one-doc top5  recall@5  recall@10 (as shown)")
    for r in rows:
        print(
            f"{r['cap']:>3}  {r['distinct_top5']:>10}  {r['distinct_top10']:>11}  "
            f"{r['one_document_top5']:>12}  {r['shown_recall@5']:>8}  {r['shown_recall@10']:>9}"
        )
    return 0


if __name__ == "__main__":
    sys.exit(main())
