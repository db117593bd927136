"""Rows as Milvus stores them, built from a prepared file, and read back as store rows."""

from __future__ import annotations

import json
from typing import Any

from noteseek.store.errors import WriteRejected
from noteseek.store.milvus import matching, schema
from noteseek.store.rows import ChunkRow, FileRow
from noteseek.types import PreparedFile

HEADING_SEP = "\x1f"
FILE_FIELDS = [
    "file_id",
    "gen",
    "root",
    "path",
    "doc_id",
    "title",
    "info",
    "mtime_ns",
    "size",
    "content_hash",
    "modified",
    "indexed_at",
]
CHUNK_FIELDS = [
    "rowid",
    "file_id",
    "gen",
    "chunk_id",
    "ordinal",
    "heading",
    "start_line",
    "end_line",
    "text",
    "content_hash",
    "root",
    "path",
    "doc_id",
    "title",
    "modified",
    "embed_key",
]
INT64 = 2**63


def tag_values(tags: list[str]) -> list[str]:
    """A file's tags for filters: case folded, each with its parents (``a/b`` -> ``a``)."""
    out: dict[str, None] = {}
    for tag in tags:
        parts = tag.casefold().split("/")
        for i in range(1, len(parts) + 1):
            out.setdefault("/".join(parts[:i]), None)
    return list(out)


def document_fields(prepared: PreparedFile) -> list[str]:
    """A file's document-level keyword fields (as the SQLite backend's ``docs_fts`` row)."""
    from noteseek.store.sqlite.keyword import document_row

    return list(document_row(prepared))


def file_row(
    prepared: PreparedFile,
    indexed_at: float,
    file_id: int,
    gen: int,
    kind: str,
    avgdl: float | None,
) -> dict[str, Any]:
    """The file's row; ``avgdl`` None: its table has Milvus's BM25 function (see
    :func:`keyword_value`)."""
    rec = prepared.record
    kw = document_fields(prepared)
    tokens = matching.tokenize(kw)
    links = [[k.target, k.kind, k.line, k.anchor, k.display, k.context] for k in prepared.links]
    info = {
        "aliases": rec.aliases,
        "tags": rec.tags,
        "frontmatter": json.loads(json.dumps(rec.frontmatter, ensure_ascii=False, default=str)),
        "warnings": rec.warnings,
        "parser": rec.parser,
        "links": links,
    }
    return {
        "file_id": file_id,
        "gen": gen,
        "root": rec.root,
        "kind": kind,
        "path": rec.path,
        "doc_id": rec.doc_id,
        "title": rec.title,
        "tags": tag_values(rec.tags),
        "modified": float(rec.modified),
        "kw": kw,
        "ntok": sum(len(t) for t in tokens),
        **keyword_value(tokens, avgdl),
        "info": info,
        "mtime_ns": rec.mtime_ns,
        "size": rec.size,
        "content_hash": rec.content_hash,
        "indexed_at": float(indexed_at),
        "nlinks": len(links),
        "aliases": json.dumps(rec.aliases, ensure_ascii=False),
    }


def chunk_rows(
    prepared: PreparedFile, file: dict[str, Any], first_rowid: int, avgdl: float | None
) -> list[dict[str, Any]]:
    out = []
    for i, item in enumerate(prepared.chunks):
        ch = item.chunk
        kw = list(item.fields)
        tokens = matching.tokenize(kw)
        out.append(
            {
                "rowid": first_rowid + i,
                "file_id": file["file_id"],
                "gen": file["gen"],
                "root": file["root"],
                "kind": file["kind"],
                "path": file["path"],
                "doc_id": file["doc_id"],
                "title": file["title"],
                "tags": file["tags"],
                "modified": file["modified"],
                "kw": kw,
                "ntok": sum(len(t) for t in tokens),
                **keyword_value(tokens, avgdl),
                "chunk_id": ch.chunk_id,
                "ordinal": ch.ordinal,
                "heading": HEADING_SEP.join(ch.heading_path),
                "start_line": ch.start_line,
                "end_line": ch.end_line,
                "text": ch.text,
                "content_hash": ch.content_hash,
                "embed_key": item.embed_key,
                "tlen": len(ch.text),
            }
        )
    return out


def averages(stats: dict[str, int], bm25: dict[str, bool]) -> tuple[float | None, float | None]:
    """Mean tokens per file and per chunk, which a row's sparse vector is saturated by; None
    for a table whose BM25 function keeps its own statistics (``bm25``: by table)."""
    avg_file = stats["dtokens"] / stats["docs"] if stats["docs"] else 200.0
    avg_chunk = stats["ctokens"] / stats["chunks"] if stats["chunks"] else 50.0
    return (
        None if bm25.get(schema.FILES) else avg_file,
        None if bm25.get(schema.CHUNKS) else avg_chunk,
    )


def keyword_value(tokens: matching.Fields, avgdl: float | None) -> dict[str, Any]:
    """What a row's keyword search reads: the text Milvus's BM25 function scores (``avgdl``
    None), or the sparse vector of saturated weighted frequencies noteseek scores."""
    if avgdl is None:
        return {schema.BM25_TEXT: matching.bm25_text(tokens, schema.VARCHAR_MAX)}
    return {"sp": matching.sparse_row(tokens, avgdl)}


def check(row: dict[str, Any]) -> None:
    """Raise :class:`WriteRejected` for a value Milvus cannot hold (too long, too big, text
    that is not valid Unicode, too many tags)."""
    for key, value in row.items():
        if isinstance(value, str):
            try:
                size = len(value.encode("utf-8"))
            except UnicodeEncodeError as exc:
                raise WriteRejected(f"could not be stored: {exc}") from exc
            limit = (
                schema.KEY_MAX
                if key in ("root", "kind", "content_hash", "embed_key")
                else (schema.VARCHAR_MAX)
            )
            if size > limit:
                raise WriteRejected(
                    f"could not be stored: its {key} holds {size} bytes, over Milvus's {limit}"
                )
        elif isinstance(value, int) and not -INT64 <= value < INT64:
            raise WriteRejected(f"could not be stored: {key} = {value} is over 64 bits")
    if len(row.get("tags", ())) > schema.ARRAY_MAX:
        raise WriteRejected(f"could not be stored: more than {schema.ARRAY_MAX} tags")
    try:
        json.dumps([row.get("kw"), row.get("info")], ensure_ascii=False).encode("utf-8")
    except (UnicodeEncodeError, ValueError) as exc:
        raise WriteRejected(f"could not be stored: {exc}") from exc


def to_file_row(r: dict[str, Any], root_path: str) -> FileRow:
    info = r["info"]
    return FileRow(
        int(r["file_id"]),
        str(r["root"]),
        root_path,
        str(r["path"]),
        str(r["doc_id"]),
        str(r["title"]),
        list(info.get("aliases", [])),
        list(info.get("tags", [])),
        dict(info.get("frontmatter", {})),
        int(r["mtime_ns"]),
        int(r["size"]),
        str(r["content_hash"]),
        float(r["modified"]),
        list(info.get("warnings", [])),
        float(r["indexed_at"]),
    )


def to_chunk_row(r: dict[str, Any]) -> ChunkRow:
    heading = str(r["heading"])
    return ChunkRow(
        int(r["rowid"]),
        str(r["chunk_id"]),
        int(r["ordinal"]),
        tuple(heading.split(HEADING_SEP)) if heading else (),
        int(r["start_line"]),
        int(r["end_line"]),
        str(r["text"]),
        str(r["content_hash"]),
        int(r["file_id"]),
        str(r["root"]),
        str(r["path"]),
        str(r["doc_id"]),
        str(r["title"]),
        float(r["modified"]),
        str(r["embed_key"]),
    )
