"""Ranking parity: the same corpus in SQLite and in Milvus Lite ranks alike for keyword search.

Milvus Lite answers a keyword query in about a second here (it is pure Python), so each set
runs its first QUERIES queries; ``bench/milvus_parity.py`` runs any number.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from noteseek.eval.parity import keyword_parity
from tests.conftest import shared

QUERIES = 50


@pytest.mark.parametrize("dataset", ["scifact-dev", "hugo-docs-kis"])
def test_keyword_ranking_matches_sqlite(tmp_path: Path, dataset: str) -> None:
    folder = shared(dataset)
    backends = {"sqlite": {}, "milvus-lite": {"milvus.uri": str(tmp_path / "milvus.db")}}
    parity = keyword_parity(folder, tmp_path, backends, QUERIES)
    print(json.dumps(parity.to_dict()))
    assert parity.queries == QUERIES
    assert parity.ndcg["sqlite"] > 0.3  # a real ranking, not two empty ones
    assert parity.overlap >= 0.9, parity.to_dict()
    assert parity.ndcg_difference <= 0.01, parity.to_dict()
