"""Calibrate the semantic lane's relevance floor: cosines of relevant and of meaningless pairs.

    .venv/bin/python bench/semantic_floor.py --index-root DIR \
        [--dataset hugo-docs-kis=../shared/data/hugo-docs-kis ...]

For each dataset (indexed with vectors by ``noteseek eval --index <index-root>/<name>``,
reused), every query is embedded once and compared with every chunk:

* **relevant**: the cosine of the best chunk of each relevant document (what the floor must
  keep: a relevant section below the floor leaves the semantic lane);
* **top-1**: the best cosine of the query over the whole index;
* **random**: the cosine of the query with a random chunk (a seeded sample);
* **meaningless**: the best cosine over the index of queries with nothing to find: gibberish,
  stop words only, punctuation, and text in scripts the corpora do not contain (Cyrillic,
  Greek, Thai, Arabic, Hebrew, Devanagari, Georgian, Armenian).

Prints percentiles of each (and of the same cosines as z-scores over the query's cosines
with the whole index), for candidate floors the share of relevant pairs below each and the
share of meaningless queries whose best chunk passes it, and how many meaningless queries
find nothing in semantic and hybrid search with the settings in force (``--set`` to change
them, e.g. ``--set search.relevance_gate=false``).
"""

from __future__ import annotations

import argparse
import json
import random
from pathlib import Path
from typing import Any

import numpy as np

from noteseek.engine import SearchRequest
from noteseek.eval.runner import eval_engine
from noteseek.search.query import semantic_text

DATA = Path(__file__).resolve().parent.parent.parent / "shared" / "data"
DEFAULT_SETS = {
    "hugo-docs-kis": DATA / "hugo-docs-kis",
    "scifact-dev": DATA / "scifact-dev",
}

# Queries with nothing meaningful to find in an English corpus. None of these is tuned on:
# the floor is chosen from the relevant pairs (it must keep them) and checked against these.
MEANINGLESS = [
    # gibberish
    "qzxv wplk",
    "asdf qwer zxcv",
    "blorft zingwap",
    "xkcdq vvbnm",
    "gzzrt plomph wuxx",
    "fjdksla",
    "mmmmm nnnn",
    "zqpxw",
    "lkjhg poiuy",
    "wrrpt skrnn",
    # stop words and filler only
    "to be or not to be",
    "the and of",
    "it is what it is",
    "a an the",
    "this that these those",
    "um uh well",
    # punctuation and symbols
    "?!.",
    "...",
    "???",
    "!!!",
    "-- ++ ==",
    "#@!",
    # scripts an English corpus does not contain
    "как приготовить борщ",
    "Привет мир",
    "быть или не быть",
    "τι κάνεις σήμερα",
    "καλημέρα κόσμε",
    "สวัสดีครับ",
    "วิธีทำอาหารไทย",
    "مرحبا بالعالم",
    "كيف حالك",
    "שלום עולם",
    "नमस्ते दुनिया",
    "გამარჯობა",
    "բարեւ աշխարհ",
]


def background(hits: list[tuple[int, float]]) -> tuple[float, float]:
    """Mean and standard deviation of a query's cosines over the whole index."""
    a = np.asarray([c for _, c in hits])
    return float(a.mean()), float(a.std()) or 1.0


def sweep(
    label: str, floors: Any, relevant: list[float], top1: list[float], junk: list[float]
) -> None:
    """For each floor: relevant pairs under it, real queries with nothing above it, and
    meaningless queries whose best section passes it."""
    for floor in floors:
        below = sum(c < floor for c in relevant) / max(1, len(relevant))
        passing = sum(c >= floor for c in junk) / len(junk)
        q_empty = sum(c < floor for c in top1) / max(1, len(top1))
        print(
            f"{label} {floor:.2f}: relevant below {below:.4f}  real queries with nothing "
            f"above {q_empty:.4f}  meaningless passing {passing:.3f}"
        )


def percentiles(values: list[float]) -> str:
    if not values:
        return "-"
    a = np.asarray(values)
    qs = [0, 1, 5, 10, 25, 50, 75, 95, 99, 100]
    return "  ".join(f"p{q}={np.percentile(a, q):.3f}" for q in qs)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--index-root", type=Path, required=True)
    parser.add_argument("--dataset", action="append", default=[], help="NAME=FOLDER")
    parser.add_argument("--limit", type=int, default=0, help="queries per set (0: all)")
    parser.add_argument("--set", action="append", default=[], help="section.key=value")
    args = parser.parse_args()
    sets = dict(item.split("=", 1) for item in args.dataset) if args.dataset else DEFAULT_SETS
    rng = random.Random(7)
    for name, folder in sets.items():
        flags = {k: json.loads(v) for k, v in (item.split("=", 1) for item in args.set)}
        ds, engine = eval_engine(Path(folder), args.index_root / name, flags=flags)
        try:
            if not engine.index_exists:
                raise SystemExit(f"{args.index_root / name}: run noteseek eval first")
            vectors = engine.vector_index()
            vectors.sync()
            size = vectors.size
            ids_paths = {}
            relevant: list[float] = []
            top1: list[float] = []
            top1_z: list[float] = []
            relevant_z: list[float] = []
            rand: list[float] = []
            items = list(ds.queries.items())
            if args.limit:
                items = items[: args.limit]
            for qid, text in items:
                hits = vectors.search(engine.embed_query(semantic_text(text)), size)
                missing = [r for r, _ in hits if r not in ids_paths]
                if missing:
                    for row in engine.store.chunk_rows(missing):
                        ids_paths[row.rowid] = ds.doc_id_of(row.path)
                best: dict[str, float] = {}
                for rowid, cos in hits:
                    best.setdefault(ids_paths.get(rowid, ""), cos)
                mean, std = background(hits)
                top1.append(hits[0][1])
                top1_z.append((hits[0][1] - mean) / std)
                relevant.extend(best[d] for d in ds.qrels.get(qid, {}) if d in best)
                relevant_z.extend(
                    (best[d] - mean) / std for d in ds.qrels.get(qid, {}) if d in best
                )
                rand.extend(cos for _, cos in rng.sample(hits, min(5, len(hits))))
            junk = []
            junk_z = []
            for text in MEANINGLESS:
                sem = semantic_text(text)
                hits = vectors.search(engine.embed_query(sem), size)
                mean, std = background(hits)
                junk.append(hits[0][1])
                junk_z.append((hits[0][1] - mean) / std)
            print(f"== {name}: {len(items)} queries, {size} vectors ({engine.model_id})")
            print(f"relevant best chunk  {percentiles(relevant)}")
            print(f"query top-1          {percentiles(top1)}")
            print(f"random pair          {percentiles(rand)}")
            print(f"meaningless top-1    {percentiles(junk)}")
            print(f"relevant z           {percentiles(relevant_z)}")
            print(f"query top-1 z        {percentiles(top1_z)}")
            print(f"meaningless top-1 z  {percentiles(junk_z)}")
            for text, z in sorted(zip(MEANINGLESS, junk_z, strict=True), key=lambda x: -x[1])[:8]:
                print(f"    z {z:.2f}  {text}")
            sweep("z floor", np.arange(2.0, 6.01, 0.25), relevant_z, top1_z, junk_z)
            for text, cos in sorted(zip(MEANINGLESS, junk, strict=True), key=lambda x: -x[1])[:8]:
                print(f"    {cos:.3f}  {text}")
            empty = {
                mode: [
                    not engine.search(SearchRequest(t, mode=mode, snippets=False)).hits
                    for t in MEANINGLESS
                ]
                for mode in ("semantic", "hybrid")
            }
            for mode, flags in empty.items():
                kept = [t for t, e in zip(MEANINGLESS, flags, strict=True) if not e]
                print(
                    f"{mode}: {sum(flags)} of {len(flags)} meaningless queries find nothing; "
                    f"results for: {kept}"
                )
            sweep("floor", np.arange(0.50, 0.86, 0.01), relevant, top1, junk)
        finally:
            engine.close()


if __name__ == "__main__":
    main()
