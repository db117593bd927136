"""The git kind: a repository's commit history, one document per commit.

Its spec: commits answer the ``commits`` scope; a commit's date says when, not how relevant
(no recency: "when" is asked with after/before), its hunks are its sections (no per-document
cap; ``git.document_weight``); commits are not notes (they stay out of the link graph, and
their always-real dates say nothing about whether the notes' dates are); the page renders
the Markdown its source writes; ``[git] discover`` finds the repositories of the other roots;
and many commits are read in one ``git log`` by the bulk preparer
(``noteseek.indexing.commits``).
"""

from __future__ import annotations

from collections.abc import Mapping

from noteseek.config import LoadedConfig, RootConfig, Settings
from noteseek.sources.base import SourceContext
from noteseek.sources.spec import KindSpec, Profile, lazy_source

GIT_KIND = "git"
COMMITS_SCOPE = "commits"


COMMIT_FIELD_WEIGHTS = (("title", 20.0), ("headings", 5.0))
"""A commit's subject (title) and changed paths (headings: an added page's name row matches
by its path) keep the weights commit search was tuned with when the documents' changed to
title 40, headings 1 (issue 34): added-page MRR@10 0.844 with these, 0.815 with those."""


def profile(settings: Settings) -> Profile:
    return Profile(
        recency=(),
        document_weight=settings.git.document_weight,
        max_per_document=0,
        semantic_weight=settings.git.semantic_weight,
        all_terms_bonus=settings.git.all_terms_bonus,
        field_weights=COMMIT_FIELD_WEIGHTS,
    )


def _discovered(
    config: LoadedConfig, roots: Mapping[str, RootConfig], context: SourceContext
) -> dict[str, RootConfig]:
    if not config.settings.git.discover:
        return {}
    from noteseek.sources.git.roots import discover_git_roots

    return discover_git_roots(roots, context)


SPEC = KindSpec(
    GIT_KIND,
    lazy_source("noteseek.sources.git.source:GitSource"),
    scope=COMMITS_SCOPE,
    profile=profile,
    joins_graph=False,
    judges_dates=False,
    renders_markdown=True,
    discovered_roots=_discovered,
    preparer="noteseek.indexing.commits:commit_outcomes",
    search_operation="search_git_history",
)
