"""Filters as Milvus filter expressions, applied inside retrieval.

Roots, kinds, documents, tags and dates are fields of every chunk and file row, so they become
plain expressions. Path globs (gitignore-style), authors, changed files and frontmatter
conditions are matched by noteseek's own rules (the same functions the SQLite backend calls):
the files they let through are found from the file rows and enter the expression as
``file_id in [...]``. Either way the search itself is filtered, so no cut starves it.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Iterator
from typing import Any

from noteseek.globs import path_match
from noteseek.store.milvus.core import in_list, lit
from noteseek.store.sqlite.sql import author_match
from noteseek.types import Filters

NOTHING = "file_id < 0"
"""An expression no row matches."""


def native(filters: Filters) -> str:
    """The conditions Milvus evaluates itself (empty: none)."""
    conds: list[str] = []
    if filters.roots:
        conds.append(f"root in {in_list(filters.roots)}")
    if filters.kinds:
        conds.append(f"kind in {in_list(filters.kinds)}")
    if filters.doc_ids is not None:
        conds.append(f"doc_id in {in_list(filters.doc_ids)}" if filters.doc_ids else NOTHING)
    for tag in filters.tags:
        conds.append(f"array_contains(tags, {lit(tag.lstrip('#').casefold())})")
    if filters.after is not None:
        conds.append(f"modified >= {float(filters.after)!r}")
    if filters.before is not None:
        conds.append(f"modified < {float(filters.before)!r}")
    return " and ".join(conds)


def needs_files(filters: Filters) -> bool:
    """Whether some condition is matched by noteseek's rules over the file rows."""
    return bool(
        filters.paths or filters.exclude_paths or filters.authors or filters.changed
    ) or bool(filters.where)


def file_passes(filters: Filters, path: str, frontmatter: dict[str, Any]) -> bool:
    """The conditions :func:`native` leaves out, for one file (as ``sql.filter_sql``)."""
    if filters.paths and not path_match("\n".join(filters.paths), path):
        return False
    if filters.exclude_paths and path_match("\n".join(filters.exclude_paths), path):
        return False
    if filters.authors and not author_match(
        "\n".join(filters.authors), frontmatter.get("author"), frontmatter.get("author_email")
    ):
        return False
    if filters.changed:
        files = frontmatter.get("files")
        names = [f for f in files if isinstance(f, str)] if isinstance(files, list) else []
        if isinstance(files, str):
            names = [files]
        if not any(path_match("\n".join(filters.changed), n) for n in names):
            return False
    for key, op, value in filters.where:
        found = value.lower() in {_text(v).lower() for v in _items(frontmatter, key)}
        if found != (op == "="):
            return False
    return True


def expression(filters: Filters, scan_files: Callable[[str], Iterator[dict[str, Any]]]) -> str:
    """The whole filter as one expression; ``scan_files(expr)`` reads file rows (``file_id``,
    ``path``, ``info``) when noteseek's rules must pick the files."""
    base = native(filters)
    if not needs_files(filters):
        return base
    allowed = [
        int(row["file_id"])
        for row in scan_files(base)
        if file_passes(filters, str(row["path"]), dict(row["info"].get("frontmatter") or {}))
    ]
    ids = f"file_id in {in_list(allowed)}" if allowed else NOTHING
    return f"({base}) and {ids}" if base else ids


def _items(frontmatter: dict[str, Any], key: str) -> Iterable[Any]:
    """The values ``json_each`` walks for ``key``: a list's items, an object's values."""
    if key not in frontmatter:
        return ()
    value = frontmatter[key]
    if isinstance(value, list):
        return [v for v in value if v is not None]
    if isinstance(value, dict):
        return [v for v in value.values() if v is not None]
    return () if value is None else (value,)


def _text(value: Any) -> str:
    """A JSON value as SQLite's ``CAST(j.value AS TEXT)`` writes it."""
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, (dict, list)):
        import json

        return json.dumps(value, separators=(",", ":"), ensure_ascii=False)
    return str(value)
