"""`noteseek eval` end to end: tiny BEIR and vault datasets through the real CLI subprocess.

The datasets are built so the expected scores are known by hand: each query's words occur in
exactly one document, which is the relevant one (a perfect ranking, every metric 1.0), except
one query whose relevant document shares no word with it (it scores 0 on every metric). With
three queries, every mean metric is therefore 2/3.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from tests.helpers import run_cli, write

DOCS = {
    "d1": ("Sourdough starter", "Feed the sourdough starter flour and water every morning."),
    "d2": ("Bicycle chain", "Lubricate the bicycle chain after riding through rain."),
    "d3": ("Tomato seedlings", "Transplant tomato seedlings once the frost has passed."),
    "d/4": ("Kayak paddling", "A kayak paddle stroke starts with torso rotation."),
}
QUERIES = {
    "q1": "sourdough starter",
    "q2": "bicycle chain lubricate",
    "q3": "quantum chromodynamics",  # judged relevant: d3, which shares no word with it
    "q4": "unjudged query is ignored",
}
QRELS = [("q1", "d1", 1), ("q2", "d2", 1), ("q3", "d3", 1)]


def beir(tmp: Path) -> Path:
    folder = tmp / "tinybeir"
    lines = [json.dumps({"_id": k, "title": t, "text": x}) for k, (t, x) in DOCS.items()]
    write(folder / "corpus.jsonl", "\n".join(lines) + "\n")
    queries = [json.dumps({"_id": k, "text": v}) for k, v in QUERIES.items()]
    write(folder / "queries.jsonl", "\n".join(queries) + "\n")
    rows = ["query-id\tcorpus-id\tscore", *(f"{q}\t{d}\t{s}" for q, d, s in QRELS)]
    write(folder / "qrels" / "test.tsv", "\n".join(rows) + "\n")
    return folder


def vault_set(tmp: Path) -> Path:
    folder = tmp / "tinyvault"
    for key, (title, text) in DOCS.items():
        write(folder / "vault" / "notes" / f"{key.replace('/', '-')}.md", f"# {title}\n\n{text}\n")
    queries = [json.dumps({"_id": k, "text": v}) for k, v in QUERIES.items()]
    write(folder / "queries.jsonl", "\n".join(queries) + "\n")
    rows = ["query-id\tcorpus-id\tscore"]
    rows += [f"{q}\tnotes/{d}.md\t{s}" for q, d, s in QRELS]
    write(folder / "qrels" / "dev.tsv", "\n".join(rows) + "\n")
    return folder


def eval_json(args: list[str], cwd: Path) -> dict:
    return json.loads(run_cli(["eval", *args, "--json"], cwd).stdout)


def assert_two_thirds(metrics: dict) -> None:
    for key in ("ndcg@10", "recall@10", "recall@100", "mrr@10"):
        assert metrics[key] == pytest.approx(2 / 3, abs=1e-4), (key, metrics)
    assert 0 <= metrics["p50_ms"] <= metrics["p95_ms"]


def test_beir_keyword_json_shape_and_scores(tmp_path: Path) -> None:
    data = eval_json([str(beir(tmp_path)), "--mode", "keyword"], tmp_path)
    assert data["dataset"] == "tinybeir"
    assert data["split"] == "test"
    assert data["queries"] == 3  # q4 has no judgments
    assert list(data["modes"]) == ["keyword"]
    assert_two_thirds(data["modes"]["keyword"])
    assert data["index"]["documents"] == 4
    assert "per_query" not in data


def test_vault_dataset_scores_by_relative_path(tmp_path: Path) -> None:
    data = eval_json([str(vault_set(tmp_path)), "-m", "keyword"], tmp_path)
    assert data["split"] == "dev"  # the only split present
    assert_two_thirds(data["modes"]["keyword"])


def test_save_keeps_per_query_scores_and_compare_reports_differences(tmp_path: Path) -> None:
    dataset = beir(tmp_path)
    saved = tmp_path / "run.json"
    index = tmp_path / "ix"
    args = [str(dataset), "-m", "keyword", "--index", str(index)]
    eval_json([*args, "--save", str(saved)], tmp_path)
    full = json.loads(saved.read_text(encoding="utf-8"))
    per_query = full["per_query"]["keyword"]
    assert set(per_query) == {"q1", "q2", "q3"}
    assert per_query["q1"]["ndcg@10"] == 1.0
    assert per_query["q3"]["ndcg@10"] == 0.0
    assert (index / "index").is_dir()  # --index keeps the index

    # An "old" run that missed q1 and q2: the new one is better by 2/3 on every metric.
    old = json.loads(saved.read_text(encoding="utf-8"))
    for qid in ("q1", "q2"):
        old["per_query"]["keyword"][qid] = dict.fromkeys(per_query[qid], 0.0)
    old_file = tmp_path / "old.json"
    old_file.write_text(json.dumps(old), encoding="utf-8")
    data = eval_json([*args, "--compare", str(old_file)], tmp_path)
    ndcg = data["compare"]["keyword"]["metrics"]["ndcg@10"]
    assert data["compare"]["keyword"]["queries"] == 3
    assert ndcg["old"] == 0.0
    assert ndcg["new"] == pytest.approx(0.6667, abs=1e-4)
    assert ndcg["diff"] == pytest.approx(0.6667, abs=1e-4)
    # Differences (1, 1, 0): of the four sign patterns of the two non-zero ones, two (all
    # plus, all minus) are as far from 0 as observed, so the two-sided p-value is about 1/2.
    assert 0.45 < ndcg["p_value"] < 0.55

    # Compared with itself: no difference, p = 1.
    same = eval_json([*args, "--compare", str(saved)], tmp_path)
    assert same["compare"]["keyword"]["metrics"]["ndcg@10"]["diff"] == 0.0
    assert same["compare"]["keyword"]["metrics"]["ndcg@10"]["p_value"] == 1.0


def test_table_output_names_every_metric(tmp_path: Path) -> None:
    out = run_cli(["eval", str(beir(tmp_path)), "-m", "keyword"], tmp_path).stdout
    for label in ("nDCG@10", "Recall@10", "Recall@100", "MRR@10", "p50 ms", "p95 ms"):
        assert label in out
    assert "0.6667" in out


def test_limit_runs_the_first_queries(tmp_path: Path) -> None:
    data = eval_json([str(beir(tmp_path)), "-m", "keyword", "--limit", "2"], tmp_path)
    assert data["queries"] == 2
    assert data["modes"]["keyword"]["ndcg@10"] == 1.0


@pytest.mark.parametrize(
    ("make_args", "message"),
    [
        (lambda d, t: [str(d), "-m", "fuzzy"], "unknown mode 'fuzzy'"),
        (lambda d, t: [str(d), "--split", "train"], "no qrels/train.tsv (have: test)"),
        (lambda d, t: [str(t / "nowhere")], "is not a folder"),
        (lambda d, t: [str(d), "--compare", str(t / "missing.json")], "cannot read"),
        (lambda d, t: [str(d / "qrels")], "no qrels/ folder"),
    ],
)
def test_bad_arguments_get_a_clear_error(tmp_path: Path, make_args, message: str) -> None:
    dataset = beir(tmp_path)
    proc = run_cli(["eval", *make_args(dataset, tmp_path)], tmp_path, code=2)
    assert message in proc.stderr
    assert "Traceback" not in proc.stderr


def test_compare_needs_per_query_scores(tmp_path: Path) -> None:
    dataset = beir(tmp_path)
    plain = tmp_path / "plain.json"
    plain.write_text(run_cli(["eval", str(dataset), "-m", "keyword", "--json"], tmp_path).stdout)
    proc = run_cli(
        ["eval", str(dataset), "-m", "keyword", "--compare", str(plain)], tmp_path, code=2
    )
    assert "--save" in proc.stderr


@pytest.mark.embeddings
def test_all_three_modes_with_the_bundled_model(tmp_path: Path) -> None:
    data = eval_json([str(beir(tmp_path))], tmp_path)
    assert list(data["modes"]) == ["keyword", "semantic", "hybrid"]
    assert data["settings"]["embedding_model"].startswith("bge-small-en")
    assert data["index"]["embedding"]["embedded"] == data["index"]["chunks"]
    for mode in ("keyword", "semantic", "hybrid"):
        metrics = data["modes"][mode]
        # q1 and q2 are easy in every mode; q3 may be found by meaning only by luck.
        assert metrics["recall@100"] >= 2 / 3 - 1e-4, (mode, metrics)
        assert metrics["ndcg@10"] >= 0.5, (mode, metrics)
