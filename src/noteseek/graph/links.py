"""The link graph: stored links resolved to documents the way Obsidian does, with typed edges.

Resolution (case-insensitive throughout):

* A Markdown link (``[x](../a/b.md)``) is a path relative to the linking file's folder, then
  relative to the root; ``.md`` is tried when the target does not end with it.
* An embed is resolved as a wikilink, then as a Markdown link.
* A wikilink or embed (``[[Note]]``, ``[[folder/Note]]``, ``![[Note]]``):
  1. a target with a ``/`` matches documents whose path ends with it (with or without
     ``.md``), else a document titled or aliased so (a Logseq namespace: ``[[A/B]]``);
  2. otherwise the file stem (``Note`` for ``Note.md``; ``a.b.c`` for Dendron's ``a.b.c.md``);
  3. then the document title, then its aliases.
  Several candidates: the one in the linking document's root, then the shortest path (as
  Obsidian's "shortest path when possible"), then alphabetical, so the choice is stable.
* Dendron's ``dendron://vault/`` prefix is dropped.
* ``[[a|b]]`` is read Obsidian's way (target ``a``, label ``b``); when ``a`` resolves to
  nothing and ``b`` does, Dendron's way (label first) is taken.
* A frontmatter property link (``related: "[[Note]]"``, ``up: parent-note``; see
  ``noteseek.parse.frontmatter.frontmatter_links``) is resolved as a wikilink.
* A target that resolves to nothing becomes a placeholder node named by the folded target, so
  a note written later under that name links up on the next build without re-indexing.

Every lookup goes through a map (path, file stem, title and alias, every folder-boundary tail
of every path), and the choice among a lookup's candidates is remembered per linking root, so
resolving costs the same whatever the vault's size. The lookups a link made are reported as
*keys* (the folded last name it looked for: ``note`` for ``[[a/Note#h]]`` or ``../a/note.md``)
and every document has the keys it can be found by (:func:`document_keys`): a link can only
resolve differently when a document with one of its keys appears, goes or changes, which is
what lets the persisted graph (``graph/sync.py``) re-resolve only the links a change affects.

Edge types of a memory's links (the linking document is in a root of kind ``memory``):
``refactors``, ``plans`` or ``mentions``, from the words around the link (see
:func:`memory_edge_type`); the link's context is kept on the edge.

Edge types of a document's links (the first rule that applies):

* ``embeds``: an embed (``![[Note]]`` or ``![x](note.md)``);
* ``tests``: the linking file is a test (``test_*``, ``*_test.*``, ``*.test.*``, or inside a
  ``test/`` or ``tests/`` folder), or the link is under a heading Test, Tests or Testing;
* ``implements``: the link is under a heading Implementation or Implementations;
* ``related``: the link is under a heading See also, Related or Related notes;
* ``links_to``: every other link.

"Under a heading" means any heading on the path to the link's section, so a link in
``## See also > ### Papers`` is ``related``. A frontmatter property link is typed as if it sat
under a heading named by its key (``_`` and ``-`` read as spaces): ``related``/``see_also``
give ``related``, ``implements`` gives ``implements``, ``tests``/``tested_by`` give ``tests``,
any other key (``up``, ``parent``...) gives ``links_to``.
"""

from __future__ import annotations

import posixpath
import re
from collections import defaultdict
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Literal

EdgeType = Literal[
    "links_to", "embeds", "related", "implements", "tests", "mentions", "refactors", "plans"
]
EDGE_TYPES: tuple[EdgeType, ...] = (
    "links_to",
    "embeds",
    "related",
    "implements",
    "tests",
    "mentions",
    "refactors",
    "plans",
)
MEMORY_EDGE_TYPES: tuple[EdgeType, ...] = ("mentions", "refactors", "plans")

_TEST_FILE_RE = re.compile(
    r"(^|/)(tests?/|test_[^/]*$|[^/]*_test\.[^/]+$|[^/]*\.test\.[^/]+$)", re.I
)
# Dendron's cross-vault links: [[label|dendron://vault-name/note.name]].
_DENDRON_VAULT_RE = re.compile(r"^dendron://[^/]+/")
_HEADING_TYPES: tuple[tuple[re.Pattern[str], EdgeType], ...] = (
    (re.compile(r"^(tests?|testing|tested by)$", re.I), "tests"),
    (re.compile(r"^(implementations?|implements)$", re.I), "implements"),
    (re.compile(r"^(see ?also|related|related notes)$", re.I), "related"),
)


@dataclass(frozen=True, slots=True)
class DocInfo:
    """What resolution needs to know about one indexed document."""

    doc_id: str
    root: str
    path: str
    title: str
    aliases: tuple[str, ...] = ()
    memory: bool = False
    """The document is a memory (its root is of kind ``memory``): its links are typed by
    what the memory says about the target (see :func:`memory_edge_type`)."""


@dataclass(frozen=True, slots=True)
class RawLink:
    """A stored link with where it was found."""

    source: str
    """doc_id of the linking document."""
    target: str
    kind: str
    """``wikilink``, ``embed`` or ``markdown`` (as the parser wrote it)."""
    line: int
    anchor: str | None = None
    headings: tuple[str, ...] = ()
    """Heading path of the section holding the link."""
    display: str | None = None
    """The other side of ``[[a|b]]`` (Obsidian writes target|label, Dendron label|target)."""
    context: str = ""
    """The text around the link in the linking document."""


@dataclass(frozen=True, slots=True)
class Edge:
    source: str
    target: str
    """A doc_id, or ``?<folded name>`` for a placeholder (a note that does not exist yet)."""
    type: EdgeType
    line: int
    anchor: str | None = None
    context: str = ""

    @property
    def resolved(self) -> bool:
        return not self.target.startswith("?")


def placeholder(name: str, *, whole: bool = False) -> str:
    """The node id of an unresolved target: folded, without folders and extension. With
    ``whole`` (a memory's link), a target written with folders keeps them: ``src/auth.py``
    and ``lib/auth.py`` are two files a memory may be about, not one name."""
    path = name.strip().replace("\\", "/")
    while path.startswith("./"):
        path = path[2:]
    stem = path.strip("/") if whole and "/" in path.strip("/") else posixpath.basename(path)
    if stem.lower().endswith(".md"):
        stem = stem[:-3]
    return "?" + " ".join(stem.split()).casefold()


def bare_name(node: str) -> str:
    """A placeholder's last part: ``?src/auth.py`` -> ``?auth.py``."""
    return "?" + posixpath.basename(node[1:])


_NOWHERE = DocInfo("", "", "", "")
"""The linking document of a name looked up on its own (a search for what links to it)."""


def fold_key(name: str) -> str:
    """The key of a looked-up name: its last part (after the last ``/``), case-folded, with
    runs of white space as one space."""
    return " ".join(posixpath.basename(name).split()).casefold()


def document_keys(doc: DocInfo) -> set[str]:
    """The keys a link must look up to find ``doc``: its file name with and without the
    extension, its title and its aliases (see the module docstring)."""
    name = posixpath.basename(doc.path)
    keys = {fold_key(name), fold_key(posixpath.splitext(name)[0])}
    # A namespaced title or alias ("A/B", Logseq) is found by [[A/B]], whose key is "b".
    keys.update(fold_key(n) for n in (doc.title, *doc.aliases))
    keys.discard("")
    return keys


class Resolver:
    """Resolves link targets against a set of documents (see the module docstring)."""

    def __init__(self, docs: Iterable[DocInfo]) -> None:
        self.docs = {d.doc_id: d for d in docs}
        self._picked: dict[tuple[str, str, str], str] = {}
        """(map, key, linking root) -> the candidate chosen: a name shared by thousands of
        notes (``index``, ``readme``) is chosen among them once, not once per link."""
        self._by_path: dict[tuple[str, str], str] = {}
        self._by_stem: dict[str, list[str]] = defaultdict(list)
        self._by_name: dict[str, list[str]] = defaultdict(list)
        # Every tail of every path (without its extension) that starts at a folder boundary:
        # [[b/c]] finds a/b/c.md by one lookup; scanning every path for every link was
        # quadratic (100,000 such links over 10,000 notes: 10^9 comparisons).
        self._by_suffix: dict[str, list[str]] = defaultdict(list)
        for d in self.docs.values():
            path = d.path.casefold()
            self._by_path[(d.root, path)] = d.doc_id
            base = posixpath.splitext(path)[0]
            cut = 0
            while True:
                self._by_suffix[base[cut:]].append(d.doc_id)
                cut = base.find("/", cut) + 1
                if cut == 0:
                    break
            stem = posixpath.splitext(posixpath.basename(path))[0]
            self._by_stem[stem].append(d.doc_id)
            for name in (d.title, *d.aliases):
                folded = " ".join(name.split()).casefold()
                if folded:
                    self._by_name[folded].append(d.doc_id)

    def resolve(
        self, source: str, target: str, kind: str, keys: set[str] | None = None
    ) -> str | None:
        """The doc_id ``target`` (written in ``source``) points at, or None; the keys of the
        lookups made are added to ``keys`` when given."""
        doc = self.docs.get(source)
        if doc is None:
            return None
        clean = _DENDRON_VAULT_RE.sub("", target.strip().replace("\\", "/"))
        if kind != "markdown":
            clean = clean.partition("#")[0].strip()
        if not clean:
            return None
        if kind == "markdown":
            return self._markdown(doc, clean, keys)
        if kind == "embed":  # ![[Note]] or ![x](path): either form
            return self._wikilink(doc, clean, keys) or self._markdown(doc, clean, keys)
        return self._wikilink(doc, clean, keys)

    def resolve_name(self, name: str) -> str | None:
        """The doc_id a wikilink ``[[name]]`` written nowhere in particular points at (no
        root is preferred), or None."""
        clean = _DENDRON_VAULT_RE.sub("", name.strip().replace("\\", "/")).partition("#")[0]
        return self._wikilink(_NOWHERE, clean.strip(), None) if clean.strip() else None

    def _markdown(self, doc: DocInfo, target: str, seen: set[str] | None) -> str | None:
        folder = posixpath.dirname(doc.path)
        for base in (folder, ""):
            rel = posixpath.normpath(posixpath.join(base, target.lstrip("/")))
            if rel.startswith("../") or rel == "..":
                continue
            # Dendron's names hold dots (a.b.c), so ".md" is tried whatever the name ends with.
            for candidate in (rel,) if rel.casefold().endswith(".md") else (rel, rel + ".md"):
                if seen is not None:
                    seen.add(fold_key(candidate))
                found = self._by_path.get((doc.root, candidate.casefold()))
                if found:
                    return found
        return None

    def _wikilink(self, doc: DocInfo, target: str, seen: set[str] | None) -> str | None:
        folded = target.casefold()
        if folded.endswith(".md"):
            folded = folded[:-3]
        if seen is not None:
            seen.add(fold_key(folded))
        if "/" in folded:
            # Documents whose path (without extension) is the target or ends with "/target";
            # else a page named so (Logseq's namespaces: [[A/B]] is the page titled A/B).
            found = folded.lstrip("/")
            by_path = self._pick("suffix", found, doc, self._by_suffix.get(found))
            if by_path is not None:
                return by_path
            name = " ".join(found.split())
            return self._pick("name", name, doc, self._by_name.get(name))
        if folded in self._by_stem:
            return self._pick("stem", folded, doc, self._by_stem[folded])
        name = " ".join(folded.split())
        return self._pick("name", name, doc, self._by_name.get(name))

    def _pick(
        self, lookup: str, key: str, doc: DocInfo, candidates: Sequence[str] | None
    ) -> str | None:
        if not candidates:
            return None
        if len(candidates) == 1:
            return candidates[0]
        memo = (lookup, key, doc.root)
        chosen = self._picked.get(memo)
        if chosen is None:
            chosen = self._picked[memo] = min(
                candidates,
                key=lambda c: (
                    self.docs[c].root != doc.root,
                    self.docs[c].path.count("/"),
                    len(self.docs[c].path),
                    self.docs[c].path,
                ),
            )
        return chosen


def types_links(headings: Sequence[str]) -> bool:
    """Whether a heading path types the links under it (See also, Tests, Implements...): such
    a section is never merged into a neighbour's chunk, which would lose the heading."""
    return any(
        pattern.match(" ".join(h.split())) for h in headings for pattern, _ in _HEADING_TYPES
    )


def edge_type(source_path: str, kind: str, headings: Sequence[str]) -> EdgeType:
    """The type of an edge by the rule table in the module docstring."""
    if kind == "embed":
        return "embeds"
    if _TEST_FILE_RE.search(source_path):
        return "tests"
    for heading in headings:
        name = " ".join(heading.split())
        for pattern, typed in _HEADING_TYPES:
            if pattern.match(name):
                return typed
    return "links_to"


_REFACTOR_RE = re.compile(
    r"\b(refactor\w*|rewr[io]te\w*|rewriting|renam\w*|restructur\w*|extract\w*|split\w*|"
    r"clean(?:ed|ing|s)?[ -]up|migrat\w*|simplif\w*|reorganis\w*|reorganiz\w*|mov(?:e|ed|ing)\b)",
    re.I,
)
_PLAN_RE = re.compile(
    r"\b(plan\w*|todo|to-do|next( step)?s?|will|shall|should|going to|intend\w*|propos\w*|"
    r"later|tomorrow|roadmap|want to|need to|must)\b",
    re.I,
)


def memory_edge_type(context: str, headings: Sequence[str] = ()) -> EdgeType:
    """How a memory refers to a document, from the words around the link (and the headings
    above it): ``refactors`` (refactor, rewrite, rename, split, migrate, move...), ``plans``
    (plan, todo, next, will, should, going to...), else ``mentions``. Refactoring wins over
    planning: "plan to refactor [[auth.py]]" is about changing that code."""
    text = " ".join((*headings, context))
    if _REFACTOR_RE.search(text):
        return "refactors"
    if _PLAN_RE.search(text):
        return "plans"
    return "mentions"


def _section_of(link: RawLink) -> Sequence[str]:
    """Where a link sits for typing: its heading path, or for a frontmatter property link the
    property's name (``related:`` types like a "Related" heading)."""
    if link.kind == "property" and link.display:
        return (" ".join(link.display.replace("_", " ").replace("-", " ").split()),)
    return link.headings


def resolve_link(resolver: Resolver, link: RawLink, keys: set[str] | None = None) -> Edge | None:
    """The edge ``link`` makes (to a document, or a placeholder), or None: a link to a
    heading of the same note (``[[#Heading]]``), a note linking to itself, or a link from a
    document the resolver does not hold. The keys of the lookups made are added to ``keys``."""
    source = resolver.docs.get(link.source)
    if source is None:
        return None
    target = resolver.resolve(link.source, link.target, link.kind, keys)
    if target is None and link.display and link.kind in ("wikilink", "embed"):
        # The other side of [[a|b]] (Dendron writes label|target).
        target = resolver.resolve(link.source, link.display, link.kind, keys)
    if target is None and not placeholder(link.target)[1:]:
        return None  # [[#Heading]]: a link inside the same note
    if target == link.source:
        return None  # a note linking to itself says nothing about neighbours
    typed = (
        memory_edge_type(link.context, _section_of(link))
        if source.memory
        else edge_type(source.path, link.kind, _section_of(link))
    )
    return Edge(
        link.source,
        target if target is not None else placeholder(link.target, whole=source.memory),
        typed,
        link.line,
        link.anchor,
        link.context,
    )


class LinkGraph:
    """Documents and typed edges; placeholders for targets that do not exist yet.

    Built by resolving stored links (:meth:`build`), or from edges resolved before and kept
    with the index (:meth:`from_edges`); the resolver, for names looked up on their own, is
    then built on first use.
    """

    def __init__(self, docs: dict[str, DocInfo], resolver: Resolver | None = None) -> None:
        self.docs = docs
        self._resolver = resolver
        self.edges: list[Edge] = []
        self._out: dict[str, list[Edge]] = defaultdict(list)
        self._in: dict[str, list[Edge]] = defaultdict(list)

    @property
    def resolver(self) -> Resolver:
        if self._resolver is None:
            self._resolver = Resolver(self.docs.values())
        return self._resolver

    @classmethod
    def build(
        cls, docs: Iterable[DocInfo], links: Iterable[RawLink], max_per_document: int = 0
    ) -> LinkGraph:
        """Resolve ``links``; with ``max_per_document``, only the first that many of each
        document count (the store gives them by line), so a note of 100,000 links costs
        what a note of that many does."""
        resolver = Resolver(docs)
        kept: dict[str, int] = defaultdict(int)
        edges: list[Edge] = []
        for link in links:
            if link.source not in resolver.docs:
                continue
            if max_per_document > 0:
                if kept[link.source] >= max_per_document:
                    continue
                kept[link.source] += 1
            edge = resolve_link(resolver, link)
            if edge is not None:
                edges.append(edge)
        return cls.from_edges(resolver.docs, edges, resolver)

    @classmethod
    def from_edges(
        cls,
        docs: Mapping[str, DocInfo] | Iterable[DocInfo],
        edges: Iterable[Edge],
        resolver: Resolver | None = None,
    ) -> LinkGraph:
        """A graph of edges resolved before (in the order given)."""
        held = dict(docs) if isinstance(docs, Mapping) else {d.doc_id: d for d in docs}
        graph = cls(held, resolver)
        for edge in edges:
            graph.edges.append(edge)
            graph._out[edge.source].append(edge)
            graph._in[edge.target].append(edge)
        return graph

    def resolve(
        self, source: str, target: str, kind: str, display: str | None = None
    ) -> str | None:
        """The doc_id a link from ``source`` leads to, or None: the target, then for a
        wikilink or embed the other side of ``[[a|b]]`` (Dendron writes label|target)."""
        found = self.resolver.resolve(source, target, kind)
        if found is None and display and kind in ("wikilink", "embed"):
            found = self.resolver.resolve(source, display, kind)
        return found

    def outgoing(self, doc_id: str) -> list[Edge]:
        return list(self._out.get(doc_id, ()))

    def backlinks(self, doc_id: str) -> list[Edge]:
        return list(self._in.get(doc_id, ()))

    def placeholders(self) -> dict[str, int]:
        """Unresolved targets and how many links point at each."""
        counts: dict[str, int] = defaultdict(int)
        for edge in self.edges:
            if not edge.resolved:
                counts[edge.target] += 1
        return dict(counts)

    def neighbours(self, doc_id: str) -> set[str]:
        """Resolved documents one link away, in either direction."""
        out = {e.target for e in self._out.get(doc_id, ()) if e.resolved}
        out |= {e.source for e in self._in.get(doc_id, ())}
        out.discard(doc_id)
        return out
