"""The analyzer: one function from text to terms, the same at index and query time."""

from __future__ import annotations

from hypothesis import given, settings
from hypothesis import strategies as st

from noteseek.analysis import Analyzer, cjk_bigrams, fold, split_identifier

A = Analyzer()


def test_case_and_diacritics_fold_to_one_term() -> None:
    assert A.terms("Café") == A.terms("cafe") == A.terms("CAFÉ")
    assert A.terms("Zürich naïve") == A.terms("zurich naive")


def test_nfkc_folds_full_width_and_ligatures() -> None:
    assert A.terms("Ｒｅｄｉｓ") == A.terms("redis")
    assert fold("ﬁle") == "file"


def test_snowball_stemming_joins_inflections() -> None:
    assert A.terms("running") == A.terms("runs") == A.terms("run")
    assert A.terms("expires") == A.terms("expiring")


def test_camel_case_identifier_gives_whole_token_and_parts() -> None:
    assert A.terms("getUserById") == ["getuserbyid", "get", "user", "by", "id"]
    assert split_identifier("HTTPServer") == ["HTTP", "Server"]
    assert A.terms("HTTPServer")[0] == "httpserver"


def test_snake_case_identifier_gives_whole_token_and_parts() -> None:
    terms = A.terms("parse_json")
    assert terms[0] == "parse_json"
    assert terms[1:] == [A.terms("parse")[0], "json"]
    assert split_identifier("MAX_RETRIES") == ["MAX", "RETRIES"]


def test_plain_words_are_not_identifiers() -> None:
    assert split_identifier("Redis") == []
    assert split_identifier("hello") == []
    assert A.terms("Redis") == ["redi"]


def test_cjk_runs_become_overlapping_bigrams() -> None:
    assert A.terms("东京都") == ["东京", "京都"]
    assert A.terms("形態素解析") == ["形態", "態素", "素解", "解析"]
    assert cjk_bigrams("字") == ["字"]


def test_chinese_query_terms_are_a_subset_of_the_document_terms() -> None:
    doc = set(A.terms("缓存是性能优化，不是数据的来源。"))
    assert set(A.terms("性能优化")) <= doc


def test_mixed_scripts_split_at_script_boundaries() -> None:
    assert A.terms("Redis缓存") == ["redi", "缓存"]


def test_token_spans_point_into_the_original_text() -> None:
    text = "Die Café-Bar in Zürich"
    for tok in A.tokens(text):
        assert fold(text[tok.start : tok.end]) or text[tok.start : tok.end]
    spans = {(t.term, text[t.start : t.end]) for t in A.tokens(text)}
    assert ("cafe", "Café") in spans
    assert ("zurich", "Zürich") in spans


def test_stopword_removal_is_optional() -> None:
    with_stop = Analyzer(stopwords=True)
    assert "the" not in with_stop.terms("the cache")
    assert "the" in A.terms("the cache")
    assert with_stop.settings()["stopwords"] is True


@settings(max_examples=200, deadline=None)
@given(st.text())
def test_terms_never_contain_whitespace_and_never_raise(text: str) -> None:
    for term in A.terms(text):
        assert term
        assert not any(ch.isspace() for ch in term)


@settings(max_examples=100, deadline=None)
@given(st.text())
def test_terms_and_tokens_agree(text: str) -> None:
    assert A.terms(text) == [t.term for t in A.tokens(text)]


def test_lone_surrogates_become_replacement_characters() -> None:
    from noteseek.analysis import unicode_text

    assert unicode_text("caf\udce9 redis") == "caf\ufffd redis"  # argv bytes b"caf\xe9"
    assert unicode_text("\ud800x\udfff") == "\ufffdx\ufffd"
    text = "plain café 東京"
    assert unicode_text(text) is text


def test_words_holding_a_term_are_those_whose_terms_include_it() -> None:
    """The snippets find a section's words that hold a query term by set operations over the
    words filed by term: the same words as analysing each word, for words seen before or
    not, identifiers (several terms a word) and terms no word holds."""
    analyzer = Analyzer("english")
    texts = [
        "Running runners ran; the runner's run. getUserById calls get_user_by_id twice.",
        "Cafés and cafe: caf\u00e9s again, with HTTPServer and http servers and Über.",
        "Nothing here matches the query at all, except maybe servers once more.",
    ]
    queries = [{"run"}, {"user", "id"}, {"cafe", "server"}, {"http"}, {"nosuchterm"}, set()]
    for text in texts * 2:  # the second time every word is filed already
        words = analyzer.plain_words(text)
        assert words is not None
        for terms in queries:
            expected = {w for w in words if set(analyzer.word_terms(w)) & terms}
            assert analyzer.words_holding(words, terms) == expected, (text, terms)
    assert analyzer.words_holding({"getUserById"}, {"user"}) == {"getUserById"}
