"""The graph lane (optional, ``search.graph_weight``): documents linked to the top results as a
third ranked list, fused with the others (``search/graph_lane.py``)."""

from __future__ import annotations

from typing import Any

import numpy as np
import numpy.typing as npt

from noteseek.config import SearchSettings
from noteseek.search.fusion import Fused
from noteseek.search.graph_lane import GraphHit, graph_lane
from noteseek.search.request import SearchResources
from noteseek.search.stages.registry import Lane, LaneStage, register
from noteseek.store.base import Catalog


@register
class GraphLane(LaneStage):
    name = "graph"
    setting = "search.graph_weight"

    def __init__(self) -> None:
        self.via: dict[int, GraphHit] = {}
        """Each rowid the lane found -> its graph hit (the seed and edge, for explain)."""

    @classmethod
    def named(cls, resources: SearchResources) -> GraphLane | None:
        wanted = resources.graph is not None and resources.settings.graph_weight > 0
        return cls() if wanted else None

    def weight(self, settings: SearchSettings) -> float:
        return settings.graph_weight

    def retrieve(
        self,
        fused: list[Fused],
        resources: SearchResources,
        query_vector: npt.NDArray[np.float32] | None,
    ) -> Lane:
        settings, vectors = resources.settings, resources.vectors
        assert resources.graph is not None  # named() checked it
        found, self.via = graph_lane(
            resources.store,
            resources.graph,
            fused,
            seeds=settings.graph_seeds,
            method=settings.graph_method,
            depth=settings.graph_depth,
            edge_weights=settings.graph_edge_weights,
            query_vector=query_vector,
            vectors=vectors.index if vectors else None,
        )
        return found

    def explain(self, item: Fused, store: Catalog) -> dict[str, Any]:
        hit = self.via.get(item.rowid)
        if hit is None:
            return {"rank": None, "note": "not linked to the top results"}
        seed = store.file_row(hit.seed)
        return {
            "rank": item.ranks.get("graph"),
            "score": round(hit.score, 6),
            "via": seed.doc_id if seed is not None else None,
            "edge": hit.edge,
        }
