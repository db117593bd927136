"""What a source kind is, as the rest of noteseek asks it: the spec each kind registers.

Every behaviour that differs by kind is said once, here, by the kind itself: which search
scope its documents answer (``docs``, ``memory``, ``commits``, or one of its own), how they are
cut and ranked (its :class:`Profile`), whether they join the link graph, whether their dates
say anything about the other documents' dates, whether a root's Markdown style is detected,
how the page renders them, which roots exist without being configured, and the optional
capabilities a kind may have (a bulk preparer that turns many documents into index rows in
one pass, a writer agents write through). The engine, the indexer, the operations, the doors
and the page ask a root's spec (:func:`noteseek.sources.registry.spec_of`); none of them
compares a kind's name, so a fourth kind is one package and one registration.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from noteseek.config import LoadedConfig, RootConfig, Settings

if TYPE_CHECKING:
    from noteseek.sources.base import Source, SourceContext

SourceFactory = Callable[[str, RootConfig, "SourceContext"], "Source"]
"""factory(root name, root settings, context) -> the root's source."""


def lazy_source(ref: str) -> SourceFactory:
    """A factory for the source class ``module:Class``, imported on the first root of the
    kind (a kind's package stays light: a start that never opens its roots never loads it)."""
    module, _, name = ref.partition(":")

    def open_root(root_name: str, root: RootConfig, context: SourceContext) -> Source:
        import importlib

        factory: SourceFactory = getattr(importlib.import_module(module), name)
        return factory(root_name, root, context)

    return open_root


DOCS_SCOPE = "docs"
"""The scope of documents: what a search looks in unless asked for another."""
ALL_SCOPE = "all"
"""A search of every scope at once."""


@dataclass(frozen=True, slots=True)
class Profile:
    """How a kind's documents are cut and ranked; None leaves the index's own setting.

    A search whose documents are all of kinds with one profile (a search of the ``memory``
    scope, say) runs with it, whichever door it came through."""

    chunk_chars: int | None = None
    """Largest chunk in characters (``chunking.max_chars`` when None)."""
    merge_small: bool = True
    """Whether short sections merge with their neighbours (``chunking.merge_below``)."""
    expand_chars: int | None = None
    """Each result grows to its section, then its neighbours, within this many characters
    when the search does not say (``search/expand.py``); None: ``search.expand_chars``."""
    recency: tuple[tuple[float, float], ...] | None = None
    """Recency tiers (days, factor); None: the index's (``search.recency``, judged by the
    documents' dates); empty: none."""
    document_weight: float | None = None
    """``search.document_weight`` for these documents."""
    max_per_document: int | None = None
    """``search.max_per_document`` for these documents (0: no cap)."""
    semantic_weight: float | None = None
    """``search.semantic_weight`` (the semantic lane's fusion weight) for these documents."""
    all_terms_bonus: float | None = None
    """``search.all_terms_bonus`` (how far ahead a short query's all-words matches rank) for
    these documents."""
    field_weights: tuple[tuple[str, float], ...] = ()
    """BM25 weights of some keyword fields for these documents (``search.weights`` names
    them; the fields not given keep the index's)."""


DEFAULT_PROFILE = Profile()


def _default_profile(_settings: Settings) -> Profile:
    return DEFAULT_PROFILE


def _no_roots(_config: LoadedConfig, _roots: Mapping[str, RootConfig]) -> dict[str, RootConfig]:
    return {}


RootsHook = Callable[[LoadedConfig, Mapping[str, RootConfig]], dict[str, RootConfig]]
"""hook(config, the roots so far) -> roots the kind adds that no setting names."""
DiscoverHook = Callable[
    [LoadedConfig, Mapping[str, RootConfig], "SourceContext"], dict[str, RootConfig]
]
"""hook(config, the roots so far, what their sources are built with) -> roots found by
looking at them; the context gives the rules their walks follow, so a hook that looks under a
root's folder enters only what the root's own walk enters."""


@dataclass(frozen=True)
class KindSpec:
    """One source kind, as registered (:func:`noteseek.sources.registry.register_kind`)."""

    name: str
    """The kind's name, as ``[roots.NAME] kind = ...`` spells it."""
    open: SourceFactory
    """Builds a root's :class:`~noteseek.sources.base.Source`."""
    scope: str = DOCS_SCOPE
    """The search scope its documents answer (``search --source SCOPE``)."""
    profile: Callable[[Settings], Profile] = _default_profile
    """Its ranking and chunking profile under the settings in force."""
    joins_graph: bool = True
    """Whether its documents are link-graph nodes (a ``[[link]]`` may mean one)."""
    typed_links: bool = False
    """Whether its links are typed by the words around them, which are kept with the link
    (an agent's memory says whether it *refactors* or *plans* what it links)."""
    judges_dates: bool = True
    """Whether its documents' dates tell whether the index's dates say when things were
    written (``search.recency = "auto"``); a kind whose dates are always real says nothing
    about the others'."""
    detects_style: bool = False
    """Whether a root's Markdown style (notes, docs, Logseq, Dendron) is detected from its
    files; other kinds are read as docs."""
    renders_markdown: bool = False
    """Whether the page always renders its documents as Markdown (its source renders them so);
    otherwise the file's parser decides."""
    names_index: bool = True
    """Whether its roots tell an index apart (shown in the doors' ``index ... (roots: ...)``
    line and remembered for a named index); a folder every index may have does not."""
    owns_folder: bool = False
    """Whether its folder belongs to it alone: other roots' walks never enter it, and the
    watcher watches it from the start (creating it), since other processes write there."""
    implicit_roots: RootsHook = _no_roots
    """Roots the kind adds before stored and discovered ones (the memory folder)."""
    discovered_roots: DiscoverHook | None = None
    """Roots found by looking at the other roots (repositories under the folders): looked
    for once per set of roots, after every other root is known."""
    preparer: str | None = None
    """``module:function`` of a bulk preparer: the indexer hands it every changed document
    of a root at once (one ``git log`` for many commits) instead of one at a time. Named, not
    imported, so the kind's package stays below the indexing layer."""
    search_operation: str | None = None
    """The operation that answers a search of its scope with the kind's own unit (a commit
    rather than its hunks); the CLI's ``search --source SCOPE`` calls it."""
    writer: Callable[[Path, Settings], Any] | None = None
    """Builds the writer of a root's folder (a memory folder agents write through)."""
    extra: Mapping[str, Any] = field(default_factory=dict)
    """Anything else a kind's own modules want to find with it."""
