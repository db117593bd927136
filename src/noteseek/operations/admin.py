"""Operations on the index itself: its status, a re-index by the live writer, one-shot runs."""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

from noteseek import __version__
from noteseek.operations.context import Context
from noteseek.operations.errors import Invalid, Unavailable
from noteseek.operations.params import IndexRoots, NoParams, Rebuild, Reindex


def index_status(ctx: Context, _p: NoParams) -> dict[str, Any]:
    status = ctx.engine.status()
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
        "roots": status.get("roots", []),
        "embedding": status.get("embedding"),
        "communities": status.get("communities"),
        "failed_files": len(problems),
        "failures": problems[:cap] if cap is not None else problems,
        "last_run": status.get("last_run"),
        "notices": status.get("notices", []),
        "version": __version__,
        "service": service,
        "queue": {
            "paths": (service or {}).get("queued_paths", 0),
            "jobs": (service or {}).get("queued_jobs", 0),
        },
    }


def reindex(ctx: Context, p: Reindex) -> dict[str, Any]:
    if ctx.service is None:
        raise Unavailable("this process runs without a live index; reindex is unavailable")
    roots = _roots_of(ctx, p.paths) if p.paths else None
    job = ctx.service.reindex(roots, force=p.force)
    return {"job": job.to_dict(), "hint": "index_status reports the job's state"}


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
    """Index in this process, as the index's writer for the run (or refuse: conflict)."""
    from noteseek.engine.live import writer_role

    engine = ctx.engine
    with writer_role(engine.index_dir, "index"):
        report = engine.index(
            p.roots or None, force=p.force, keyword_only=p.keyword_only, **progress
        )
    return report.to_dict() | {"index_dir": str(engine.index_dir)}


def rebuild(ctx: Context, p: Rebuild, **progress: Any) -> dict[str, Any]:
    engine = ctx.engine
    if not engine.roots():
        raise Unavailable("nothing to rebuild: no roots configured or indexed")
    from noteseek.engine.live import writer_role

    with writer_role(engine.index_dir, "rebuild"):
        report = engine.rebuild(keyword_only=p.keyword_only, **progress)
    return report.to_dict() | {"index_dir": str(engine.index_dir)}
