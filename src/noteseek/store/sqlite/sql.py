"""SQL shared by the roles: the row columns and their decoding, and filters as conditions.

Filters are SQL conditions over ``files f`` that go into the same statement as the MATCH (or
the chunk scan), so they apply before any ``LIMIT`` and never starve a filtered query.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from typing import Any

from noteseek.store.rows import ChunkRow, FileRow
from noteseek.types import Filters

HEADING_SEP = "\x1f"
"""Joins a chunk's heading path in one column."""

CHUNK_COLUMNS = """
    c.id, c.chunk_id, c.ordinal, c.heading_path, c.start_line, c.end_line, c.text,
    c.content_hash, f.id, r.name, f.path, f.doc_id, f.title, f.modified, c.embed_key
"""
CHUNK_FROM = "chunks c JOIN files f ON f.id = c.file_id JOIN roots r ON r.id = f.root_id"
FILE_COLUMNS = """
    f.id, r.name, r.path, f.path, f.doc_id, f.title, f.aliases, f.tags, f.frontmatter,
    f.mtime_ns, f.size, f.content_hash, f.modified, f.warnings, f.indexed_at
"""
FILE_FROM = "files f JOIN roots r ON r.id = f.root_id"
IN_BATCH = 900
"""Rowids per ``IN (...)`` list, under SQLite's default limit of 999 parameters."""


def to_chunk_row(r: Sequence[Any]) -> ChunkRow:
    """A :data:`CHUNK_COLUMNS` row as a :class:`ChunkRow`."""
    heading = tuple(r[3].split(HEADING_SEP)) if r[3] else ()
    return ChunkRow(
        r[0],
        r[1],
        r[2],
        heading,
        r[4],
        r[5],
        r[6],
        r[7],
        r[8],
        r[9],
        r[10],
        r[11],
        r[12],
        r[13],
        r[14],
    )


def to_file_row(r: Sequence[Any]) -> FileRow:
    """A :data:`FILE_COLUMNS` row as a :class:`FileRow`."""
    return FileRow(
        r[0],
        r[1],
        r[2],
        r[3],
        r[4],
        r[5],
        json.loads(r[6]),
        json.loads(r[7]),
        json.loads(r[8]),
        r[9],
        r[10],
        r[11],
        r[12],
        json.loads(r[13]),
        r[14],
    )


def filter_sql(filters: Filters) -> tuple[str, list[Any]]:
    """``AND ...`` conditions over ``files f`` (empty when nothing is filtered) and their
    parameters."""
    conds: list[str] = []
    params: list[Any] = []
    if filters.paths:
        conds.append("ns_path_match(?, f.path)")
        params.append("\n".join(filters.paths))
    if filters.exclude_paths:
        conds.append("NOT ns_path_match(?, f.path)")
        params.append("\n".join(filters.exclude_paths))
    if filters.roots:
        conds.append(
            "f.root_id IN (SELECT id FROM roots WHERE name IN "
            f"({','.join('?' * len(filters.roots))}))"
        )
        params.extend(filters.roots)
    if filters.kinds:
        conds.append(
            "f.root_id IN (SELECT id FROM roots WHERE kind IN "
            f"({','.join('?' * len(filters.kinds))}))"
        )
        params.extend(filters.kinds)
    if filters.doc_ids is not None:
        # json_each keeps one parameter however many documents there are.
        conds.append("f.doc_id IN (SELECT value FROM json_each(?))")
        params.append(json.dumps(filters.doc_ids))
    for tag in filters.tags:
        folded = tag.lstrip("#").casefold()
        conds.append(
            "EXISTS (SELECT 1 FROM tags t WHERE t.file_id = f.id AND "
            "(t.tag = ? OR substr(t.tag, 1, ?) = ?))"
        )
        params.extend([folded, len(folded) + 1, folded + "/"])
    if filters.after is not None:
        conds.append("f.modified >= ?")
        params.append(filters.after)
    if filters.before is not None:
        conds.append("f.modified < ?")
        params.append(filters.before)
    if filters.authors:
        conds.append(
            "ns_author_match(?, json_extract(f.frontmatter, '$.author'), "
            "json_extract(f.frontmatter, '$.author_email'))"
        )
        params.append("\n".join(filters.authors))
    if filters.changed:
        conds.append(
            "EXISTS (SELECT 1 FROM json_each(f.frontmatter, '$.files') j "
            "WHERE j.type = 'text' AND ns_path_match(?, j.value))"
        )
        params.append("\n".join(filters.changed))
    for key, op, value in filters.where:
        path = '$."' + key.replace('"', '\\"') + '"'
        exists = (
            "EXISTS (SELECT 1 FROM json_each(f.frontmatter, ?) j WHERE "
            "lower(CASE j.type WHEN 'true' THEN 'true' WHEN 'false' THEN 'false' "
            "ELSE CAST(j.value AS TEXT) END) = lower(?))"
        )
        conds.append(exists if op == "=" else f"NOT {exists}")
        params.extend([path, value])
    return ("AND " + " AND ".join(conds) if conds else ""), params


def author_match(needles: str, name: Any, email: Any) -> bool:
    """SQL function ``ns_author_match``: whether any of the newline-separated ``needles`` is
    part of ``name <email>``, case folded (Unicode, unlike SQLite's ``lower``)."""
    if not isinstance(name, str) and not isinstance(email, str):
        return False
    who = f"{name or ''} <{email or ''}>".casefold()
    return any(n.strip().casefold() in who for n in needles.split("\n") if n.strip())
