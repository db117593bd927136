"""Communities of the link graph (Louvain, networkx): groups of notes that link among
themselves more than to the rest.

The graph is taken as undirected, one edge per linked pair of documents weighted by the number
of links between them; placeholders and self-links are left out. Louvain is seeded, so the
same graph always gives the same communities. Communities are numbered by size, largest
first; a document with no resolved links belongs to none.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable

from noteseek.graph.links import LinkGraph

SEED = 7


def communities(graph: LinkGraph, resolution: float = 1.0) -> dict[str, int]:
    """doc_id -> community number, for documents with at least one resolved link."""
    return communities_of_pairs(
        ((e.source, e.target) for e in graph.edges if e.resolved), resolution
    )


def communities_of_pairs(
    pairs: Iterable[tuple[str, str]], resolution: float = 1.0
) -> dict[str, int]:
    """:func:`communities` of the resolved edges ``(source, target)``, in the graph's order
    (Louvain's seeded shuffle follows the order nodes were added in)."""
    import networkx as nx

    weights: Counter[tuple[str, str]] = Counter()
    for source, target in pairs:
        if source != target:
            a, b = sorted((source, target))
            weights[(a, b)] += 1
    g = nx.Graph()
    g.add_weighted_edges_from((a, b, w) for (a, b), w in weights.items())
    if g.number_of_edges() == 0:
        return {}
    found = nx.community.louvain_communities(g, weight="weight", resolution=resolution, seed=SEED)
    ordered = sorted(found, key=lambda c: (-len(c), min(c)))
    return {doc: i for i, members in enumerate(ordered) for doc in members}
