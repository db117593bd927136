"""The keyword lane on Milvus's own BM25 function (issue 42), against Milvus's C++ engine over
TCP, beside SQLite and Milvus Lite (which has no whitespace tokenizer, so keeps the sparse
vectors noteseek scores itself).

With the default field weights a search is the server's BM25 (one call, the filters inside);
what asks more than "any of these words" is checked against the rows' fields and the search
widens until enough rows match; other weights are scored as FTS5 scores them. Rankings are
compared with SQLite's, not scores: the engines differ in how a row's length counts.
"""

from __future__ import annotations

import random
from collections.abc import Iterator
from pathlib import Path

import pytest

from noteseek.store.backend import MilvusBackend, SQLiteBackend
from noteseek.store.base import Store
from noteseek.store.milvus import MilvusConfig, MilvusStore, matching, schema
from noteseek.types import Clause, Filters, KeywordQuery
from tests.milvus_engine import Engine
from tests.store_conformance.build import corpus, fill, make_file, paths_of, words

DEFAULTS = matching.INDEX_WEIGHTS


@pytest.fixture
def engine_store(milvus_engine: Engine, engine_prefix: str) -> Iterator[MilvusStore]:
    store = MilvusStore(MilvusConfig(uri=milvus_engine.uri, prefix=engine_prefix))
    yield store
    store.close()


def test_the_engine_gets_the_bm25_function_and_lite_the_sparse_vectors(
    engine_store: MilvusStore, tmp_path: Path
) -> None:
    assert engine_store.bm25 == {schema.FILES: True, schema.CHUNKS: True}
    assert engine_store.details()["keyword"] == "Milvus's BM25 function"
    lite = MilvusStore(MilvusConfig(uri=str(tmp_path / "lite.db"), prefix="lite"))
    try:
        assert lite.bm25 == {schema.FILES: False, schema.CHUNKS: False}
        assert "sparse vectors scored by noteseek" in lite.details()["keyword"]
        assert "earlier release" in lite.details()["keyword"]
    finally:
        lite.close()


def test_a_search_before_any_row_is_written_finds_nothing(engine_store: MilvusStore) -> None:
    # The engine fails a BM25 search of a table never written to (0/0 mean row length).
    assert engine_store.keyword_search(words("apple"), "any", Filters(), 10, DEFAULTS) == []
    assert engine_store.document_scores(words("apple"), Filters(), 10, DEFAULTS) == {}


def test_default_weights_rank_as_sqlite_does(engine_store: MilvusStore, tmp_path: Path) -> None:
    sqlite, _ = SQLiteBackend(tmp_path / "index").open()
    try:
        for store in (engine_store, sqlite):
            fill(store)
        for query in (
            words("apple"),
            words("banana", "durian"),
            words("apple", "elderberry"),
            words("plan"),  # a title word: the title's weight is in the row's text
        ):
            mine = engine_store.keyword_search(query, "any", Filters(), 10, DEFAULTS)
            theirs = sqlite.keyword_search(query, "any", Filters(), 10, DEFAULTS)
            # The same matches, the same best one; below it the engines may order a pair
            # differently (a row's repeated title counts in its length on the server).
            ours = paths_of(engine_store, [r for r, _ in mine])
            fts5 = paths_of(sqlite, [r for r, _ in theirs])
            assert sorted(ours) == sorted(fts5) and ours[0] == fts5[0], query
            assert all(s > 0 for _, s in mine)
            docs = [
                {
                    store.file_row(f).path
                    for f in store.document_scores(query, Filters(), 10, DEFAULTS)
                }  # type: ignore[union-attr]
                for store in (engine_store, sqlite)
            ]
            assert docs[0] == docs[1], query
    finally:
        sqlite.close()


def test_required_words_exclusions_and_phrases_widen_until_enough_rows_match(
    engine_store: MilvusStore,
) -> None:
    # 120 chunks hold "alpha" many times (the server's best for "alpha beta"); three hold
    # both words once, deep in its ranking: an all-words search must still find all three.
    loud = [
        make_file("notes", f"loud/{i}.md", [("", "alpha alpha alpha alpha filler")])
        for i in range(120)
    ]
    quiet = [
        make_file("notes", f"quiet/{i}.md", [("", f"one alpha beta two {'pad ' * 40}")])
        for i in range(3)
    ]
    fill(engine_store, [*loud, *quiet])
    both = engine_store.keyword_search(words("alpha", "beta"), "all", Filters(), 3, DEFAULTS)
    assert sorted(paths_of(engine_store, [r for r, _ in both])) == [
        f"quiet/{i}.md" for i in range(3)
    ]
    phrase = KeywordQuery((Clause((("alpha", "beta"),), required=True),))
    found = engine_store.keyword_search(phrase, "any", Filters(), 5, DEFAULTS)
    assert len(found) == 3
    without = engine_store.keyword_search(
        words("alpha", excluded=["filler"]), "any", Filters(), 10, DEFAULTS
    )
    assert {p.split("/")[0] for p in paths_of(engine_store, [r for r, _ in without])} == {"quiet"}


def test_other_weights_score_the_servers_candidates_as_fts5_does(
    engine_store: MilvusStore, tmp_path: Path
) -> None:
    rng = random.Random(7)
    vocab = [f"w{i}" for i in range(12)]
    files = [
        make_file(
            rng.choice(["notes", "docs"]),
            f"r{n}.md",
            [("", " ".join(rng.choice(vocab) for _ in range(rng.randint(2, 20))))],
            title=" ".join(rng.sample(vocab, 2)),
        )
        for n in range(30)
    ]
    sqlite, _ = SQLiteBackend(tmp_path / "index").open()
    try:
        for store in (engine_store, sqlite):
            fill(store, files)
        weights = (10.0, 8.0, 4.0, 6.0, 1.0, 1.0)
        for _ in range(10):
            query = words(*rng.sample(vocab, rng.randint(1, 3)))
            mine = engine_store.keyword_search(query, "any", Filters(), 5, weights)
            theirs = sqlite.keyword_search(query, "any", Filters(), 5, weights)
            assert [s for _, s in mine] == pytest.approx([s for _, s in theirs], rel=1e-6)
            assert paths_of(engine_store, [r for r, _ in mine]) == paths_of(
                sqlite, [r for r, _ in theirs]
            )
    finally:
        sqlite.close()


def test_a_collection_of_the_previous_release_keeps_its_sparse_lane(
    milvus_engine: Engine, engine_prefix: str
) -> None:
    """Tables made before the BM25 function (a ``sp`` field, no ``bm``) are recognised and
    searched as before, on a server that would give a new index the function."""
    from tests.milvus_engine import direct_client

    client = direct_client(milvus_engine.uri)
    try:
        for table in schema.TABLES:
            schema.create(client, engine_prefix, table, milvus_engine.uri)  # no BM25 field
    finally:
        client.close()
    store: Store
    store, _ = MilvusBackend(MilvusConfig(uri=milvus_engine.uri, prefix=engine_prefix)).open()
    try:
        assert isinstance(store, MilvusStore) and store.bm25[schema.CHUNKS] is False
        fill(store, corpus())
        hits = store.keyword_search(words("banana"), "any", Filters(), 10, DEFAULTS)
        assert paths_of(store, [r for r, _ in hits])[0] == "job/alpha.md"
    finally:
        store.close()


def test_migrate_moves_an_index_of_the_previous_release_to_the_bm25_function(
    milvus_engine: Engine, engine_prefix: str, tmp_path: Path
) -> None:
    """The upgrade: an index whose tables have the sparse vectors (the previous release's
    schema) is copied by ``noteseek migrate`` into a new collection prefix on the same server,
    which gets the BM25 function; nothing is parsed or embedded again and every keyword
    answer is the same."""
    from tests.helpers import engine_for, project
    from tests.milvus_engine import direct_client
    from tests.test_migrate import answers, migrate, small_vault

    client = direct_client(milvus_engine.uri)
    try:
        for table in schema.TABLES:
            schema.create(client, engine_prefix, table, milvus_engine.uri)
    finally:
        client.close()
    folder = project(tmp_path, {"vault": small_vault(tmp_path)})
    old = {"milvus.uri": milvus_engine.uri, "milvus.collection": engine_prefix}
    new = {**old, "milvus.collection": engine_prefix + "_new"}
    with engine_for(folder, embeddings=True, **old) as engine:
        engine.index()
        assert "earlier release" in engine.status()["store"]["keyword"]
        before = answers(engine)
        data = migrate(engine, to=milvus_engine.uri, collection=new["milvus.collection"])
    assert data["counts"]["source"] == data["counts"]["target"]
    with engine_for(folder, embeddings=True, **new) as engine:
        status = engine.status()
        assert status["store"]["keyword"] == "Milvus's BM25 function"
        assert status["embedding"]["pending"] == 0  # the vectors came along
        assert answers(engine) == before
