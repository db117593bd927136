"""Honest "no match" and fusion while embedding is incomplete, with the bundled model.

Queries with nothing meaningful to find (punctuation, stop words only, gibberish, a script the
notes do not use, a filter leaving only empty bullets) return nothing in hybrid and semantic
mode, and say why; real words the notes lack but the model knows still reach the semantic lane.
While only part of the chunks have vectors, the keyword lane's best hit is not pushed out.
"""

from __future__ import annotations

import json
import sqlite3
from pathlib import Path

import pytest

from noteseek.analysis import get_analyzer
from noteseek.engine import Filter, SearchRequest
from noteseek.search import relevance
from noteseek.search.fusion import Fused, impute_missing
from noteseek.search.query import parse_query
from tests.helpers import engine_for, paths, project, run_cli, write

NOTES = {
    "felines.md": "# Felines\n\nMy kitten sleeps on the sofa all afternoon and purrs.\n",
    "budget.md": "# Budget\n\nQuarterly spending went over the forecast; cut travel costs.\n",
    "garden.md": "# Garden\n\nTomatoes and courgettes need watering every evening in July.\n",
    "redis.md": "# Redis\n\n## Expiry\n\nEXPIRE sets a time to live on a key.\n",
    "journals/2024_01_01.md": "- \n- \n-\n",
    "journals/2024_01_02.md": "-\n-  \n",
}
NOTHING = [
    "?!.",
    "to be or not to be",
    "qzxv wplk",
    "как приготовить борщ",
    "สวัสดีครับ",
    "τι κάνεις σήμερα",
    "it is what it is",
]


@pytest.fixture(scope="module")
def vault(tmp_path_factory: pytest.TempPathFactory) -> Path:
    tmp = tmp_path_factory.mktemp("relevance")
    for name, text in NOTES.items():
        write(tmp / "notes" / name, text)
    folder = project(tmp, {"n": tmp / "notes"})
    with engine_for(folder, embeddings=True) as engine:
        engine.index()
    return folder


@pytest.mark.embeddings
@pytest.mark.parametrize("query", NOTHING)
@pytest.mark.parametrize("mode", ["hybrid", "semantic"])
def test_meaningless_queries_find_nothing_and_say_why(vault: Path, query: str, mode: str) -> None:
    with engine_for(vault, embeddings=True) as engine:
        response = engine.search(SearchRequest(query, mode=mode))
        assert response.hits == []
        assert any(
            "semantic lane did not run" in w or "nothing to search for" in w
            for w in response.warnings
        )
        # Without the gate and the floor the nearest sections come back.
        off = {"search.relevance_gate": False, "search.semantic_floor": 0.0}
        with engine_for(vault, embeddings=True, **off) as loose:
            assert loose.search(SearchRequest(query, mode="semantic")).hits


@pytest.mark.embeddings
def test_a_filter_leaving_only_empty_bullets_finds_nothing(vault: Path) -> None:
    with engine_for(vault, embeddings=True) as engine:
        for mode in ("hybrid", "semantic"):
            hits = engine.search(
                SearchRequest("kitten on the sofa", mode=mode, filter=Filter(paths=["journals/*"]))
            ).hits
            assert hits == []
        # The same query without the filter finds the note, so the floor is not too high.
        assert (
            paths(engine.search(SearchRequest("kitten on the sofa", mode="semantic")).hits)[0]
            == "felines.md"
        )
        with engine_for(vault, embeddings=True, **{"search.semantic_floor": 0.0}) as loose:
            assert loose.search(
                SearchRequest(
                    "kitten on the sofa", mode="semantic", filter=Filter(paths=["journals/*"])
                )
            ).hits


@pytest.mark.embeddings
def test_words_the_notes_lack_but_the_model_knows_still_search(vault: Path) -> None:
    with engine_for(vault, embeddings=True) as engine:
        response = engine.search(SearchRequest("pet cat", mode="hybrid"))
        assert paths(response.hits)[0] == "felines.md"
        assert not response.warnings


@pytest.mark.embeddings
def test_every_door_says_nothing_matches(vault: Path) -> None:
    proc = run_cli(["search", "qzxv wplk", "--json"], cwd=vault, code=1)  # 1: no results
    data = json.loads(proc.stdout)
    assert data["results"] == []
    assert any("semantic lane did not run" in w for w in data["warnings"])


def test_content_words_and_questions() -> None:
    analyzer = get_analyzer("english", stopwords=True)
    assert relevance.content_words("how do I add a menu?", analyzer) == ["add", "menu"]
    assert relevance.content_words("to be or not to be", analyzer) == []
    assert relevance.content_words("?!.", analyzer) == []
    assert not relevance.has_words("?!.") and relevance.has_words("v2")
    assert relevance.is_question("how do I add a menu")
    assert relevance.is_question("menus in hugo?")
    assert not relevance.is_question("menu configuration")
    query = parse_query('how do I add a "main menu"', analyzer)
    stripped = relevance.strip_function_words(query, analyzer)
    assert stripped.terms == ["add", "main", "menu"]
    only = parse_query("what is it", analyzer)
    assert relevance.strip_function_words(only, analyzer) == only


def test_imputation_keeps_an_unembedded_keyword_hit_first() -> None:
    # Keyword: 1 (no vector yet), 2, 3; semantic (which could only see 2, 3, 4): 4, 3, 2.
    items = [Fused(1, 1 / 11, 0, {"keyword": 1}), Fused(2, 1 / 12 + 1.5 / 13, 0)]
    items[1].ranks = {"keyword": 2, "semantic": 3}
    items.append(Fused(4, 1.5 / 11, 0, {"semantic": 1}))
    best = 2.5 / 11
    out = impute_missing(
        items,
        source="keyword",
        target="semantic",
        weight=1.5,
        k=10,
        missing={1},
        best=best,
        order=["keyword", "semantic"],
    )
    assert [f.rowid for f in out] == [1, 2, 4]
    assert out[0].imputed == {"semantic": 1} and out[0].score == pytest.approx(1.0)


@pytest.mark.embeddings
def test_keyword_first_known_item_stays_first_at_low_coverage(tmp_path: Path) -> None:
    notes = tmp_path / "notes"
    write(notes / "meditation.md", "# Meditation\n\nSit still and follow the breath.\n")
    topics = ["sleep", "yoga", "running", "breathing", "calm", "stress", "focus", "habits"]
    for i in range(30):
        topic = topics[i % len(topics)]
        write(notes / f"note{i:02d}.md", f"# {topic.title()} {i}\n\nNotes on {topic}, day {i}.\n")
    folder = project(tmp_path, {"n": notes})
    with engine_for(folder, embeddings=True) as engine:
        engine.index()
        assert paths(engine.search(SearchRequest("meditation")).hits)[0] == "meditation.md"
    # Keep the vectors of two notes only (about 6% of the chunks), as early in embedding.
    db = sqlite3.connect(folder / ".noteseek" / "index.db")
    with db:
        db.execute(
            "DELETE FROM vectors WHERE key NOT IN (SELECT c.embed_key FROM chunks c JOIN files f "
            "ON f.id = c.file_id WHERE f.path IN ('note03.md', 'note09.md'))"
        )
    db.close()
    with engine_for(folder, embeddings=True) as engine:
        response = engine.search(SearchRequest("meditation", top_k=6))
        assert any("embedding in progress" in w for w in response.warnings)
        assert paths(response.hits)[0] == "meditation.md"
    # Fusing as if every chunk had a vector puts the semantic lane's guesses first.
    with engine_for(folder, embeddings=True, **{"search.partial_vectors": "off"}) as engine:
        assert paths(engine.search(SearchRequest("meditation", top_k=6)).hits)[0] != "meditation.md"


def test_rank_scale_reads_a_partial_lane_as_ranks_over_the_whole_index() -> None:
    from noteseek.search.fusion import rrf

    lanes = {"keyword": [(1, 5.0), (2, 4.0)], "semantic": [(3, 0.8), (2, 0.7)]}
    weights = {"keyword": 1.0, "semantic": 1.5}
    full = rrf(lanes, weights, 10)
    assert full[0].rowid == 2  # second in both lanes
    assert full[1].rowid == 3  # semantic first beats keyword first at weight 1.5
    partial = rrf(lanes, weights, 10, {"semantic": 10.0})  # the lane saw 10% of the index
    # The semantic lane's first result now stands where tenth would: behind keyword's first.
    assert [f.rowid for f in partial] == [2, 1, 3]
    assert partial[0].fused == pytest.approx(1 / 12 + 1.5 / 30)


@pytest.mark.embeddings
def test_mcp_says_nothing_matches(vault: Path) -> None:
    from tests.mcp_client import call, run, session

    async def main() -> None:
        async with session(vault) as client:
            result = await client.call_tool("query_documents", {"query": "qzxv wplk"})
            assert not result.is_error
            assert result.structured_content["results"] == []
            assert "semantic lane did not run" in result.content[0].text
            found = await call(client, "query_documents", {"query": "kitten on the sofa"})
            assert found["results"][0]["path"] == "felines.md"

    run(main)


@pytest.mark.embeddings
def test_http_says_nothing_matches(vault: Path) -> None:
    from tests.test_serve import serve_env, serving

    env = serve_env(vault / "home", NOTESEEK_EMBEDDING__ENABLED="true")
    with serving(vault, env=env) as server, server.client() as client:
        server.wait_ready(client)
        out = client.post("/query_documents", json={"query": "?!."})
        assert out.status_code == 200
        body = out.json()
        assert body["results"] == []
        assert any("nothing to search for" in w for w in body["warnings"])
