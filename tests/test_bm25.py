"""Both backends score keyword matches with one BM25 (store/bm25.py), to the last bit.

The SQLite backend's postings (``sqlite/postings_search.py``) and the Milvus backend's
candidate scorer (``milvus/matching.py``) are run here without a database on the same small
fixed corpus and queries: they must match the same rows with exactly equal scores, and both
must compute them through the shared functions.
"""

from __future__ import annotations

import math
import random
from collections.abc import Callable
from typing import Any

import numpy as np
import pytest

from noteseek.store import bm25
from noteseek.store.base import MatchMode
from noteseek.store.milvus import matching
from noteseek.store.sqlite import postings, postings_search
from noteseek.types import FTS_FIELDS, Clause, KeywordQuery

VOCAB = [f"w{i}" for i in range(12)] + ["rare", "common"]


def corpus() -> list[tuple[int, int, tuple[str, ...]]]:
    """(rowid, file id, six fields) of 60 rows drawn with a fixed seed."""
    rng = random.Random(3)
    rows = []
    for n in range(60):
        lengths = (2, 1, 3, 1, rng.randint(0, 40), rng.randint(0, 6))
        fields = tuple(
            " ".join(rng.choice(VOCAB[:12]) for _ in range(rng.randint(0, k))) for k in lengths
        )
        body = fields[4] + (" common" if n % 2 else "") + (" rare" if n % 17 == 0 else "")
        rows.append((10 + 3 * n, n // 4, (*fields[:4], body.strip(), fields[5])))
    return rows


def queries() -> list[tuple[KeywordQuery, MatchMode]]:
    rng = random.Random(9)
    out: list[tuple[KeywordQuery, MatchMode]] = []
    for _ in range(40):
        clauses = []
        for _ in range(rng.randint(1, 3)):
            if rng.random() < 0.25:
                alts = ((rng.choice(VOCAB),), (rng.choice(VOCAB),))
                clauses.append(Clause(alts))
            else:
                clauses.append(Clause(((rng.choice(VOCAB),),), required=rng.random() < 0.2))
        excluded = tuple(Clause(((rng.choice(VOCAB),),)) for _ in range(rng.random() < 0.2))
        fields = tuple(rng.sample(FTS_FIELDS, 2)) if rng.random() < 0.25 else ()
        out.append((KeywordQuery(tuple(clauses), excluded, fields), rng.choice(["any", "all"])))
    return out


def no_phrases(words: tuple[str, ...], fields: tuple[str, ...]) -> postings.Ints:
    raise AssertionError("single words only")


def sqlite_scores(
    rows: list[Any], query: KeywordQuery, mode: MatchMode, weights: list[float]
) -> list[tuple[int, float]]:
    part = postings_search.Part(postings.build(rows, np.uint8))
    return postings_search.score([part], query, mode == "all", weights, 10**6, no_phrases)


def milvus_scores(
    rows: list[Any], query: KeywordQuery, mode: MatchMode, weights: list[float]
) -> list[tuple[int, float]]:
    """What the Milvus backend's keyword search computes for its candidates (here every
    row), with the row counts its term statistics would give."""
    plan = matching.plan(query, mode)
    assert plan is not None
    tokenized = [matching.tokenize(fields) for _, _, fields in rows]
    counted = {
        i: sum(1 for fields in tokenized if any(matching.instances(phrase, fields)))
        for i, phrase in enumerate(plan.phrases)
    }
    idf = matching.idfs(plan, {}, counted, len(rows))
    tokens = [sum(map(len, fields)) for fields in tokenized]
    avgdl = sum(tokens) / len(rows)
    found, ids, lengths = [], [], []
    for (rowid, _, _), fields, n in zip(rows, tokenized, tokens, strict=True):
        hit = matching.evaluate(plan, fields)
        if hit is not None:
            found.append(hit)
            ids.append(rowid)
            lengths.append(n)
    scored = zip(ids, matching.scores(found, idf, weights, lengths, avgdl), strict=True)
    return sorted(scored, key=lambda x: (-x[1], x[0]))


@pytest.mark.parametrize(
    "weights",
    [[20.0, 10.0, 5.0, 3.0, 1.0, 1.0], [0.3, 1.7, 0.1, 2.9, 1.1, 0.7], [0.0, 0.0, 0.0, 0.0, 1, 0]],
)
def test_both_backends_score_alike_to_the_bit(weights: list[float]) -> None:
    rows = corpus()
    compared = 0
    for query, mode in queries():
        want = sqlite_scores(rows, query, mode, weights)
        got = milvus_scores(rows, query, mode, weights)
        assert got == want, (query, mode)  # exact: the same floats, not approximately
        compared += len(want)
    assert compared > 300


def test_both_backends_call_the_shared_formula(monkeypatch: pytest.MonkeyPatch) -> None:
    calls: dict[str, int] = {}

    def spy(name: str) -> Callable[..., Any]:
        real = getattr(bm25, name)

        def counted(*args: Any, **kwargs: Any) -> Any:
            calls[name] = calls.get(name, 0) + 1
            return real(*args, **kwargs)

        return counted

    for name in ("idf", "norms", "frequencies", "gains"):
        monkeypatch.setattr(bm25, name, spy(name))
    query = KeywordQuery((Clause((("common",),)), Clause((("rare",),))))
    weights = [20.0, 10.0, 5.0, 3.0, 1.0, 1.0]
    for scorer in (sqlite_scores, milvus_scores):
        calls.clear()
        assert scorer(corpus(), query, "any", weights)
        assert set(calls) == {"idf", "norms", "frequencies", "gains"}, scorer.__name__


def test_the_formula_is_fts5s() -> None:
    """One row, one phrase: the textbook FTS5 bm25() (fts5_aux.c), k1 1.2, b 0.75."""
    rows, hits, freq, length, avgdl = 100, 7, 3.0, 12, 9.5
    idf = math.log((rows - hits + 0.5) / (hits + 0.5))
    want = idf * (freq * 2.2) / (freq + 1.2 * (1 - 0.75 + 0.75 * length / avgdl))
    norm = bm25.norms(np.asarray([length]), avgdl)
    got = bm25.gains(bm25.idf(rows, hits), np.asarray([freq]), norm)
    assert got[0] == pytest.approx(want, rel=1e-12)
    assert bm25.idf(10, 6) == bm25.IDF_FLOOR  # a phrase most rows hold
