"""The link graph kept with the index: taken in incrementally, equal to one built from scratch;
communities kept for fresh processes; an index from before the graph was kept."""

from __future__ import annotations

import json
import random
import sqlite3
import subprocess
import sys
from pathlib import Path

import pytest

from noteseek.graph.links import Edge
from noteseek.graph.sync import (
    build_link_graph,
    graph_current,
    graph_documents,
    load_document_graph,
    load_graph,
    refresh_communities,
    sync_graph,
)
from noteseek.store.backend import MilvusBackend
from noteseek.store.base import Store
from noteseek.store.factory import open_store
from noteseek.store.milvus import MilvusConfig
from noteseek.types import Link, PreparedFile
from tests.helpers import engine_for, project, write
from tests.store_conformance.build import make_file

NAMES = ["Alpha", "beta", "Gamma note", "delta", "index", "guide", "Zeta", "eta"]
FOLDERS = ["", "a", "a/b", "c", "c/b"]


BACKENDS = ["sqlite", "milvus-lite"]


def open_backend(tmp_path: Path, backend: str) -> Store:
    """A fresh index: SQLite in the test's folder, or Milvus Lite there."""
    if backend == "sqlite":
        store, _ = open_store(tmp_path / "index")
    else:
        config = MilvusConfig(uri=str(tmp_path / "milvus.db"), prefix="sync")
        store, _ = MilvusBackend(config).open()
    return store


def edges(graph: object) -> list[tuple[object, ...]]:
    return edges_of(graph.edges)  # type: ignore[attr-defined]


def edges_of(found: list[Edge]) -> list[tuple[object, ...]]:
    return [(e.source, e.target, e.type, e.line, e.anchor, e.context) for e in found]


def kept_equals_fresh(store: Store, cap: int) -> None:
    kept = load_graph(store, cap)
    assert kept is not None, "the kept graph lags a write"
    fresh = build_link_graph(store, cap)
    assert edges(kept) == edges(fresh)
    assert kept.docs == fresh.docs
    # One document's part of the kept graph (``noteseek links``) is that of the whole graph.
    _, ids = graph_documents(store)
    for doc_id in sorted(ids)[:6]:
        part = load_document_graph(store, cap, ids[doc_id], doc_id)
        assert part is not None
        for side in ("outgoing", "backlinks"):
            got, want = getattr(part, side)(doc_id), getattr(fresh, side)(doc_id)
            assert edges_of(got) == edges_of(want), (doc_id, side)
            for e in got:
                other = e.target if side == "outgoing" else e.source
                assert part.docs.get(other) == fresh.docs.get(other)


class RandomVault:
    """Notes written straight into a store: random names, titles, aliases and links."""

    def __init__(self, store: Store, rng: random.Random) -> None:
        self.store = store
        self.rng = rng
        self.files: dict[tuple[str, str], int] = {}  # (root, path) -> file id
        self.serial = 0
        with store.transaction():
            store.ensure_root("n", "/n", "files")
            store.ensure_root("m", "/m", "memory")

    def target(self) -> str:
        rng = self.rng
        name = rng.choice([*NAMES, "nowhere", "Alpha.md", "#Heading"])
        folder = rng.choice(FOLDERS)
        form = rng.randrange(5)
        if form == 0 and folder:
            return f"{folder}/{name}"
        if form == 1 and folder:
            return f"{folder.rsplit('/', 1)[-1]}/{name.upper()}"
        return name

    def links(self) -> list[Link]:
        rng = self.rng
        out: list[Link] = []
        for line in sorted(rng.randint(1, 9) for _ in range(rng.randint(0, 6))):
            kind = rng.choice(["wikilink", "wikilink", "markdown", "embed", "property"])
            target = self.target()
            if kind == "markdown":
                target = rng.choice(["", "../", "a/", "/c/"]) + target.rsplit("/", 1)[-1]
                target += rng.choice(["", ".md"])
            display = rng.choice([None, None, rng.choice(NAMES)])
            if kind == "property":
                display = rng.choice(["related", "up", "tests"])
            out.append(Link(target, kind, line, display=display, context="plan to fix it"))
        return out

    def prepared(self, root: str, path: str) -> PreparedFile:
        rng = self.rng
        self.serial += 1
        name = path.rsplit("/", 1)[-1].removesuffix(".md")
        return make_file(
            root,
            path,
            [("Intro", f"text {self.serial}"), (rng.choice(["See also", "Tests", "Body"]), "x")],
            title=rng.choice([name, name, rng.choice(NAMES)]),
            aliases=rng.sample(NAMES, rng.randint(0, 2)),
            links=self.links(),
        )

    def new_path(self) -> tuple[str, str]:
        root = "m" if self.rng.random() < 0.2 else "n"
        folder = self.rng.choice(FOLDERS)
        name = self.rng.choice(NAMES) + self.rng.choice(["", "", " 2"])
        return root, (f"{folder}/" if folder else "") + f"{name}.md"

    def step(self) -> None:
        rng, store = self.rng, self.store
        op = rng.choice(["add", "add", "edit", "rename", "delete", "touch"])
        if not self.files or op == "add":
            key = self.new_path()
            if key not in self.files:
                self.files[key] = store.write_file(self.prepared(*key), 1.0, None)
            return
        key = rng.choice(sorted(self.files))
        file_id = self.files[key]
        if op == "edit":
            store.write_file(self.prepared(*key), 1.0, file_id)
        elif op == "rename":
            new = (key[0], self.new_path()[1])
            if new not in self.files:
                del self.files[key]
                self.files[new] = store.write_file(self.prepared(*new), 1.0, file_id)
        elif op == "delete":
            del self.files[key]
            store.delete_file(file_id)
        else:
            store.update_file_stat(file_id, rng.randint(1, 10**6), 5)


@pytest.mark.parametrize(
    ("backend", "seed"),
    [*(("sqlite", seed) for seed in range(12)), *(("milvus-lite", seed) for seed in range(3))],
)
def test_the_kept_graph_after_random_edits_equals_one_built_from_scratch(
    tmp_path: Path, backend: str, seed: int
) -> None:
    rng = random.Random(seed)
    store = open_backend(tmp_path, backend)
    try:
        vault = RandomVault(store, rng)
        cap = 0
        for _ in range(8):
            vault.step()
        sync_graph(store, cap)
        kept_equals_fresh(store, cap)
        for round_ in range(25):
            with store.transaction():
                for _ in range(rng.randint(1, 3)):
                    vault.step()
            if round_ == 12:
                cap = 3  # another link cap: built again with it
            update = sync_graph(store, cap)
            assert update.rebuilt == (round_ == 12)
            kept_equals_fresh(store, cap)
        # Only what a change affects is resolved again.
        key = sorted(vault.files)[0]
        store.write_file(vault.prepared(*key), 1.0, vault.files[key])
        assert not graph_current(store, cap)
        assert sync_graph(store, cap).resolved < len(vault.files) or len(vault.files) < 3
        kept_equals_fresh(store, cap)
    finally:
        store.close()


@pytest.mark.parametrize("backend", BACKENDS)
def test_a_new_note_takes_in_the_links_that_waited_for_it_and_nothing_else(
    tmp_path: Path, backend: str
) -> None:
    store = open_backend(tmp_path, backend)
    try:
        with store.transaction():
            store.ensure_root("n", "/n")
            waiting = store.write_file(
                make_file("n", "a/waiting.md", [("", "x")], links=[Link("c/Later", "wikilink", 1)]),
                1.0,
                None,
            )
            for i in range(20):
                store.write_file(
                    make_file("n", f"other{i}.md", [("", "y")], links=[Link("x", "wikilink", 1)]),
                    1.0,
                    None,
                )
        sync_graph(store, 0)
        assert [e.target for e in store.graph_edges() if e.file_id == waiting] == ["?later"]
        later = store.write_file(make_file("n", "c/later.md", [("", "z")]), 1.0, None)
        update = sync_graph(store, 0)
        assert (update.taken, update.resolved) == (1, 2)  # the new note and the one waiting
        assert [(e.target, e.target_id) for e in store.graph_edges() if e.file_id == waiting] == [
            ("n/c/later.md", later)
        ]
        store.delete_file(later)
        assert sync_graph(store, 0).resolved == 2  # the link waits again
        kept_equals_fresh(store, 0)
    finally:
        store.close()


@pytest.mark.parametrize("backend", BACKENDS)
def test_a_namespaced_page_takes_in_the_links_that_waited_for_it(
    tmp_path: Path, backend: str
) -> None:
    """Logseq: [[Project/Plan]] names the page titled "Project/Plan" (file Project___Plan.md):
    when that page appears, the waiting link resolves to it without a full rebuild."""
    store = open_backend(tmp_path, backend)
    try:
        with store.transaction():
            store.ensure_root("n", "/n")
            waiting = store.write_file(
                make_file("n", "a.md", [("", "x")], links=[Link("Project/Plan", "wikilink", 1)]),
                1.0,
                None,
            )
        sync_graph(store, 0)
        page = store.write_file(
            make_file("n", "pages/Project___Plan.md", [("", "z")], title="Project/Plan"),
            1.0,
            None,
        )
        update = sync_graph(store, 0)
        assert update.resolved == 2  # the new page and the link waiting for it
        assert [e.target_id for e in store.graph_edges() if e.file_id == waiting] == [page]
        kept_equals_fresh(store, 0)
    finally:
        store.close()


def test_the_engine_keeps_the_graph_through_edits(tmp_path: Path) -> None:
    notes = tmp_path / "notes"
    write(notes / "hub.md", "# Hub\n\n[[Topics/Cache]] and [[Later note]] and [[nowhere]].\n")
    write(notes / "Topics/Cache.md", "---\naliases: [caching]\n---\n# Cache\n\nSee [[hub]].\n")
    write(notes / "b.md", "# B\n\n[[caching]]\n")
    folder = project(tmp_path, {"notes": notes})
    with engine_for(folder) as engine:
        engine.index()
        store = engine._state.store
        cap = engine._state.values.cap
        assert graph_current(store, cap)
        kept_equals_fresh(store, cap)
        write(notes / "Later note.md", "# Later\n\nback to [[hub]]\n")
        (notes / "Topics/Cache.md").rename(notes / "Topics/Cached.md")
        engine.update_paths("notes", ["Later note.md", "Topics/Cache.md", "Topics/Cached.md"])
        kept_equals_fresh(store, cap)
        out = {o["doc_id"] or "?" + o["placeholder"] for o in engine.links("hub.md")["outgoing"]}
        assert out == {"notes/Later note.md", "?cache", "?nowhere"}
        assert engine.links("b.md")["outgoing"][0]["doc_id"] == "notes/Topics/Cached.md"
        (notes / "b.md").unlink()
        engine.index()
        kept_equals_fresh(store, cap)
        assert engine.links("Topics/Cached.md")["backlinks"] == []


def test_a_fresh_process_reads_the_kept_communities(tmp_path: Path) -> None:
    notes = tmp_path / "notes"
    for group in ("a", "b"):
        for i in range(1, 5):
            others = " ".join(f"[[{group}{j}]]" for j in range(1, 5) if j != i)
            write(notes / f"{group}{i}.md", f"# {group}{i}\n\nzebra {group}\n\nSee {others}.\n")
    folder = project(tmp_path, {"notes": notes})
    with engine_for(folder) as engine:
        engine.index(keyword_only=True)
        kept = engine._state.store.stored_communities()
        groups = engine.communities()
    assert kept is not None and len(kept) == 8 and len(set(kept.values())) == 2
    script = (
        "import json, sys\n"
        "from pathlib import Path\n"
        "from noteseek.engine import SearchRequest, open_engine\n"
        "engine = open_engine(Path(sys.argv[1]), flags={'search.recency': 'off'})\n"
        "res = engine.search(SearchRequest('zebra', top_k=8, mode='keyword', explain=True))\n"
        "boosted = [h.doc_id for h in res.hits if h.explain['fusion'].get('community_factor')]\n"
        "print(json.dumps({'louvain': 'networkx' in sys.modules, 'boosted': boosted,\n"
        "                  'groups': engine.communities()}))\n"
    )
    run = subprocess.run(
        [sys.executable, "-c", script, str(folder)], capture_output=True, text=True
    )
    assert run.returncode == 0, run.stderr
    seen = json.loads(run.stdout)
    assert seen["louvain"] is False  # no Louvain (networkx) in the searching process
    assert seen["groups"] == groups
    top = groups[seen["boosted"][0]]
    assert {d for d in seen["boosted"]} == {d for d, g in groups.items() if g == top}


def downgrade_to_schema_4(index_db: Path) -> None:
    """What an index of schema 4 is: migration 5's tables and triggers are not there (nor
    migration 6's index, nor migration 7's keyword log)."""
    conn = sqlite3.connect(index_db)
    conn.execute("DROP INDEX vectors_keys")
    for trigger in ("files_keyword_insert", "files_keyword_update", "files_keyword_delete"):
        conn.execute(f"DROP TRIGGER {trigger}")
    conn.execute("DROP TABLE keyword_log")
    conn.execute("DELETE FROM meta WHERE key = 'keyword_log'")
    for trigger in ("files_graph_insert", "files_graph_update", "files_graph_delete"):
        conn.execute(f"DROP TRIGGER {trigger}")
    for table in ("graph_edges", "graph_keys", "graph_nodes", "graph_dirty", "communities"):
        conn.execute(f"DROP TABLE {table}")
    conn.execute("DELETE FROM meta WHERE key IN ('graph_max_links', 'communities_set')")
    conn.execute("PRAGMA user_version = 4")
    conn.commit()
    conn.close()


def test_an_index_from_before_the_graph_was_kept(tmp_path: Path) -> None:
    notes = tmp_path / "notes"
    write(notes / "a.md", "# A\n\n[[b]] [[c]]\n")
    write(notes / "b.md", "# B\n\n[[a]]\n")
    write(notes / "c.md", "# C\n\n[[a]] [[b]]\n")
    folder = project(tmp_path, {"notes": notes})
    with engine_for(folder) as engine:
        engine.index(keyword_only=True)
        index_db = Path(engine._state.store.path)  # type: ignore[attr-defined]
        links = engine.links("a.md")
        groups = engine.communities()
    downgrade_to_schema_4(index_db)
    with engine_for(folder) as engine:
        store = engine._state.store  # opening migrates: every file waits for the graph
        assert len(store.graph_dirty()) == 3 and store.stored_communities() is None
        assert load_graph(store, engine._state.values.cap) is None
        assert engine.links("a.md") == links  # resolved in memory meanwhile
        assert engine.communities() == groups
        engine.index(keyword_only=True)  # the next writer builds the kept graph
        assert graph_current(store, engine._state.values.cap)
        kept_equals_fresh(store, engine._state.values.cap)
        assert engine.links("a.md") == links
        assert store.stored_communities() is not None and engine.communities() == groups


@pytest.mark.parametrize("backend", BACKENDS)
def test_communities_wait_for_enough_change_when_they_are_expensive(
    tmp_path: Path, backend: str
) -> None:
    store = open_backend(tmp_path, backend)
    try:
        with store.transaction():
            store.ensure_root("n", "/n")
            ids = [
                store.write_file(
                    make_file(
                        "n", f"n{i}.md", [("", "x")], links=[Link(f"n{i + 1}", "wikilink", 1)]
                    ),
                    1.0,
                    None,
                )
                for i in range(100)
            ]
        assert refresh_communities(store, sync_graph(store, 0))  # never computed
        assert not refresh_communities(store, sync_graph(store, 0))  # nothing changed
        store.write_file(make_file("n", "n5.md", [("", "y")]), 1.0, ids[5])
        assert refresh_communities(store, sync_graph(store, 0))  # cheap: every change counts
        store.set_meta("communities_seconds", "30")  # as if Louvain took 30 s
        store.write_file(make_file("n", "n6.md", [("", "y")]), 1.0, ids[6])
        assert not refresh_communities(store, sync_graph(store, 0))  # 2 of 100 changed
        for i in (7, 8):
            store.write_file(make_file("n", f"n{i}.md", [("", "y")]), 1.0, ids[i])
        assert refresh_communities(store, sync_graph(store, 0))  # 2% reached
    finally:
        store.close()
