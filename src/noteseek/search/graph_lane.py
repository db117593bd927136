"""The graph lane: documents linked to the top results, as a third ranked list (off by default).

Seeds are the first ``search.graph_seeds`` documents of the fused keyword/semantic ranking.

* ``neighbours`` (default method): every document within ``search.graph_depth`` links of a seed
  (either direction) scores ``0.5 x seed score x edge weight``, halved again per extra hop,
  summed over the seeds that reach it; edge weights by type come from
  ``search.graph_edge_weights``.
* ``ppr``: personalised PageRank over the undirected link graph, restarting at the seeds in
  proportion to their scores (``graph/ppr.py``); documents ranked by visit probability.

Seeds themselves are left out (they are already at the top). Each document is represented by
one section: the best-ranked one already fused, else the section whose embedding is closest to
the query, else its first section. The lane is fused by RRF with weight
``search.graph_weight``; ``--explain`` shows its rank, score and the seed it came through.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field

import numpy as np
import numpy.typing as npt

from noteseek.graph.links import LinkGraph
from noteseek.graph.ppr import WalkGraph
from noteseek.search.fusion import Fused
from noteseek.store.base import Chunks, VectorIndex

LANE_SIZE = 20
"""Documents the lane returns at most."""


@dataclass
class GraphView:
    """The link graph over file ids (what the pipeline holds), built once per index change."""

    adjacency: dict[int, list[tuple[int, str]]] = field(default_factory=dict)
    """file id -> (linked file id, edge type), both directions, resolved links only."""
    walk: WalkGraph | None = None

    @classmethod
    def build(cls, graph: LinkGraph, file_ids: Mapping[str, int]) -> GraphView:
        adjacency: dict[int, list[tuple[int, str]]] = defaultdict(list)
        pairs: list[tuple[str, str]] = []
        for edge in graph.edges:
            a, b = file_ids.get(edge.source), file_ids.get(edge.target)
            if a is None or b is None or a == b:
                continue
            adjacency[a].append((b, edge.type))
            adjacency[b].append((a, edge.type))
            pairs.append((str(a), str(b)))
        return cls(dict(adjacency), WalkGraph.build(pairs))


@dataclass
class GraphHit:
    file_id: int
    score: float
    seed: int
    """The file id of the seed that contributed most."""
    edge: str
    best: float = 0.0
    """The largest single contribution (the one ``seed`` and ``edge`` name)."""


def related_documents(
    view: GraphView,
    seeds: Sequence[tuple[int, float]],
    *,
    method: str,
    depth: int,
    edge_weights: Mapping[str, float],
) -> list[GraphHit]:
    """Documents related to the seeds ((file id, fused score), best first), best first."""
    seed_ids = {f for f, _ in seeds}
    found: dict[int, GraphHit] = {}
    if method == "ppr":
        if view.walk is None:
            return []
        visits = view.walk.personalised({str(f): s for f, s in seeds})
        for name, p in visits.items():
            fid = int(name)
            if fid not in seed_ids:
                found[fid] = GraphHit(fid, p, seeds[0][0], "ppr")
    else:
        for seed, score in seeds:
            frontier = {seed: 0.5 * score}
            for _ in range(depth):
                following: dict[int, float] = {}
                for node, value in frontier.items():
                    for other, kind in view.adjacency.get(node, ()):
                        gain = value * edge_weights.get(kind, 1.0)
                        if other in seed_ids or gain <= 0:
                            continue
                        hit = found.get(other)
                        if hit is None:
                            found[other] = GraphHit(other, gain, seed, kind, gain)
                        else:
                            hit.score += gain
                            if gain > hit.best:  # the largest share names the path
                                hit.seed, hit.edge, hit.best = seed, kind, gain
                        following[other] = max(following.get(other, 0.0), gain * 0.5)
                frontier = following
    return sorted(found.values(), key=lambda h: (-h.score, h.file_id))[:LANE_SIZE]


def graph_lane(
    store: Chunks,
    view: GraphView,
    fused: list[Fused],
    *,
    seeds: int,
    method: str,
    depth: int,
    edge_weights: Mapping[str, float],
    query_vector: npt.NDArray[np.float32] | None,
    vectors: VectorIndex | None,
) -> tuple[list[tuple[int, float]], dict[int, GraphHit]]:
    """The lane as (chunk rowid, score) best first, and each rowid's graph hit (for explain)."""
    head = fused[: max(50, seeds * 10)]
    files = store.chunk_files([f.rowid for f in head])
    seed_list: list[tuple[int, float]] = []
    best_chunk: dict[int, int] = {}
    for item in head:
        fid = files.get(item.rowid)
        if fid is None:
            continue
        best_chunk.setdefault(fid, item.rowid)
        if len(seed_list) < seeds and fid not in {f for f, _ in seed_list}:
            seed_list.append((fid, item.score))
    if not seed_list:
        return [], {}
    hits = related_documents(view, seed_list, method=method, depth=depth, edge_weights=edge_weights)
    lane: list[tuple[int, float]] = []
    via: dict[int, GraphHit] = {}
    for hit in hits:
        rowid = best_chunk.get(hit.file_id) or _representative(
            store, hit.file_id, query_vector, vectors
        )
        if rowid is None:
            continue
        lane.append((rowid, hit.score))
        via[rowid] = hit
    return lane, via


def _representative(
    store: Chunks,
    file_id: int,
    query_vector: npt.NDArray[np.float32] | None,
    vectors: VectorIndex | None,
) -> int | None:
    rowids = store.file_chunk_rowids(file_id)
    if not rowids:
        return None
    if query_vector is not None and vectors is not None and len(rowids) > 1:
        found = vectors.vectors_for(rowids)
        if found:
            return max(found, key=lambda r: float(found[r] @ query_vector))
    return rowids[0]
