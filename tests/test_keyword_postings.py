"""The saved keyword postings (store/sqlite/postings*.py) rank as FTS5 does, and stay in step.

Every test here compares a search answered from the postings with the same search answered
by FTS5 on the same index (a handle whose postings are switched off), on a real docs tree.
"""

from __future__ import annotations

import json
import shutil
import sqlite3
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import fields
from pathlib import Path
from typing import Any

import pytest

from noteseek.engine import Engine, SearchRequest
from noteseek.search.keyword import NAMING_FIELDS, weights_of
from noteseek.search.query import parse_query
from noteseek.store.factory import open_reader
from noteseek.store.sqlite import postings, postings_search, postings_state
from noteseek.store.sqlite.postings_file import NAME
from noteseek.store.sqlite.postings_state import PostingsState
from noteseek.types import Clause, Filters, KeywordQuery
from tests.conftest import shared
from tests.helpers import engine_for, project, run_cli, write

pytestmark = pytest.mark.filterwarnings("ignore::ResourceWarning")


@pytest.fixture
def docs(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[tuple[Engine, Path]]:
    """The Hugo docs (a private copy) indexed with postings saved whatever the size."""
    monkeypatch.setattr(postings_state, "FROM_ROWS", 0)
    tree = tmp_path / "docs"
    shutil.copytree(shared("hugo-docs-kis") / "vault", tree)
    engine = engine_for(project(tmp_path, {"d": tree}))
    engine.index()
    yield engine, tree
    engine.close()


def queries(limit: int = 120) -> list[str]:
    path = shared("hugo-docs-kis") / "queries.jsonl"
    lines = path.read_text(encoding="utf-8").splitlines()[:limit]
    return [json.loads(line)["text"] for line in lines]


@contextmanager
def fts5(store: Any) -> Iterator[None]:
    """The store's searches answered by FTS5 while the context is open."""
    kept = store._postings_state
    store._postings_state = PostingsState(Path("/nonexistent-folder-for-fts5"))
    try:
        yield
    finally:
        store._postings_state = kept


def answers(store: Any, query: KeywordQuery, mode: str, filters: Filters, weights: Any) -> Any:
    chunks = store.keyword_search(query, mode, filters, 30, weights)
    documents = store.document_scores(query, filters, 30, weights)
    return chunks, documents


def same(a: Any, b: Any) -> bool:
    (ca, da), (cb, db) = a, b
    if [r for r, _ in ca] != [r for r, _ in cb] or set(da) != set(db):
        return False
    pairs = [(x, y) for (_, x), (_, y) in zip(ca, cb, strict=True)]
    pairs += [(da[k], db[k]) for k in da]
    return all(abs(x - y) <= 1e-9 * max(1.0, abs(y)) for x, y in pairs)


def single_words(query: KeywordQuery) -> bool:
    return all(len(alt) == 1 for c in query.clauses for alt in c.alternatives)


def compare(engine: Engine, texts: list[str], filters: Filters | None = None) -> tuple[int, int]:
    """(searches compared, searches that differ) over the queries' single-word forms."""
    store: Any = engine.store
    analyzer = engine._state.values.analyzer()
    weights = weights_of(engine._state.settings.search)
    filters = filters or Filters()
    compared = differ = 0
    for text in texts:
        query = parse_query(text, analyzer)
        if not query.clauses or not single_words(query):
            continue
        head, *rest = query.clauses
        variants = [
            (query, "any"),
            (query, "all"),
            (KeywordQuery(query.clauses, query.excluded, NAMING_FIELDS), "any"),
            (KeywordQuery((Clause(head.alternatives, required=True), *rest)), "any"),
            (KeywordQuery(tuple(rest), (head,)), "any") if rest else (query, "any"),
        ]
        for variant, mode in variants:
            assert store._postings("chunks", variant, filters) is not None
            fast = answers(store, variant, mode, filters, weights)
            with fts5(store):
                slow = answers(store, variant, mode, filters, weights)
            compared += 1
            differ += not same(fast, slow)
    return compared, differ


@pytest.mark.parametrize("scoring", ["as sized", "all sparse", "all dense"])
def test_postings_rank_exactly_as_fts5_on_a_docs_tree(
    docs: tuple[Engine, Path], monkeypatch: pytest.MonkeyPatch, scoring: str
) -> None:
    """Scored over the rows the postings hold (few postings) or over whole-part arrays (many):
    both must be FTS5's answer."""
    if scoring != "as sized":
        monkeypatch.setattr(postings_search, "SPARSE", 0 if scoring == "all sparse" else 10**9)
    engine, _ = docs
    assert (engine._state.index_dir / NAME).exists()
    compared, differ = compare(engine, queries())
    assert compared >= 150
    assert differ == 0


def test_filters_apply_inside_the_postings_search(docs: tuple[Engine, Path]) -> None:
    engine, _ = docs
    compared, differ = compare(engine, queries(40), Filters(paths=["content-management/**"]))
    assert compared >= 40
    assert differ == 0


def test_phrases_match_the_rows_fts5_matches(docs: tuple[Engine, Path]) -> None:
    engine, _ = docs
    store: Any = engine.store
    analyzer = engine._state.values.analyzer()
    weights = weights_of(engine._state.settings.search)
    phrases = 0
    for text in ["open-source", "static site", "front matter", "getPage", "page-bundles", "Hugo"]:
        query = parse_query(f'"{text}"' if " " in text else text, analyzer)
        phrases += not single_words(query)
        fast = store.keyword_search(query, "any", Filters(), 100_000, weights)
        with fts5(store):
            slow = store.keyword_search(query, "any", Filters(), 100_000, weights)
        assert {r for r, _ in fast} == {r for r, _ in slow}
        assert fast, text
    assert phrases >= 3


def test_changes_after_the_save_are_searched_at_once(docs: tuple[Engine, Path]) -> None:
    engine, tree = docs
    saved = engine._state.index_dir / NAME
    stamp = saved.stat().st_mtime_ns
    texts = ["zebrafish", "quokka front matter", "front matter page", *queries(30)]
    assert compare(engine, texts)[1] == 0  # scored terms are kept: they must not outlive this
    pages = sorted(tree.rglob("*.md"))
    write(pages[0], "# Zebrafish\n\nThe zebrafish swims past the front matter.\n")
    pages[1].unlink()
    write(tree / "new-page.md", "# Quokka\n\nA quokka reads the front matter of every page.\n")
    engine.index()
    assert saved.stat().st_mtime_ns == stamp  # three files: patched, not saved again
    store: Any = engine.store
    parts = store._postings(
        "chunks", parse_query("zebrafish", engine._state.values.analyzer()), Filters()
    )
    assert parts is not None and len(parts.parts) == 2  # the saved rows and the changed ones
    compared, differ = compare(engine, texts)
    assert differ == 0 and compared >= 30
    hits = engine.search(SearchRequest("zebrafish", top_k=3, mode="keyword")).hits
    assert hits and hits[0].path.endswith(pages[0].name)


def test_file_ids_read_from_the_postings_are_those_of_the_index(
    docs: tuple[Engine, Path],
) -> None:
    """``chunk_files`` answers from the postings' rows: the same as the chunks table, after
    changes too (changed rows from the second part, deleted ones from nowhere)."""
    engine, tree = docs
    store: Any = engine.store
    before = [int(r[0]) for r in store._q("SELECT id FROM chunks")]
    pages = sorted(tree.rglob("*.md"))
    write(pages[0], "# Zebrafish\n\nThe zebrafish swims past the front matter.\n")
    pages[1].unlink()
    write(tree / "new-page.md", "# Quokka\n\nA quokka reads the front matter.\n")
    engine.index()
    now = {int(r[0]): int(r[1]) for r in store._q("SELECT id, file_id FROM chunks")}
    asked = [*sorted(set(before) | set(now)), 10**9]
    posted = store._posted_files(asked)
    assert len(posted) == len(now) and set(posted) == set(now)  # none deleted, none missed
    assert store.chunk_files(asked) == now
    assert store.chunk_files(asked[::7]) == {r: now[r] for r in asked[::7] if r in now}


def test_another_handle_searches_the_saved_postings(docs: tuple[Engine, Path]) -> None:
    engine, tree = docs
    write(tree / "extra.md", "# Wombat\n\nThe wombat digs under the taxonomy.\n")
    engine.index()
    reader: Any = open_reader(engine._state.index_dir)
    try:
        query = parse_query("wombat taxonomy", engine._state.values.analyzer())
        weights = weights_of(engine._state.settings.search)
        assert reader._postings("chunks", query, Filters()) is not None
        mine = engine.store.keyword_search(query, "any", Filters(), 10, weights)
        theirs = reader.keyword_search(query, "any", Filters(), 10, weights)
        assert theirs == mine and theirs
    finally:
        reader.close()


def test_many_changes_use_fts5_until_the_writer_saves_again(
    docs: tuple[Engine, Path], monkeypatch: pytest.MonkeyPatch
) -> None:
    engine, tree = docs
    saved = engine._state.index_dir / NAME
    stamp = saved.stat().st_mtime_ns
    monkeypatch.setattr(postings_state, "delta_limit", lambda files: 1)
    store: Any = engine.store
    query = parse_query("narwhal", engine._state.values.analyzer())
    for name in ("a", "b", "c"):
        write(tree / f"{name}.md", f"# Narwhal {name}\n\nA narwhal note.\n")
    with monkeypatch.context() as m:  # a run that ends without saving (as if interrupted)
        m.setattr(PostingsState, "needs_save", lambda *args: False)
        engine.index()
    assert saved.stat().st_mtime_ns == stamp
    assert store._postings("chunks", query, Filters()) is None  # three files > the limit
    assert (
        len(engine.search(SearchRequest("narwhal", top_k=5, mode="keyword")).hits) == 3
    )  # FTS5 answers
    write(tree / "d.md", "# Narwhal d\n\nA narwhal note.\n")
    engine.index()
    assert saved.stat().st_mtime_ns != stamp  # the run's end saved them again
    db = sqlite3.connect(engine._state.index_dir / "index.db")
    try:
        assert db.execute("SELECT count(*) FROM keyword_log").fetchone()[0] == 0
    finally:
        db.close()
    assert store._postings("chunks", query, Filters()) is not None
    assert len(engine.search(SearchRequest("narwhal", top_k=5, mode="keyword")).hits) == 4


def test_a_damaged_postings_file_is_ignored_and_replaced(docs: tuple[Engine, Path]) -> None:
    engine, tree = docs
    saved = engine._state.index_dir / NAME
    before = engine.search(SearchRequest("front matter", top_k=5, mode="keyword")).hits
    saved.write_bytes(b"\x10\x00\x00\x00\x00\x00\x00\x00{not json at all")
    write(tree / "touch.md", "# Touch\n\nA change, so every handle looks again.\n")
    engine.index()
    store: Any = engine.store
    query = parse_query("front matter", engine._state.values.analyzer())
    assert store._postings("chunks", query, Filters()) is not None  # saved again, whole
    after = engine.search(SearchRequest("front matter", top_k=5, mode="keyword")).hits
    assert [h.path for h in after] == [h.path for h in before]


def test_small_indexes_keep_to_fts5(tmp_path: Path) -> None:
    notes = tmp_path / "notes"
    write(notes / "a.md", "# Alpha\n\nThe aardvark.\n")
    engine = engine_for(project(tmp_path, {"n": notes}))
    engine.index()
    try:
        assert not (engine._state.index_dir / NAME).exists()
        assert engine.search(SearchRequest("aardvark", mode="keyword")).hits
    finally:
        engine.close()


def test_postings_saved_again_after_deletion_are_current(docs: tuple[Engine, Path]) -> None:
    engine, _ = docs
    saved = engine._state.index_dir / NAME
    saved.unlink()  # the log was emptied by the first save: nothing changed since
    engine.index()
    assert saved.exists()
    stamp = saved.stat().st_mtime_ns
    store: Any = engine.store
    query = parse_query("front matter", engine._state.values.analyzer())
    assert store._postings("chunks", query, Filters()) is not None  # current, so searched
    engine.index()
    assert saved.stat().st_mtime_ns == stamp  # and not built again on every run


def test_term_documents_from_the_postings_are_fts5s_counts(docs: tuple[Engine, Path]) -> None:
    """Typo tolerance asks how many documents hold each query word: the postings answer as
    FTS5's vocabulary does, after changes too (a deleted, a changed and a new page)."""
    engine, tree = docs
    store: Any = engine.store
    terms = ["front", "matter", "hugo", "zebrafish", "quokka", "taxonomi", "nosuchterm"]

    def both() -> tuple[dict[str, int], dict[str, int]]:
        vocabulary = store.vocabulary()
        assert store._postings("docs", KeywordQuery((Clause((("hugo",),)),)), Filters())
        fast = store.term_documents(terms)
        with fts5(store):
            slow = store.term_documents(terms)
        assert slow == {t: vocabulary[t] for t in terms if t in vocabulary}
        return fast, slow

    fast, slow = both()
    assert fast == slow and "nosuchterm" not in fast and fast["hugo"] > 100
    pages = sorted(tree.rglob("*.md"))
    write(pages[0], "# Zebrafish\n\nThe zebrafish swims past the front matter.\n")
    pages[1].unlink()
    write(tree / "new-page.md", "# Quokka\n\nA quokka reads the front matter of every page.\n")
    engine.index()
    fast, slow = both()
    assert fast == slow and fast["zebrafish"] == 1 and fast["quokka"] == 1


def test_term_numbers_kept_after_a_look_up_are_the_postings_own() -> None:
    """A term's number is kept once looked up (queries repeat words): the same as looking it
    up again, for terms held and terms no row holds, and nothing of it is saved."""
    rows = [(1, 1, ("alpha", "", "", "", "beta gamma", "")), (2, 2, ("", "", "", "", "gamma", ""))]
    built = postings.build(rows)
    for term in ["gamma", "alpha", "nosuchterm", "gamma", "nosuchterm", "beta"]:
        assert built.term(term) == built._find(term)
    assert built.term("nosuchterm") == -1 and built.postings("gamma")[0].tolist() == [0, 1]
    assert "_numbers" not in {f.name for f in fields(built)}


def test_reaches_answers_as_counting_does(docs: tuple[Engine, Path]) -> None:
    """``is_common`` asks whether a clause is in at least so many rows: bounded first by its
    words' row counts (no postings read), it answers as counting the rows does, for words,
    phrases and alternatives, before and after a change."""
    engine, tree = docs
    store: Any = engine.store
    analyzer = engine._state.values.analyzer()
    texts = ["front matter", "getPage", "page-bundles", "hugo", "zebrafish", "the content"]

    def check() -> int:
        found = store._postings("chunks", parse_query("hugo", analyzer), Filters())
        phrases = store._phrase_rows("chunks_fts")
        checked = 0
        for text in texts + queries(20):
            for clause in parse_query(text, analyzer).clauses:
                n = postings_search.count(found.parts, clause, phrases)
                for limit in (1, max(1, n), n + 1, 2 * n + 5, 10_000):
                    assert postings_search.reaches(found.parts, clause, phrases, limit) == (
                        n >= limit
                    ), (text, clause, limit)
                    checked += 1
        return checked

    assert check() > 100
    write(tree / "zebra.md", "# Zebrafish\n\nThe zebrafish front matter.\n")
    sorted(tree.rglob("*.md"))[0].unlink()
    engine.index()
    assert check() > 100


def test_postings_read_from_the_file_are_kept_within_their_bound(tmp_path: Path) -> None:
    """A saved file's postings, once read, are kept for the next searches (the least recently
    used dropped past ``KEPT_BYTES``), and a kept term reads as a fresh read does."""
    from noteseek.store.sqlite import postings_file

    words = [f"w{i}" for i in range(40)]
    rows = [(i, i, ("", "", "", "", " ".join(words[: 1 + i % 40]), "")) for i in range(1, 401)]
    path = tmp_path / NAME
    postings_file.save(path, {"chunks": postings.build(rows)}, {"log": "x"})
    loaded = postings_file.load(path)
    assert loaded is not None
    saved = loaded[1]["chunks"]
    fresh = postings_file.load(path)
    assert fresh is not None
    kept = saved._read
    assert kept is not None and postings.build(rows)._read is None  # in memory: nothing kept
    kept.limit = 4_000  # a few terms' worth
    for word in words:
        got = saved.postings(word)
        again = saved.postings(word)  # from what is kept
        want = fresh[1]["chunks"].postings(word)
        assert got[0].tolist() == again[0].tolist() == want[0].tolist()
        assert got[1].tolist() == again[1].tolist() == want[1].tolist()
        assert kept.size <= kept.limit
    assert 0 < len(kept._items) < len(words)  # bounded: older (and too large) terms are not
    assert words[-1] in {w for w in words if saved.term(w) in kept._items}
    assert saved.term(words[0]) not in kept._items


def test_a_run_that_changes_nothing_leaves_the_saved_postings_unread(
    docs: tuple[Engine, Path],
) -> None:
    """After the save, an index run with nothing changed neither reads the postings file nor
    loads what reads it (most re-indexes); one with a change still looks (and patches)."""
    engine, tree = docs
    saved = engine._state.index_dir / NAME
    stamp = saved.stat().st_mtime_ns
    again = engine_for(project(tree.parent, {"d": tree}))
    try:
        report = again.index()
        assert report.unchanged > 0 and not (report.added or report.updated or report.removed)
        store: Any = again.store
        assert store._postings_current() and store._postings_kept is None
        assert saved.stat().st_mtime_ns == stamp
        write(tree / "new-page.md", "# Quokka\n\nA quokka reads the front matter.\n")
        again.index()
        assert not store._postings_current() and store._postings_kept is not None
    finally:
        again.close()


def test_a_foreign_postings_file_is_saved_again_by_a_run_that_changes_nothing(
    docs: tuple[Engine, Path],
) -> None:
    """The cheap look of a run that changed nothing reads the file's header: a file of another
    index (or format) there is still replaced."""
    engine, _ = docs
    saved = engine._state.index_dir / NAME
    store: Any = engine.store
    assert store._postings_current()
    raw = saved.read_bytes()
    length = int.from_bytes(raw[:8], "little")
    header = json.loads(raw[8 : 8 + length])
    header["log"] = "another-index"
    text = json.dumps(header).encode("utf-8").ljust(length)
    saved.write_bytes(raw[:8] + text + raw[8 + length :])
    assert not store._postings_current()
    engine.index()
    assert store._postings_current()


def test_changed_bytes_in_the_postings_file_are_reported_and_not_searched(
    docs: tuple[Engine, Path],
) -> None:
    """Issue 44 R12: bytes changed inside keyword-postings.bin reordered keyword results
    (exit 0) and ``status --check`` stayed clean. Its checksum now fails: searches keep to
    FTS5 (the same ranking), the check reports it, and the next index run saves it again."""
    engine, tree = docs
    folder = tree.parent
    env = {"NOTESEEK_SEARCH__RECENCY": "off", "NOTESEEK_EMBEDDING__ENABLED": "false"}
    search = ["search", "front matter", "--mode", "keyword", "--top-k", "20", "--json"]

    def results() -> list[tuple[str, float]]:
        found = json.loads(run_cli(search, folder, env).stdout)["results"]
        return [(r["path"], round(float(r["score"]), 6)) for r in found]

    before = results()
    assert before
    sound = json.loads(run_cli(["status", "--check", "--json"], folder, env).stdout)
    assert sound["check"]["found"] is None, sound["check"]
    saved = engine._state.index_dir / NAME
    size = saved.stat().st_size
    with saved.open("r+b") as f:
        f.seek(size // 2)
        middle = f.read(64)
        f.seek(size // 2)
        f.write(bytes(b ^ 0x5A for b in middle))
    store: Any = engine.store
    query = parse_query("front matter", engine._state.values.analyzer())
    assert store._postings("chunks", query, Filters()) is None  # not searched: FTS5 answers
    assert results() == before
    checked = json.loads(run_cli(["status", "--check", "--json"], folder, env).stdout)
    assert "keyword-postings.bin" in (checked["check"]["found"] or ""), checked["check"]
    assert checked["damaged"] is None  # the index itself is sound: no rebuild is asked for
    text = run_cli(["status", "--check"], folder, env).stdout
    assert "checksum does not match" in text and ": sound" not in text, text
    engine.index()  # a run that changes nothing saves them again
    assert store._postings("chunks", query, Filters()) is not None
    assert results() == before
    again = json.loads(run_cli(["status", "--check", "--json"], folder, env).stdout)
    assert again["check"]["found"] is None, again["check"]
