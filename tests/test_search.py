"""Keyword search: query syntax, ranking rules, filters inside the query, snippets, get."""

from __future__ import annotations

import time
from collections.abc import Sequence
from pathlib import Path

import numpy as np
import numpy.typing as npt
import pytest

from noteseek.engine import Ambiguous, Engine, Filter, NotFound, SearchRequest
from tests.helpers import engine_for, paths, project, write


@pytest.fixture
def example(tmp_path: Path, vault: Path) -> Engine:
    engine = engine_for(project(tmp_path, {"vault": vault}))
    engine.index()
    yield engine  # type: ignore[misc]
    engine.close()


def test_redis_ttl_finds_the_expiry_section_first(example: Engine) -> None:
    hit = example.search(SearchRequest("redis ttl")).hits[0]
    assert hit.path == "notes/redis.md"
    assert hit.heading_path[-1] == "Expiry and TTL"
    assert "**TTL**" in hit.snippet or "**ttl**" in hit.snippet.lower()


def test_documents_with_all_words_rank_before_any_word(tmp_path: Path) -> None:
    notes = tmp_path / "n"
    # One note repeats "zebra" a lot (high BM25 for that word) but lacks "quartz".
    write(notes / "many.md", "# Zebras\n\n" + "zebra zebra zebra stripes. " * 10)
    write(
        notes / "both.md",
        "# Misc\n\nA long note that mentions a zebra once and quartz once, "
        "among many other unrelated words about gardening and weather and tea.\n",
    )
    with engine_for(project(tmp_path, {"n": notes})) as engine:
        engine.index()
        hits = engine.search(SearchRequest("zebra quartz")).hits
        assert paths(hits) == ["both.md", "many.md"]
        # A word nothing contains does not empty the result list.
        assert paths(engine.search(SearchRequest("zebra nonexistentword")).hits)


def test_phrase_exclusion_and_prefix(example: Engine) -> None:
    phrase = example.search(SearchRequest('"replica lag"')).hits
    assert phrase and all("replica lag" in h.snippet.lower().replace("**", "") for h in phrase)
    with_redis = set(paths(example.search(SearchRequest("ttl", top_k=50)).hits))
    without = set(paths(example.search(SearchRequest("ttl -redis", top_k=50)).hits))
    assert "notes/redis.md" in with_redis and "notes/redis.md" not in without
    assert "notes/kubernetes.md" in paths(example.search(SearchRequest("kubern*")).hits)
    # A query of excluded words only searches for the words (``-Name`` is a flag name).
    assert paths(example.search(SearchRequest("-redis")).hits)[0] == "notes/redis.md"


def test_identifier_query_finds_code_and_prose(example: Engine) -> None:
    hits = example.search(SearchRequest("getUserById")).hits
    assert hits and hits[0].path == "snippets/sql-queries.md"
    # The parts written as words find the identifier too.
    assert "snippets/sql-queries.md" in paths(example.search(SearchRequest("user by id")).hits)


def test_cjk_queries_find_their_notes(example: Engine) -> None:
    assert example.search(SearchRequest("缓存策略")).hits[0].path == "notes/缓存策略.md"
    assert example.search(SearchRequest("形態素解析")).hits[0].path == "notes/形態素解析.md"
    assert example.search(SearchRequest("数据库索引")).hits[0].path == "notes/数据库索引.md"


def test_accents_and_case_do_not_matter(example: Engine) -> None:
    assert example.search(SearchRequest("zurich")).hits
    assert paths(example.search(SearchRequest("ZÜRICH")).hits) == paths(
        example.search(SearchRequest("zurich")).hits
    )


def test_filters_apply_before_the_top_k_cut(tmp_path: Path) -> None:
    notes = tmp_path / "n"
    for i in range(30):
        write(notes / "loud" / f"{i}.md", f"# Signal {i}\n\nsignal signal signal {i}\n")
    write(
        notes / "quiet" / "one.md",
        "---\ntags: [project/atlas]\nstatus: draft\n---\n"
        "# Quiet\n\nA long quiet note where the word signal appears once among many others.\n",
    )
    with engine_for(project(tmp_path, {"n": notes})) as engine:
        engine.index()
        assert "quiet/one.md" not in paths(engine.search(SearchRequest("signal", top_k=5)).hits)
        assert paths(
            engine.search(SearchRequest("signal", top_k=1, filter=Filter(paths=["quiet/**"]))).hits
        ) == ["quiet/one.md"]
        assert paths(
            engine.search(SearchRequest("signal", top_k=1, filter=Filter(tags=["project"]))).hits
        ) == ["quiet/one.md"]
        assert paths(
            engine.search(
                SearchRequest("signal", top_k=1, filter=Filter(tags=["#project/atlas"]))
            ).hits
        ) == ["quiet/one.md"]
        assert not engine.search(SearchRequest("signal", filter=Filter(tags=["proj"]))).hits
        assert paths(
            engine.search(
                SearchRequest("signal", top_k=1, filter=Filter(where=["status=draft"]))
            ).hits
        ) == ["quiet/one.md"]
        assert "quiet/one.md" not in paths(
            engine.search(
                SearchRequest("signal", top_k=50, filter=Filter(where=["status!=draft"]))
            ).hits
        )


def test_date_filters_use_frontmatter_dates_then_mtime(tmp_path: Path) -> None:
    notes = tmp_path / "n"
    write(notes / "old.md", "---\nupdated: 2020-01-15\n---\n# Old\n\ncomet\n")
    write(notes / "mtime-old.md", "# Mtime\n\ncomet\n", mtime=time.time() - 400 * 86400)
    write(notes / "new.md", "# New\n\ncomet\n")
    with engine_for(project(tmp_path, {"n": notes})) as engine:
        engine.index()
        assert sorted(
            paths(engine.search(SearchRequest("comet", filter=Filter(after="30d"))).hits)
        ) == ["new.md"]
        assert sorted(
            paths(engine.search(SearchRequest("comet", filter=Filter(before="2021-01-01"))).hits)
        ) == ["old.md"]
        assert sorted(
            paths(engine.search(SearchRequest("comet", filter=Filter(before="1y"))).hits)
        ) == ["mtime-old.md", "old.md"]
        with pytest.raises(ValueError, match="cannot read the date"):
            engine.search(SearchRequest("comet", filter=Filter(after="last tuesday")))


def test_snippet_highlights_the_original_words(tmp_path: Path) -> None:
    write(
        tmp_path / "n" / "c.md",
        "# Cafés\n\nThe best Cafés in Zürich open early; " + "filler " * 80 + "\n",
    )
    with engine_for(project(tmp_path, {"n": tmp_path / "n"})) as engine:
        engine.index()
        hit = engine.search(SearchRequest("cafe zurich")).hits[0]
        assert "**Cafés**" in hit.snippet and "**Zürich**" in hit.snippet
        assert len(hit.snippet) < 300


def test_explain_shows_terms_and_field_scores(example: Engine) -> None:
    hit = example.search(SearchRequest("redis ttl", explain=True)).hits[0]
    kw = hit.explain["keyword"]  # type: ignore[index]
    assert kw["match"] == "all words"
    assert {"redi", "ttl"} <= set(kw["matched_terms"])
    assert kw["fields"]["title"] > 0
    assert kw["fields"]["body"] + kw["fields"]["code"] > 0


def test_get_by_path_line_returns_the_section(example: Engine) -> None:
    got = example.get("notes/redis.md:12")
    assert got.kind == "section"
    assert got.heading_path[-1] == "Expiry and TTL"
    assert got.start_line <= 12 <= got.end_line
    assert "EXPIRE" in got.text
    by_id = example.get(got.chunk_ids[0])
    assert by_id.kind == "chunk" and by_id.chunk_ids == got.chunk_ids[:1]
    doc = example.get("vault/notes/redis.md")
    assert doc.kind == "document" and doc.text.startswith("---")
    with pytest.raises(NotFound):
        example.get("notes/redis.md:9999")
    with pytest.raises(NotFound):
        example.get("notes/nope.md")


def test_a_name_the_system_cannot_look_up_is_not_found(example: Engine) -> None:
    """A path component over 255 bytes makes stat fail (ENAMETOOLONG): no document there,
    not an error (schemathesis found it as a 500 on GET /documents/{path})."""
    long = "ṱ̺" * 100 + ".md"
    for lookup in (example.get, example.read_document, example.links):
        with pytest.raises(NotFound):
            lookup(long)
    with pytest.raises(NotFound):
        example.get(long + ":3")


def test_get_names_both_candidates_when_ambiguous(tmp_path: Path) -> None:
    write(tmp_path / "a" / "x.md", "# X\n\none\n")
    write(tmp_path / "b" / "x.md", "# X\n\ntwo\n")
    with engine_for(project(tmp_path, {"a": tmp_path / "a", "b": tmp_path / "b"})) as engine:
        engine.index()
        with pytest.raises(Ambiguous, match=r"a/x\.md.*b/x\.md"):
            engine.get("x.md")
        assert engine.get("b/x.md").text.strip().endswith("two")


def test_unknown_root_filter_is_an_error(example: Engine) -> None:
    with pytest.raises(ValueError, match="unknown root"):
        example.search(SearchRequest("redis", filter=Filter(roots=["nope"])))


def test_common_words_do_not_drown_rare_ones(tmp_path: Path) -> None:
    notes = tmp_path / "n"
    for i in range(20):
        write(notes / f"filler{i}.md", f"# Page {i}\n\nthe value of the parameter {i}\n")
    write(notes / "rare.md", "# Zeppelin\n\nthe airship notes\n")
    write(notes / "titled.md", "# Parameter guide\n\nhow to read values\n")
    flags = {"search.common_term_min": 0, "search.common_term_fraction": 0.3}
    with engine_for(project(tmp_path, {"n": notes}), **flags) as engine:
        engine.index()
        # "the" is in nearly every chunk: the rare word decides, and results stay complete.
        hits = engine.search(SearchRequest("the zeppelin airship parameter", top_k=30)).hits
        assert hits[0].path == "rare.md"
        assert len(hits) == 22
        # Only common words: documents naming them in the title come first.
        assert engine.search(SearchRequest("parameter")).hits[0].path == "titled.md"
        explained = engine.search(SearchRequest("the parameter", explain=True)).hits
        assert {h.path for h in explained} >= {"titled.md", "filler0.md"}


def test_prefix_meets_stemmed_terms(example: Engine) -> None:
    assert "notes/redis.md" in paths(example.search(SearchRequest("expiry*", top_k=20)).hits)
    assert "notes/redis.md" in paths(example.search(SearchRequest("expir*", top_k=20)).hits)


def test_dedupe_and_per_document_limit(tmp_path: Path) -> None:
    notes = tmp_path / "notes"
    section = "## Setup\n\nInstall the walrus toolkit and run walrus init.\n"
    write(
        notes / "a.md", "# A\n\nFirst.\n\n" + section + "\n## Walrus usage\n\nwalrus run walrus\n"
    )
    write(notes / "copy-of-a.md", "# Copy\n\nSecond.\n\n" + section)
    write(notes / "b.md", "# B\n\nThe walrus manual, chapter one: walrus basics.\n")
    # One chunk per section (not merged), so the copied section is a chunk of its own.
    folder = project(tmp_path, {"notes": notes}, "[chunking]\nmerge_small = false\n")
    with engine_for(folder, **{"search.max_per_document": 0}) as engine:
        engine.index()
        plain = engine.search(SearchRequest("walrus", top_k=10, mode="keyword")).hits
        texts = [h.heading for h in plain]
        assert texts.count("A > Setup") == 1 and texts.count("Copy > Setup") == 1
    with engine_for(folder, **{"search.dedupe": True, "search.max_per_document": 0}) as engine:
        deduped = engine.search(SearchRequest("walrus", top_k=10, mode="keyword")).hits
    headings = [h.heading for h in deduped]
    assert ("A > Setup" in headings) != ("Copy > Setup" in headings)  # one copy, not both
    assert len(deduped) == len(plain) - 1
    assert [h.rank for h in deduped] == list(range(1, len(deduped) + 1))
    with engine_for(folder, **{"search.max_per_document": 1}) as engine:
        limited = engine.search(SearchRequest("walrus", top_k=10, mode="keyword")).hits
    assert sorted(h.path for h in limited) == ["a.md", "b.md", "copy-of-a.md"]


def test_near_duplicates_are_dropped_by_shingle_overlap(tmp_path: Path) -> None:
    notes = tmp_path / "notes"
    body = "Install the walrus toolkit, then run walrus init in the project folder and check "
    write(notes / "a.md", "# A\n\n" + body + "the log.\n")
    write(notes / "edited.md", "# Edited\n\n" + body + "the output.\n")  # an edited copy
    write(notes / "b.md", "# B\n\nThe walrus manual, chapter one: walrus basics.\n")
    folder = project(tmp_path, {"notes": notes})
    with engine_for(folder) as engine:
        engine.index()
        plain = paths(engine.search(SearchRequest("walrus toolkit", top_k=10, mode="keyword")).hits)
    assert {"a.md", "edited.md", "b.md"} <= set(plain)
    with engine_for(folder, **{"search.near_duplicate": 0.7}) as engine:
        kept = paths(engine.search(SearchRequest("walrus toolkit", top_k=10, mode="keyword")).hits)
    assert ("a.md" in kept) != ("edited.md" in kept) and "b.md" in kept
    with engine_for(folder, **{"search.near_duplicate": 0.95}) as engine:
        loose = paths(engine.search(SearchRequest("walrus toolkit", top_k=10, mode="keyword")).hits)
    assert sorted(loose) == sorted(plain)  # not similar enough at 0.95


def test_expansion_grows_a_result_to_its_section_then_its_neighbours(tmp_path: Path) -> None:
    notes = tmp_path / "notes"
    paragraphs = [
        f"Paragraph {i} about {'ocelot' if i == 2 else 'lynx'}. " + "x " * 300 for i in range(5)
    ]
    body = (
        "# Cats\n\nIntro text.\n\n## Wild cats\n\n"
        + "\n\n".join(paragraphs)
        + "\n\n## Other\n\nTail.\n"
    )
    write(notes / "cats.md", body)
    folder = project(tmp_path, {"notes": notes})
    with engine_for(folder) as engine:
        engine.index()
        plain = engine.search(SearchRequest("ocelot", mode="keyword", with_text=True)).hits[0]
        assert plain.heading_path == ("Cats", "Wild cats") and "ocelot" in plain.text
        grown = engine.search(SearchRequest("ocelot", mode="keyword", expand_chars=2000)).hits[0]
        assert plain.text in grown.text and len(plain.text) < len(grown.text) <= 2000
        assert grown.start_line <= plain.start_line and grown.end_line >= plain.end_line
        assert "Tail." not in grown.text  # the section first, not the next one
        whole = engine.search(SearchRequest("ocelot", mode="keyword", expand_chars=8_000)).hits[0]
        assert all(f"Paragraph {i}" in whole.text for i in range(5))
        assert "Intro text." in whole.text and "Tail." in whole.text
        assert (whole.start_line, whole.end_line) == (1, len(body.rstrip("\n").split("\n")))
        for wrong in (-1, 8_001):  # search.expand_chars's bounds, as on every door
            with pytest.raises(ValueError, match="expand_chars must be between 0 and 8000"):
                engine.search(SearchRequest("ocelot", expand_chars=wrong))


class CountingStore:
    """Counts the store's per-candidate row lookups, passing everything through."""

    LOOKUPS = ("chunk_rows", "chunk_files", "chunk_modified")

    def __init__(self, monkeypatch: pytest.MonkeyPatch, store: object) -> None:
        self.calls: dict[str, int] = dict.fromkeys(self.LOOKUPS, 0)
        for name in self.LOOKUPS:
            original = getattr(store, name)

            def counted(*args: object, _name: str = name, _original: object = original) -> object:
                self.calls[_name] += 1
                return _original(*args)  # type: ignore[operator]

            monkeypatch.setattr(store, name, counted)


def test_a_hybrid_query_reads_the_candidates_rows_once(
    tmp_path: Path, vault: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    flags = {
        "search.recency": "on",
        "search.dedupe": True,
        "search.max_per_document": 2,
        "search.graph_weight": 0.5,
    }
    with engine_for(project(tmp_path, {"vault": vault}), **flags) as engine:
        engine.index()
        counting = CountingStore(monkeypatch, engine.store)
        res = engine.search(
            SearchRequest("redis ttl", mode="hybrid", explain=True, expand_chars=400)
        )
        assert res.hits
        assert {"community_ms", "recency_ms", "diversify_ms"} <= set(res.timings_ms)
        # Each lookup once: the boosts read the candidates' file ids and dates alone, the
        # diversity stage whole rows of the window it gets through, and the hits reuse them
        # (before: three chunk_files or chunk_modified calls and two chunk_rows calls; then one
        # whole-row lookup of every candidate, most of which no stage used).
        assert counting.calls["chunk_rows"] == 1
        assert counting.calls["chunk_modified"] == 1
        # The keyword lane's results' files (for its document blend), then the other
        # candidates' (the boosts ask only for those the lane did not know).
        assert counting.calls["chunk_files"] <= 2


class FakeReranker:
    """Prefers shorter passages, so the order visibly changes."""

    def scores(self, query: str, passages: Sequence[str]) -> npt.NDArray[np.float32]:
        return np.array([-float(len(p)) for p in passages], dtype=np.float32)


def test_stages_share_one_row_lookup_and_name_their_explain_and_timings(
    example: Engine, monkeypatch: pytest.MonkeyPatch
) -> None:
    from noteseek.search import pipeline
    from noteseek.search.filters import build_filters
    from noteseek.search.request import PipelineRequest, SearchResources
    from noteseek.search.stages import POST_FUSION

    counting = CountingStore(monkeypatch, example.store)
    settings = example.settings.search.model_copy(update={"dedupe": True, "max_per_document": 0})
    resources = SearchResources(
        example.store,
        example.analyzer(),
        settings,
        reranker=FakeReranker(),
        rerank_top=5,
        recency_tiers=[(1e9, 1.5)],  # every document counts as recent
    )
    request = PipelineRequest("redis keys", 8, "hybrid", build_filters(), explain=True)
    result = pipeline.run(request, resources)
    assert counting.calls["chunk_rows"] == 1
    assert counting.calls["chunk_modified"] == 0
    assert counting.calls["chunk_files"] == 1  # the keyword lane's, for its document scores
    ran = {f"{stage.name}_ms" for stage in POST_FUSION} & set(result.timings_ms)
    assert ran == {"recency_ms", "rerank_ms", "diversify_ms"}
    reranked = [h for h in result.hits if "rerank" in h.explain]
    assert len(reranked) == 5
    assert all(h.explain["fusion"]["recency_factor"] == 1.5 for h in result.hits)


def test_repeated_words_count_once_and_the_query_is_bounded(example: Engine) -> None:
    from noteseek.search.query import parse_bounded, parse_query

    analyzer = example.analyzer()
    query = parse_query("redis ttl redis -kafka -kafka redis* redis*", analyzer)
    assert [c.terms for c in query.clauses] == [["redi"], ["ttl"], ["redi"]]
    assert [c.terms for c in query.excluded] == [["kafka"]]
    words = " ".join(f"word{i}" for i in range(100))
    bounded, truncated = parse_bounded(words, analyzer, 64)
    assert truncated and len(bounded.clauses) == 64
    assert bounded.clauses[-1].terms == ["word63"]  # the first ones are kept, in order
    assert parse_bounded(" ".join(["redis"] * 800), analyzer, 64) == (
        parse_query("redis", analyzer),
        False,
    )
    response = example.search(SearchRequest(words + " redis", mode="keyword"))
    assert any("search.max_query_terms" in w for w in response.warnings)
    assert not example.search(SearchRequest(" ".join(["redis"] * 800), mode="keyword")).warnings
