"""A document's link neighbourhood: the documents within one or two links, nearest first."""

from __future__ import annotations

from typing import Any

from noteseek.graph.links import LinkGraph

MAX_GRAPH_NODES = 60
"""Nodes in a neighbourhood: the centre, then the nearest first."""


def neighbourhood(
    graph: LinkGraph, center: str, depth: int, cap: int = MAX_GRAPH_NODES
) -> dict[str, Any]:
    """Documents within ``depth`` links of ``center`` (either direction), nearest first.

    Placeholders (notes that do not exist yet, ids starting with ``?``) are leaves. At most
    ``cap`` nodes; the edges are every link between the nodes shown, one per (source, target,
    type). Returns ``{"nodes": [...], "edges": [...], "truncated": bool}``.
    """
    depths: dict[str, int] = {center: 0}
    frontier = [center]
    truncated = False
    for level in range(1, depth + 1):
        found: list[str] = []
        for node in frontier:
            if node.startswith("?"):
                continue
            around = {e.target for e in graph.outgoing(node)}
            around |= {e.source for e in graph.backlinks(node)}
            for other in sorted(around - depths.keys()):
                if len(depths) >= cap:
                    truncated = True
                    break
                depths[other] = level
                found.append(other)
        frontier = found
    edges: dict[tuple[str, str, str], dict[str, str]] = {}
    for node in depths:
        for e in graph.outgoing(node):
            key = (e.source, e.target, e.type)
            if e.target in depths and key not in edges:
                edges[key] = {"source": e.source, "target": e.target, "type": e.type}
    nodes = []
    for node, level in depths.items():
        doc = graph.docs.get(node)
        nodes.append(
            {
                "id": node,
                "title": doc.title if doc else node[1:],
                "path": doc.path if doc else None,
                "placeholder": doc is None,
                "center": node == center,
                "depth": level,
            }
        )
    return {"nodes": nodes, "edges": list(edges.values()), "truncated": truncated}
