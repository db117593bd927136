"""Operations on the index itself: its status, a re-index by the live writer, one-shot runs,
a migration to another backend."""

from __future__ import annotations

import os
from pathlib import Path
from typing import TYPE_CHECKING, Any

from noteseek import __version__
from noteseek.operations.context import Context
from noteseek.operations.errors import Invalid, Unavailable
from noteseek.operations.params import IndexRoots, Migrate, NoParams, Rebuild, Reindex
from noteseek.sources.registry import ensure_known, kinds_in_scope, scope_operation, scopes

if TYPE_CHECKING:
    from noteseek.engine import Engine


def index_status(ctx: Context, _p: NoParams) -> dict[str, Any]:
    status = ctx.engine.status()
    ensure_known(root["kind"] for root in status.get("roots", []) if root.get("kind"))
    problems = status.get("problems", [])
    cap = ctx.limits.problems
    service = ctx.service.state() if ctx.service is not None else None
    damaged = status.get("damaged")
    return {
        "status": "damaged" if damaged else "indexing" if ctx.indexing() else "ready",
        "damaged": damaged,
        "index_dir": status["index_dir"],
        "index_dir_reason": status["index_dir_reason"],
        "exists": status["exists"],
        "documents": status.get("files", 0),
        "chunks": status.get("chunks", 0),
        "links": status.get("links", 0),
        "index_bytes": status.get("index_bytes", 0),
        "store": status.get("store"),
        "roots": status.get("roots", []),
        "embedding": status.get("embedding"),
        "communities": status.get("communities"),
        "failed_files": sum(1 for p in problems if p["severity"] != "warning"),
        "warned_files": sum(1 for p in problems if p["severity"] == "warning"),
        "failures": problems[:cap] if cap is not None else problems,
        "last_run": status.get("last_run"),
        "notices": status.get("notices", []),
        "version": __version__,
        "scopes": [
            {"name": name, "kinds": kinds_in_scope(name), "operation": scope_operation(name)}
            for name in scopes()
        ],
        "service": service,
        "queue": {
            "paths": (service or {}).get("queued_paths", 0),
            "jobs": (service or {}).get("queued_jobs", 0),
        },
        "check": status.get("check"),
    }


def check_index(ctx: Context, _p: NoParams) -> dict[str, Any]:
    """Check the whole index for damage now (``engine/checking.py``), then its status: damage
    found is recorded, so the status (and every other process) reports it."""
    if ctx.engine.damaged() is None:
        ctx.engine.full_check()
    return index_status(ctx, _p)


def reindex(ctx: Context, p: Reindex) -> dict[str, Any]:
    if ctx.service is None:
        raise Unavailable("this process runs without a live index; reindex is unavailable")
    roots = _roots_of(ctx, p.paths) if p.paths else None
    job, merged = ctx.service.request_reindex(roots, force=p.force)
    if not merged:
        return {"job": job.to_dict(), "hint": "index_status reports the job's state"}
    return {
        "job": job.to_dict(),
        "merged_into": job.id,
        "hint": f"merged into queued job {job.id} (a reindex was already waiting; it now "
        "covers this request too); index_status reports the job's state",
    }


def _roots_of(ctx: Context, items: list[str]) -> list[str]:
    known = ctx.engine.roots()
    chosen: list[str] = []
    for item in items:
        if ".." in item.replace("\\", "/").split("/"):
            raise Invalid(f"{item!r}: '..' is not allowed; give a path inside a root")
        name = item if item in known else _root_holding(item, known)
        if name is None:
            raise Invalid(f"{item!r} is neither a root ({', '.join(sorted(known))}) nor inside one")
        if name not in chosen:
            chosen.append(name)
    return chosen


def _root_holding(item: str, known: dict[str, Any]) -> str | None:
    for name, root in known.items():
        base = Path(os.path.realpath(Path(root.path).expanduser()))
        target = Path(os.path.realpath(item if os.path.isabs(item) else base / item))
        if target.is_relative_to(base) and (os.path.isabs(item) or _exists(target)):
            return name
    return None


def _exists(path: Path) -> bool:
    """Whether ``path`` exists; a path the system refuses to look up (no permission to a
    folder on the way) is not there, rather than an error."""
    try:
        return path.exists()
    except OSError:
        return False


def index(ctx: Context, p: IndexRoots, **progress: Any) -> dict[str, Any]:
    """Index in this process, as the index's writer for the run (or refuse: conflict); writes
    other processes made meanwhile (memories) are indexed before the role is given up."""
    from noteseek.engine.handoff import one_shot_writer

    engine = ctx.engine
    choice = _keyword_only_choice(p.keyword_only, p.embed)
    with one_shot_writer(engine, "index"):
        report = engine.index(
            p.roots or None,
            force=p.force,
            keyword_only=p.keyword_only or p.embed_later,
            choose_keyword_only=choice,
            **progress,
        )
        engine.settle_vectors()
    return _summary(engine, report.to_dict())


def rebuild(ctx: Context, p: Rebuild, **progress: Any) -> dict[str, Any]:
    engine = ctx.engine
    if not engine.roots():
        raise Unavailable("nothing to rebuild: no roots configured or indexed")
    from noteseek.engine.handoff import one_shot_writer

    choice = _keyword_only_choice(p.keyword_only, p.embed)
    with one_shot_writer(engine, "rebuild"):
        report = engine.rebuild(keyword_only=p.keyword_only, choose_keyword_only=choice, **progress)
        engine.settle_vectors()
    return _summary(engine, report.to_dict())


def migrate(ctx: Context, p: Migrate, **progress: Any) -> dict[str, Any]:
    """Copy the index in use into another backend, holding its writer role meanwhile."""
    from noteseek.engine.migrate import migrate as copy

    engine = ctx.engine
    engine.close()  # its own handle (opened again on use): Milvus Lite serves one at a time
    return copy(
        engine.settings,
        engine.index_dir,
        p.to,
        replace=p.replace,
        collection=p.collection,
        progress=progress.get("progress"),
    )


def _summary(engine: Engine, report: dict[str, Any]) -> dict[str, Any]:
    """An index run's report, with where the index is and whether it stays keyword-only."""
    return report | {"index_dir": str(engine.index_dir), "keyword_only": engine.keyword_only()}


def _keyword_only_choice(keyword_only: bool, embed: bool) -> bool | None:
    """What to remember in the index: keyword-only (True), embed (False) or as before (None)."""
    if keyword_only and embed:
        raise Invalid("keyword_only and embed contradict each other: give one of them")
    return True if keyword_only else False if embed else None
