"""Cross-encoder re-ranking with the bundled ms-marco model, through the engine."""

from __future__ import annotations

from pathlib import Path

import pytest

from noteseek.engine import SearchRequest
from noteseek.search.rerank import CrossEncoder
from tests.helpers import engine_for, project

pytestmark = pytest.mark.embeddings  # runs a bundled model


def test_the_cross_encoder_prefers_the_passage_that_answers() -> None:
    ce = CrossEncoder(max_tokens=128)
    logits = ce.scores(
        "how does redis expire keys",
        [
            "Kubernetes reconciles the actual state toward the declared state.",
            "Any key can carry a time to live. When it runs out, Redis deletes the key.",
            "",
        ],
    )
    assert logits.shape == (3,)
    assert logits[1] > 0 > logits[0]
    assert ce.scores("anything", []).shape == (0,)


def test_rerank_reorders_the_top_results_only(vault: Path, tmp_path: Path) -> None:
    folder = project(tmp_path, {"notes": vault})
    ungrouped = {"search.max_per_document": 0}
    with engine_for(folder, **ungrouped) as plain:
        plain.index()
        before = plain.search(SearchRequest("how do keys expire", top_k=14, mode="keyword")).hits
    with engine_for(folder, **{"rerank.enabled": True, "rerank.depth": 10}, **ungrouped) as engine:
        res = engine.search(
            SearchRequest("how do keys expire", top_k=14, mode="keyword", explain=True)
        )
    hits = res.hits
    assert "rerank_ms" in res.timings_ms
    # The first ten are the same sections as before, re-ordered by the logit...
    assert {h.chunk_id for h in hits[:10]} == {h.chunk_id for h in before[:10]}
    logits = [h.explain["rerank"]["logit"] for h in hits[:10]]
    assert logits == sorted(logits, reverse=True)
    assert sorted(h.explain["rerank"]["rank_before"] for h in hits[:10]) == list(range(1, 11))
    # ...the rest keep their order, and scores still fall down the list.
    assert [h.chunk_id for h in hits[10:]] == [h.chunk_id for h in before[10:]]
    assert all("rerank" not in h.explain for h in hits[10:])
    assert [h.score for h in hits] == sorted((h.score for h in hits), reverse=True)
    # The order changed, and the section that answers the question is at the top. (The
    # keyword list ranks it second since identifier parts weigh less: issue 34.)
    assert [h.explain["rerank"]["rank_before"] for h in hits[:10]] != list(range(1, 11))
    ttl = next(h for h in hits if h.heading == "Redis > Expiry and TTL")
    assert ttl.rank <= 2
