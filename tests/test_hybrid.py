"""Semantic and hybrid search end to end with the bundled model: modes, explain, the
embedding cache, keyword-first indexing, interruption and resumption, model switches."""

from __future__ import annotations

import contextlib
import json
import os
import signal
import sqlite3
import subprocess
import sys
import threading
import time
from pathlib import Path

import pytest

from noteseek.engine import Engine, Filter, SearchRequest
from noteseek.indexing import embedding as embedding_phase
from tests.helpers import engine_for, project, run_cli, write

pytestmark = pytest.mark.embeddings

NOTES = {
    "felines.md": "# Felines\n\nMy kitten sleeps on the sofa all afternoon and purrs.\n",
    "budget.md": "# Budget\n\nQuarterly spending went over the forecast; cut travel costs.\n",
    "garden.md": "# Garden\n\nTomatoes and courgettes need watering every evening in July.\n",
    "redis.md": "# Redis\n\n## Expiry\n\nEXPIRE sets a time to live on a key.\n",
}


def make_notes(folder: Path, notes: dict[str, str] = NOTES) -> Path:
    for name, text in notes.items():
        write(folder / name, text)
    return folder


@pytest.fixture
def small(tmp_path: Path) -> tuple[Path, Path]:
    notes = make_notes(tmp_path / "notes")
    return project(tmp_path, {"n": notes}), notes


def open_small(folder: Path, **flags: object) -> Engine:
    return engine_for(folder, embeddings=True, **flags)


def test_semantic_finds_meaning_without_shared_words(small: tuple[Path, Path]) -> None:
    folder, _ = small
    with open_small(folder) as engine:
        engine.index()
        assert engine.search(SearchRequest("pet cat", mode="keyword")).hits == []
        semantic = engine.search(SearchRequest("pet cat", mode="semantic"))
        assert semantic.hits[0].path == "felines.md"
        hybrid = engine.search(SearchRequest("pet cat"))
        assert hybrid.mode == "hybrid" and hybrid.hits[0].path == "felines.md"
        assert set(hybrid.lanes) == {"keyword", "semantic"}


def test_hybrid_explain_shows_each_lane_and_the_fusion(small: tuple[Path, Path]) -> None:
    folder, _ = small
    with open_small(folder) as engine:
        engine.index()
        hit = engine.search(SearchRequest("key expiry time to live", explain=True)).hits[0]
        assert hit.path == "redis.md"
        info = hit.explain
        assert info is not None
        assert info["keyword"]["rank"] == hit.lanes["keyword"] and info["keyword"]["bm25"] > 0
        assert info["semantic"]["rank"] == hit.lanes["semantic"]
        assert 0 < info["semantic"]["cosine"] <= 1
        fusion = info["fusion"]
        boost = fusion.get("recency_factor", 1.0)  # recently changed notes get a boost
        assert fusion["fused"] == pytest.approx(
            sum(fusion["contributions"].values()) * boost, abs=1e-5
        )
        assert 0 <= hit.score <= 1 and fusion["score"] == pytest.approx(hit.score, abs=1e-4)


def test_scores_lie_in_unit_interval_in_every_mode(small: tuple[Path, Path]) -> None:
    folder, _ = small
    with open_small(folder) as engine:
        engine.index()
        for mode in ("keyword", "semantic", "hybrid"):
            hits = engine.search(SearchRequest("kitten budget garden", mode=mode, top_k=10)).hits
            assert hits, mode
            assert all(0.0 <= h.score <= 1.0 for h in hits)
            assert [h.score for h in hits] == sorted((h.score for h in hits), reverse=True)


def test_filters_and_exclusions_apply_to_the_semantic_lane(small: tuple[Path, Path]) -> None:
    folder, _ = small
    with open_small(folder) as engine:
        engine.index()
        hits = engine.search(
            SearchRequest("growing vegetables", mode="semantic", filter=Filter(paths=["garden.md"]))
        ).hits
        assert [h.path for h in hits] == ["garden.md"]
        # The filter leaves only an unrelated note: below the cosine floor, so nothing.
        assert (
            engine.search(
                SearchRequest("pet cat", mode="semantic", filter=Filter(paths=["garden.md"]))
            ).hits
            == []
        )
        hits = engine.search(SearchRequest("pet cat -kitten", mode="semantic", top_k=10)).hits
        assert "felines.md" not in [h.path for h in hits]


def test_identical_text_is_embedded_once_and_renames_embed_nothing(
    small: tuple[Path, Path],
) -> None:
    folder, notes = small
    write(notes / "copy" / "budget.md", NOTES["budget.md"])
    with open_small(folder) as engine:
        first = engine.index()
        assert first.embedding is not None
        # 5 files, but the copied note's chunk has the same input as the original.
        assert first.embedding["embedded"] == 4
        (notes / "garden.md").rename(notes / "allotment.md")
        (notes / "felines.md").rename(notes / "copy" / "felines.md")
        second = engine.index()
        assert second.renamed == 2
        assert second.embedding is not None and second.embedding["embedded"] == 0
        status = engine.status()["embedding"]
        assert status["embedded"] == status["total"] == 5 and status["pending"] == 0


def test_edits_embed_only_the_changed_chunk(small: tuple[Path, Path]) -> None:
    folder, notes = small
    with open_small(folder) as engine:
        engine.index()
        write(notes / "redis.md", NOTES["redis.md"] + "\n## Eviction\n\nLRU drops cold keys.\n")
        report = engine.index()
        assert report.embedding is not None and report.embedding["embedded"] == 1
        assert (
            engine.search(SearchRequest("least recently used", mode="semantic")).hits[0].path
            == "redis.md"
        )


def test_keyword_only_skips_vectors_and_hybrid_says_so(small: tuple[Path, Path]) -> None:
    folder, _ = small
    with open_small(folder) as engine:
        report = engine.index(keyword_only=True)
        assert report.embedding is None
        assert engine.status()["embedding"]["embedded"] == 0
        response = engine.search(SearchRequest("redis expiry"))
        assert response.hits and set(response.lanes) == {"keyword"}
        assert any("no vectors" in w for w in response.warnings)
        with pytest.raises(ValueError, match="no vectors"):
            engine.search(SearchRequest("redis", mode="semantic"))
    with engine_for(folder, embeddings=False) as engine:
        with pytest.raises(ValueError, match=r"embedding\.enabled = false"):
            engine.search(SearchRequest("redis", mode="semantic"))
        assert engine.search(SearchRequest("redis")).warnings == []


def test_switching_model_re_embeds_and_never_mixes(small: tuple[Path, Path]) -> None:
    folder, _ = small
    with open_small(folder) as engine:
        engine.index()
    with open_small(folder, **{"embedding.model": "minilm-l6"}) as engine:
        report = engine.index()
        assert report.embedding is not None
        assert report.embedding["embedded"] == 4
        assert "changed from bge-small-en-v1/int8 to all-MiniLM-L6-v2/int8" in (
            report.embedding["notice"] or ""
        )
        assert engine.store.vector_models() == {"all-MiniLM-L6-v2/int8": 4}
        assert engine.search(SearchRequest("pet cat", mode="semantic")).hits[0].path == "felines.md"


def test_stopped_embedding_resumes_where_it_stopped(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    notes = {f"n{i}.md": f"# Note {i}\n\nParagraph number {i} about topic {i}.\n" for i in range(9)}
    folder = project(tmp_path, {"n": make_notes(tmp_path / "notes", notes)})
    monkeypatch.setattr(embedding_phase, "COMMIT_TEXTS", 4)
    stop = threading.Event()
    with open_small(folder) as engine:
        engine.index(keyword_only=True)
        # Keyword search works before any vector exists.
        assert engine.search(SearchRequest("paragraph", mode="keyword")).hits

        def progress(done: int, total: int, _: str) -> None:
            if done >= 4:
                stop.set()

        first = engine.embed(progress=progress, stop=stop)
        assert first.interrupted and first.embedded == 4
        assert engine.status()["embedding"]["embedded"] == 4
        second = engine.embed()
        assert second.embedded == 5 and not second.interrupted
        assert engine.status()["embedding"]["pending"] == 0


N_KILL = 400


def vectors_committed(db: Path) -> int:
    """Committed vectors, read without opening an engine (cheap enough to poll)."""
    if not db.exists():
        return 0
    try:
        with contextlib.closing(sqlite3.connect(f"file:{db}?mode=ro", uri=True)) as conn:
            return int(conn.execute("SELECT count(*) FROM vectors").fetchone()[0])
    except sqlite3.Error:  # schema not created yet
        return 0


def test_kill_9_during_embedding_leaves_a_consistent_index(tmp_path: Path) -> None:
    notes = {
        f"n{i:03d}.md": f"# Note {i}\n\n" + f"Sentence {i} about subject {i}. " * 20 + "\n"
        for i in range(N_KILL)
    }
    folder = project(tmp_path, {"n": make_notes(tmp_path / "notes", notes)})
    env = {**os.environ, "NOTESEEK_EMBEDDING__ENABLED": "true", "NOTESEEK_EMBEDDING__THREADS": "1"}
    proc = subprocess.Popen(
        [sys.executable, "-m", "noteseek.interfaces.cli", "index", "--json"],
        cwd=folder,
        env=env,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    db = folder / ".noteseek" / "index.db"
    deadline = time.monotonic() + 300
    try:
        # Wait until some vectors are committed, then kill without warning.
        while time.monotonic() < deadline:
            if vectors_committed(db) >= 64:
                break
            time.sleep(0.1)
        else:
            pytest.fail("no vectors were committed in time")
        proc.send_signal(signal.SIGKILL)
    finally:
        proc.wait(30)
    with open_small(folder) as engine:
        embedded, total = engine.store.vector_progress(engine.model_id)
        assert total == N_KILL and 64 <= embedded < N_KILL, (embedded, total)
        assert engine.search(SearchRequest("subject 7", mode="keyword")).hits
        report = engine.index()
        assert report.unchanged == N_KILL
        assert report.embedding is not None
        assert report.embedding["embedded"] == N_KILL - embedded
        assert engine.store.vector_progress(engine.model_id) == (N_KILL, N_KILL)


def test_cli_modes_batch_queries_and_status(tmp_path: Path) -> None:
    folder, _ = project(tmp_path, {"n": make_notes(tmp_path / "notes")}), None
    env = {"NOTESEEK_EMBEDDING__ENABLED": "true"}

    def cli(*args: str) -> subprocess.CompletedProcess[str]:
        return run_cli(list(args), folder, env)

    report = json.loads(cli("index", "--json").stdout)
    assert report["embedding"]["embedded"] == 4
    queries = tmp_path / "q.jsonl"
    queries.write_text(
        json.dumps({"_id": "1", "text": "pet cat"})
        + "\n"
        + json.dumps({"_id": "2", "text": "watering tomatoes"})
        + "\n"
    )
    for mode in ("keyword", "semantic", "hybrid"):
        lines = cli("search", "--queries", str(queries), "--mode", mode).stdout.splitlines()
        records = [json.loads(line) for line in lines]
        assert [r["query_id"] for r in records] == ["1", "2"]
        assert all(r["mode"] == mode for r in records)
        assert records[1]["results"][0]["path"] == "garden.md"
        if mode != "keyword":
            assert records[0]["results"][0]["path"] == "felines.md"
    explained = cli("search", "pet cat", "--explain").stdout
    assert "semantic: #1" in explained and "fused:" in explained
    status = json.loads(cli("status", "--json").stdout)
    assert status["embedding"]["embedded"] == status["embedding"]["total"] == 4


def test_hypothesis_search_fuses_keyword_matches_unless_told_not_to(
    small: tuple[Path, Path],
) -> None:
    folder, _ = small
    text = "EXPIRE gives a key a time to live, after which Redis removes it."
    with open_small(folder) as engine:
        engine.index()
        fused = engine.search(SearchRequest(text, hypothesis=True, top_k=3))
        assert fused.mode == "hybrid" and set(fused.lanes) == {"keyword", "semantic"}
        assert fused.hits[0].path == "redis.md"
    with open_small(folder, **{"search.hypothesis_keyword": False}) as engine:
        alone = engine.search(SearchRequest(text, hypothesis=True, top_k=3))
        assert alone.mode == "semantic" and set(alone.lanes) == {"semantic"}
        assert alone.hits[0].path == "redis.md"
