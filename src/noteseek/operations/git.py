"""The git history operation: commits that answer a query, one result per commit.

``search_git_history`` takes the parameters agents know from mcp-markdown-ragdocs (query,
top_n, min_score, file_pattern, author, after, before; ``top_n`` is an alias of ``top_k``)
plus the repository, the mode and ``include_diff``; every filter is applied inside retrieval
(see ``engine/commits.py``).
"""

from __future__ import annotations

from typing import Any

from pydantic import Field

from noteseek.operations.context import Context
from noteseek.operations.dates import WHEN_FORMS, When
from noteseek.operations.params import (
    MAX_QUERY_CHARS,
    Bool,
    Mode,
    Params,
    Score,
    TopK,
    listed,
    top_k_field,
)
from noteseek.operations.search import index_info
from noteseek.search.ask import Filter, SearchRequest

MAX_HUNK_CHARS = 4_000
"""Most hunk text one commit result carries (``include_diff``)."""


class SearchGitHistory(Params):
    query: str = Field(
        min_length=1,
        max_length=MAX_QUERY_CHARS,
        description="What the change was about: its intent, words of its message or of the "
        "text it changed, a file name, an identifier.",
    )
    top_k: TopK = top_k_field()
    min_score: Score = Field(default=0.0, description="Drop commits below this.")
    file_pattern: str | list[str] | None = Field(
        default=None,
        description="Only commits that changed a file matching this glob (repository-relative, "
        "for example docs/**/*.md or auth.md); a list matches any.",
    )
    author: str | list[str] | None = Field(
        default=None,
        description="Only commits whose author's name or email contains this (case folded); a "
        "list matches any.",
    )
    after: When = Field(default=None, description=f"Authored on or after: {WHEN_FORMS}.")
    before: When = Field(default=None, description="Authored before (same forms).")
    repository: str | list[str] | None = Field(
        default=None, description="Only these git roots (names as results give them)."
    )
    mode: Mode = Field(
        default=None,
        description="hybrid (default search.mode), keyword or semantic; as for query_documents.",
    )
    include_diff: Bool = Field(
        default=False,
        description="Add the text of the hunk that matched best (the changed lines with their "
        f"context, at most {MAX_HUNK_CHARS:,} characters).",
    )
    explain: Bool = Field(default=False, description="Add each result's ranking explanation.")


def search_git_history(ctx: Context, p: SearchGitHistory) -> dict[str, Any]:
    request = SearchRequest(
        p.query,
        top_k=p.top_k,
        mode=p.mode,
        min_score=p.min_score,
        explain=p.explain,
        filter=Filter(
            changed=listed(p.file_pattern),
            authors=listed(p.author),
            after=p.after,
            before=p.before,
            roots=listed(p.repository),
        ),
    )
    found = ctx.engine.search_commits(request, include_diff=p.include_diff)
    commits = []
    for hit in found.commits:
        item = hit.to_dict()
        hunk = item.get("hunk")
        if isinstance(hunk, str) and len(hunk) > MAX_HUNK_CHARS:
            item["hunk"] = hunk[:MAX_HUNK_CHARS]
            item["hunk_truncated"] = True
        commits.append(item)
    warnings = list(found.warnings)
    if ctx.indexing() and ctx.service is not None:
        warnings.append("the index is being built or updated: results may be incomplete")
    return {
        "index": index_info(ctx),
        "query": found.query,
        "mode": found.mode,
        "took_ms": round(found.took_ms, 1),
        "lanes": found.lanes,
        "commits": commits,
        "warnings": warnings,
        **found.spelling,
    }
