"""Issue 34, item 1, third round: can one setting serve every kind of index, or must the
semantic lane's weight be chosen per index, and can the index choose it by itself?

    PYTHONPATH=src .venv/bin/python bench/rank_by_index.py --index-root INDEXES \
        --dataset psk=PSK_SET --dataset dendron-kis=DKIS_SET --dataset logseq-kis=LKIS_SET \
        --dataset hugo-docs-kis=../shared/data/hugo-docs-kis \
        --dataset scifact-dev=../shared/data/scifact-dev \
        [--study weights --study proximity --study calibration]

Uses the indexes (with vectors) that ``noteseek eval SET --index <index-root>/<name>`` built,
and ``bench/tune_levers.py``'s lanes: per query the keyword lane and the semantic lane,
``DEPTH`` sections each, documents ranked by their best section, RRF as shipped.

* ``weights``: nDCG@10 of RRF at semantic weights 0.5 to 5 (keyword 1), each set's lanes alone,
  and the paired p of each weight against the shipped 1.5.
* ``proximity``: a keyword-lane bonus for query words that stand side by side in a section as
  they do in the query (function words left out of both): each section of the lane's first
  ``--top`` gets ``lam x (adjacent query pairs found adjacent) / (adjacent query pairs)`` added
  to its score over the lane's best; the keyword lane and hybrid (shipped RRF over the re-ranked
  lane) against the shipped lane, paired.
* ``calibration``: the index's own known-item queries, made without any judged query. For up
  to 250 documents with two or more sections (seed 34), a sentence of 6-40 words of the first
  section that has one (markup, lists, tables and code left out; the first 30 words) is the
  query, and the section it came from is left out of both lanes, so the document must be found
  by its other sections. Reported: each lane's MRR@10 and the weight that ranks best, against
  the weight the judged queries want.
"""

from __future__ import annotations

import argparse
import itertools
import math
import random
import re
import sqlite3
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))
import tune_levers as T
from noteseek.search import keyword
from noteseek.search.query import semantic_text
from noteseek.search.relevance import function_terms, model_floor
from noteseek.types import Filters

WEIGHTS = (0.5, 1.0, 1.25, 1.5, 2.0, 3.0, 5.0)
Lane = T.Lane


def fused(d: T.SetData, q: str, kw: Lane, w_sem: float) -> float:
    lanes = {"keyword": kw, "semantic": d.semantic[q]}
    ranking = T.shipped(lanes, w={"keyword": 1.0, "semantic": w_sem})
    return T.ndcg10(T.first_docs(d.doc_of(ranking)), d.ds.qrels.get(q, {}))


def lane_ndcg(d: T.SetData, q: str, lane: Lane) -> float:
    return T.ndcg10(T.first_docs(d.doc_of([r for r, _ in lane])), d.ds.qrels.get(q, {}))


def weights_study(sets: list[T.SetData]) -> None:
    print("\n## Semantic weight per set (keyword 1; shipped 1.5)\n")
    head = " | ".join(f"1 : {w:g}" for w in WEIGHTS)
    print(f"| set | queries | keyword | semantic | {head} |")
    print("|---|---:|---:|---:|" + "---:|" * len(WEIGHTS))
    for d in sets:
        qs = list(d.ds.queries)
        kw = {q: lane_ndcg(d, q, d.keyword[q]) for q in qs}
        sem = {q: lane_ndcg(d, q, d.semantic[q]) for q in qs}
        by_w = {w: {q: fused(d, q, d.keyword[q], w) for q in qs} for w in WEIGHTS}
        cells = []
        for w in WEIGHTS:
            if w == 1.5:
                cells.append(f"**{T.mean(by_w[w], qs):.4f}**")
            else:
                p = T.pvalue(by_w[w], by_w[1.5], qs)
                cells.append(f"{T.mean(by_w[w], qs):.4f} (p {p:.2f})")
        print(
            f"| {d.name} | {len(qs)} | {T.mean(kw, qs):.4f} | {T.mean(sem, qs):.4f} | "
            + " | ".join(cells)
            + " |"
        )


# -- proximity -----------------------------------------------------------------------------------


def content_terms(analyzer: Any, text: str, stop: frozenset[str]) -> list[str]:
    return [t for t in analyzer.terms(text) if t not in stop]


def adjacent_share(pairs: Sequence[tuple[str, str]], terms: Sequence[str]) -> float:
    """The share of the query's adjacent pairs that stand adjacent, in order, in ``terms``."""
    if not pairs:
        return 0.0
    seen = set(itertools.pairwise(terms))
    return sum(p in seen for p in pairs) / len(pairs)


def proximity_study(sets: list[T.SetData], top: int, lams: Sequence[float]) -> None:
    print(f"\n## Keyword proximity bonus (first {top} sections of the keyword lane)\n")
    print("| set | lam | keyword (diff, p) | hybrid (diff, p) |")
    print("|---|---:|---|---|")
    for d in sets:
        analyzer = d.engine.analyzer()
        stop = function_terms(analyzer)
        rows = sorted({r for q in d.keyword for r, _ in d.keyword[q][:top]})
        terms: dict[int, list[str]] = {}
        for i in range(0, len(rows), 500):
            for row in d.engine.store.chunk_rows(rows[i : i + 500]):
                text = f"{row.title}\n{' '.join(row.heading_path)}\n{row.text}"
                terms[row.rowid] = content_terms(analyzer, text, stop)
                d.paths[row.rowid] = row.path
        qs = list(d.ds.queries)
        base_kw = {q: lane_ndcg(d, q, d.keyword[q]) for q in qs}
        base_hy = {q: fused(d, q, d.keyword[q], 1.5) for q in qs}
        # The lane's match tiers (all words, rarer words, any word) stay in order: the bonus
        # re-ranks within a tier, as the engine would.
        settings = d.engine.settings.search
        tiers = {
            q: [
                r.tier
                for r in keyword.retrieve(
                    d.engine.store, d.queries[q], Filters(), T.DEPTH, settings
                ).results
            ]
            for q in qs
        }
        for lam in lams:
            kw_new: dict[str, float] = {}
            hy_new: dict[str, float] = {}
            for q in qs:
                lane = d.keyword[q]
                qt = content_terms(analyzer, d.ds.queries[q], stop)
                pairs = [(a, b) for a, b in itertools.pairwise(qt) if a != b]
                best = max((s for _, s in lane), default=1.0) or 1.0
                scored = [
                    (r, s / best + (lam * adjacent_share(pairs, terms[r]) if i < top else 0.0))
                    for i, (r, s) in enumerate(lane)
                ]
                tier = tiers[q]
                order = sorted(range(len(scored)), key=lambda i: (tier[i], -scored[i][1]))
                reranked = [scored[i] for i in order]
                kw_new[q] = lane_ndcg(d, q, reranked)
                hy_new[q] = fused(d, q, reranked, 1.5)
            print(
                f"| {d.name} | {lam:g} | {T.cell(kw_new, base_kw, qs)} | "
                f"{T.cell(hy_new, base_hy, qs)} |"
            )
        print(f"| {d.name} | 0 (shipped) | {T.mean(base_kw, qs):.4f} | {T.mean(base_hy, qs):.4f} |")


# -- calibration ---------------------------------------------------------------------------------

_SENTENCE = re.compile(r"(?<=[.!?])\s+")
_LINK = re.compile(r"\[([^\]]*)\]\([^)]*\)")
_SKIP = ("#", "|", "---", "-", "*", ">")


def prose(text: str) -> str:
    """A section's running text: no fenced code, headings, lists, tables or link addresses."""
    lines, fenced = [], False
    for line in text.splitlines():
        if line.strip().startswith("```"):
            fenced = not fenced
            continue
        if fenced or line.lstrip().startswith(_SKIP):
            continue
        lines.append(line)
    return _LINK.sub(r"\1", " ".join(" ".join(lines).split()))


def pseudo_queries(db: sqlite3.Connection, n: int, seed: int) -> list[tuple[int, int, str]]:
    """(file id, section rowid, sentence) for up to ``n`` documents with 2+ sections."""
    by_file: dict[int, list[tuple[int, str]]] = {}
    for rowid, file_id, text in db.execute(
        "SELECT id, file_id, text FROM chunks ORDER BY file_id, ordinal"
    ):
        by_file.setdefault(file_id, []).append((rowid, text))
    files = [f for f, sections in by_file.items() if len(sections) >= 2]
    random.Random(seed).shuffle(files)
    out: list[tuple[int, int, str]] = []
    for f in files:
        found = next(
            (
                (rowid, " ".join(words[:30]))
                for rowid, text in by_file[f]
                for sentence in _SENTENCE.split(prose(text))
                if 6 <= len(words := sentence.split()) <= 40
            ),
            None,
        )
        if found:
            out.append((f, *found))
        if len(out) >= n:
            break
    return out


def rr(rowids: Sequence[int], file_of: dict[int, int], want: int) -> float:
    """Reciprocal rank of file ``want`` among the first ten files of a section ranking."""
    files = T.first_docs([str(file_of.get(r)) for r in rowids])
    return 1.0 / (files.index(str(want)) + 1) if str(want) in files else 0.0


def calibration_study(sets: list[T.SetData], n: int, index_root: Path) -> None:
    print(f"\n## The index's own queries (up to {n} documents, their section left out)\n")
    head = " | ".join(f"1 : {w:g}" for w in WEIGHTS)
    print(f"| set | queries | keyword | semantic | ratio | {head} | best here | best judged |")
    print("|---|---:|---:|---:|---:|" + "---:|" * len(WEIGHTS) + "---|---|")
    ratios: dict[str, float] = {}
    curves: dict[str, dict[float, float]] = {}
    for d in sets:
        engine = d.engine
        vectors = engine.vector_index()
        floor = model_floor(engine.model_id)
        settings = engine.settings.search
        # The SQLite index's own tables, read-only: a bench may look beneath the store.
        path = index_root / d.name / "index" / "index.db"
        db = sqlite3.connect(f"file:{path}?mode=ro", uri=True)
        file_of = dict(db.execute("SELECT id, file_id FROM chunks"))
        mrr: dict[Any, list[float]] = {}
        made = pseudo_queries(db, n, 34)
        db.close()
        for file_id, left_out, text in made:
            query = T.keyword_query(text, engine)
            found = keyword.retrieve(engine.store, query, Filters(), T.DEPTH, settings)
            kw = [(r.rowid, r.blended) for r in found.results if r.rowid != left_out]
            hits = vectors.search(engine.embed_query(semantic_text(text)), T.DEPTH)
            sem = [(r, float(s)) for r, s in hits if s >= floor and r != left_out]

            mrr.setdefault("keyword", []).append(rr([r for r, _ in kw], file_of, file_id))
            mrr.setdefault("semantic", []).append(rr([r for r, _ in sem], file_of, file_id))
            lanes = {"keyword": kw, "semantic": sem}
            for w in WEIGHTS:
                ranking = T.shipped(lanes, w={"keyword": 1.0, "semantic": w})
                mrr.setdefault(w, []).append(rr(ranking, file_of, file_id))
        means = {k: float(np.mean(v)) for k, v in mrr.items()}
        qs = list(d.ds.queries)
        judged = {w: T.mean({q: fused(d, q, d.keyword[q], w) for q in qs}, qs) for w in WEIGHTS}
        here = max(WEIGHTS, key=lambda w: means[w])
        best = max(WEIGHTS, key=lambda w: judged[w])
        ratio = means["semantic"] / means["keyword"] if means["keyword"] else 0.0
        cells = " | ".join(f"{means[w]:.4f}" for w in WEIGHTS)
        print(
            f"| {d.name} | {len(made)} | {means['keyword']:.4f} | {means['semantic']:.4f} | "
            f"{ratio:.2f} | {cells} | 1 : {here:g} | 1 : {best:g} |"
        )
        ratios[d.name] = ratio
        curves[d.name] = {
            w: T.mean({q: fused(d, q, d.keyword[q], w) for q in qs}, qs) for w in FINE
        }
    leave_one_out(ratios, curves)


FINE = (*(round(float(x), 3) for x in np.exp(np.linspace(np.log(0.4), np.log(6), 25))), 1.5)


def mapped(ratio: float, r0: float, g: float) -> float:
    """The rule under test: weight 1.5 x (ratio / r0) ** g, within [0.4, 6]."""
    return float(np.clip(1.5 * (ratio / r0) ** g, 0.4, 6.0))


def near(curve: dict[float, float], w: float) -> float:
    return curve[min(curve, key=lambda x: abs(math.log(x) - math.log(w)))]


def leave_one_out(ratios: dict[str, float], curves: dict[str, dict[float, float]]) -> None:
    """Fit (r0, g) on all sets but one (the best mean gain over 1 : 1.5 with no set losing
    more than 0.005) and apply it to the one left out."""
    if len(ratios) < 3:
        return

    def fit(names: list[str]) -> tuple[float, float]:
        best = (-1.0, 0.6, 0.0)
        for r0 in np.linspace(0.4, 0.9, 26):
            for g in np.linspace(0.0, 4.0, 41):
                gains = [near(curves[n], mapped(ratios[n], r0, g)) - curves[n][1.5] for n in names]
                if min(gains) >= -0.005 and float(np.mean(gains)) > best[0] + 1e-9:
                    best = (float(np.mean(gains)), float(r0), float(g))
        return best[1], best[2]

    print("\n| left out | fitted on the others (r0, g) | weight | 1 : 1.5 | mapped (diff) |")
    print("|---|---|---:|---:|---|")
    for name in ratios:
        r0, g = fit([n for n in ratios if n != name])
        w = mapped(ratios[name], r0, g)
        base, got = curves[name][1.5], near(curves[name], w)
        print(
            f"| {name} | {r0:.2f}, {g:.1f} | {w:.2f} | {base:.4f} | {got:.4f} ({got - base:+.4f}) |"
        )
    r0, g = fit(list(ratios))
    print(f"\nFitted on every set: r0 {r0:.2f}, g {g:.1f}.")


def main() -> int:
    ap = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    ap.add_argument("--index-root", type=Path, required=True)
    ap.add_argument("--dataset", action="append", required=True, help="name=folder")
    ap.add_argument(
        "--study", action="append", choices=("weights", "proximity", "calibration"), default=None
    )
    ap.add_argument("--top", type=int, default=40, help="proximity: sections re-scored")
    ap.add_argument("--lam", type=float, action="append", default=None)
    ap.add_argument("--pseudo", type=int, default=250, help="calibration: documents")
    args = ap.parse_args()
    sets = []
    for pair in args.dataset:
        name, _, folder = pair.partition("=")
        sets.append(T.load(name, Path(folder), args.index_root, {}))
    for study in args.study or ["weights", "proximity", "calibration"]:
        if study == "weights":
            weights_study(sets)
        elif study == "proximity":
            proximity_study(sets, args.top, args.lam or [0.1, 0.2, 0.3])
        else:
            calibration_study(sets, args.pseudo, args.index_root)
        sys.stdout.flush()
    return 0


if __name__ == "__main__":
    sys.exit(main())
