"""Ranking parity: the same corpus in SQLite and in Milvus Lite ranks alike for keyword search.

Milvus Lite answers a keyword query in about a second here (it is pure Python; scifact-dev's
long claims take longest), so each set runs its first queries only (``QUERIES``);
``bench/milvus_parity.py`` runs any number (100 of each are in docs/evaluation.md).
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from noteseek.eval.parity import keyword_parity
from tests.conftest import shared

QUERIES = {"scifact-dev": 25, "hugo-docs-kis": 50}


@pytest.mark.parametrize("dataset", list(QUERIES))
def test_keyword_ranking_matches_sqlite(tmp_path: Path, dataset: str) -> None:
    folder = shared(dataset)
    backends = {"sqlite": {}, "milvus-lite": {"milvus.uri": str(tmp_path / "milvus.db")}}
    parity = keyword_parity(folder, tmp_path, backends, QUERIES[dataset])
    print(json.dumps(parity.to_dict()))
    assert parity.queries == QUERIES[dataset]
    assert parity.ndcg["sqlite"] > 0.3  # a real ranking, not two empty ones
    assert parity.overlap >= 0.9, parity.to_dict()
    assert parity.ndcg_difference <= 0.01, parity.to_dict()
