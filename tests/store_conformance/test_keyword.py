"""Keyword index: matching modes, fields, exclusions, filters inside the match, scores."""

from __future__ import annotations

import pytest

from noteseek.store.base import Store
from noteseek.types import Clause, Filters, KeywordQuery
from tests.store_conformance.build import WEIGHTS, fill, make_file, paths_of, words
from tests.store_conformance.test_chunks import FILTERED


def search(store: Store, query: KeywordQuery, mode: str = "any", **kw: object) -> list[str]:
    """The chunk ids found, best first."""
    filters = kw.pop("filters", Filters())
    limit = kw.pop("limit", 50)
    hits = store.keyword_search(query, mode, filters, limit, WEIGHTS)  # type: ignore[arg-type]
    return [row.chunk_id for row in store.chunk_rows([r for r, _ in hits])]


def test_any_word_matches_rank_best_first(store: Store) -> None:
    fill(store)
    hits = store.keyword_search(words("apple"), "any", Filters(), 50, WEIGHTS)
    assert len(hits) == 4
    scores = [s for _, s in hits]
    assert scores == sorted(scores, reverse=True) and all(s > 0 for s in scores)
    assert paths_of(store, [hits[0][0]]) == ["job/beta.md"]  # three times in a short section


def test_all_words_and_any_word(store: Store) -> None:
    fill(store)
    assert search(store, words("apple", "banana"), "all") == ["notes/job/alpha.md#0"]
    assert set(search(store, words("banana", "fig"), "any")) == {
        "notes/job/alpha.md#0",
        "notes/job/alpha.md#1",
        "notes/home/gamma.md#0",
    }
    assert search(store, words("apple", "zebra"), "all") == []
    assert search(store, KeywordQuery(()), "any") == []


def test_phrases_prefixes_fields_and_exclusions(store: Store) -> None:
    fill(store)
    # "any": a quoted phrase must match, and at least one of the other words.
    phrase = KeywordQuery((Clause((("apple", "banana"),), required=True), Clause((("cherry",),))))
    assert search(store, phrase, "any") == ["notes/job/alpha.md#0"]
    backwards = KeywordQuery((Clause((("banana", "apple"),), required=True),))
    assert search(store, backwards, "any") == []
    assert search(store, words("elder", prefix=True)) == ["notes/job/beta.md#0"]
    assert search(store, words("elder")) == []
    assert set(search(store, words("alpha", fields=["title"]))) == {
        "notes/job/alpha.md#0",
        "notes/job/alpha.md#1",
    }
    assert search(store, words("apple", fields=["title", "tags"])) == []
    assert search(store, words("atlas", fields=["tags"])) != []
    assert set(search(store, words("apple", excluded=["cherry", "install"]))) == {
        "notes/job/beta.md#0"
    }
    alternatives = KeywordQuery((Clause((("zebra",), ("durian",))),))
    assert search(store, alternatives) == ["notes/job/alpha.md#1"]


def test_limit_cuts_after_ranking(store: Store) -> None:
    fill(store)
    everything = search(store, words("apple"))
    assert search(store, words("apple"), limit=2) == everything[:2]


def test_field_weights_change_the_ranking(store: Store) -> None:
    fill(store)
    extra = make_file("notes", "plain.md", [("", "guide guide guide")], title="Plain")
    fill(store, [extra])
    query = words("guide")
    title_only = (1.0, 0.0, 0.0, 0.0, 0.0, 0.0)
    body_only = (0.0, 0.0, 0.0, 0.0, 1.0, 0.0)
    by_title = store.keyword_search(query, "any", Filters(), 1, title_only)
    by_body = store.keyword_search(query, "any", Filters(), 1, body_only)
    assert paths_of(store, [by_title[0][0]]) == ["guide.md"]
    assert paths_of(store, [by_body[0][0]]) == ["plain.md"]


@pytest.mark.parametrize(("case", "filters", "expected"), FILTERED, ids=[c for c, _, _ in FILTERED])
def test_filters_apply_inside_the_match(
    store: Store, case: str, filters: Filters, expected: set[str]
) -> None:
    ids = fill(store)
    stem = {fid: doc.rsplit("/", 1)[-1].removesuffix(".md") for doc, fid in ids.items()}
    hits = store.keyword_search(words("apple"), "any", filters, 50, WEIGHTS)
    assert {stem[f] for f in store.chunk_files([r for r, _ in hits]).values()} == expected
    # A filter applies before the cut: one result is enough to find the one allowed file.
    if len(expected) == 1:
        assert len(store.keyword_search(words("apple"), "any", filters, 1, WEIGHTS)) == 1
    docs = store.document_scores(words("apple"), filters, 50, WEIGHTS)
    assert {stem[f] for f in docs} == expected


def test_document_scores_rank_whole_documents(store: Store) -> None:
    ids = fill(store)
    docs = store.document_scores(words("banana", "durian"), Filters(), 10, WEIGHTS)
    assert set(docs) == {ids["notes/job/alpha.md"]}
    assert docs[ids["notes/job/alpha.md"]] > 0
    both = store.document_scores(words("apple"), Filters(), 1, WEIGHTS)
    assert len(both) == 1
    assert store.document_scores(KeywordQuery(()), Filters(), 10, WEIGHTS) == {}


def test_field_scores_split_a_score_by_field(store: Store) -> None:
    ids = fill(store)
    beta = store.file_chunk_rowids(ids["notes/job/beta.md"])[0]
    gamma = store.file_chunk_rowids(ids["notes/home/gamma.md"])[0]
    scores = store.field_scores(words("apple"), "any", [beta, gamma, 10**9], WEIGHTS)
    assert set(scores) == {beta, gamma}
    assert all(len(s) == len(WEIGHTS) for s in scores.values())
    title, aliases, headings, tags, body, code = scores[beta]
    assert body > 0 and title == aliases == headings == tags == code == 0
    assert scores[gamma][5] > 0 and scores[gamma][4] == 0  # in the code only
    assert store.field_scores(words("apple"), "any", [], WEIGHTS) == {}
    assert store.field_scores(words("apple", "zebra"), "all", [beta], WEIGHTS) == {}


def test_is_common_counts_up_to_the_threshold_and_follows_writes(store: Store) -> None:
    fill(store)  # 6 chunks; apple in 4, durian in 1
    assert store.is_common(Clause((("apple",),)), 0.5, 1)
    assert not store.is_common(Clause((("durian",),)), 0.5, 1)
    assert not store.is_common(Clause((("apple",),)), 0.5, 100)  # the floor is above the index
    more = make_file("notes", "more.md", [("", "durian"), ("", "durian"), ("", "durian")])
    fill(store, [more])  # 9 chunks; durian in 4
    assert store.is_common(Clause((("durian",),)), 0.4, 1)


def test_matching_rowids_picks_the_given_chunks_that_match(store: Store) -> None:
    ids = fill(store)
    rowids = [r for fid in ids.values() for r in store.file_chunk_rowids(fid)]
    cherry = store.matching_rowids(words("cherry"), rowids)
    assert sorted(paths_of(store, sorted(cherry))) == ["home/gamma.md", "job/alpha.md"]
    alpha_first = store.file_chunk_rowids(ids["notes/job/alpha.md"])[0]
    assert store.matching_rowids(words("cherry", "fig"), [alpha_first]) == {alpha_first}
    assert store.matching_rowids(words("cherry"), []) == set()
    assert store.matching_rowids(KeywordQuery(()), rowids) == set()


def test_term_documents_and_the_vocabulary_count_documents(store: Store) -> None:
    ids = fill(store)
    # banana is in two sections of one file: one document; cherry in two files.
    held = store.term_documents(["banana", "cherry", "durian", "zebra"])
    assert held == {"banana": 1, "cherry": 2, "durian": 1}  # a term nobody holds is left out
    assert store.term_documents([]) == {}
    vocabulary = store.vocabulary()
    assert {t: vocabulary[t] for t in ("banana", "cherry", "fig", "grape")} == {
        "banana": 1,
        "cherry": 2,
        "fig": 1,
        "grape": 1,
    }
    assert "zebra" not in vocabulary
    with store.transaction():
        store.delete_file(ids["notes/home/gamma.md"])
    assert store.term_documents(["cherry", "fig"]) == {"cherry": 1}
    assert "fig" not in store.vocabulary() or store.vocabulary()["fig"] == 0


def test_scores_every_match_names_who_ranks(store: Store, request: pytest.FixtureRequest) -> None:
    """FTS5 (and the sparse vectors noteseek scores on Milvus Lite) score every match; Milvus's
    BM25 function ranks on the server, so a search there neither fetches ahead nor narrows
    common words first."""
    expected = {"sqlite": True, "milvus-lite": True, "milvus-engine": False}
    assert store.scores_every_match is expected[request.node.callspec.params["backend"]]
