"""A search as a caller asks for it: :class:`SearchRequest` and its :class:`Filter`.

Every door and every library user hands the engine one (``Engine.search``,
``Engine.search_commits``); the engine fills in the settings, checks the bounds
(``config/ranges.py``) and resolves it for the pipeline (``search/request.py``). Kept free of
the engine's imports: the doors build requests before anything heavy loads.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field

from noteseek.sources.spec import DOCS_SCOPE


@dataclass(frozen=True, slots=True, kw_only=True)
class Filter:
    """What a search keeps, described as a caller gives it: one description for documents,
    memories and commits, applied inside retrieval (before any top-k cut).

    The engine compiles it into :class:`~noteseek.types.Filters` (dates read, patterns
    checked: :func:`noteseek.search.filters.build_filters`); a malformed value raises
    :class:`~noteseek.search.filters.FilterError` naming it.
    """

    paths: Sequence[str] = ()
    """Glob patterns over root-relative paths (``**`` spans folders); any may match."""
    exclude_paths: Sequence[str] = ()
    """Files to leave out: glob patterns or root-relative paths."""
    tags: Sequence[str] = ()
    """Every tag must be present (``project`` also matches ``project/atlas``)."""
    roots: Sequence[str] = ()
    """Only these roots (for commits: these repositories)."""
    after: str | float | None = None
    """On or after: a date, an ISO time, an age (``7d``) or seconds since the epoch."""
    before: str | float | None = None
    where: Sequence[str] = ()
    """Frontmatter conditions, ``key=value`` or ``key!=value``."""
    authors: Sequence[str] = ()
    """Any is part of the author's name or email (commits)."""
    changed: Sequence[str] = ()
    """Glob patterns over the files a commit changed (old names of renames too)."""
    doc_ids: Sequence[str] | None = None
    """Only these documents (None: any; empty: none)."""


@dataclass(frozen=True, slots=True, kw_only=True)
class SearchRequest:
    """One search as a caller asks for it: every door and library user hands the engine one
    (``Engine.search``, ``Engine.search_commits``). None means "the setting": ``top_k`` is
    ``search.top_k``, ``mode`` is ``search.mode`` (or, for a ``hypothesis``, hybrid when
    ``search.hypothesis_keyword`` else semantic), ``expand_chars`` is the searched kind's
    (``search.expand_chars`` for documents, ``memory.expand_chars`` for memories).
    Bounds are those of the settings fields (``config/ranges.py``).
    """

    query: str = field(kw_only=False)
    top_k: int | None = None
    mode: str | None = None
    """``hybrid`` (keyword and semantic lanes fused), ``keyword`` or ``semantic``."""
    filter: Filter = Filter()
    source: str = DOCS_SCOPE
    """The scope searched (``docs``, ``memory``, ``commits``, ``all``: the kinds' specs say
    which roots each holds); a search of one kind ranks by that kind's profile."""
    min_score: float = 0.0
    """Drop results below this relevance (0-1)."""
    expand_chars: int | None = None
    """Each result grows to its whole section, then its neighbours, within this many
    characters (``search/expand.py``)."""
    hypothesis: bool = False
    """The query is a hypothetical answer, embedded as a document would be (HyDE)."""
    explain: bool = False
    with_text: bool = False
    """Each hit carries its section's text."""
    snippets: bool = True
    compressed: bool = False
    """Also drop near-duplicate sections (``similarity_threshold``) and report the tokens
    saved (``search/compress.py``); implies ``with_text``."""
    similarity_threshold: float = 0.85
