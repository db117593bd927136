"""Chunks: rows by rowid, chunk id and file, texts, dates, links, and filtered rowids."""

from __future__ import annotations

import pytest

from noteseek.store.base import Store
from noteseek.types import Filters
from tests.store_conformance.build import day, fill, make_file


def test_chunk_rows_come_in_the_order_asked_and_skip_missing_rowids(store: Store) -> None:
    ids = fill(store)
    alpha = store.file_chunk_rowids(ids["notes/job/alpha.md"])
    guide = store.file_chunk_rowids(ids["docs/guide.md"])
    asked = [guide[1], 10**9, alpha[0], guide[0]]
    rows = store.chunk_rows(asked)
    assert [r.rowid for r in rows] == [guide[1], alpha[0], guide[0]]
    assert store.chunk_rows([]) == []
    first = rows[1]
    assert (first.chunk_id, first.ordinal, first.heading_path) == (
        "notes/job/alpha.md#0",
        0,
        ("Goals",),
    )
    assert (first.start_line, first.end_line, first.text) == (1, 2, "# Goals\napple banana cherry")
    assert (first.root, first.path, first.doc_id, first.title) == (
        "notes",
        "job/alpha.md",
        "notes/job/alpha.md",
        "Alpha plan",
    )
    assert first.file_id == ids["notes/job/alpha.md"]
    assert first.modified == day("2024-01-10")
    assert first.content_hash and first.embed_key


def test_chunks_by_id_and_by_file(store: Store) -> None:
    ids = fill(store)
    row = store.chunk_by_id("docs/guide.md#1")
    assert row is not None and row.heading_path == ("Usage",) and row.ordinal == 1
    assert store.chunk_by_id("docs/guide.md#9") is None
    chunks = store.file_chunks(ids["docs/guide.md"])
    assert [c.chunk_id for c in chunks] == ["docs/guide.md#0", "docs/guide.md#1"]
    assert store.file_chunk_rowids(ids["docs/guide.md"]) == [c.rowid for c in chunks]
    assert store.file_chunks(10**9) == [] and store.file_chunk_rowids(10**9) == []
    no_heading = store.file_chunks(ids["notes/home/gamma.md"])[0]
    assert no_heading.heading_path == ()


def test_chunk_files_and_dates(store: Store) -> None:
    ids = fill(store)
    beta = store.file_chunk_rowids(ids["notes/job/beta.md"])
    guide = store.file_chunk_rowids(ids["docs/guide.md"])
    assert store.chunk_files([*beta, *guide, 10**9]) == {
        beta[0]: ids["notes/job/beta.md"],
        guide[0]: ids["docs/guide.md"],
        guide[1]: ids["docs/guide.md"],
    }
    assert store.chunk_files([]) == {}
    assert store.chunk_modified([beta[0], guide[1], 10**9]) == {
        beta[0]: day("2024-03-01"),
        guide[1]: day("2024-05-05"),
    }
    assert store.chunk_modified([]) == {}


def test_every_text_comes_back_in_batches(store: Store) -> None:
    fill(store)
    texts = list(store.iter_chunk_texts(batch=2))
    everything = [c.text for f in store.iter_files() for c in store.file_chunks(f.file_id)]
    assert sorted(texts) == sorted(everything) and len(texts) == 6


def test_link_rows_carry_the_heading_they_are_under(store: Store) -> None:
    fill(store)
    assert store.link_rows() == [
        ("docs/guide.md", "job/alpha", "wikilink", 2, "Goals", ("Install",), "the plan", ""),
        ("docs/guide.md", "missing", "markdown", 5, None, ("Usage",), None, "see [x](missing)"),
    ]
    # Only each document's first links, when asked (the link graph's bound).
    assert store.link_rows(max_per_document=1) == store.link_rows()[:1]
    assert store.link_rows(max_per_document=0) == store.link_rows()


FILTERED: list[tuple[str, Filters, set[str]]] = [
    ("nothing", Filters(), {"alpha", "beta", "gamma", "guide"}),
    ("paths", Filters(paths=["job/**"]), {"alpha", "beta"}),
    ("several paths", Filters(paths=["home/**", "guide.md"]), {"gamma", "guide"}),
    ("excluded paths", Filters(exclude_paths=["job/**"]), {"gamma", "guide"}),
    ("a plain excluded path", Filters(exclude_paths=["job/beta.md"]), {"alpha", "gamma", "guide"}),
    ("a tag and its children", Filters(tags=["project"]), {"alpha", "beta"}),
    ("a child tag", Filters(tags=["project/atlas"]), {"alpha"}),
    ("tags, case folded", Filters(tags=["#Project", "URGENT"]), {"alpha"}),
    ("a tag prefix is not a tag", Filters(tags=["proj"]), set()),
    ("roots", Filters(roots=["docs"]), {"guide"}),
    ("kinds", Filters(kinds=["memory"]), {"guide"}),
    ("several kinds", Filters(kinds=["files", "memory"]), {"alpha", "beta", "gamma", "guide"}),
    ("doc ids", Filters(doc_ids=["notes/job/alpha.md", "docs/guide.md"]), {"alpha", "guide"}),
    ("an unknown doc id", Filters(doc_ids=["notes/nothing.md"]), set()),
    ("an author's name", Filters(authors=["ana"]), {"alpha"}),
    ("an author's email, case folded", Filters(authors=["EMILE@example"]), {"beta"}),
    ("a non-ASCII name, case folded", Filters(authors=["ÉMILE"]), {"beta"}),
    ("several authors", Filters(authors=["lima", "émile"]), {"alpha", "beta"}),
    ("an author nobody is", Filters(authors=["zoe"]), set()),
    ("a changed file", Filters(changed=["docs/*.md"]), {"alpha"}),
    ("changed files by name", Filters(changed=["README.md", "auth.py"]), {"alpha", "beta"}),
    ("a file nobody changed", Filters(changed=["*.rs"]), set()),
    ("after", Filters(after=day("2024-02-01")), {"beta", "guide"}),
    ("before", Filters(before=day("2024-02-01")), {"alpha", "gamma"}),
    ("a date range", Filters(after=day("2024-01-01"), before=day("2024-04-01")), {"alpha", "beta"}),
    ("where =", Filters(where=[("status", "=", "draft")]), {"alpha", "gamma"}),
    ("where = ignores case", Filters(where=[("status", "=", "DONE")]), {"beta"}),
    ("where !=", Filters(where=[("status", "!=", "draft")]), {"beta", "guide"}),
    ("where a boolean", Filters(where=[("public", "=", "true")]), {"alpha"}),
    ("where false", Filters(where=[("public", "=", "false")]), {"gamma"}),
    (
        "everything at once",
        Filters(
            paths=["**/*.md"],
            exclude_paths=["home/**"],
            tags=["project"],
            roots=["notes"],
            after=day("2024-02-01"),
            where=[("status", "=", "done")],
        ),
        {"beta"},
    ),
]
"""(case, filters, stems of the files let through) over :func:`build.corpus`."""


@pytest.mark.parametrize(("case", "filters", "expected"), FILTERED, ids=[c for c, _, _ in FILTERED])
def test_filtered_chunk_ids(store: Store, case: str, filters: Filters, expected: set[str]) -> None:
    fill(store)
    rows = store.chunk_rows(store.filtered_chunk_ids(filters))
    assert {r.path.rsplit("/", 1)[-1].removesuffix(".md") for r in rows} == expected
    for row in rows:  # every chunk of a file that passes
        assert len([r for r in rows if r.file_id == row.file_id]) == len(
            store.file_chunk_rowids(row.file_id)
        )


def test_a_file_without_chunks_has_no_rows(store: Store) -> None:
    (fid,) = fill(store, [make_file("notes", "empty.md", [])]).values()
    assert store.file_chunks(fid) == []
    assert store.filtered_chunk_ids(Filters()) == []
    assert store.find_files("empty.md")[0].file_id == fid
