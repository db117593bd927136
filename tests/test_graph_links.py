"""The link graph: Obsidian-style resolution, placeholders, typed edges and backlinks."""

from __future__ import annotations

import time
from pathlib import Path

import pytest

from noteseek.engine import Engine, SearchRequest
from noteseek.graph.links import (
    DocInfo,
    LinkGraph,
    RawLink,
    Resolver,
    document_keys,
    edge_type,
    placeholder,
)
from tests.helpers import engine_for, project, write


def docs(
    *items: tuple[str, str] | tuple[str, str, tuple[str, ...]], root: str = "n"
) -> list[DocInfo]:
    out = []
    for item in items:
        path, title = item[0], item[1]
        aliases = item[2] if len(item) > 2 else ()
        out.append(DocInfo(f"{root}/{path}", root, path, title, aliases))
    return out


@pytest.fixture
def resolver() -> Resolver:
    return Resolver(
        [
            *docs(
                ("notes/Redis.md", "Redis", ("redis-server",)),
                ("archive/old/redis.md", "Old Redis"),
                ("notes/caching-strategies.md", "Caching strategies"),
                ("a/b/guide.md", "Guide"),
                ("c/guide.md", "Other guide"),
                ("dendron.topic.publish.md", "Publish"),
                ("notes/sub/deep.md", "Deep"),
            ),
            *docs(("notes/redis.md", "Redis in the other root"), root="other"),
        ]
    )


@pytest.mark.parametrize(
    ("source", "target", "kind", "expected"),
    [
        ("n/notes/caching-strategies.md", "Redis", "wikilink", "n/notes/Redis.md"),
        ("n/notes/caching-strategies.md", "REDIS", "wikilink", "n/notes/Redis.md"),
        ("n/notes/caching-strategies.md", "Redis.md", "wikilink", "n/notes/Redis.md"),
        ("n/notes/Redis.md", "Caching strategies", "wikilink", "n/notes/caching-strategies.md"),
        ("n/notes/caching-strategies.md", "redis-server", "wikilink", "n/notes/Redis.md"),
        ("n/notes/caching-strategies.md", "old/redis", "wikilink", "n/archive/old/redis.md"),
        ("n/notes/Redis.md", "guide", "wikilink", "n/c/guide.md"),  # shortest path
        ("n/notes/Redis.md", "b/guide", "wikilink", "n/a/b/guide.md"),
        ("n/notes/Redis.md", "dendron.topic.publish", "wikilink", "n/dendron.topic.publish.md"),
        (
            "n/notes/Redis.md",
            "dendron://site/dendron.topic.publish",
            "wikilink",
            "n/dendron.topic.publish.md",
        ),
        (
            "n/notes/Redis.md",
            "Caching strategies#Stampede",
            "wikilink",
            "n/notes/caching-strategies.md",
        ),
        ("n/notes/Redis.md", "sub/deep.md", "markdown", "n/notes/sub/deep.md"),
        ("n/notes/sub/deep.md", "../Redis.md", "markdown", "n/notes/Redis.md"),
        ("n/notes/sub/deep.md", "../redis", "markdown", "n/notes/Redis.md"),
        ("n/notes/Redis.md", "a/b/guide.md", "markdown", "n/a/b/guide.md"),  # from the root
        ("n/notes/Redis.md", "dendron.topic.publish", "markdown", "n/dendron.topic.publish.md"),
        ("n/notes/Redis.md", "Caching strategies", "embed", "n/notes/caching-strategies.md"),
        ("other/notes/redis.md", "redis", "wikilink", "other/notes/redis.md"),  # same root
        ("n/notes/Redis.md", "Nowhere", "wikilink", None),
        # A target with a slash: documents whose path ends with it, at a folder boundary.
        ("n/notes/Redis.md", "/b/guide", "wikilink", "n/a/b/guide.md"),
        ("n/notes/Redis.md", "a/b/guide.md", "wikilink", "n/a/b/guide.md"),
        ("n/notes/Redis.md", "notes/redis", "wikilink", "n/notes/Redis.md"),  # root first
        ("other/notes/redis.md", "notes/redis", "wikilink", "other/notes/redis.md"),
        ("n/notes/Redis.md", "/b/gui", "wikilink", None),
        ("n/notes/Redis.md", "old/", "wikilink", None),
        ("n/notes/Redis.md", "/", "wikilink", None),
        ("n/notes/sub/deep.md", "../../../outside.md", "markdown", None),
    ],
)
def test_resolution(
    resolver: Resolver, source: str, target: str, kind: str, expected: str | None
) -> None:
    assert resolver.resolve(source, target, kind) == expected


def test_ambiguous_names_choose_the_same_way_for_every_link_of_a_root() -> None:
    resolver = Resolver(
        [
            *docs(
                ("x/b/Guide.md", "Guide one"),
                ("a/b/guide.md", "Guide two"),
                ("deep/er/a/b/guide.md", "Guide three"),
                ("p/Same Name.md", "Same name"),
                ("q/same name.md", "Same name"),
                ("r/titled.md", "Same name"),
            ),
            *docs(("z/b/guide.md", "Guide other root"), root="other"),
        ]
    )
    # Several documents end with b/guide: the linking root's, then the fewest folders, then
    # the shortest path, then alphabetical (case-insensitive lookups, exact paths compared).
    for _ in range(2):  # the second time from the remembered choice
        assert resolver.resolve("n/p/Same Name.md", "B/GUIDE", "wikilink") == "n/a/b/guide.md"
        assert resolver.resolve("other/z/b/guide.md", "b/guide", "wikilink") == "other/z/b/guide.md"
        assert resolver.resolve("n/r/titled.md", "guide", "wikilink") == "n/a/b/guide.md"
        assert resolver.resolve("n/r/titled.md", "er/a/b/guide", "wikilink") == (
            "n/deep/er/a/b/guide.md"
        )
    # A file name wins over a title; two file names: alphabetical among equals. Titles are
    # compared with white space folded, file names as they are.
    assert resolver.resolve("n/r/titled.md", "same NAME", "wikilink") == "n/p/Same Name.md"
    assert resolver.resolve("n/p/Same Name.md", "same  NAME", "wikilink") == "n/r/titled.md"
    assert resolver.resolve("n/r/titled.md", "Guide one", "wikilink") == "n/x/b/Guide.md"


@pytest.mark.parametrize(
    ("source", "target", "kind", "keys"),
    [
        ("n/notes/Redis.md", "Folder/Sub/Some  Note#Part", "wikilink", {"some note"}),
        ("n/notes/Redis.md", "Some Note.md", "embed", {"some note", "some note.md"}),
        ("n/notes/sub/deep.md", "../x/Y.md", "markdown", {"y.md"}),
        ("n/notes/sub/deep.md", "y", "markdown", {"y", "y.md"}),
        ("n/notes/Redis.md", "redis-server", "wikilink", {"redis-server"}),  # found: one lookup
    ],
)
def test_the_keys_a_link_looked_up(
    resolver: Resolver, source: str, target: str, kind: str, keys: set[str]
) -> None:
    seen: set[str] = set()
    resolver.resolve(source, target, kind, seen)
    assert seen == keys


def test_a_document_is_found_only_by_its_keys() -> None:
    (doc,) = docs(("a/b/Some  Note.txt.md", "A Title", ("Other name", "x/y")))
    # A namespaced alias ("x/y", Logseq) is found by [[x/y]], whose key is its last part.
    assert document_keys(doc) == {
        "some note.txt.md",
        "some note.txt",
        "a title",
        "other name",
        "y",
    }
    resolver = Resolver([doc, *docs(("c.md", "C"))])
    for target, kind in [
        ("b/some  note.txt", "wikilink"),
        ("Some  Note.txt", "wikilink"),
        ("a title", "wikilink"),
        ("other name", "embed"),
        ("a/b/Some  Note.txt.md", "markdown"),
        ("X/Y", "wikilink"),  # no such path: the page named so
    ]:
        seen: set[str] = set()
        assert resolver.resolve("n/c.md", target, kind, seen) == doc.doc_id
        assert seen & document_keys(doc), target


@pytest.mark.parametrize(
    ("path", "kind", "headings", "expected"),
    [
        ("notes/a.md", "wikilink", (), "links_to"),
        ("notes/a.md", "embed", ("See also",), "embeds"),
        ("notes/a.md", "wikilink", ("A", "See also"), "related"),
        ("notes/a.md", "markdown", ("A", "Related notes", "Papers"), "related"),
        ("notes/a.md", "wikilink", ("Design", "Implementation"), "implements"),
        ("notes/a.md", "wikilink", ("Testing",), "tests"),
        ("tests/test_cache.md", "wikilink", (), "tests"),
        ("src/cache_test.md", "wikilink", (), "tests"),
        ("notes/latest.md", "wikilink", ("Contest results",), "links_to"),
    ],
)
def test_edge_types(path: str, kind: str, headings: tuple[str, ...], expected: str) -> None:
    assert edge_type(path, kind, headings) == expected


def test_dendron_label_first_links_and_placeholders() -> None:
    graph = LinkGraph.build(
        docs(("community.discord.roles.md", "Roles"), ("index.md", "Home")),
        [
            RawLink("n/index.md", "here", "wikilink", 3, display="community.discord.roles"),
            RawLink("n/index.md", "Future Note", "wikilink", 4),
            RawLink("n/index.md", "future note", "wikilink", 5),
            RawLink("n/index.md", "", "wikilink", 6, anchor="Section"),
            RawLink("n/index.md", "index", "wikilink", 7),  # itself
        ],
    )
    targets = [e.target for e in graph.outgoing("n/index.md")]
    assert targets == ["n/community.discord.roles.md", "?future note", "?future note"]
    assert graph.placeholders() == {"?future note": 2}
    assert graph.backlinks("n/community.discord.roles.md")[0].source == "n/index.md"
    assert graph.neighbours("n/community.discord.roles.md") == {"n/index.md"}
    assert placeholder("folder/Future Note.md") == "?future note"


@pytest.fixture
def linked(tmp_path: Path) -> tuple[Engine, Path]:
    notes = tmp_path / "notes"
    write(
        notes / "redis.md",
        "# Redis\n\nSee [[Caching strategies]] and [the deep one](sub/deep.md).\n\n"
        "## See also\n\n- [[Postgres]]\n- [[Not written yet]]\n\n![[diagram]]\n",
    )
    write(notes / "caching strategies.md", "# Caching strategies\n\nBack to [[redis]].\n")
    write(notes / "sub" / "deep.md", "---\naliases: [postgres]\n---\n# Deep\n\ntext\n")
    write(notes / "tests" / "test_redis.md", "# Redis tests\n\nChecks [[Redis]].\n")
    engine = engine_for(project(tmp_path, {"notes": notes}))
    engine.index()
    return engine, notes


def test_engine_links_and_backlinks(linked: tuple[Engine, Path]) -> None:
    engine, notes = linked
    out = engine.links("redis.md")
    assert out["doc_id"] == "notes/redis.md"
    got = [(o["doc_id"] or "?" + o["placeholder"], o["type"]) for o in out["outgoing"]]
    assert got == [
        ("notes/caching strategies.md", "links_to"),
        ("notes/sub/deep.md", "links_to"),
        ("notes/sub/deep.md", "related"),  # [[Postgres]] is deep.md's alias
        ("?not written yet", "related"),
        ("?diagram", "embeds"),
    ]
    back = {(b["doc_id"], b["type"]) for b in out["backlinks"]}
    assert back == {
        ("notes/caching strategies.md", "links_to"),
        ("notes/tests/test_redis.md", "tests"),
    }
    # A note written later under a placeholder's name links up without re-indexing redis.md.
    write(notes / "Not written yet.md", "# Not written yet\n\nNow it is.\n")
    engine.index()
    again = engine.links("redis.md")
    assert ("notes/Not written yet.md", "related") in {
        (o["doc_id"], o["type"]) for o in again["outgoing"]
    }
    assert engine.links("Not written yet.md")["backlinks"][0]["doc_id"] == "notes/redis.md"
    engine.close()


def test_cli_links(linked: tuple[Engine, Path]) -> None:
    import json

    from tests.helpers import run_cli

    engine, notes = linked
    folder = notes.parent
    engine.close()
    data = json.loads(run_cli(["links", "redis.md", "--json"], folder).stdout)
    assert data["doc_id"] == "notes/redis.md"
    assert {o["type"] for o in data["outgoing"]} == {"links_to", "related", "embeds"}
    text = run_cli(["links", "redis.md"], folder).stdout
    assert "not written yet (no such note yet)" in text and "linked from (2)" in text
    missing = run_cli(["links", "nowhere.md"], folder, code=1)
    assert "no indexed document" in missing.stderr


def test_communities_and_the_community_boost(tmp_path: Path) -> None:
    notes = tmp_path / "notes"
    for group in ("a", "b"):
        for i in range(1, 5):
            others = " ".join(f"[[{group}{j}]]" for j in range(1, 5) if j != i)
            body = "zebra " * (5 - i if group == "a" else i)
            write(notes / f"{group}{i}.md", f"# {group}{i}\n\n{body}\n\nSee {others}.\n")
    write(notes / "lonely.md", "# Lonely\n\nzebra zebra\n")
    folder = project(tmp_path, {"notes": notes})
    with engine_for(folder) as engine:
        engine.index()
        groups = engine.communities()
        assert set(groups) == {f"notes/{g}{i}.md" for g in "ab" for i in range(1, 5)}
        assert len({groups[f"notes/a{i}.md"] for i in range(1, 5)}) == 1
        assert groups["notes/a1.md"] != groups["notes/b1.md"]
        assert engine.status()["communities"] == {"count": 2, "documents": 8}
        res = engine.search(SearchRequest("zebra", top_k=9, mode="keyword", explain=True))
        top = groups[res.hits[0].doc_id]
        for hit in res.hits:
            boosted = hit.explain["fusion"].get("community_factor") == 1.1
            assert boosted == (groups.get(hit.doc_id) == top), hit.doc_id
        assert [h.score for h in res.hits] == sorted((h.score for h in res.hits), reverse=True)
    with engine_for(folder, **{"search.community_boost": 1.0}) as engine:
        off = engine.search(SearchRequest("zebra", top_k=9, mode="keyword", explain=True))
    assert all("community_factor" not in h.explain["fusion"] for h in off.hits)


def test_frontmatter_relations_are_typed_links(tmp_path: Path) -> None:
    notes = tmp_path / "notes"
    write(
        notes / "design.md",
        "---\ntitle: Cache design\nrelated: ['[[Eviction]]', '[[Nowhere yet]]']\n"
        "up: [[Architecture]]\nimplements: eviction\ntested_by: cache tests\n"
        "homepage: https://example.org/x\nstatus: draft\n---\n# Cache design\n\nBody.\n",
    )
    write(notes / "eviction.md", "# Eviction\n\nLRU.\n")
    write(notes / "architecture.md", "# Architecture\n\nOverview.\n")
    write(notes / "cache tests.md", "# Cache tests\n\nChecks.\n")
    engine = engine_for(project(tmp_path, {"notes": notes}))
    engine.index()
    out = engine.links("design.md")
    got = {(o["doc_id"] or "?" + o["placeholder"], o["type"], o["line"]) for o in out["outgoing"]}
    assert got == {
        ("notes/eviction.md", "related", 3),
        ("?nowhere yet", "related", 3),
        ("notes/architecture.md", "links_to", 4),
        ("notes/eviction.md", "implements", 5),
        ("notes/cache tests.md", "tests", 6),
    }
    # status: draft and the URL are values, not notes; the backlink side sees the relation.
    assert [b["doc_id"] for b in engine.links("eviction.md")["backlinks"]] == [
        "notes/design.md",
        "notes/design.md",
    ]
    engine.close()


def test_graph_lane_brings_linked_notes_and_explains_the_path(tmp_path: Path) -> None:
    notes = tmp_path / "notes"
    write(notes / "walrus.md", "# Walrus\n\nThe walrus hauls out on ice.\n\nSee [[Tusks]].\n")
    write(notes / "tusks.md", "# Tusks\n\nLong ivory teeth used to climb.\n")
    write(
        notes / "seals.md",
        "# Seals\n\nA walrus is no seal.\n\n## Related\n\n- [[Flippers]]\n",
    )
    write(notes / "flippers.md", "# Flippers\n\nLimbs shaped for swimming.\n")
    write(notes / "desert.md", "# Desert\n\nCamels and sand.\n")
    folder = project(tmp_path, {"notes": notes})
    with engine_for(folder) as engine:
        engine.index()
        plain = {h.path for h in engine.search(SearchRequest("walrus", mode="keyword")).hits}
        assert plain == {"walrus.md", "seals.md"}  # the lane is off by default
    flags = {"search.graph_weight": 0.5}
    with engine_for(folder, **flags) as engine:
        hits = engine.search(SearchRequest("walrus", mode="keyword", explain=True)).hits
        by_path = {h.path: h for h in hits}
        assert {"tusks.md", "flippers.md"} <= set(by_path) and "desert.md" not in by_path
        tusks = by_path["tusks.md"]
        assert "graph" in tusks.lanes and "keyword" not in tusks.lanes
        assert tusks.explain is not None
        assert tusks.explain["graph"]["via"] == "notes/walrus.md"
        assert tusks.explain["graph"]["edge"] == "links_to"
        assert by_path["flippers.md"].explain["graph"]["edge"] == "related"  # type: ignore[index]
        assert hits[0].path in {"walrus.md", "seals.md"}  # the seeds stay on top
    no_related = {**flags, "search.graph_edge_weights": {"related": 0.0}}
    with engine_for(folder, **no_related) as engine:
        paths = {h.path for h in engine.search(SearchRequest("walrus", mode="keyword")).hits}
        assert "tusks.md" in paths and "flippers.md" not in paths
    with engine_for(folder, **flags, **{"search.graph_method": "ppr"}) as engine:
        paths = {h.path for h in engine.search(SearchRequest("walrus", mode="keyword")).hits}
        assert {"tusks.md", "flippers.md"} <= paths and "desert.md" not in paths


def test_slash_links_resolve_by_lookup_and_the_graph_keeps_each_documents_first_links() -> None:
    # 5,000 notes and 20,000 [[folder/note]] links: a scan of every path per link was
    # quadratic (10^8 comparisons, minutes); a lookup per link is not.
    notes = docs(*((f"f{i % 100}/n{i}.md", f"Note {i}") for i in range(5_000)))
    links = [
        RawLink("n/f0/n0.md", f"f{i % 100}/n{i % 5_000}", "wikilink", i + 1) for i in range(20_000)
    ]
    started = time.process_time()  # CPU time: a busy machine does not stretch it
    graph = LinkGraph.build(notes, links)
    assert time.process_time() - started < 2.0
    assert len(graph.edges) == 20_000 - 4  # n0 links to itself four times
    assert graph.edges[0].target == "n/f1/n1.md"
    capped = LinkGraph.build(notes, links, max_per_document=100)
    assert [e.line for e in capped.outgoing("n/f0/n0.md")] == list(range(2, 101))
    assert capped.backlinks("n/f1/n1.md") and not capped.backlinks("n/f1/n101.md")
