"""A document's link neighbourhood (graph/neighbourhood.py): nearest first, capped."""

from __future__ import annotations

from noteseek.graph.links import DocInfo, LinkGraph, RawLink
from noteseek.graph.neighbourhood import neighbourhood


def test_the_neighbourhood_is_capped_nearest_first() -> None:
    docs = [DocInfo("r/hub.md", "r", "hub.md", "Hub")]
    links = []
    for i in range(100):
        docs.append(DocInfo(f"r/n{i:03}.md", "r", f"n{i:03}.md", f"N{i}"))
        links.append(RawLink("r/hub.md", f"n{i:03}", "wikilink", i + 1))
        links.append(RawLink(f"r/n{i:03}.md", "far", "wikilink", 1))
    graph = LinkGraph.build(docs, links)
    out = neighbourhood(graph, "r/hub.md", 2, cap=60)
    assert len(out["nodes"]) == 60
    assert out["truncated"] is True
    assert [n["depth"] for n in out["nodes"]] == [0] + [1] * 59  # the far ring waits its turn
    small = neighbourhood(graph, "r/n000.md", 2, cap=60)
    assert small["truncated"] is True  # n000 -> hub -> 100 others
    assert {n["id"] for n in small["nodes"]} >= {"r/n000.md", "r/hub.md", "?far"}
