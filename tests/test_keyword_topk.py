"""The saved postings' shortcuts to a query's top k return what scoring every row returns.

``postings_search.score`` keeps, of a whole-part array of scores, only the rows at or above
the k-th best of a sample (``_contenders``), and scores a query with required clauses over
the rows of its rarest required clause only (``postings_topk``). Both are exact: on random
corpora, queries, weights (some 0), filters, exclusions and patched parts, the top k (rowids,
scores to the bit, order) equals the one from every matching row, summed over whole arrays
and over the rows the postings hold. Then, on a real docs tree, the same with FTS5 as the
judge, and the writer's merge of FTS5's segments changes no answer.
"""

from __future__ import annotations

import random
import shutil
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from noteseek.engine import Engine, SearchRequest
from noteseek.search.keyword import weights_of
from noteseek.search.query import parse_query
from noteseek.store.sqlite import keyword, postings, postings_search, postings_state
from noteseek.store.sqlite.postings_search import Part
from noteseek.store.sqlite.postings_state import PostingsState
from noteseek.types import FTS_FIELDS, Clause, Filters, KeywordQuery
from tests.conftest import shared
from tests.helpers import engine_for, project

pytestmark = pytest.mark.filterwarnings("ignore::ResourceWarning")

RARE = ["rare0", "rare1", "rare2"]
COMMON = [f"w{i}" for i in range(8)]
VOCAB = COMMON + RARE


def rows(n: int, seed: int, start: int = 1) -> list[tuple[int, int, tuple[str, ...]]]:
    """(rowid, file id, six fields) of ``n`` random rows: common words in most rows, rare
    ones in a few, and a run of identical rows (ties, broken by rowid)."""
    rng = random.Random(seed)
    out = []
    for i in range(n):
        if i % 97 < 6:  # identical rows: equal scores
            fields: tuple[str, ...] = ("w0 rare0", "", "w1", "", "w2 w3 w0", "")
        else:
            fields = tuple(
                " ".join(rng.choice(COMMON) for _ in range(rng.randint(0, k)))
                for k in (3, 1, 4, 2, 30, 5)
            )
            if rng.random() < 0.03:
                fields = (fields[0] + " " + rng.choice(RARE), *fields[1:])
            if rng.random() < 0.04:
                fields = (*fields[:4], fields[4] + " " + rng.choice(RARE), fields[5])
        out.append((start + 2 * i, (start + 2 * i) // 7, fields))
    return out


def queries(seed: int) -> list[tuple[KeywordQuery, bool]]:
    rng = random.Random(seed)
    out = []
    for _ in range(60):
        clauses = []
        for _ in range(rng.randint(1, 5)):
            words = [rng.choice(VOCAB if rng.random() < 0.7 else RARE) for _ in range(2)]
            if rng.random() < 0.2:
                clauses.append(Clause(((words[0],), (words[1],))))  # alternatives
            else:
                clauses.append(Clause(((words[0],),), required=rng.random() < 0.25))
        excluded = tuple(Clause(((rng.choice(VOCAB),),)) for _ in range(rng.random() < 0.2))
        fields = tuple(rng.sample(FTS_FIELDS, 3)) if rng.random() < 0.2 else ()
        out.append((KeywordQuery(tuple(clauses), excluded, fields), rng.random() < 0.4))
    return out


def no_phrases(words: tuple[str, ...], fields: tuple[str, ...]) -> postings.Ints:
    raise AssertionError("single words only")


@contextmanager
def exhaustive(sparse: int) -> Iterator[None]:
    """Every matching row scored and kept (no candidates, no sample), summed over whole arrays
    (``sparse`` 10**9) or over the rows the postings hold (0), as before the shortcuts."""
    kept = postings_search.CANDIDATES, postings_search.SAMPLE, postings_search.SPARSE
    postings_search.CANDIDATES, postings_search.SAMPLE = False, 10**9
    postings_search.SPARSE = 10**9 if sparse else 0
    try:
        yield
    finally:
        postings_search.CANDIDATES, postings_search.SAMPLE, postings_search.SPARSE = kept


@pytest.mark.parametrize("seed", [1, 2, 3])
def test_the_shortcuts_return_the_exhaustive_top_k_to_the_bit(seed: int) -> None:
    rng = random.Random(seed)
    base = postings.build(rows(3000, seed), np.uint8)
    delta = postings.build(rows(200, seed + 100, start=10**6), np.uint8)
    alive = np.asarray([rng.random() < 0.9 for _ in range(base.size)])
    layouts = {
        "one part": [Part(base)],
        "patched": [Part(base, alive), Part(delta)],
    }
    compared = shortcuts = 0
    for name, parts in layouts.items():
        for query, all_required in queries(seed):
            weights = [rng.choice([0.0, 0.5, 1.0, 1.3, 3.0, 40.0]) for _ in FTS_FIELDS]
            allowed: list[Any] = [None] * len(parts)
            if rng.random() < 0.3:
                allowed = [np.asarray([rng.random() < 0.6 for _ in range(parts[0].postings.size)])]
                allowed += [None] * (len(parts) - 1)
            limit = rng.choice([1, 3, 10, 50])
            args = (parts, query, all_required, weights, limit, no_phrases, allowed)
            got = postings_search.score(*args)
            for sparse in (0, 10**9):
                with exhaustive(sparse):
                    want = postings_search.score(*args)
                assert got == want, (name, query, all_required, weights, limit)
            compared += 1
            shortcuts += bool(got) and (all_required or any(c.required for c in query.clauses))
    assert compared == 120 and shortcuts > 20


def test_the_sample_keeps_every_row_that_ties_with_the_last() -> None:
    """A score array of many equal values: the rows kept hold every row at the k-th best
    score, so ties are broken by rowid as in the exhaustive order."""
    keyed = np.zeros(10_000)
    keyed[::3] = 2.0
    keyed[5::7] = 3.0
    for limit in (1, 10, 100, 500):
        kept = postings_search._contenders(keyed, 0.0, limit)
        best = np.sort(keyed[keyed > 0])[::-1][limit - 1]
        assert set(np.flatnonzero(keyed >= best)) <= set(kept.tolist())
        assert np.all(keyed[kept] > 0)
    assert len(postings_search._contenders(keyed, 0.0, 10)) < 5000  # the sample cut some


@pytest.fixture
def docs(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[Engine]:
    """The Hugo docs (a private copy) indexed with postings saved whatever the size."""
    monkeypatch.setattr(postings_state, "FROM_ROWS", 0)
    tree = tmp_path / "docs"
    shutil.copytree(shared("hugo-docs-kis") / "vault", tree)
    engine = engine_for(project(tmp_path, {"d": tree}))
    engine.index()
    yield engine
    engine.close()


def test_all_words_queries_rank_as_fts5_over_the_rarest_words_rows(docs: Engine) -> None:
    """``all`` mode and quoted phrases, the shortcut on and off, against FTS5's own answer."""
    store: Any = docs.store
    analyzer = docs._state.values.analyzer()
    weights = weights_of(docs._state.settings.search)
    texts = ["front matter page", "taxonomy template list", "hugo server content", "image"]
    texts += ['"front matter" page', "shortcode params", "menu entries weight"]
    compared = 0
    for text in texts:
        query = parse_query(text, analyzer)
        for mode in ("all", "any"):
            fast = store.keyword_search(query, mode, Filters(), 40, weights)
            with exhaustive(10**9):
                slow = store.keyword_search(query, mode, Filters(), 40, weights)
            kept = store._postings_state
            store._postings_state = PostingsState(Path("/nonexistent-folder-for-fts5"))
            try:
                judge = store.keyword_search(query, mode, Filters(), 40, weights)
            finally:
                store._postings_state = kept
            assert fast == slow
            assert [r for r, _ in fast] == [r for r, _ in judge]
            pairs = zip(fast, judge, strict=True)
            assert all(abs(a - b) <= 1e-9 * max(1.0, b) for (_, a), (_, b) in pairs)
            compared += bool(fast)
    assert compared >= 10


def test_the_writer_merges_fts5s_segments_when_it_saves_the_postings(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(postings_state, "FROM_ROWS", 0)
    merged: list[int] = []
    real = keyword.merge_segments

    def counted(conn: Any) -> None:
        merged.append(1)
        real(conn)

    monkeypatch.setattr(keyword, "merge_segments", counted)
    tree = tmp_path / "docs"
    shutil.copytree(shared("hugo-docs-kis") / "vault", tree)
    engine = engine_for(project(tmp_path, {"d": tree}))
    try:
        engine.index()
        assert merged == [1]
        engine.index()  # nothing changed: neither saved nor merged again
        assert merged == [1]
        store: Any = engine.store
        for table in keyword.FTS_TABLES:
            store._conn.execute(f"INSERT INTO {table}({table}) VALUES ('integrity-check')")
        assert engine.search(SearchRequest("front matter", top_k=3, mode="keyword")).hits
    finally:
        engine.close()
