"""The search operations: ranked sections for a query, token-frugal, or for a hypothesis."""

from __future__ import annotations

import os
from pathlib import Path
from typing import TYPE_CHECKING, Any

from noteseek.operations.context import Context
from noteseek.operations.params import Hypothesis, QueryCompressed, QueryDocuments
from noteseek.sources.registry import scope_operation as scope_operation

if TYPE_CHECKING:
    from noteseek.engine import SearchResponse


MIN_CONTENT_CHARS = 200
"""The least text worth giving a result from what remains of an answer's budget."""


def query_documents(ctx: Context, p: QueryDocuments) -> dict[str, Any]:
    return search_payload(ctx, ctx.engine.search(p.request(p.query, with_text=True)))


def query_documents_compressed(ctx: Context, p: QueryCompressed) -> dict[str, Any]:
    request = p.request(p.query, compressed=True, similarity_threshold=p.similarity_threshold)
    return search_payload(ctx, ctx.engine.search(request))


def search_with_hypothesis(ctx: Context, p: Hypothesis) -> dict[str, Any]:
    request = p.request(p.hypothesis, hypothesis=True, with_text=True)
    return search_payload(ctx, ctx.engine.search(request))


def index_info(ctx: Context) -> dict[str, Any]:
    """The index that answers (its folder and root names), for every search result set.

    Roots of kinds that tell no index apart (the agent memory folder, which every index may
    have) are left out.
    """
    engine = ctx.engine
    info: dict[str, Any] = {"dir": str(engine.index_dir), "roots": sorted(engine.naming_roots())}
    if engine.location is not None:  # kept elsewhere (Milvus): that is the index's name
        info["store"] = engine.location
    return info


def index_line(info: dict[str, Any]) -> str:
    """``index ~/.local/share/noteseek/... (roots: notes, docs)``: what the doors print; an
    index kept in Milvus is named by where it is (``index Milvus at ... (collections ...)``)."""
    folder = str(info.get("store") or info["dir"])
    home = str(Path.home())
    if home not in ("", os.sep) and (folder == home or folder.startswith(home + os.sep)):
        folder = "~" + folder[len(home) :]
    return f"index {folder} (roots: {', '.join(info['roots']) or 'none'})"


def search_payload(ctx: Context, response: SearchResponse) -> dict[str, Any]:
    """The response with each result's text capped (``explain`` kept when asked for).

    A result carries at most ``limits.content_chars`` (or the search's ``expand_chars`` when
    larger: an expansion is not cut back) and a call at most ``limits.payload_chars`` in all.
    A result past that budget keeps its snippet (its content is empty, marked truncated);
    so does a result whose section a better result's expansion holds (``expanded_in``).
    """
    limits = ctx.limits
    per_result = limits.content_chars
    if per_result is not None:
        per_result = max(per_result, response.expand_chars)
    budget = limits.payload_chars
    results = []
    changes = ctx.engine.last_changes(h.doc_id for h in response.hits)
    for hit in response.hits:
        item = hit.to_dict()
        change = changes.get(hit.doc_id)
        if change is not None:
            item["last_change"] = change.to_dict()
        text = item.pop("text", None) or ""
        limit = len(text)
        if per_result is not None:
            limit = min(limit, per_result)
        if budget is not None:
            # A sliver of a section reads worse than none: below a snippet's length, none.
            limit = min(limit, budget) if budget >= min(limit, MIN_CONTENT_CHARS) else 0
            budget -= limit
        item["content"] = text[:limit]
        item["truncated"] = len(text) > limit
        results.append(item)
    indexing = ctx.indexing()
    warnings = list(response.warnings)
    if indexing and ctx.service is not None:
        warnings.append("the index is being built or updated: results may be incomplete")
    payload: dict[str, Any] = {
        "status": "indexing" if indexing else "ready",
        "index": index_info(ctx),
        "query": response.query,
        "mode": response.mode,
        "took_ms": round(response.took_ms, 1),
        "lanes": response.lanes,
        "timings_ms": response.timings_ms,
        "results": results,
        "warnings": warnings,
    }
    if response.compression is not None:
        payload["compression"] = response.compression
    if response.expansion:
        payload["expansion"] = response.expansion
    payload.update(response.spelling())
    return payload
