"""Evidence recall (noteseek.eval.evidence): loading a memory benchmark and scoring line ranges."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from noteseek.engine import SearchRequest
from noteseek.eval.evidence import (
    EvidenceLine,
    EvidenceSet,
    MemoryQuery,
    Retrieved,
    first_covering_rank,
    found_ranks,
    load_evidence_set,
    recall_report,
)
from tests.conftest import shared
from tests.helpers import engine_for, project

LOG = "memory/2024-01-02.md"
OTHER = "memory/2024-01-03.md"


def write_set(folder: Path, queries: list[dict[str, object]], evidence: list[str]) -> Path:
    folder.mkdir(parents=True, exist_ok=True)
    (folder / "queries.jsonl").write_text(
        "".join(json.dumps(q) + "\n" for q in queries), encoding="utf-8"
    )
    rows = ["query-id\tconversation\tfile\tline", *evidence]
    (folder / "evidence.tsv").write_text("\n".join(rows) + "\n", encoding="utf-8")
    return folder


def small_set(tmp_path: Path) -> EvidenceSet:
    return load_evidence_set(
        write_set(
            tmp_path / "set",
            [
                {"_id": "a-0", "text": "when?", "conversation": "conv-a", "category": 2},
                {"_id": "b-0", "text": "who?", "conversation": "conv-b", "category": 4},
                {"_id": "a-1", "text": "what and why?", "conversation": "conv-a", "category": 1},
                {"_id": "a-2", "text": "no answer", "conversation": "conv-a", "category": 4},
            ],
            [
                f"a-0\tconv-a\t{LOG}\t5",
                f"b-0\tconv-b\t{LOG}\t9",
                f"a-1\tconv-a\t{LOG}\t20",
                f"a-1\tconv-a\t{OTHER}\t3",
            ],
        )
    )


def test_loads_questions_and_their_answering_lines(tmp_path: Path) -> None:
    es = small_set(tmp_path)
    assert es.queries["a-1"] == MemoryQuery("a-1", "what and why?", "conv-a", 1)
    assert es.evidence["a-1"] == (EvidenceLine(LOG, 20), EvidenceLine(OTHER, 3))
    assert "a-2" not in es.evidence
    assert es.conversations == ["conv-a", "conv-b"]
    assert [q.query_id for q in es.queries_of("conv-a")] == ["a-0", "a-1", "a-2"]
    assert es.folder_of("conv-b") == tmp_path / "set" / "conv-b"


@pytest.mark.parametrize(
    ("queries", "evidence", "message"),
    [
        ([{"_id": "q", "text": "t", "conversation": "c"}], [], "queries.jsonl:1"),
        (["not json"], [], "queries.jsonl:1"),
        ([], ["q\tc\tf.md\t3"], "does not match a question"),
        (
            [{"_id": "q", "text": "t", "conversation": "c", "category": 1}],
            ["q\tother\tf.md\t3"],
            "does not match a question",
        ),
        (
            [{"_id": "q", "text": "t", "conversation": "c", "category": 1}],
            ["q\tc\tf.md\tthree"],
            "evidence.tsv:2: not an evidence row",
        ),
        (
            [{"_id": "q", "text": "t", "conversation": "c", "category": 1}],
            ["q\tc\tf.md\t0"],
            "does not match a question",
        ),
        (
            [{"_id": "q", "text": "t", "conversation": "c", "category": 1}],
            ["q\tc\tf.md"],
            "not an evidence row",
        ),
    ],
)
def test_a_damaged_set_is_refused_naming_the_line(
    tmp_path: Path, queries: list[object], evidence: list[str], message: str
) -> None:
    folder = tmp_path / "set"
    folder.mkdir()
    (folder / "queries.jsonl").write_text(
        "".join((q if isinstance(q, str) else json.dumps(q)) + "\n" for q in queries),
        encoding="utf-8",
    )
    rows = ["query-id\tconversation\tfile\tline", *evidence]
    (folder / "evidence.tsv").write_text("\n".join(rows) + "\n", encoding="utf-8")
    with pytest.raises(ValueError, match=message):
        load_evidence_set(folder)


def test_a_missing_file_is_not_an_empty_benchmark(tmp_path: Path) -> None:
    with pytest.raises(FileNotFoundError):
        load_evidence_set(tmp_path)


def test_a_result_covers_lines_of_its_own_file_within_its_range() -> None:
    result = Retrieved(LOG, 4, 6)
    assert result.covers(EvidenceLine(LOG, 4))
    assert result.covers(EvidenceLine(LOG, 6))
    assert not result.covers(EvidenceLine(LOG, 3))
    assert not result.covers(EvidenceLine(LOG, 7))
    assert not result.covers(EvidenceLine(OTHER, 5))


def test_first_covering_rank_is_one_based_and_any_line_counts() -> None:
    evidence = [EvidenceLine(LOG, 20), EvidenceLine(OTHER, 3)]
    results = [Retrieved(LOG, 1, 10), Retrieved(OTHER, 1, 2), Retrieved(OTHER, 3, 3)]
    assert first_covering_rank(results, evidence) == 3
    assert first_covering_rank(results[:2], evidence) is None
    assert first_covering_rank([], evidence) is None


def test_recall_at_k_overall_and_per_category(tmp_path: Path) -> None:
    es = small_set(tmp_path)
    run = {
        "a-0": [Retrieved(LOG, 1, 2), Retrieved(LOG, 5, 5)],  # found at rank 2
        "a-1": [Retrieved(OTHER, 3, 4)],  # found at rank 1 (its second line)
        "b-0": [Retrieved(OTHER, 9, 9), Retrieved(LOG, 10, 12)],  # never found
    }
    report = recall_report(run, es, ks=(1, 2))
    assert report.queries == 3
    assert report.recall == {1: pytest.approx(1 / 3), 2: pytest.approx(2 / 3)}
    assert report.per_category == {1: {1: 1.0, 2: 1.0}, 2: {1: 0.0, 2: 1.0}, 4: {1: 0.0, 2: 0.0}}
    assert report.category_queries == {1: 1, 2: 1, 4: 1}
    assert found_ranks(run, es) == {"a-0": 2, "a-1": 1, "b-0": None}
    out = report.to_dict()
    assert out["recall"] == {"@1": 0.3333, "@2": 0.6667}
    assert out["per_category"]["2"] == {"queries": 1, "@1": 0.0, "@2": 1.0}


def test_questions_without_evidence_are_left_out_and_listed(tmp_path: Path) -> None:
    es = small_set(tmp_path)
    report = recall_report({"a-0": [Retrieved(LOG, 5, 5)], "a-2": []}, es, ks=(10,))
    assert report.queries == 1
    assert report.recall == {10: 1.0}
    assert report.unjudged == ["a-2"]
    assert found_ranks({"a-2": []}, es) == {}


def test_recall_within_a_character_budget_and_the_characters_read(tmp_path: Path) -> None:
    es = small_set(tmp_path)
    run = {
        # the answer is the third result: within 1,000 characters only when the first two fit
        "a-0": [Retrieved(LOG, 1, 1, 400), Retrieved(LOG, 2, 2, 400), Retrieved(LOG, 5, 5, 150)],
        # a first result longer than the budget still counts: something is always read
        "b-0": [Retrieved(LOG, 9, 9, 5000)],
        "a-1": [Retrieved(LOG, 1, 1, 900), Retrieved(LOG, 20, 20, 200)],
    }
    report = recall_report(run, es, ks=(1, 3), budgets=(900, 1000))
    assert report.budget_recall == {900: pytest.approx(1 / 3), 1000: pytest.approx(2 / 3)}
    assert report.mean_chars == {1: pytest.approx(6300 / 3), 3: pytest.approx(7050 / 3)}
    assert report.to_dict()["budget_recall"] == {"900_chars": 0.3333, "1000_chars": 0.6667}


def test_a_run_and_a_set_that_disagree_are_an_error(tmp_path: Path) -> None:
    es = small_set(tmp_path)
    with pytest.raises(ValueError, match="not in the evidence set: zz"):
        recall_report({"zz": []}, es)
    with pytest.raises(ValueError, match="at least 1"):
        recall_report({}, es, ks=(0,))
    with pytest.raises(ValueError, match="at least 1"):
        recall_report({}, es, budgets=(0,))


# Measured on conv-26 (149 questions), keyword mode, default settings (900-character chunks):
# recall@10 0.799 (the conv-26 keyword row of bench/memory_recall.py). The floor leaves about
# seven questions of margin, so a ranking change that costs a few questions does not fail here,
# while a broken line range or chunker does.
CONV_26_KEYWORD_RECALL10_FLOOR = 0.75


def test_keyword_evidence_recall_on_a_real_locomo_conversation(tmp_path: Path) -> None:
    data = shared("memory/locomo-dev")
    es = load_evidence_set(data)
    folder = project(tmp_path, {"conv26": es.folder_of("conv-26")})
    queries = es.queries_of("conv-26")
    assert len(queries) == 149
    with engine_for(folder) as engine:
        engine.index()
        run = {
            q.query_id: [
                Retrieved(h.path, h.start_line, h.end_line)
                for h in engine.search(
                    SearchRequest(q.text, top_k=10, mode="keyword", snippets=False)
                ).hits
            ]
            for q in queries
        }
    report = recall_report(run, es, ks=(5, 10))
    assert report.queries == 149
    assert report.recall[10] >= CONV_26_KEYWORD_RECALL10_FLOOR, report.to_dict()
    assert report.recall[5] <= report.recall[10]
