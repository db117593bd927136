"""Catalog: meta values, roots, files and their states, renames, problems, runs, stats."""

from __future__ import annotations

from dataclasses import replace

import pytest

from noteseek.graph.sync import sync_graph
from noteseek.store.base import Store
from noteseek.store.errors import WriteRejected
from noteseek.types import Filters
from tests.store_conformance.build import (
    MODEL,
    ROOTS,
    WEIGHTS,
    corpus,
    fill,
    make_file,
    store_vectors,
    words,
)


def test_manifest_and_meta_round_trip(store: Store) -> None:
    assert store.manifest() == {}
    assert store.meta("embedding_model") is None
    store.set_manifest({"spec_version": 3, "analyzer": {"language": "en"}})
    store.set_meta("embedding_model", "m1")
    assert store.manifest() == {"spec_version": 3, "analyzer": {"language": "en"}}
    assert store.meta("embedding_model") == "m1"
    store.set_manifest({"spec_version": 4})
    store.set_meta("embedding_model", "m2")
    assert store.manifest() == {"spec_version": 4}
    assert store.meta("embedding_model") == "m2"


def test_roots_are_added_once_and_moving_one_drops_its_files(store: Store) -> None:
    ids = fill(store)
    assert store.roots() == {"docs": "/data/docs", "notes": "/data/notes"}
    assert store.ensure_root("notes", ROOTS["notes"]) == store.ensure_root("notes", ROOTS["notes"])
    assert len(list(store.iter_files())) == len(ids)
    store.ensure_root("notes", "/elsewhere/notes")
    assert store.roots()["notes"] == "/elsewhere/notes"
    assert [f.doc_id for f in store.iter_files()] == ["docs/guide.md"]
    assert store.file_states("notes") == {}


def test_a_root_records_its_kind_and_changing_it_drops_its_files(store: Store) -> None:
    fill(store)
    assert store.root_kinds() == {"docs": "memory", "notes": "files"}
    store.ensure_root("docs", ROOTS["docs"], "files")
    assert store.root_kinds() == {"docs": "files", "notes": "files"}
    assert store.roots()["docs"] == ROOTS["docs"]
    assert not [f for f in store.iter_files() if f.root == "docs"]
    assert [f for f in store.iter_files() if f.root == "notes"]


def test_written_files_read_back(store: Store) -> None:
    ids = fill(store)
    alpha = store.file_row(ids["notes/job/alpha.md"])
    assert alpha is not None
    assert (alpha.root, alpha.root_path, alpha.path, alpha.doc_id) == (
        "notes",
        "/data/notes",
        "job/alpha.md",
        "notes/job/alpha.md",
    )
    assert alpha.title == "Alpha plan"
    assert alpha.aliases == ["first"]
    assert alpha.tags == ["project/atlas", "urgent"]
    assert alpha.frontmatter == {
        "status": "draft",
        "owner": "ana",
        "public": True,
        "author": "Ana Lima",
        "author_email": "ana@example.org",
        "files": ["src/auth.py", "docs/auth.md"],
    }
    assert (alpha.mtime_ns, alpha.size, alpha.indexed_at) == (1, 100, 1.0)
    assert alpha.warnings == []
    assert store.file_row(10**9) is None
    assert [f.doc_id for f in store.iter_files()] == [
        "docs/guide.md",
        "notes/home/gamma.md",
        "notes/job/alpha.md",
        "notes/job/beta.md",
    ]
    assert [f.doc_id for f in store.iter_files("docs")] == ["docs/guide.md"]
    assert [f.doc_id for f in store.iter_files("nowhere")] == []
    assert sorted(store.document_dates()) == sorted(p.record.modified for p in corpus())
    notes = [p.record.modified for p in corpus() if p.record.root == "notes"]
    assert sorted(store.document_dates(exclude_kinds=["memory"])) == sorted(notes)
    everything = sorted(p.record.modified for p in corpus())
    assert sorted(store.document_dates(exclude_kinds=["git", "none"])) == everything  # no such root


def test_find_files_by_path_doc_id_and_root(store: Store) -> None:
    fill(store)
    twin = make_file("docs", "job/alpha.md", [("", "twin")])
    with store.transaction():
        store.write_file(twin, 2.0, None)
    both = store.find_files("job/alpha.md")
    assert [(f.root, f.path) for f in both] == [
        ("docs", "job/alpha.md"),
        ("notes", "job/alpha.md"),
    ]
    assert [f.root for f in store.find_files("job/alpha.md", root="notes")] == ["notes"]
    assert [f.doc_id for f in store.find_files("notes/job/beta.md")] == ["notes/job/beta.md"]
    assert store.find_files("nothing.md") == []
    assert store.find_files("guide.md", root="notes") == []


def test_file_states_and_stat_updates(store: Store) -> None:
    ids = fill(store)
    states = store.file_states("notes")
    assert sorted(states) == ["home/gamma.md", "job/alpha.md", "job/beta.md"]
    beta = states["job/beta.md"]
    assert (beta.file_id, beta.mtime_ns, beta.size) == (ids["notes/job/beta.md"], 1, 100)
    assert beta.content_hash == corpus()[1].record.content_hash
    with store.transaction():
        store.update_file_stat(beta.file_id, 99, 123)
    again = store.file_states("notes")["job/beta.md"]
    assert (again.mtime_ns, again.size, again.content_hash) == (99, 123, beta.content_hash)


def test_rewriting_a_file_replaces_all_its_rows(store: Store) -> None:
    ids = fill(store)
    fid = ids["docs/guide.md"]
    changed = make_file("docs", "guide.md", [("Install", "kiwi only")], title="Guide")
    with store.transaction():
        assert store.write_file(changed, 2.0, fid) == fid
    assert [c.text for c in store.file_chunks(fid)] == ["# Install\nkiwi only"]
    assert store.keyword_search(words("guide"), "any", Filters(), 10, WEIGHTS) != []  # title
    assert store.keyword_search(words("usage"), "any", Filters(), 10, WEIGHTS) == []
    (hit,) = store.keyword_search(words("kiwi"), "any", Filters(), 10, WEIGHTS)
    assert store.chunk_files([hit[0]]) == {hit[0]: fid}
    assert store.link_rows() == []
    row = store.file_row(fid)
    assert row is not None and row.indexed_at == 2.0


def test_a_rename_keeps_the_file_id_and_its_vectors(store: Store) -> None:
    """The indexer's rename path: content gone from one path and found at another is written
    over the old row (its id stays), and the old path's problems are cleared."""
    ids = fill(store)
    store_vectors(store)
    fid = ids["notes/job/beta.md"]
    store.set_problems("notes", "job/beta.md", [("warning", "odd frontmatter")])
    old = corpus()[1]
    moved = make_file(
        "notes",
        "archive/beta.md",
        [("Summary", "apple apple apple elderberry")],
        title="Beta review",
        tags=["project"],
        frontmatter={"status": "done"},
    )
    assert moved.record.content_hash == old.record.content_hash
    with store.transaction():
        assert store.write_file(moved, 2.0, fid) == fid
        store.clear_problems("notes", ["job/beta.md"])
    assert store.find_files("job/beta.md") == []
    (row,) = store.find_files("archive/beta.md")
    assert row.file_id == fid and row.doc_id == "notes/archive/beta.md"
    assert "job/beta.md" not in store.file_states("notes")
    (hit,) = store.keyword_search(words("elderberry"), "any", Filters(), 10, WEIGHTS)
    assert store.chunk_rows([hit[0]])[0].path == "archive/beta.md"
    assert store.problems() == []
    embedded, total = store.vector_progress(MODEL)
    assert embedded == total  # same texts, same keys: no vector is lost


def test_deleting_a_file_removes_its_chunks_keywords_and_links(store: Store) -> None:
    ids = fill(store)
    guide = ids["docs/guide.md"]
    rowids = store.file_chunk_rowids(guide)
    with store.transaction():
        store.delete_file(guide)
    assert store.file_row(guide) is None
    assert store.chunk_rows(rowids) == []
    assert store.find_files("guide.md") == []
    assert store.keyword_search(words("install"), "any", Filters(), 10, WEIGHTS) == []
    assert store.document_scores(words("install"), Filters(), 10, WEIGHTS) == {}
    assert store.link_rows() == []


def test_clear_drops_documents_but_keeps_roots_meta_and_vectors(store: Store) -> None:
    fill(store)
    store_vectors(store)
    store.set_meta("embedding_model", MODEL)
    store.set_problems("notes", "bad.md", [("skipped", "not UTF-8")])
    vectors = store.vector_models()
    store.clear()
    assert list(store.iter_files()) == []
    assert store.problems() == []
    assert store.keyword_search(words("apple"), "any", Filters(), 10, WEIGHTS) == []
    assert store.stats()["chunks"] == 0
    assert store.roots() == {"docs": "/data/docs", "notes": "/data/notes"}
    assert store.meta("embedding_model") == MODEL
    assert store.vector_models() == vectors


def test_removing_a_root_drops_all_it_indexed_and_nothing_else(store: Store) -> None:
    """``noteseek roots remove``: the root's files, chunks, keyword entries, links, problems
    and record go; the graph hears of each file; its vectors are left to ``prune_vectors``."""
    ids = fill(store)
    store_vectors(store)
    store.set_problems("notes", "big.md", [("skipped", "too large")], 7, 9000)
    store.set_problems("docs", "bin.md", [("skipped", "binary")], 3, 4)
    notes = [i for doc_id, i in ids.items() if doc_id.startswith("notes/")]
    rowids = [r for i in notes for r in store.file_chunk_rowids(i)]
    sync_graph(store, 0)
    assert store.graph_dirty() == []
    assert [e.target for e in store.graph_edges()] == ["notes/job/alpha.md", "?missing"]
    store.remove_root("notes")
    assert store.roots() == {"docs": ROOTS["docs"]}
    assert store.root_kinds() == {"docs": "memory"}
    assert [f.doc_id for f in store.iter_files()] == ["docs/guide.md"]
    assert store.file_states("notes") == {}
    assert store.chunk_rows(rowids) == []
    assert [(p.root, p.path) for p in store.problems()] == [("docs", "bin.md")]
    # "cherry" and "banana" were only in the notes; "apple" is left in the guide alone.
    assert store.keyword_search(words("cherry", "banana"), "any", Filters(), 10, WEIGHTS) == []
    assert store.document_scores(words("cherry"), Filters(), 10, WEIGHTS) == {}
    hits = store.keyword_search(words("apple"), "any", Filters(), 10, WEIGHTS)
    assert {row.path for row in store.chunk_rows([h[0] for h in hits])} == {"guide.md"}
    # The graph hears of each file gone: the guide's link to the plan waits again.
    assert set(store.graph_dirty()) == set(notes)
    sync_graph(store, 0)
    assert [e.target for e in store.graph_edges()] == ["?job/alpha", "?missing"]
    assert store.stats()["roots"] == [
        {"name": "docs", "path": "/data/docs", "files": 1, "chunks": 2}
    ]
    # Vectors are keyed by text: those no chunk uses go with prune_vectors.
    assert store.prune_vectors(MODEL) == 4
    assert store.vector_models() == {MODEL: 2}
    with pytest.raises(KeyError):
        store.remove_root("notes")
    # The name is free again, for a root added afresh.
    store.ensure_root("notes", "/elsewhere/notes")
    assert store.roots()["notes"] == "/elsewhere/notes"
    assert store.file_states("notes") == {}


def test_a_rejected_file_leaves_the_rest_of_the_batch(store: Store) -> None:
    fill(store)
    clash = make_file("notes", "clash.md", [("", "one"), ("", "two")])
    second = clash.chunks[1]
    # Its second chunk takes another file's chunk id, which must stay unique.
    clash.chunks[1] = replace(second, chunk=replace(second.chunk, chunk_id="notes/job/alpha.md#0"))
    fine = make_file("notes", "fine.md", [("", "fine words")])
    with store.transaction():
        with pytest.raises(WriteRejected):
            store.write_file(clash, 2.0, None)
        store.write_file(fine, 2.0, None)
    assert store.find_files("clash.md") == []
    assert [f.path for f in store.find_files("fine.md")] == ["fine.md"]
    assert store.chunk_by_id("notes/job/alpha.md#0") is not None


def test_problems_are_replaced_per_path_and_cleared(store: Store) -> None:
    fill(store)
    store.set_problems("notes", "big.md", [("skipped", "too large")], 7, 9000)
    store.set_problems("notes", "odd.md", [("warning", "bad date"), ("warning", "bad tag")])
    store.set_problems("docs", "bin.md", [("skipped", "binary")], 3, 4)
    found = store.problems()
    assert sorted((p.root, p.path, p.severity, p.reason) for p in found) == [
        ("docs", "bin.md", "skipped", "binary"),
        ("notes", "big.md", "skipped", "too large"),
        ("notes", "odd.md", "warning", "bad date"),
        ("notes", "odd.md", "warning", "bad tag"),
    ]
    assert [(p.root, p.path) for p in found] == sorted((p.root, p.path) for p in found)
    assert all(p.at > 0 for p in store.problems())
    assert store.skipped_states("notes") == {"big.md": (7, 9000)}
    assert store.problem_paths("notes") == {"big.md", "odd.md"}
    store.set_problems("notes", "odd.md", [("warning", "bad date")])
    assert [p.reason for p in store.problems() if p.path == "odd.md"] == ["bad date"]
    store.set_problems("notes", "odd.md", [])
    assert store.problem_paths("notes") == {"big.md"}
    store.clear_problems("notes", ["big.md"])
    assert store.problem_paths("notes") == set()
    store.clear_problems("docs")
    assert store.problems() == []


def test_the_last_run_is_kept(store: Store) -> None:
    assert store.last_run() is None
    store.record_run(10.0, 11.0, {"added": 1})
    store.record_run(20.0, 22.5, {"added": 2, "roots": ["notes"]})
    assert store.last_run() == {"started": 20.0, "finished": 22.5, "added": 2, "roots": ["notes"]}
    for i in range(25):
        store.record_run(30.0 + i, 31.0 + i, {"n": i})
    assert store.last_run() == {"started": 54.0, "finished": 55.0, "n": 24}


def test_stats_count_roots_files_chunks_and_links(store: Store) -> None:
    fill(store)
    stats = store.stats()
    assert stats["roots"] == [
        {"name": "docs", "path": "/data/docs", "files": 1, "chunks": 2},
        {"name": "notes", "path": "/data/notes", "files": 3, "chunks": 4},
    ]
    assert (stats["files"], stats["chunks"], stats["links"]) == (4, 6, 2)
    assert stats["index_bytes"] > 0


def test_a_chunk_id_freed_earlier_can_be_taken_again(store: Store) -> None:
    """A chunk id belongs to the file that has it as the writes so far leave it: freed by a
    rename, a rewrite or a deletion (in this transaction or a committed one), it is free."""
    ids = fill(store)
    beta, gamma = ids["notes/job/beta.md"], ids["notes/home/gamma.md"]
    with store.transaction():
        # Renamed twice, then a new file takes the old path and the path between.
        store.write_file(make_file("notes", "job/moved.md", [("", "one")]), 2.0, beta)
        store.write_file(make_file("notes", "job/last.md", [("", "two")]), 2.0, beta)
        new = store.write_file(make_file("notes", "job/beta.md", [("", "three")]), 2.0, None)
        store.write_file(make_file("notes", "job/moved.md", [("", "four")]), 2.0, None)
        store.delete_file(gamma)  # and a deleted file's path is taken in the same batch
        store.write_file(make_file("notes", "home/gamma.md", [("", "five")]), 2.0, None)
    assert store.chunk_by_id("notes/job/beta.md#0").file_id == new  # type: ignore[union-attr]
    assert store.chunk_by_id("notes/job/last.md#0").file_id == beta  # type: ignore[union-attr]
    store.delete_file(new)
    again = store.write_file(make_file("notes", "job/beta.md", [("", "six")]), 3.0, None)
    assert store.chunk_by_id("notes/job/beta.md#0").file_id == again  # type: ignore[union-attr]
    with store.transaction():
        store.clear()
        store.write_file(make_file("notes", "job/last.md", [("", "seven")]), 4.0, None)
    assert [f.path for f in store.iter_files()] == ["job/last.md"]
