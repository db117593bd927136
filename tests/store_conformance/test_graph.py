"""The graph role: writes mark their files, the kept edges, keys, nodes and communities."""

from __future__ import annotations

from collections.abc import Callable

from noteseek.store.base import Store
from noteseek.store.rows import EdgeRow
from noteseek.types import Link
from tests.store_conformance.build import corpus, fill, make_file


def test_every_write_marks_its_file_until_the_graph_takes_it_in(store: Store) -> None:
    ids = fill(store)
    assert store.graph_dirty() == sorted(ids.values())
    store.write_graph({}, {}, {}, sorted(ids.values()))
    assert store.graph_dirty() == []
    beta = ids["notes/job/beta.md"]
    store.update_file_stat(beta, 5, 6)  # a touched file (same content) changes no link
    assert store.graph_dirty() == []
    (added,) = fill(store, [make_file("notes", "job/delta.md", [("S", "new text")])]).values()
    store.write_file(make_file("notes", "job/beta.md", [("S", "x")]), 2.0, beta)
    assert store.graph_dirty() == sorted([beta, added])
    store.write_graph({}, {}, {}, [beta])  # taken in: unmarked, the others stay
    assert store.graph_dirty() == [added]
    store.write_graph({}, {}, {}, [added])
    store.delete_file(ids["notes/home/gamma.md"])
    assert store.graph_dirty() == [ids["notes/home/gamma.md"]]
    store.clear()
    assert set(store.graph_dirty()) == {*ids.values(), added}


def test_edges_keys_and_nodes_are_kept_per_file(store: Store) -> None:
    ids = fill(store)
    alpha, guide = ids["notes/job/alpha.md"], ids["docs/guide.md"]
    beta = ids["notes/job/beta.md"]
    guide_edges = [
        EdgeRow(guide, "notes/job/alpha.md", alpha, "links_to", 2, "Goals", "see it"),
        EdgeRow(guide, "?missing", None, "related", 5),
    ]
    beta_edges = [EdgeRow(beta, "notes/job/alpha.md", alpha, "links_to", 1)]
    store.write_graph(
        {guide: guide_edges, beta: beta_edges, 10**9: [EdgeRow(10**9, "?x", None, "links_to", 1)]},
        {guide: ["alpha", "missing"], beta: ["alpha"], 10**9: ["x"]},
        {guide: '["docs"]', alpha: '["notes"]', 10**9: None},
        list(ids.values()),
    )
    # By the linking file's doc_id (docs/ before notes/), then line; unknown files left out.
    assert store.graph_edges() == [*guide_edges, *beta_edges]
    assert store.graph_sources(["alpha"]) == {guide, beta}
    assert store.graph_sources(["missing", "nothing"]) == {guide}
    assert store.graph_sources([]) == set() and store.graph_sources(["x"]) == set()
    assert store.graph_nodes([guide, alpha, beta, 10**9]) == {guide: '["docs"]', alpha: '["notes"]'}
    # One document's edges: its own and those resolved to it, in the same order.
    assert store.document_edges(guide, "docs/guide.md") == guide_edges
    assert store.document_edges(alpha, "notes/job/alpha.md") == [guide_edges[0], *beta_edges]
    assert store.document_edges(beta, "nowhere.md") == beta_edges
    # A file's edges and keys are replaced as a whole; None forgets a node.
    store.write_graph({guide: []}, {guide: ["beta"]}, {alpha: None}, [])
    assert store.graph_edges() == beta_edges
    assert store.graph_sources(["alpha"]) == {beta} and store.graph_sources(["beta"]) == {guide}
    assert store.graph_nodes([alpha, guide]) == {guide: '["docs"]'}
    # A deleted file takes its edges and keys with it.
    store.delete_file(beta)
    assert store.graph_edges() == [] and store.graph_sources(["alpha"]) == set()


def test_resetting_the_graph_marks_every_file(store: Store) -> None:
    ids = fill(store)
    guide = ids["docs/guide.md"]
    store.write_graph(
        {guide: [EdgeRow(guide, "?a", None, "links_to", 1)]},
        {guide: ["a"]},
        {guide: "[]"},
        list(ids.values()),
    )
    store.reset_graph()
    assert store.graph_edges() == [] and store.graph_sources(["a"]) == set()
    assert store.graph_nodes([guide]) == {}
    assert store.graph_dirty() == sorted(ids.values())


def test_communities_are_kept_for_indexed_files(
    store: Store, second_handle: Callable[[], Store]
) -> None:
    ids = fill(store)
    assert store.stored_communities() is None and store.community_sizes() is None
    alpha, beta = ids["notes/job/alpha.md"], ids["notes/job/beta.md"]
    store.set_communities({alpha: 0, beta: 0, 10**9: 1})
    assert store.stored_communities() == {alpha: 0, beta: 0}
    assert second_handle().stored_communities() == {alpha: 0, beta: 0}
    assert store.community_sizes() == second_handle().community_sizes() == (1, 2)
    store.set_communities({alpha: 0, beta: 5})
    assert store.community_sizes() == (2, 2)
    store.delete_file(beta)
    assert store.stored_communities() == {alpha: 0} and store.community_sizes() == (1, 1)
    store.set_communities({})
    assert store.stored_communities() == {} and store.community_sizes() == (0, 0)  # none


def test_link_rows_of_some_files(store: Store) -> None:
    files = [
        *corpus(),
        make_file(
            "notes",
            "home/links.md",
            [("A", "x"), ("B", "y")],
            links=[Link("gamma", "wikilink", 1), Link("guide", "wikilink", 4)],
        ),
    ]
    ids = fill(store, files)
    everything = store.link_rows()
    links, guide = ids["notes/home/links.md"], ids["docs/guide.md"]
    assert store.link_rows(file_ids=[links]) == [
        ("notes/home/links.md", "gamma", "wikilink", 1, None, ("A",), None, ""),
        ("notes/home/links.md", "guide", "wikilink", 4, None, ("B",), None, ""),
    ]
    assert store.link_rows(file_ids=[links, guide, 10**9]) == everything
    assert store.link_rows(1, [links, guide]) == [everything[0], everything[2]]
    assert store.link_rows(file_ids=[]) == []
    assert store.link_rows(file_ids=list(range(2000, 3000))) == []  # more than one batch


def test_named_files_are_what_resolution_reads(store: Store) -> None:
    ids = fill(store)
    named = store.named_files()
    assert [(f.root, f.path) for f in named] == [
        ("docs", "guide.md"),
        ("notes", "home/gamma.md"),
        ("notes", "job/alpha.md"),
        ("notes", "job/beta.md"),
    ]
    alpha = named[2]
    assert (alpha.file_id, alpha.doc_id, alpha.title, alpha.aliases) == (
        ids["notes/job/alpha.md"],
        "notes/job/alpha.md",
        "Alpha plan",
        ("first",),
    )
    assert [f.root for f in store.named_files(exclude_kinds=["memory"])] == ["notes"] * 3
    assert store.named_files(exclude_kinds=["files", "memory"]) == []


def test_the_writing_transaction_reads_the_graph_as_it_leaves_it(store: Store) -> None:
    """A sync resets the graph and plans from it in one transaction: the writer reads its own
    marks, edges, keys, nodes and communities before they are committed."""
    ids = fill(store)
    alpha, guide = ids["notes/job/alpha.md"], ids["docs/guide.md"]
    edge = EdgeRow(guide, "notes/job/alpha.md", alpha, "links_to", 2)
    store.write_graph({guide: [edge]}, {guide: ["alpha"]}, {guide: "g"}, list(ids.values()))
    store.set_communities({alpha: 1, guide: 1})
    with store.transaction():
        store.reset_graph()
        assert store.graph_dirty() == sorted(ids.values())
        assert store.graph_edges() == [] and store.graph_sources(["alpha"]) == set()
        assert store.graph_nodes([guide]) == {}
        store.write_graph({guide: [edge]}, {guide: ["alpha"]}, {guide: "g2"}, [guide])
        assert store.graph_edges() == [edge] and store.graph_sources(["alpha"]) == {guide}
        assert store.graph_nodes([guide, alpha]) == {guide: "g2"}
        assert guide not in store.graph_dirty()
        (added,) = fill(store, [make_file("notes", "new.md", [("", "x")])]).values()
        store.write_file(make_file("docs", "guide.md", [("", "y")]), 2.0, guide)
        assert {guide, added} <= set(store.graph_dirty())  # written after it was taken in
        store.delete_file(alpha)
        assert store.stored_communities() == {guide: 1}
        store.set_communities({alpha: 2, guide: 3, added: 3})
        assert store.stored_communities() == {guide: 3, added: 3}
    assert store.graph_edges() == [edge]  # the linking file is still indexed
    assert store.graph_nodes([guide]) == {guide: "g2"}
    assert store.stored_communities() == {guide: 3, added: 3}
    assert set(store.graph_dirty()) == set(ids.values()) - {guide} | {guide, added}
