"""Issue 34, item 1, second round: three ranking levers tuned on one half of each set's
queries and measured on the other (held-back) half.

    PYTHONPATH=src .venv/bin/python bench/tune_levers.py --index-root INDEXES \
        [--dataset scifact-dev=../shared/data/scifact-dev ...] \
        [--lever fusion --lever fields --lever fields-joint --lever expansion] \
        [--set search.weights.title=20 --set search.weights.headings=5]

Uses the indexes (with vectors) that ``noteseek eval SET --index <index-root>/<name>`` built;
by default scifact-dev and hugo-docs-kis from the shared data. Each set's queries are split
in halves by the parity of the SHA-1 of the query id (half A: even, half B: odd). Every lever
is tuned on one half and reported on the other, both ways, against the shipped default on the
same queries, with the paired permutation p-value (``noteseek.eval.runner``).

Per query the keyword lane (``search.keyword.retrieve``, function words dropped from questions
as the engine does) and the semantic lane (the cosine ranking, the model's floor applied) are
fetched once, ``DEPTH`` sections each; the semantic lanes are kept in
``<index-root>/<name>.levers.pkl`` so later runs do not embed the queries again. Documents
are ranked by their best section, as the engine groups results.

* ``fusion``: (a) a grid over RRF k and the semantic weight (keyword weight 1); (b) a linear
  model over per-section features (each lane's reciprocal rank 1 / (10 + rank), min-max and
  z-normalised scores, the cosine, whether both lanes found it), learnt by coordinate ascent
  on nDCG@10 from the shipped RRF; (c) convex min-max a. Also the parameters learnt on one
  whole set applied to the other.
* ``fields``: coordinate ascent over the keyword field weights (``search.weights.*``) on the
  tuning half's keyword-lane nDCG@10; reported for the keyword lane and for hybrid (shipped
  RRF over the re-weighted keyword lane and the same semantic lane).
* ``expansion``: RM3-style pseudo-relevance feedback. The sections of the top ``fb`` documents
  (of the keyword lane, or of the shipped hybrid ranking) vote for their terms (term frequency
  over section length, times idf over the index's sections; words in the query, in fewer than
  2 sections or in more than 10% dropped); the best ``n`` words are added to the keyword query
  as optional words (``search.concepts.expand_query``). The expanded lane replaces the keyword
  lane, or joins RRF as a third lane of weight w. The setting is chosen on the tuning half.

Prints one markdown table per lever and dataset. Numbers are offline reproductions: the
"shipped" rows are RRF k 10, 1 : 1.5 over these lanes, close to but not the same as
``noteseek eval`` (which also corrects typos, applies the community boost and widens).
"""

from __future__ import annotations

import argparse
import hashlib
import math
import pickle
import re
import sys
import time
from collections import Counter
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from noteseek.eval.datasets import Dataset
from noteseek.eval.runner import eval_engine, paired_permutation_p
from noteseek.search import keyword, relevance
from noteseek.search.concepts import expand_query
from noteseek.search.fusion import rrf
from noteseek.search.query import parse_query, semantic_text
from noteseek.search.relevance import model_floor
from noteseek.types import FTS_FIELDS, Filters, KeywordQuery

DATA = Path(__file__).resolve().parent.parent.parent / "shared" / "data"
DEPTH = 100
K_SHIPPED = 10.0
W_SHIPPED = {"keyword": 1.0, "semantic": 1.5}
Lane = list[tuple[int, float]]


def half_of(qid: str) -> str:
    """ "A" or "B": the parity of the query id's SHA-1 (deterministic, independent of order)."""
    return "A" if int(hashlib.sha1(qid.encode()).hexdigest(), 16) % 2 == 0 else "B"


# -- per-set data ----------------------------------------------------------------------------


@dataclass
class SetData:
    name: str
    ds: Dataset
    engine: Any
    queries: dict[str, KeywordQuery]
    semantic: dict[str, Lane]
    keyword: dict[str, Lane]
    paths: dict[int, str] = field(default_factory=dict)
    halves: dict[str, list[str]] = field(default_factory=dict)

    def doc_of(self, rowids: Sequence[int]) -> list[str]:
        missing = [r for r in rowids if r not in self.paths]
        if missing:
            for row in self.engine.store.chunk_rows(sorted(set(missing))):
                self.paths[row.rowid] = row.path
        return [self.ds.doc_id_of(self.paths[r]) for r in rowids]

    def ranked(self, rowids: Sequence[int]) -> list[str]:
        """The first ten documents of a section ranking."""
        return first_docs(self.doc_of(list(rowids)))


def keyword_query(text: str, engine: Any) -> KeywordQuery:
    analyzer = engine.analyzer()
    query = parse_query(text, analyzer)
    if relevance.is_question(text):
        query = relevance.strip_function_words(query, analyzer)
    return query


def keyword_lane(data: SetData, qid: str, settings: Any, query: KeywordQuery | None = None) -> Lane:
    q = query if query is not None else data.queries[qid]
    found = keyword.retrieve(data.engine.store, q, Filters(), DEPTH, settings)
    return [(r.rowid, r.blended) for r in found.results]


def load(name: str, folder: Path, index_root: Path, flags: dict[str, Any]) -> SetData:
    ds, engine = eval_engine(folder, index_root / name, flags=flags)
    if not engine.index_exists:
        raise SystemExit(f"{index_root / name}: run noteseek eval {folder} --index ... first")
    queries = {qid: keyword_query(text, engine) for qid, text in ds.queries.items()}
    cache = index_root / f"{name}.levers.pkl"
    if cache.exists():
        semantic = pickle.loads(cache.read_bytes())
    else:
        vectors = engine.vector_index()
        floor = model_floor(engine.model_id)
        semantic = {}
        for qid, text in ds.queries.items():
            found = vectors.search(engine.embed_query(semantic_text(text)), DEPTH)
            semantic[qid] = [(r, float(s)) for r, s in found if s >= floor]
        cache.write_bytes(pickle.dumps(semantic))
    data = SetData(name, ds, engine, queries, semantic, {})
    settings = engine.settings.search
    data.keyword = {qid: keyword_lane(data, qid, settings) for qid in ds.queries}
    for qid in ds.queries:
        data.halves.setdefault(half_of(qid), []).append(qid)
    return data


# -- scoring -----------------------------------------------------------------------------------


def ndcg10(docs: Sequence[str], judged: dict[str, int]) -> float:
    ideal = sorted((g for g in judged.values() if g > 0), reverse=True)[:10]
    if not ideal:
        return 0.0
    dcg = sum(max(judged.get(d, 0), 0) / math.log2(i + 2) for i, d in enumerate(docs[:10]))
    return dcg / sum(g / math.log2(i + 2) for i, g in enumerate(ideal))


def first_docs(docs: Sequence[str], n: int = 10) -> list[str]:
    seen: dict[str, None] = {}
    for d in docs:
        seen.setdefault(d, None)
        if len(seen) >= n:
            break
    return list(seen)


def shipped(
    lanes: dict[str, Lane], k: float = K_SHIPPED, w: dict[str, float] | None = None
) -> list[int]:
    return [f.rowid for f in rrf(lanes, w or W_SHIPPED, k)]


def mean(values: dict[str, float], qids: Sequence[str]) -> float:
    return float(np.mean([values[q] for q in qids])) if qids else 0.0


def pvalue(new: dict[str, float], old: dict[str, float], qids: Sequence[str]) -> float:
    return paired_permutation_p([new[q] - old[q] for q in qids])


def cell(new: dict[str, float], old: dict[str, float], qids: Sequence[str]) -> str:
    d = mean(new, qids) - mean(old, qids)
    return f"{mean(new, qids):.4f} ({d:+.4f}, p {pvalue(new, old, qids):.3f})"


# -- lever 1: fusion -----------------------------------------------------------------------------

FEATURES = ("rr_kw", "rr_sem", "mm_kw", "mm_sem", "z_kw", "z_sem", "cos", "both")


@dataclass
class Candidates:
    rowids: np.ndarray
    docs: list[str]
    feats: np.ndarray  # n x len(FEATURES)
    rank_kw: np.ndarray  # 0 = missing
    rank_sem: np.ndarray


def candidates(data: SetData, qid: str) -> Candidates:
    kw, sem = data.keyword[qid], data.semantic[qid]
    order: dict[int, int] = {}
    for r, _ in kw:
        order.setdefault(r, len(order))
    for r, _ in sem:
        order.setdefault(r, len(order))
    n = len(order)
    feats = np.zeros((n, len(FEATURES)))
    rank_kw = np.zeros(n)
    rank_sem = np.zeros(n)
    for lane, rr, mm, z, ranks in ((kw, 0, 2, 4, rank_kw), (sem, 1, 3, 5, rank_sem)):
        if not lane:
            continue
        s = np.array([x for _, x in lane])
        lo, hi = s.min(), s.max()
        norm = (s - lo) / (hi - lo) if hi > lo else np.ones_like(s)
        zs = (s - s.mean()) / (s.std() or 1.0)
        feats[:, z] = zs.min()
        for i, (r, _) in enumerate(lane):
            j = order[r]
            ranks[j] = i + 1
            feats[j, rr] = 1.0 / (K_SHIPPED + i + 1)
            feats[j, mm] = norm[i]
            feats[j, z] = zs[i]
            if lane is sem:
                feats[j, 6] = s[i]
    if sem:
        low = min(x for _, x in sem)
        feats[rank_sem == 0, 6] = low
    feats[:, 7] = (rank_kw > 0) & (rank_sem > 0)
    rowids = np.array(list(order), dtype=np.int64)
    return Candidates(rowids, data.doc_of(list(order)), feats, rank_kw, rank_sem)


def rank_linear(c: Candidates, theta: np.ndarray) -> list[str]:
    s = c.feats @ theta
    idx = np.argsort(-s, kind="stable")
    return first_docs([c.docs[i] for i in idx])


def rank_rrf(c: Candidates, k: float, w_sem: float) -> list[str]:
    s = np.where(c.rank_kw > 0, 1.0 / (k + c.rank_kw), 0.0) + np.where(
        c.rank_sem > 0, w_sem / (k + c.rank_sem), 0.0
    )
    idx = np.argsort(-s, kind="stable")
    return first_docs([c.docs[i] for i in idx])


THETA_SHIPPED = np.array([1.0, 1.5, 0, 0, 0, 0, 0, 0])


def per_query(
    data: SetData, cands: dict[str, Candidates], ranker: Callable[[Candidates], list[str]]
) -> dict[str, float]:
    return {q: ndcg10(ranker(c), data.ds.qrels.get(q, {})) for q, c in cands.items()}


def linear_objective(
    d: SetData, cs: dict[str, Candidates], qids: Sequence[str]
) -> Callable[[np.ndarray], float]:
    """Mean nDCG@10 over ``qids`` of the linear model with weights ``theta``."""

    def objective(theta: np.ndarray) -> float:
        return float(
            np.mean([ndcg10(rank_linear(cs[q], theta), d.ds.qrels.get(q, {})) for q in qids])
        )

    return objective


def coordinate_ascent(
    objective: Callable[[np.ndarray], float], theta: np.ndarray, rounds: int = 3
) -> np.ndarray:
    """Coordinate ascent (Metzler and Croft): each weight in turn tries additive steps scaled
    to the weight's feature, keeping a step that raises the objective by more than 1e-4."""
    best = objective(theta)
    scale = np.array([0.05, 0.05, 0.01, 0.01, 0.002, 0.002, 0.02, 0.005])
    steps = [-8, -4, -2, -1, 1, 2, 4, 8]
    for _ in range(rounds):
        improved = False
        for i in range(len(theta)):
            for s in steps:
                trial = theta.copy()
                trial[i] += s * scale[i]
                got = objective(trial)
                if got > best + 1e-4:
                    best, theta, improved = got, trial, True
        if not improved:
            break
    return theta


def fusion_lever(sets: list[SetData]) -> None:
    cands = {d.name: {q: candidates(d, q) for q in d.ds.queries} for d in sets}
    learnt: dict[str, dict[str, Any]] = {}
    for d in sets:
        cs = cands[d.name]
        base = per_query(d, cs, lambda c: rank_linear(c, THETA_SHIPPED))
        kw_only = per_query(d, cs, lambda c: first_docs(c.docs[: int((c.rank_kw > 0).sum())]))
        sem_lane = {
            q: ndcg10(first_docs(d.doc_of([r for r, _ in d.semantic[q]])), d.ds.qrels.get(q, {}))
            for q in cs
        }
        grid = [
            (k, w)
            for k in (1, 2, 5, 10, 20, 40, 60)
            for w in (0.5, 0.75, 1, 1.25, 1.5, 2, 2.5, 3, 4)
        ]
        grid_scores = {g: per_query(d, cs, lambda c, g=g: rank_rrf(c, g[0], g[1])) for g in grid}
        convex = {
            a: per_query(
                d, cs, lambda c, a=a: rank_linear(c, np.array([0, 0, a, 1 - a, 0, 0, 0, 0]))
            )
            for a in np.round(np.arange(0, 1.01, 0.1), 1)
        }
        print(f"\n#### {d.name}: learnt fusion (tuned on one half, measured on the other)\n")
        print(
            "| tuned on -> measured on | variant | parameters | tuning half | held-back half: "
            "shipped | held-back: learnt (diff, p) |"
        )
        print("|---|---|---|---|---|---|")
        for tune, test in (("A", "B"), ("B", "A")):
            tq, hq = d.halves[tune], d.halves[test]
            print(
                f"| {tune} -> {test} | lanes alone | keyword / semantic | "
                f"{mean(kw_only, tq):.4f} / {mean(sem_lane, tq):.4f} | "
                f"{mean(kw_only, hq):.4f} / {mean(sem_lane, hq):.4f} | |"
            )
            g = max(grid, key=lambda g: (mean(grid_scores[g], tq), -abs(g[0] - 10)))
            print(
                f"| {tune} -> {test} | RRF grid | k {g[0]}, 1 : {g[1]} | "
                f"{mean(grid_scores[g], tq):.4f} | "
                f"{mean(base, hq):.4f} | {cell(grid_scores[g], base, hq)} |"
            )
            a = max(convex, key=lambda a: mean(convex[a], tq))
            print(
                f"| {tune} -> {test} | convex min-max | a {a} | {mean(convex[a], tq):.4f} | "
                f"{mean(base, hq):.4f} | {cell(convex[a], base, hq)} |"
            )
            started = time.perf_counter()
            theta = coordinate_ascent(
                linear_objective(d, cs, tq),
                THETA_SHIPPED.copy(),
            )
            lin = per_query(d, cs, lambda c, t=theta: rank_linear(c, t))
            print(
                f"| {tune} -> {test} | linear, coordinate ascent | {fmt_theta(theta)} | "
                f"{mean(lin, tq):.4f} | "
                f"{mean(base, hq):.4f} | {cell(lin, base, hq)} |"
            )
            print(f"{d.name} {tune}: ascent {time.perf_counter() - started:.0f} s", file=sys.stderr)
        allq = list(cs)
        g_all = max(grid, key=lambda g: (mean(grid_scores[g], allq), -abs(g[0] - 10)))
        theta_all = coordinate_ascent(
            linear_objective(d, cs, allq),
            THETA_SHIPPED.copy(),
        )
        a_all = max(convex, key=lambda a: mean(convex[a], allq))
        learnt[d.name] = {"grid": g_all, "theta": theta_all, "convex": a_all, "base": base}
        print(
            f"\nwhole {d.name}: shipped {mean(base, allq):.4f}; best grid k {g_all[0]}, 1 : "
            f"{g_all[1]} {mean(grid_scores[g_all], allq):.4f}; "
            f"convex a {a_all} {mean(convex[a_all], allq):.4f}; linear {fmt_theta(theta_all)}"
        )
    if len(sets) < 2:
        return
    print("\n#### Learnt on one whole set, applied to the other\n")
    print("| learnt on | applied to | variant | parameters | shipped | learnt (diff, p) |")
    print("|---|---|---|---|---|---|")
    for src in sets:
        for dst in sets:
            if src is dst:
                continue
            cs, base, allq = cands[dst.name], learnt[dst.name]["base"], list(cands[dst.name])
            g = learnt[src.name]["grid"]
            theta = learnt[src.name]["theta"]
            a = learnt[src.name]["convex"]
            for label, params, ranker in (
                ("RRF grid", f"k {g[0]}, 1 : {g[1]}", lambda c, g=g: rank_rrf(c, g[0], g[1])),
                (
                    "convex min-max",
                    f"a {a}",
                    lambda c, a=a: rank_linear(c, np.array([0, 0, a, 1 - a, 0, 0, 0, 0])),
                ),
                ("linear", fmt_theta(theta), lambda c, t=theta: rank_linear(c, t)),
            ):
                got = per_query(dst, cs, ranker)
                print(
                    f"| {src.name} | {dst.name} | {label} | {params} | {mean(base, allq):.4f} | "
                    f"{cell(got, base, allq)} |"
                )


def fmt_theta(theta: np.ndarray) -> str:
    return ", ".join(f"{n} {v:.3g}" for n, v in zip(FEATURES, theta, strict=True) if abs(v) > 1e-9)


# -- lever 2: field weights ----------------------------------------------------------------------


class WeightRuns:
    """Per-query keyword and hybrid nDCG@10 of each field-weight setting, run once each."""

    def __init__(self, d: SetData) -> None:
        self.d = d
        self.settings = d.engine.settings.search
        self.memo: dict[tuple[float, ...], tuple[dict[str, float], dict[str, float]]] = {}

    def __call__(self, w: dict[str, float]) -> tuple[dict[str, float], dict[str, float]]:
        key = tuple(w[f] for f in FTS_FIELDS)
        if key not in self.memo:
            d, settings = self.d, self.settings
            s = settings.model_copy(update={"weights": settings.weights.model_copy(update=w)})
            kw_nd: dict[str, float] = {}
            hy_nd: dict[str, float] = {}
            for q in d.ds.queries:
                lane = keyword_lane(d, q, s)
                judged = d.ds.qrels.get(q, {})
                kw_nd[q] = ndcg10(first_docs(d.doc_of([r for r, _ in lane])), judged)
                fused = shipped({"keyword": lane, "semantic": d.semantic[q]})
                hy_nd[q] = ndcg10(first_docs(d.doc_of(fused)), judged)
            self.memo[key] = (kw_nd, hy_nd)
        return self.memo[key]


def fields_lever(sets: list[SetData]) -> None:
    for d in sets:
        settings = d.engine.settings.search
        shipped_w = {f: float(getattr(settings.weights, f)) for f in FTS_FIELDS}
        run = WeightRuns(d)
        memo = run.memo

        started = time.perf_counter()
        base_kw, base_hy = run(shipped_w)
        print(
            f"{d.name}: one weight setting in {time.perf_counter() - started:.1f} s",
            file=sys.stderr,
        )
        # fields that change nothing on this set (empty in its documents) are not tuned
        live = []
        for f in FTS_FIELDS:
            probe = {**shipped_w, f: shipped_w[f] * 4}
            if run(probe)[0] != base_kw:
                live.append(f)
        print(f"{d.name}: fields that change the ranking: {live}", file=sys.stderr)
        print(f"\n#### {d.name}: field weights (tuned on one half's keyword nDCG@10)\n")
        print(
            "| tuned on -> measured on | weights (title/aliases/headings/tags/body/code) | "
            "keyword: shipped | keyword: tuned (diff, p) | "
            "hybrid: shipped | hybrid: tuned (diff, p) |"
        )
        print("|---|---|---|---|---|---|")
        for tune, test in (("A", "B"), ("B", "A")):
            tq, hq = d.halves[tune], d.halves[test]
            w = dict(shipped_w)
            best = mean(run(w)[0], tq)
            for _ in range(2):
                improved = False
                for f in live:
                    for factor in (0, 0.25, 0.5, 2, 4):
                        trial = {**w, f: round(w[f] * factor, 4) if w[f] else factor}
                        got = mean(run(trial)[0], tq)
                        if got > best + 1e-4:
                            best, w, improved = got, trial, True
                if not improved:
                    break
            kw, hy = run(w)
            label = "/".join(f"{w[f]:g}" for f in FTS_FIELDS)
            print(
                f"| {tune} -> {test} | {label} | {mean(base_kw, hq):.4f} | "
                f"{cell(kw, base_kw, hq)} | "
                f"{mean(base_hy, hq):.4f} | {cell(hy, base_hy, hq)} |"
            )
            print(
                f"{d.name} {tune}: tuning-half keyword {mean(base_kw, tq):.4f} -> {best:.4f}; "
                f"{len(memo)} settings run",
                file=sys.stderr,
            )


GRID_TITLE = (10.0, 20.0, 40.0, 80.0, 160.0)
GRID_BODY = (0.25, 0.5, 1.0)
GRID_HEADINGS = (1.0, 5.0)


def fields_joint_lever(sets: list[SetData]) -> None:
    """One setting for every set: a grid over the title, body and headings weights (the
    others shipped), chosen on the tuning halves of all sets together (the mean of each set's
    keyword and hybrid gains, no set's tuning half losing more than 0.003 in either), reported
    on the held-back halves."""
    runs = {d.name: WeightRuns(d) for d in sets}
    settings = sets[0].engine.settings.search
    shipped_w = {f: float(getattr(settings.weights, f)) for f in FTS_FIELDS}
    grid = [
        {**shipped_w, "title": t, "body": b, "headings": h}
        for t in GRID_TITLE
        for b in GRID_BODY
        for h in GRID_HEADINGS
    ]
    started = time.perf_counter()
    table = {d.name: [runs[d.name](w) for w in grid] for d in sets}
    base = {d.name: runs[d.name](shipped_w) for d in sets}
    print(f"{len(grid)} settings in {time.perf_counter() - started:.0f} s", file=sys.stderr)

    def gains(i: int, half: str) -> list[tuple[float, float]]:
        out = []
        for d in sets:
            qs = d.halves[half]
            kw, hy = table[d.name][i]
            out.append(
                (mean(kw, qs) - mean(base[d.name][0], qs), mean(hy, qs) - mean(base[d.name][1], qs))
            )
        return out

    print("\n#### Field weights, one setting for every set (chosen on all tuning halves)\n")
    print(
        "| tuned on -> measured on | weights (title/aliases/headings/tags/body/code) | set | "
        "keyword: shipped | keyword: tuned (diff, p) | hybrid: shipped | hybrid: tuned (diff, p) |"
    )
    print("|---|---|---|---|---|---|---|")
    for tune, test in (("A", "B"), ("B", "A")):
        ok = [i for i in range(len(grid)) if min(min(g) for g in gains(i, tune)) >= -0.003]
        best = max(ok, key=lambda i: sum(a + b for a, b in gains(i, tune)))
        w = grid[best]
        label = "/".join(f"{w[f]:g}" for f in FTS_FIELDS)
        for d in sets:
            hq = d.halves[test]
            kw, hy = table[d.name][best]
            b_kw, b_hy = base[d.name]
            print(
                f"| {tune} -> {test} | {label} | {d.name} | {mean(b_kw, hq):.4f} | "
                f"{cell(kw, b_kw, hq)} | {mean(b_hy, hq):.4f} | {cell(hy, b_hy, hq)} |"
            )
    print(
        "\n| title / body / headings | "
        + " | ".join(f"{d.name} keyword | {d.name} hybrid" for d in sets)
        + " |"
    )
    print("|---|" + "---|---|" * len(sets))
    for i, w in enumerate(grid):
        cells = []
        for d in sets:
            allq = list(d.ds.queries)
            kw, hy = table[d.name][i]
            b_kw, b_hy = base[d.name]
            cells.append(f"{mean(kw, allq):.4f} ({mean(kw, allq) - mean(b_kw, allq):+.4f})")
            cells.append(f"{mean(hy, allq):.4f} ({mean(hy, allq) - mean(b_hy, allq):+.4f})")
        print(f"| {w['title']:g} / {w['body']:g} / {w['headings']:g} | " + " | ".join(cells) + " |")


# -- lever 3: pseudo-relevance feedback ---------------------------------------------------------

_WORD = re.compile(r"[^\W\d_][\w'-]*[^\W_]|[^\W\d_]")


@dataclass
class Vocabulary:
    df: Counter[str]
    sections: int
    surface: dict[str, str]
    """stem -> a surface word (its first form seen), given back to the query parser."""


def vocabulary(d: SetData) -> Vocabulary:
    analyzer = d.engine.analyzer()
    df: Counter[str] = Counter()
    surface: dict[str, str] = {}
    n = 0
    for text in d.engine.store.iter_chunk_texts():
        n += 1
        stems: set[str] = set()
        for word in _WORD.findall(text.lower()):
            for stem in analyzer.terms(word):
                surface.setdefault(stem, word)
                stems.add(stem)
        df.update(stems)
    return Vocabulary(df, n, surface)


def prf_words(
    d: SetData, vocab: Vocabulary, qid: str, feedback: Sequence[int], n_words: int
) -> list[str]:
    analyzer = d.engine.analyzer()
    have = set(d.queries[qid].terms)
    votes: Counter[str] = Counter()
    rows = d.engine.store.chunk_rows(list(feedback))
    for row in rows:
        stems = [s for w in _WORD.findall(row.text.lower()) for s in analyzer.terms(w)]
        if not stems:
            continue
        tf = Counter(stems)
        for stem, c in tf.items():
            df = vocab.df.get(stem, 0)
            if stem in have or df < 2 or df > 0.1 * vocab.sections or len(stem) < 3:
                continue
            votes[stem] += (c / len(stems)) * math.log(vocab.sections / df)
    return [vocab.surface[s] for s, _ in votes.most_common(n_words)]


def expansion_lever(sets: list[SetData]) -> None:
    for d in sets:
        settings = d.engine.settings.search
        started = time.perf_counter()
        vocab = vocabulary(d)
        print(
            f"{d.name}: {len(vocab.df)} stems over {vocab.sections} sections in "
            f"{time.perf_counter() - started:.1f} s",
            file=sys.stderr,
        )
        analyzer = d.engine.analyzer()
        judged = {q: d.ds.qrels.get(q, {}) for q in d.ds.queries}

        base_kw = {
            q: ndcg10(d.ranked([r for r, _ in d.keyword[q]]), judged[q]) for q in d.ds.queries
        }
        base_order = {
            q: shipped({"keyword": d.keyword[q], "semantic": d.semantic[q]}) for q in d.ds.queries
        }
        base_hy = {q: ndcg10(d.ranked(base_order[q]), judged[q]) for q in d.ds.queries}
        results: dict[str, tuple[dict[str, float], dict[str, float]]] = {}
        extra_ms: list[float] = []
        for source in ("keyword", "hybrid"):
            for fb in (3, 10):
                for n_words in (5, 10, 20):
                    lanes_of: dict[str, Lane] = {}
                    for q in d.ds.queries:
                        t0 = time.perf_counter()
                        ranked = (
                            [r for r, _ in d.keyword[q]] if source == "keyword" else base_order[q]
                        )
                        best: dict[str, int] = {}
                        for r, doc in zip(ranked[:200], d.doc_of(ranked[:200]), strict=True):
                            if doc not in best and len(best) < fb:
                                best[doc] = r
                        words = prf_words(d, vocab, q, list(best.values()), n_words)
                        query = expand_query(d.queries[q], words, analyzer)
                        lanes_of[q] = keyword_lane(d, q, settings, query)
                        extra_ms.append((time.perf_counter() - t0) * 1000)
                    tag = f"{source} top {fb}, {n_words} words"
                    kw = {
                        q: ndcg10(d.ranked([r for r, _ in lanes_of[q]]), judged[q])
                        for q in d.ds.queries
                    }
                    hy = {
                        q: ndcg10(
                            d.ranked(shipped({"keyword": lanes_of[q], "semantic": d.semantic[q]})),
                            judged[q],
                        )
                        for q in d.ds.queries
                    }
                    results[f"{tag}; replaces the keyword lane"] = (kw, hy)
                    for w in (0.3, 0.6, 1.0):
                        kw3 = {
                            q: ndcg10(
                                d.ranked(
                                    shipped(
                                        {"keyword": d.keyword[q], "prf": lanes_of[q]},
                                        w={"keyword": 1.0, "prf": w},
                                    )
                                ),
                                judged[q],
                            )
                            for q in d.ds.queries
                        }
                        hy3 = {
                            q: ndcg10(
                                d.ranked(
                                    shipped(
                                        {
                                            "keyword": d.keyword[q],
                                            "semantic": d.semantic[q],
                                            "prf": lanes_of[q],
                                        },
                                        w={**W_SHIPPED, "prf": w},
                                    )
                                ),
                                judged[q],
                            )
                            for q in d.ds.queries
                        }
                        results[f"{tag}; third RRF lane, w {w}"] = (kw3, hy3)
                    print(
                        f"{d.name} {tag}: keyword {mean(kw, list(kw)):.4f} hybrid "
                        f"{mean(hy, list(hy)):.4f}",
                        file=sys.stderr,
                    )
        if d is sets[0] and d.ds.queries:
            q = next(iter(d.ds.queries))
            words = prf_words(d, vocab, q, [r for r, _ in d.keyword[q]][:3], 10)
            print(f"example: {d.ds.queries[q][:80]!r} + {words}", file=sys.stderr)
        print(f"\n#### {d.name}: pseudo-relevance feedback (chosen on one half)\n")
        print(
            "| tuned on -> measured on | objective | setting chosen | shipped | expanded (diff, "
            "p) |"
        )
        print("|---|---|---|---|---|")
        for tune, test in (("A", "B"), ("B", "A")):
            tq, hq = d.halves[tune], d.halves[test]
            for which, base, label in ((0, base_kw, "keyword"), (1, base_hy, "hybrid")):
                key = max(results, key=lambda k: mean(results[k][which], tq))
                print(
                    f"| {tune} -> {test} | {label} | {key} | {mean(base, hq):.4f} | "
                    f"{cell(results[key][which], base, hq)} |"
                )
        print(
            "\nmedian added time per query (feedback terms and the second keyword query): "
            f"{np.median(extra_ms):.1f} ms"
        )
        allq = list(d.ds.queries)
        print("\n| setting (all queries) | keyword | hybrid |\n|---|---|---|")
        for key, (kw, hy) in results.items():
            print(f"| {key} | {cell(kw, base_kw, allq)} | {cell(hy, base_hy, allq)} |")


def main() -> int:
    ap = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    ap.add_argument("--index-root", type=Path, required=True)
    ap.add_argument("--dataset", action="append", default=None, help="name=folder")
    ap.add_argument(
        "--set",
        action="append",
        default=[],
        metavar="KEY=VALUE",
        help="a numeric setting for every engine (the default compared with), e.g. "
        "search.weights.title=20",
    )
    ap.add_argument(
        "--lever",
        action="append",
        choices=("fusion", "fields", "fields-joint", "expansion"),
        default=None,
    )
    args = ap.parse_args()
    pairs = args.dataset or [
        f"scifact-dev={DATA / 'scifact-dev'}",
        f"hugo-docs-kis={DATA / 'hugo-docs-kis'}",
    ]
    sets = []
    for pair in pairs:
        name, _, folder = pair.partition("=")
        started = time.perf_counter()
        flags = {k: float(v) for k, _, v in (item.partition("=") for item in args.set)}
        d = load(name, Path(folder), args.index_root, flags)
        sets.append(d)
        allq = list(d.ds.queries)
        kw = {
            q: ndcg10(first_docs(d.doc_of([r for r, _ in d.keyword[q]])), d.ds.qrels.get(q, {}))
            for q in allq
        }
        sem = {
            q: ndcg10(first_docs(d.doc_of([r for r, _ in d.semantic[q]])), d.ds.qrels.get(q, {}))
            for q in allq
        }
        hy = {
            q: ndcg10(
                first_docs(d.doc_of(shipped({"keyword": d.keyword[q], "semantic": d.semantic[q]}))),
                d.ds.qrels.get(q, {}),
            )
            for q in allq
        }
        print(
            f"{name}: {len(allq)} queries (A {len(d.halves.get('A', []))}, B "
            f"{len(d.halves.get('B', []))}); "
            f"offline nDCG@10 keyword {mean(kw, allq):.4f}, semantic {mean(sem, allq):.4f}, "
            f"shipped RRF {mean(hy, allq):.4f} "
            f"({time.perf_counter() - started:.0f} s)"
        )
        for h in ("A", "B"):
            qs = d.halves.get(h, [])
            print(
                f"  half {h}: keyword {mean(kw, qs):.4f}, semantic {mean(sem, qs):.4f}, shipped "
                f"RRF {mean(hy, qs):.4f}"
            )
    for lever in args.lever or ["fusion", "fields", "expansion"]:
        {
            "fusion": fusion_lever,
            "fields": fields_lever,
            "fields-joint": fields_joint_lever,
            "expansion": expansion_lever,
        }[lever](sets)
        sys.stdout.flush()
    return 0


if __name__ == "__main__":
    sys.exit(main())
