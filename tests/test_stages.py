"""The optional stages: none runs by default; each runs when its setting names it."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import replace
from typing import Any, cast

import numpy as np
import numpy.typing as npt

from noteseek.config import SearchSettings
from noteseek.search.concepts import ConceptVocabulary
from noteseek.search.graph_lane import GraphView
from noteseek.search.request import SearchResources
from noteseek.search.stages import Chosen, chosen, registered


class Reranker:
    def scores(self, query: str, passages: Sequence[str]) -> npt.NDArray[np.float32]:
        return np.zeros(len(passages), dtype=np.float32)


def resources(**settings: Any) -> SearchResources:
    return SearchResources(
        cast(Any, None), cast(Any, None), SearchSettings().model_copy(update=settings)
    )


def names(picked: Chosen) -> list[str]:
    groups = (picked.query, picked.weights, picked.lanes, picked.post, picked.duplicates)
    return [stage.name for group in groups for stage in group]


def test_the_default_pipeline_runs_no_optional_stage() -> None:
    assert names(chosen(resources())) == []


def test_each_optional_stage_runs_when_its_setting_names_it() -> None:
    vocabulary = ConceptVocabulary([], [], np.zeros((0, 0), dtype=np.float32))
    cases = {
        "dedupe": resources(dedupe=True),
        "near-duplicates": resources(near_duplicate=0.8),
        "semantic-duplicates": resources(semantic_duplicate=0.9),
        "expansion": replace(resources(expansion_terms=3), concepts=vocabulary),
        "graph": replace(resources(graph_weight=0.1), graph=GraphView()),
        "score-aware": resources(fusion="score-aware"),
        "mmr": resources(mmr_lambda=0.7),
        "rerank": replace(resources(), reranker=Reranker()),
    }
    assert set(registered()) == set(cases)
    for name, named in cases.items():
        assert names(chosen(named)) == [name]
    # Named, but what it needs is not there (the engine hands it out only when it can run).
    assert names(chosen(resources(graph_weight=0.1, expansion_terms=3))) == []
    every = replace(
        resources(
            dedupe=True,
            near_duplicate=0.8,
            semantic_duplicate=0.9,
            expansion_terms=3,
            graph_weight=0.1,
            fusion="score-aware",
            mmr_lambda=0.7,
        ),
        concepts=vocabulary,
        graph=GraphView(),
        reranker=Reranker(),
    )
    picked = chosen(every)
    assert [s.name for s in picked.post] == ["mmr", "rerank"]  # MMR first, as before
    assert picked.needs_query_vector
