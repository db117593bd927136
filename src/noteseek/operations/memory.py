"""The memory operations: write, read, list, search and compact an agent's memory folder.

Writes go through the engine (``engine.memories``): the memory kind's writer puts them in the
folder as plain Markdown (atomic, locked, bounded), then one policy brings them to the index
whichever process holds the writer role, and the answer says how (``engine/handoff.py``).
"""

from __future__ import annotations

import datetime as dt
import time
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

from noteseek.config.ranges import TOP_K
from noteseek.operations.context import Context
from noteseek.operations.memory_params import (
    AppendMemory,
    CreateMemory,
    FlushMemories,
    ListMemories,
    MemoryFilters,
    MemoryRef,
    SearchLinkedMemories,
    SearchMemories,
    UpdateMemory,
)
from noteseek.operations.params import NoParams
from noteseek.operations.search import search_payload
from noteseek.search.ask import Filter, SearchRequest
from noteseek.sources.memory import MEMORY_SCOPE

LINKED_FETCH = 3
"""search_linked_memories fetches this many times the results asked for, to re-rank them."""
LINK_CONTEXT_WEIGHT = 1.0
"""How much the words around a memory's link to the document count: a result whose link
context holds every query word scores twice what it would without."""

if TYPE_CHECKING:
    from noteseek.analysis import Analyzer
    from noteseek.engine.memory import MemoryLink
    from noteseek.sources.memory.folder import MemoryFolder
    from noteseek.sources.memory.record import MemoryRecord
    from noteseek.types import Hit


def create_memory(ctx: Context, p: CreateMemory) -> dict[str, Any]:
    written = ctx.engine.memories.create(
        p.name,
        p.content,
        type=p.type,
        tags=p.tags or (),
        status=p.status,
        links=p.links or (),
        title=p.title,
    )
    return written.to_dict()


def append_memory(ctx: Context, p: AppendMemory) -> dict[str, Any]:
    written = ctx.engine.memories.append(p.content, title=p.title)
    return written.to_dict()


def update_memory(ctx: Context, p: UpdateMemory) -> dict[str, Any]:
    written = ctx.engine.memories.update(
        p.name,
        body=p.content,
        append_text=p.append,
        type=p.type,
        tags=p.tags,
        status=p.status,
        title=p.title,
    )
    return written.to_dict()


def delete_memory(ctx: Context, p: MemoryRef) -> dict[str, Any]:
    return ctx.engine.memories.delete(p.name).to_dict()


def restore_memory(ctx: Context, p: MemoryRef) -> dict[str, Any]:
    return ctx.engine.memories.restore(p.name).to_dict()


def read_memory(ctx: Context, p: MemoryRef) -> dict[str, Any]:
    root, folder = _folder(ctx)
    return _record(folder.read(p.name), root, with_content=True)


def list_memories(ctx: Context, p: ListMemories) -> dict[str, Any]:
    root, folder = _folder(ctx)
    after, before = created_range(p)
    listed = folder.list(
        type=p.type,
        tags=p.tags or (),
        status=None if p.status == "all" else p.status,
        after=after,
        before=before,
        include_trash=p.include_trash,
    )
    return {
        "root": root,
        "memories": [_record(r, root) for r in listed.records[: p.limit]],
        "count": len(listed.records),
        "problems": [{"name": n, "reason": r} for n, r in listed.problems],
    }


def memory_stats(ctx: Context, _p: NoParams) -> dict[str, Any]:
    root, folder = _folder(ctx)
    stats = folder.stats()
    return {
        "root": root,
        "folder": str(folder.path),
        "memories": stats.memories,
        "by_type": stats.by_type,
        "by_status": stats.by_status,
        "daily_logs": stats.daily_logs,
        "total_bytes": stats.total_bytes,
        "trash": stats.trash,
        "oldest": _iso(stats.oldest),
        "newest": _iso(stats.newest),
        "problems": stats.problems,
        "indexed_memories": len(ctx.engine.memory_files()),
    }


def search_memories(ctx: Context, p: SearchMemories) -> dict[str, Any]:
    request = SearchRequest(
        p.query,
        top_k=p.top_k,
        mode=p.mode,
        with_text=True,
        explain=p.explain,
        expand_chars=p.expand_chars,
        source=MEMORY_SCOPE,
        filter=memory_filter(ctx, p),
    )
    return search_payload(ctx, ctx.engine.search(request))


def search_linked_memories(ctx: Context, p: SearchLinkedMemories) -> dict[str, Any]:
    engine = ctx.engine
    node, links = engine.memory_links(p.target_document)
    linked = sorted({link.memory for link in links})
    top_k = p.top_k or engine.settings.search.top_k
    request = SearchRequest(
        p.query,
        # More than asked: the words around the links re-rank them (below).
        top_k=min(int(TOP_K.high), top_k * LINKED_FETCH),
        mode=p.mode,
        with_text=True,
        source=MEMORY_SCOPE,
        filter=Filter(doc_ids=linked),
    )
    response = engine.search(request)
    response.hits = by_link_context(engine.analyzer(), p.query, response.hits, links)[:top_k]
    payload = search_payload(ctx, response)
    if not linked:
        payload["warnings"].append(f"no memory links to {p.target_document!r} yet")
    payload.update(
        target=node,
        ghost=node.startswith("?"),
        links=[
            {"memory": link.memory, "type": link.type, "line": link.line, "context": link.context}
            for link in links
        ],
    )
    return payload


def by_link_context(
    analyzer: Analyzer, query: str, hits: list[Hit], links: Sequence[MemoryLink]
) -> list[Hit]:
    """``hits`` re-ranked by the words around their links: a memory is about the linked
    document where it links it, so a result whose lines hold a link whose context shares the
    query's words goes up by that share (``LINK_CONTEXT_WEIGHT``; half as much for a link
    elsewhere in the same memory). Scores stay 0-1, ranks and ``expanded_in`` follow."""
    terms = set(analyzer.terms(query))
    if not terms or not hits:
        return hits
    by_memory: dict[str, list[MemoryLink]] = {}
    for link in links:
        by_memory.setdefault(link.memory, []).append(link)

    def share(found: Sequence[MemoryLink]) -> float:
        words = set(analyzer.terms(" ".join(link.context for link in found)))
        return len(terms & words) / len(terms)

    for hit in hits:
        own = by_memory.get(hit.doc_id, [])
        near = [link for link in own if hit.start_line <= link.line <= hit.end_line]
        boost = share(near) if near else share(own) / 2
        hit.score *= 1 + LINK_CONTEXT_WEIGHT * boost
    ranked = sorted(hits, key=lambda h: -h.score)
    top = ranked[0].score or 1.0
    new_rank = {hit.rank: i for i, hit in enumerate(ranked, 1)}
    for i, hit in enumerate(ranked, 1):
        hit.score /= top
        hit.rank = i
        if hit.expanded_in is not None:
            hit.expanded_in = new_rank.get(hit.expanded_in, hit.expanded_in)
    return ranked


def flush_memories(ctx: Context, p: FlushMemories) -> dict[str, Any]:
    outcome = ctx.engine.flush_memories(
        doc_ids=memory_filter(ctx, p).doc_ids,
        tags=p.tags or (),
        max_chars=p.max_chars,
        dry_run=p.dry_run,
        archive=p.archive,
    )
    return outcome.to_dict()


# -- shared ------------------------------------------------------------------------------------


def memory_filter(ctx: Context, p: MemoryFilters) -> Filter:
    """What memories pass ``p``: tags and status pushed into retrieval as they are; type and
    creation dates through the documents that pass (a daily log is a journal created on its
    date, which no file spells out)."""
    where = {"active": ["status!=archived"], "archived": ["status=archived"], "all": []}
    after, before = created_range(p)
    doc_ids = None
    if p.type is not None or after is not None or before is not None:
        doc_ids = ctx.engine.memory_selection(
            type=p.type, created_after=after, created_before=before
        )
    return Filter(tags=p.tags or (), where=where[p.status], doc_ids=doc_ids)


def created_range(p: MemoryFilters) -> tuple[dt.datetime | None, dt.datetime | None]:
    """``after`` (or ``days`` ago, the later of the two) and ``before`` as times."""
    from noteseek.search.filters import when_datetime

    def when(value: str | None) -> dt.datetime | None:
        return None if not value else when_datetime(value)

    after, before = when(p.after), when(p.before)
    if p.days is not None:
        since = dt.datetime.fromtimestamp(time.time() - p.days * 86400).astimezone()
        after = since if after is None else max(after, since)
    return after, before


def _folder(ctx: Context) -> tuple[str, MemoryFolder]:
    root = ctx.engine.memory_root()
    return root, ctx.engine.memory_folder(root)


def _record(record: MemoryRecord, root: str, *, with_content: bool = False) -> dict[str, Any]:
    return {
        "name": record.name,
        "root": root,
        "kind": record.kind,
        "type": record.type,
        "status": record.status,
        "tags": list(record.tags),
        "created_at": record.created_at.isoformat(timespec="seconds"),
        "updated_at": record.updated_at.isoformat(timespec="seconds"),
        "title": record.title,
        "size": record.size,
        "trashed": record.trashed,
        "content": record.body if with_content else None,
    }


def _iso(value: dt.datetime | None) -> str | None:
    return None if value is None else value.isoformat(timespec="seconds")
