"""The status of an index: where it is, what it holds, and how far its vectors are.

Status is asked for often (a page polls it) and must stay cheap: it never runs a computation
that takes seconds, and shows what was last computed instead (the embedding count of a large
index may be a moment old; communities are those kept in the index, or computed here before).
"""

from __future__ import annotations

import os
from typing import Any

from noteseek.embed.base import MODEL_META_KEY
from noteseek.engine.checking import last_check
from noteseek.engine.state import IndexState
from noteseek.indexing.styles import stored_styles
from noteseek.store.errors import IndexCorrupt
from noteseek.store.folder import damaged_message


def status(state: IndexState) -> dict[str, Any]:
    """Where the index is, what it holds, how far embedding is, and what went wrong.

    ``damaged`` is None, or the message every door gives about a damaged index (recorded by
    any process, or met while reading the counts here): then the counts are zero, since
    nothing in the index is trusted until it is rebuilt. ``check`` is the last full check of
    the index file (``engine/checking.py``), None when it was never checked through.
    """
    out: dict[str, Any] = {
        "index_dir": str(state.index_dir),
        "index_dir_reason": state.config.index_dir_reason,
        "exists": state.index_exists,
        "config_files": [str(p) for p in state.config.files_read],
        "damaged": None,
        "store": state.store_info(),
        "check": None,
    }
    if state.index_exists:
        checked = last_check(state)
        out["check"] = None if checked is None else checked.to_dict()
        reason = state.damage()
        if reason is None:
            try:
                return _contents(state, out)
            except IndexCorrupt as exc:
                reason = exc.reason
        out["damaged"] = damaged_message(state.index_dir, reason)
    out.update(
        roots=[
            {"name": n, "kind": r.kind, "path": r.path, "files": 0, "chunks": 0}
            for n, r in sorted(state.roots().items())
        ],
        files=0,
        chunks=0,
        links=0,
        index_bytes=0,
        problems=[],
        last_run=None,
        notices=list(state.notices),
    )
    return out


def _contents(state: IndexState, out: dict[str, Any]) -> dict[str, Any]:
    """``out`` with what a sound index holds."""
    stats = state.store.stats()
    configured = state.settings.roots
    kinds = state.store.root_kinds()
    styles = stored_styles(state.store)
    for root in stats["roots"]:
        root["kind"] = kinds.get(root["name"], "files")
        root["style"] = styles.get(root["name"])
        root["configured"] = root["name"] in configured
    out.update(stats)
    out["problems"] = [
        {"root": p.root, "path": p.path, "severity": p.severity, "reason": p.reason}
        for p in state.store.problems()
    ]
    out["last_run"] = state.store.last_run()
    embedded, total = state.values.embedding_progress(allow_stale=True)
    emb = state.settings.embedding
    out["embedding"] = {
        "enabled": emb.enabled,
        "keyword_only": state.keyword_only(),
        "provider": emb.provider,
        "model": state.model_id,
        "index_model": state.store.meta(MODEL_META_KEY),
        "embedded": embedded,
        "total": total,
        "pending": total - embedded,
    }
    if total > embedded and emb.enabled and not state.keyword_only():
        # Who is embedding the rest, if a writer runs (a background index, serve, mcp, watch).
        from noteseek.engine.writer import live_holder  # loads the lock library: only here

        holder = live_holder(state.index_dir)
        if holder is not None and holder.get("pid") != os.getpid():
            out["embedding"]["writer"] = {
                "pid": holder.get("pid"),
                "command": holder.get("command"),
            }
    sizes = state.values.community_sizes()  # status never runs Louvain itself: kept or cached
    if sizes is not None:
        out["communities"] = {"count": sizes[0], "documents": sizes[1]}
    out["manifest"] = state.store.manifest()
    if state.read_only and state.read_only not in state.notices:
        state.notices.append(state.read_only)  # said once, by status (not by every search)
    out["notices"] = list(state.notices)
    return out
