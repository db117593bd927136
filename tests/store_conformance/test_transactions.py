"""Transactions, the change token, and one writer with concurrent readers."""

from __future__ import annotations

import threading
import time
from collections.abc import Callable
from pathlib import Path

import pytest

from noteseek.store.backend import Backend
from noteseek.store.base import Store
from noteseek.types import Filters
from tests.store_conformance.build import (
    MODEL,
    WEIGHTS,
    fill,
    make_file,
    store_vectors,
    unit,
    words,
)
from tests.store_conformance.conftest import PREFIX, another

WRITES: dict[str, Callable[[Store, dict[str, int]], object]] = {
    "set_manifest": lambda s, ids: s.set_manifest({"v": 2}),
    "set_meta": lambda s, ids: s.set_meta("k", "v"),
    "ensure_root": lambda s, ids: s.ensure_root("more", "/data/more"),
    "write_file": lambda s, ids: fill(s, [make_file("notes", "w.md", [("", "w")])]),
    "update_file_stat": lambda s, ids: s.update_file_stat(ids["docs/guide.md"], 5, 6),
    "delete_file": lambda s, ids: s.delete_file(ids["docs/guide.md"]),
    "clear": lambda s, ids: s.clear(),
    "set_problems": lambda s, ids: s.set_problems("notes", "x.md", [("skipped", "why")]),
    "clear_problems": lambda s, ids: s.clear_problems("notes"),
    "record_run": lambda s, ids: s.record_run(1.0, 2.0, {}),
    "put_vectors": lambda s, ids: s.put_vectors(MODEL, [("ab", unit(1).tobytes())]),
    "drop_vectors": lambda s, ids: s.drop_vectors(),
    "prune_vectors": lambda s, ids: s.prune_vectors(MODEL),
}


def read_everything(store: Store) -> None:
    store.manifest()
    store.roots()
    list(store.iter_files())
    store.stats()
    store.problems()
    store.keyword_search(words("apple"), "any", Filters(), 10, WEIGHTS)
    store.is_common(words("apple").clauses[0], 0.1, 1)
    store.vector_progress(MODEL)
    store.all_chunk_vectors(MODEL)


@pytest.mark.parametrize("write", list(WRITES))
def test_every_committed_write_moves_the_token(store: Store, write: str) -> None:
    ids = fill(store)
    store_vectors(store)
    store.put_vectors(MODEL, [("ab", unit(2).tobytes())])  # a vector no chunk uses (pruned)
    before = store.change_token()
    WRITES[write](store, ids)
    assert store.change_token() != before


def test_reads_and_rolled_back_writes_leave_the_token(store: Store) -> None:
    fill(store)
    before = store.change_token()
    read_everything(store)
    assert store.change_token() == before
    with pytest.raises(RuntimeError), store.transaction():
        store.set_meta("k", "v")
        raise RuntimeError("abandon")
    assert store.change_token() == before
    assert store.meta("k") is None


def test_another_handle_sees_the_token_move(
    store: Store, second_handle: Callable[[], Store]
) -> None:
    fill(store)
    reader = second_handle()
    before = reader.change_token()
    read_everything(reader)
    assert reader.change_token() == before
    store.set_meta("k", "v")
    assert reader.change_token() != before
    assert reader.meta("k") == "v"


def test_a_first_commit_reads_back_at_once(backend: Backend, tmp_path: Path) -> None:
    """A new index's first commit is visible as it returns, every time (Milvus's C++ engine
    answered the query right after it without it in about one run of five, until commits
    waited for their version row to read back)."""
    misses = []
    for n in range(12):
        opened, _ = another(backend, tmp_path / f"i{n}", f"{PREFIX}_fresh{n}").open()
        try:
            before = opened.change_token()
            fill(opened)
            if opened.change_token() == before:
                misses.append(n)
        finally:
            opened.close()
    assert misses == []


def test_a_failed_inner_block_rolls_back_alone(store: Store) -> None:
    fill(store)
    with store.transaction():
        store.set_meta("outer", "1")
        with pytest.raises(RuntimeError), store.transaction():
            store.set_meta("inner", "1")
            raise RuntimeError("inner fails")
        store.set_meta("after", "1")
    assert (store.meta("outer"), store.meta("inner"), store.meta("after")) == ("1", None, "1")


def test_a_reader_sees_only_committed_writes(
    store: Store, second_handle: Callable[[], Store]
) -> None:
    fill(store)
    reader = second_handle()
    token = reader.change_token()
    files = len(list(reader.iter_files()))
    seen: dict[str, object] = {}
    written = threading.Event()
    checked = threading.Event()

    def read_meanwhile() -> None:
        assert written.wait(10)
        seen["files"] = len(list(reader.iter_files()))
        seen["found"] = reader.find_files("pending.md")
        seen["hits"] = reader.keyword_search(words("pending"), "any", Filters(), 10, WEIGHTS)
        seen["token"] = reader.change_token()
        checked.set()

    thread = threading.Thread(target=read_meanwhile)
    thread.start()
    with store.transaction():
        fill(store, [make_file("notes", "pending.md", [("", "pending words"), ("", "more")])])
        written.set()
        assert checked.wait(10)  # the reader looks while this transaction is open
    thread.join(10)
    assert seen == {"files": files, "found": [], "hits": [], "token": token}
    assert reader.change_token() != token
    assert [f.path for f in reader.find_files("pending.md")] == ["pending.md"]
    assert len(reader.keyword_search(words("pending"), "any", Filters(), 10, WEIGHTS)) == 2


def test_one_writer_and_concurrent_readers(
    store: Store, second_handle: Callable[[], Store]
) -> None:
    """Readers on their own handles, in their own threads, while a writer commits file after
    file (three sections each): every read sees whole files, and never goes backwards."""
    fill(store)
    files, sections = 40, 3
    stop = threading.Event()
    errors: list[str] = []
    tokens: list[int] = []

    started = threading.Barrier(3, timeout=30)  # both readers have read before writes begin

    def read(handle: Store) -> None:
        last, moves, token = 0, 0, handle.change_token()
        started.wait()
        deadline = time.monotonic() + 60
        while time.monotonic() < deadline:
            hits = handle.keyword_search(words("batch"), "any", Filters(), 1000, WEIGHTS)
            if len(hits) % sections:
                errors.append(f"half a file: {len(hits)} sections")
            if len(hits) < last:
                errors.append(f"went back from {last} to {len(hits)}")
            last = len(hits)
            now = handle.change_token()
            moves += now != token
            token = now
            if stop.is_set() and last == files * sections:
                break
        else:
            errors.append(f"saw {last} sections, never all {files * sections}")
        tokens.append(moves)

    readers = [threading.Thread(target=read, args=(second_handle(),)) for _ in range(2)]
    for thread in readers:
        thread.start()
    try:
        started.wait()
        for i in range(files):
            body = [("", f"batch words {i} part {j}") for j in range(sections)]
            fill(store, [make_file("notes", f"batch/{i}.md", body)])
    finally:
        stop.set()
        for thread in readers:
            thread.join(60)
    assert not errors, errors[:5]
    assert len(tokens) == 2 and all(moves > 0 for moves in tokens)


def keyword_found(store: Store, *terms: str) -> tuple[set[str], set[int]]:
    """Chunk ids and file ids the keyword index finds for any of ``terms``."""
    query = words(*terms)
    hits = store.keyword_search(query, "any", Filters(), 50, WEIGHTS)
    chunks = {row.chunk_id for row in store.chunk_rows([r for r, _ in hits])}
    return chunks, set(store.document_scores(query, Filters(), 50, WEIGHTS))


def test_a_file_rewritten_deleted_or_rolled_back_in_one_transaction(store: Store) -> None:
    """The keyword index ends as the rows do, whatever happened to a file before the commit:
    written then rewritten (only the new words), written then deleted (nothing), written in a
    failed inner block (nothing), and the rest of the transaction kept."""
    ids = fill(store)
    kept = ids["notes/job/alpha.md"]
    with store.transaction():
        first = store.write_file(
            make_file("notes", "r.md", [("", "walrus"), ("", "otter")]), 2, None
        )
        store.write_file(make_file("notes", "r.md", [("", "narwhal")]), 3, first)
        gone = store.write_file(make_file("notes", "d.md", [("", "pelican")]), 2, None)
        store.delete_file(gone)
        with pytest.raises(RuntimeError), store.transaction():
            store.write_file(make_file("notes", "f.md", [("", "heron")]), 2, None)
            raise RuntimeError("inner fails")
        store.write_file(make_file("notes", "job/alpha.md", [("", "puffin")]), 2, kept)
    assert keyword_found(store, "walrus", "otter", "pelican", "heron") == (set(), set())
    assert keyword_found(store, "narwhal") == ({"notes/r.md#0"}, {first})
    assert keyword_found(store, "puffin") == ({"notes/job/alpha.md#0"}, {kept})
    assert keyword_found(store, "durian") == (set(), set())  # alpha's old words went
    assert keyword_found(store, "elderberry")[1] == {ids["notes/job/beta.md"]}  # untouched
