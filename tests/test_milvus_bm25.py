"""The Milvus backend's keyword scores equal SQLite FTS5's, query by query, on random data.

Both stores get the same random files; every query (words, phrases, prefixes, alternatives,
exclusions, field restrictions, both modes, random field weights) must return the same chunks
with the same BM25 scores, and the same whole-document and per-field scores. The corpus is
small, so the Milvus backend scores every match (its candidate pool holds them all).
"""

from __future__ import annotations

import random
from collections.abc import Iterator
from pathlib import Path

import pytest

from noteseek.store.backend import MilvusBackend, SQLiteBackend
from noteseek.store.base import Store
from noteseek.store.milvus import MilvusConfig
from noteseek.types import Clause, Filters, KeywordQuery
from tests.store_conformance.build import ROOT_KINDS, ROOTS, make_file

VOCAB = [f"w{i}" for i in range(30)] + ["alpha", "alphabet", "alpine", "beta"]


def corpus(rng: random.Random) -> list:  # type: ignore[type-arg]
    files = []
    for n in range(40):
        sections = [
            (
                " ".join(rng.sample(VOCAB, rng.randint(0, 2))),
                " ".join(rng.choice(VOCAB) for _ in range(rng.randint(1, 25))),
            )
            for _ in range(rng.randint(1, 3))
        ]
        files.append(
            make_file(
                rng.choice(list(ROOTS)),
                f"f{n}.md",
                sections,
                title=" ".join(rng.sample(VOCAB, 2)),
                tags=rng.sample(VOCAB, rng.randint(0, 2)),
                code=" ".join(rng.sample(VOCAB, rng.randint(0, 3))),
            )
        )
    return files


def random_query(rng: random.Random) -> tuple[KeywordQuery, str]:
    clauses = []
    for _ in range(rng.randint(1, 4)):
        kind = rng.random()
        if kind < 0.6:
            clauses.append(Clause(((rng.choice(VOCAB),),)))
        elif kind < 0.75:
            clauses.append(Clause(((rng.choice(VOCAB), rng.choice(VOCAB)),), required=True))
        elif kind < 0.9:
            clauses.append(Clause(((rng.choice(["alp", "w1", "be"]),),), prefix=True))
        else:
            clauses.append(Clause(((rng.choice(VOCAB),), (rng.choice(VOCAB),))))
    excluded = tuple(Clause(((rng.choice(VOCAB),),)) for _ in range(rng.random() < 0.3))
    fields = (
        tuple(rng.sample(["title", "headings", "body", "tags"], 2)) if rng.random() < 0.2 else ()
    )
    return KeywordQuery(tuple(clauses), excluded, fields), rng.choice(["any", "all"])


@pytest.fixture
def stores(tmp_path: Path) -> Iterator[tuple[Store, Store]]:
    rng = random.Random(7)
    files = corpus(rng)
    opened = []
    lite = MilvusBackend(MilvusConfig(uri=str(tmp_path / "m.db"), prefix="bm25"))
    for backend in (SQLiteBackend(tmp_path / "index"), lite):
        store, _ = backend.open()
        with store.transaction():
            for name, path in ROOTS.items():
                store.ensure_root(name, path, ROOT_KINDS[name])
            for prepared in files[:25]:
                store.write_file(prepared, 1.0, None)
        with store.transaction():  # a second batch: statistics follow every commit
            for prepared in files[25:]:
                store.write_file(prepared, 1.0, None)
        opened.append(store)
    yield opened[0], opened[1]
    for store in opened:
        store.close()


def by_chunk(store: Store, hits: list[tuple[int, float]]) -> dict[str, float]:
    rows = {r.rowid: r.chunk_id for r in store.chunk_rows([r for r, _ in hits])}
    return {rows[r]: s for r, s in hits}


def test_scores_equal_fts5_for_random_queries(stores: tuple[Store, Store]) -> None:
    sqlite, milvus = stores
    rng = random.Random(11)
    compared = 0
    for _ in range(60):
        query, mode = random_query(rng)
        weights = [rng.choice([0.0, 1.0, 2.5, 10.0]) for _ in range(6)]
        want = by_chunk(sqlite, sqlite.keyword_search(query, mode, Filters(), 500, weights))  # type: ignore[arg-type]
        got = by_chunk(milvus, milvus.keyword_search(query, mode, Filters(), 500, weights))  # type: ignore[arg-type]
        assert set(got) == set(want), (query, mode)
        for chunk_id, score in want.items():
            assert got[chunk_id] == pytest.approx(score, rel=1e-6, abs=1e-9), (query, chunk_id)
        compared += len(want)
        docs_want = sqlite.document_scores(query, Filters(), 500, weights)
        docs_got = milvus.document_scores(query, Filters(), 500, weights)
        want_ids = {f.file_id: f.doc_id for f in sqlite.iter_files()}
        got_ids = {f.file_id: f.doc_id for f in milvus.iter_files()}
        assert {got_ids[f]: pytest.approx(s, rel=1e-6, abs=1e-9) for f, s in docs_got.items()} == {
            want_ids[f]: s for f, s in docs_want.items()
        }
    assert compared > 200  # the queries matched something


def test_field_scores_equal_fts5(stores: tuple[Store, Store]) -> None:
    sqlite, milvus = stores
    rng = random.Random(5)
    for _ in range(20):
        query, mode = random_query(rng)
        weights = [10.0, 8.0, 4.0, 6.0, 1.0, 1.0]
        ids = {f.doc_id: f.file_id for f in sqlite.iter_files()}
        mids = {f.doc_id: f.file_id for f in milvus.iter_files()}
        for doc_id in list(ids)[:5]:
            a = {c.chunk_id: c.rowid for c in sqlite.file_chunks(ids[doc_id])}
            b = {c.chunk_id: c.rowid for c in milvus.file_chunks(mids[doc_id])}
            want = sqlite.field_scores(query, mode, list(a.values()), weights)  # type: ignore[arg-type]
            got = milvus.field_scores(query, mode, list(b.values()), weights)  # type: ignore[arg-type]
            back = {v: k for k, v in b.items()}
            fwd = {v: k for k, v in a.items()}
            assert {back[r]: pytest.approx(s, rel=1e-6, abs=1e-9) for r, s in got.items()} == {
                fwd[r]: s for r, s in want.items()
            }
