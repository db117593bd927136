"""The link graph kept with the index: brought up to date after every write, so a fresh
process reads it (and its communities) instead of resolving every link and running Louvain.

What is kept (``store.base.GraphStore``): every document's resolved edges, the keys its links
looked up (``graph.links``: the folded last name of each lookup), what the graph knew of each
document (root, path, title, aliases), and the files written since, which the store marks in
the transaction that writes them.

:func:`sync_graph` takes the marked files in:

1. a marked file that is still indexed has its own links resolved again;
2. a marked file whose names changed (added, deleted, renamed, retitled, new aliases) makes
   every document whose links looked up one of its old or new keys resolve its links again:
   a dangling ``[[Note]]`` finds the note written since, a link to a deleted note becomes a
   placeholder, ``[[guide]]`` moves to a shorter path that appeared;
3. nothing else is read: the cost follows the change, not the vault.

The result equals a graph built from scratch (``build_link_graph``; tested over random
edits). Changing ``search.max_links_per_document`` builds the graph again.

Communities (Louvain, ``graph/communities.py``) are recomputed by the writer after a sync when
the graph changed enough (:func:`communities_due`) and kept, so searches only read them.
"""

from __future__ import annotations

import json
import time
from collections import defaultdict
from collections.abc import Iterable
from dataclasses import dataclass
from typing import cast

from noteseek.graph.links import (
    DocInfo,
    Edge,
    EdgeType,
    LinkGraph,
    RawLink,
    Resolver,
    document_keys,
    resolve_link,
)
from noteseek.sources.registry import spec_of, specs
from noteseek.store.base import GraphSource
from noteseek.store.rows import EdgeRow

CAP_KEY = "graph_max_links"
"""Meta: the ``search.max_links_per_document`` the kept graph was built with, and the
version of its node ids (:data:`NODES`)."""
NODES = 2
"""Version of the kept graph's node ids: 2 keeps the folders of a memory's ghost nodes
(``?src/auth.py``); a graph kept with another version is built again."""
CHANGES_KEY = "graph_changes"
"""Meta: documents whose links were resolved again since the communities were computed."""
SECONDS_KEY = "communities_seconds"
"""Meta: how long the last computation of the communities took."""

CHEAP_SECONDS = 0.5
"""Communities that took less than this are recomputed after any change."""
CHANGED_SHARE = 0.02
"""Otherwise, after changes to this share of the documents (a burst of edits to a large
vault does not run Louvain for each one; the communities are that much older meanwhile)."""


@dataclass
class GraphUpdate:
    """What :func:`sync_graph` did."""

    taken: int = 0
    """Files written since the last sync that it took in."""
    resolved: int = 0
    """Documents whose links it resolved (their own, or their targets changed)."""
    rebuilt: bool = False
    """The whole graph was built again (first sync, or another link cap)."""
    documents: int = 0
    """Documents in the graph (0 when nothing was taken in)."""


def graph_documents(store: GraphSource) -> tuple[list[DocInfo], dict[str, int]]:
    """The documents links resolve to (only kinds that join the link graph: a ``[[link]]``
    never means a commit whose subject it happens to be), and their file ids by doc id."""
    kinds = store.root_kinds()
    typed = {n for n, kind in kinds.items() if spec_of(kind).typed_links}
    apart = [spec.name for spec in specs() if not spec.joins_graph]
    docs: list[DocInfo] = []
    ids: dict[str, int] = {}
    for f in store.named_files(exclude_kinds=apart):
        docs.append(DocInfo(f.doc_id, f.root, f.path, f.title, f.aliases, f.root in typed))
        ids[f.doc_id] = f.file_id
    return docs, ids


def build_link_graph(store: GraphSource, max_links_per_document: int = 0) -> LinkGraph:
    """The link graph of everything in ``store``, every link resolved now, with at most
    ``max_links_per_document`` links of each document (0: all)."""
    docs, _ = graph_documents(store)
    rows = store.link_rows(max_links_per_document)
    return LinkGraph.build(docs, [RawLink(*row) for row in rows], max_links_per_document)


def graph_current(store: GraphSource, max_links_per_document: int) -> bool:
    """Whether the kept graph holds every write, built with this link cap."""
    return store.meta(CAP_KEY) == _cap(max_links_per_document) and not store.graph_dirty()


def load_graph(store: GraphSource, max_links_per_document: int) -> LinkGraph | None:
    """The kept link graph, or None when it is not current (:func:`graph_current`)."""
    if not graph_current(store, max_links_per_document):
        return None
    docs, ids = graph_documents(store)
    doc_of = {file_id: doc_id for doc_id, file_id in ids.items()}
    edges = [
        Edge(doc_of[e.file_id], e.target, cast(EdgeType, e.type), e.line, e.anchor, e.context)
        for e in store.graph_edges()
        if e.file_id in doc_of
    ]
    return LinkGraph.from_edges(docs, edges)


def load_document_graph(
    store: GraphSource, max_links_per_document: int, file_id: int, doc_id: str
) -> LinkGraph | None:
    """The part of the kept link graph around one document: its links, its backlinks and the
    documents at their other ends (what ``noteseek links`` shows), read without the rest of
    the graph (a 14,000-note vault keeps 55,000 edges); None when the kept graph is not
    current (:func:`graph_current`)."""
    if not graph_current(store, max_links_per_document):
        return None
    rows = store.document_edges(file_id, doc_id)
    wanted = {file_id} | {r.file_id for r in rows}
    wanted |= {r.target_id for r in rows if r.target_id is not None}
    docs: dict[int, DocInfo] = {}
    for node_id, names in store.graph_nodes(sorted(wanted)).items():
        root, path, title, aliases, memory = json.loads(names)
        docs[node_id] = DocInfo(f"{root}/{path}", root, path, title, tuple(aliases), memory)
    edges = [
        Edge(docs[r.file_id].doc_id, r.target, cast(EdgeType, r.type), r.line, r.anchor, r.context)
        for r in rows
        if r.file_id in docs  # as load_graph: edges of documents the graph holds
    ]
    return LinkGraph.from_edges([d for d in docs.values()], edges)


def _cap(max_links_per_document: int) -> str:
    return f"{max_links_per_document}/nodes{NODES}"


def names_of(doc: DocInfo) -> str:
    """What resolution knows of a document, as kept in the graph's node."""
    return json.dumps([doc.root, doc.path, doc.title, list(doc.aliases), doc.memory])


def _keys_of_names(names: str | None) -> set[str]:
    if names is None:
        return set()
    root, path, title, aliases, memory = json.loads(names)
    return document_keys(DocInfo("", root, path, title, tuple(aliases), bool(memory)))


def sync_graph(store: GraphSource, max_links_per_document: int) -> GraphUpdate:
    """Bring the kept graph up to date with the files written since (module docstring).

    The work is planned before the write transaction (a searching thread sharing the handle
    is not held up meanwhile) and planned again inside it if anything was committed between.
    """
    cap = _cap(max_links_per_document)
    if store.meta(CAP_KEY) == cap and not store.graph_dirty():
        return GraphUpdate()
    token = store.change_token()
    plan = _plan(store, max_links_per_document) if store.meta(CAP_KEY) == cap else None
    with store.transaction():
        rebuilt = store.meta(CAP_KEY) != cap
        if rebuilt:
            store.reset_graph()
            store.set_meta(CAP_KEY, cap)
        if plan is None or rebuilt or store.change_token() != token:
            plan = _plan(store, max_links_per_document)
        update = _apply(store, plan)
        update.rebuilt = rebuilt
    return update


@dataclass
class _Plan:
    """What a sync writes: each affected file's edges and keys, the nodes, the taken files."""

    dirty: list[int]
    edges: dict[int, list[EdgeRow]]
    keys: dict[int, set[str]]
    nodes: dict[int, str | None]
    documents: int


def _plan(store: GraphSource, max_links_per_document: int) -> _Plan:
    dirty = store.graph_dirty()
    if not dirty:
        return _Plan([], {}, {}, {}, 0)
    docs, ids = graph_documents(store)
    by_file = {ids[d.doc_id]: d for d in docs}
    old = store.graph_nodes(dirty)
    nodes: dict[int, str | None] = {}
    keys: set[str] = set()
    sources: set[int] = set()
    for file_id in dirty:
        doc = by_file.get(file_id)
        names = names_of(doc) if doc is not None else None
        if names != old.get(file_id):
            keys |= _keys_of_names(old.get(file_id)) | _keys_of_names(names)
        nodes[file_id] = names
        if doc is not None:
            sources.add(file_id)
    if keys:
        sources |= store.graph_sources(keys) & by_file.keys()
    everything = len(sources) * 2 > len(by_file)
    rows = store.link_rows(max_links_per_document, None if everything else sorted(sources))
    edges, looked_up = _resolve(Resolver(docs), rows, ids, max_links_per_document)
    return _Plan(
        dirty,
        {f: edges.get(f, []) for f in sources},
        {f: looked_up.get(f, set()) for f in sources},
        nodes,
        len(docs),
    )


def _apply(store: GraphSource, plan: _Plan) -> GraphUpdate:
    if not plan.dirty:
        return GraphUpdate()
    store.write_graph(plan.edges, plan.keys, plan.nodes, plan.dirty)
    resolved = len(plan.edges) + sum(1 for n in plan.nodes.values() if n is None)
    changes = int(store.meta(CHANGES_KEY) or 0) + resolved
    store.set_meta(CHANGES_KEY, str(changes))
    return GraphUpdate(len(plan.dirty), resolved, False, plan.documents)


def _resolve(
    resolver: Resolver,
    rows: Iterable[tuple[str, str, str, int, str | None, tuple[str, ...], str | None, str]],
    ids: dict[str, int],
    max_links_per_document: int,
) -> tuple[dict[int, list[EdgeRow]], dict[int, set[str]]]:
    """Edges and looked-up keys by linking file id, for the link rows given."""
    edges: dict[int, list[EdgeRow]] = defaultdict(list)
    keys: dict[int, set[str]] = defaultdict(set)
    kept: dict[str, int] = defaultdict(int)
    for row in rows:
        link = RawLink(*row)
        file_id = ids.get(link.source)
        if file_id is None:
            continue
        if max_links_per_document > 0:
            if kept[link.source] >= max_links_per_document:
                continue
            kept[link.source] += 1
        edge = resolve_link(resolver, link, keys[file_id])
        if edge is not None:
            target_id = ids.get(edge.target)
            edges[file_id].append(
                EdgeRow(
                    file_id, edge.target, target_id, edge.type, edge.line, edge.anchor, edge.context
                )
            )
    return edges, keys


# -- communities ---------------------------------------------------------------------------


def communities_due(store: GraphSource, documents: int) -> bool:
    """Whether the kept communities of a graph of ``documents`` should be computed again:
    never computed, or the graph changed since and either they are cheap or the change is
    large enough (``CHEAP_SECONDS``, ``CHANGED_SHARE``). Reads two meta values."""
    seconds = store.meta(SECONDS_KEY)
    if seconds is None:
        return True
    changes = int(store.meta(CHANGES_KEY) or 0)
    if changes == 0:
        return False
    return float(seconds) < CHEAP_SECONDS or changes >= max(1.0, CHANGED_SHARE * documents)


def refresh_communities(store: GraphSource, update: GraphUpdate, *, force: bool = False) -> bool:
    """Compute and keep the communities of the kept graph when due after ``update`` (or
    ``force``); returns whether it did. Call :func:`sync_graph` first."""
    if not force and not communities_due(store, update.documents):
        return False
    from noteseek.graph.communities import communities_of_pairs

    started = time.monotonic()
    _, ids = graph_documents(store)
    doc_of = {file_id: doc_id for doc_id, file_id in ids.items()}
    pairs = (
        (doc_of[e.file_id], e.target)
        for e in store.graph_edges()
        if e.target_id is not None and e.file_id in doc_of
    )
    by_doc = communities_of_pairs(pairs)
    with store.transaction():
        store.set_communities({ids[d]: c for d, c in by_doc.items() if d in ids})
        store.set_meta(CHANGES_KEY, "0")
        store.set_meta(SECONDS_KEY, f"{time.monotonic() - started:.3f}")
    return True
