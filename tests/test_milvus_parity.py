"""Ranking parity: the same corpus in SQLite and in Milvus Lite ranks alike for keyword search.

Milvus Lite answers a keyword query in about a second here (it is pure Python), so the test
runs one set's first queries only (``QUERIES``). scifact-dev is left to
``bench/milvus_parity.py`` (100 queries of each set are in docs/evaluation.md): its 5,183
abstracts took 142 s to index into Milvus Lite and its long claims 3.4 s a query, four minutes
of a suite that must stay under fifteen.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from noteseek.eval.parity import keyword_parity
from tests.conftest import shared

QUERIES = {"hugo-docs-kis": 30}


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
