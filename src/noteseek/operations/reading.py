"""Reading operations: a chunk, the section holding a line, a document by pages or rendered
for the page, its links and its neighbourhood."""

from __future__ import annotations

from typing import Any

from noteseek.graph.neighbourhood import neighbourhood
from noteseek.operations.context import Context
from noteseek.operations.errors import Invalid, NotFound
from noteseek.operations.params import (
    GetChunk,
    GetDocument,
    GetLinks,
    GetNeighbourhood,
    GetSection,
    RenderDocument,
)
from noteseek.sources.registry import spec_of


def get_chunk(ctx: Context, p: GetChunk) -> dict[str, Any]:
    try:
        result = ctx.engine.get(p.chunk_id)
    except LookupError:
        result = None
    if result is None or result.kind != "chunk":
        raise NotFound(f"no chunk with id {p.chunk_id}")
    return result.to_dict()


def get_section(ctx: Context, p: GetSection) -> dict[str, Any]:
    return ctx.engine.section(p.path, p.line).to_dict()


def get_document(ctx: Context, p: GetDocument) -> dict[str, Any]:
    file, text = ctx.engine.read_document(p.path)
    lines = text.split("\n")
    if text.endswith("\n"):
        lines.pop()
    total = len(lines)
    if p.from_line > max(total, 1):
        raise Invalid(f"{file.doc_id} has {total} lines; from_line {p.from_line} is past it")
    start = p.from_line - 1
    part = lines[start : start + p.max_lines]
    content = "\n".join(part)
    cap = ctx.limits.payload_chars
    truncated = cap is not None and len(content) > cap
    return {
        "root": file.root,
        "path": file.path,
        "doc_id": file.doc_id,
        "title": file.title,
        "from_line": p.from_line,
        "to_line": start + len(part),
        "total_lines": total,
        "more": start + len(part) < total,
        "truncated": truncated,
        "content": content[:cap] if cap is not None else content,
    }


def get_links(ctx: Context, p: GetLinks) -> dict[str, Any]:
    return ctx.engine.links(p.path)


def render_document(ctx: Context, p: RenderDocument) -> dict[str, Any]:
    """A document as the page shows it: read here, rendered by :func:`rendered` once the
    engine is released. Its kind says how it reads: a kind whose source writes Markdown (a
    commit) is Markdown whatever its name; otherwise the file's parser decides (Markdown, or
    plain text)."""
    engine = ctx.engine
    file, text = engine.read_document(p.path)
    graph = engine.link_graph()  # replaced, never changed, when the index changes
    links = engine.links(file.doc_id)
    from noteseek.parse.registry import get_parser  # the parsers load with a rendering

    parser = get_parser(file.path)
    markdown = spec_of(engine.store.root_kinds().get(file.root)).renders_markdown or (
        parser is not None and parser.name == "markdown"
    )

    def resolve(target: str, display: str | None, kind: str) -> str | None:
        return graph.resolve(file.doc_id, target, kind, display)

    return {
        "doc_id": file.doc_id,
        "root": file.root,
        "path": file.path,
        "title": file.title,
        "outgoing": links["outgoing"],
        "backlinks": links["backlinks"],
        _RENDER: (text, resolve if markdown else None),
    }


_RENDER = "_render"
"""The text to render and its link resolver (None: plain text), which :func:`rendered` takes."""


def rendered(result: dict[str, Any]) -> dict[str, Any]:
    """``render_document``'s result with its text rendered as sanitized HTML."""
    from noteseek.parse.html import render_markdown, render_plain

    text, resolve = result.pop(_RENDER)
    page = (
        render_plain(text) if resolve is None else render_markdown(text, result["doc_id"], resolve)
    )
    result["html"] = page.html
    result["headings"] = [
        {"id": h.id, "level": h.level, "text": h.text, "line": h.line} for h in page.headings
    ]
    return result


def get_neighbourhood(ctx: Context, p: GetNeighbourhood) -> dict[str, Any]:
    # Resolved as links resolve it: never a path that leads out of its root.
    doc_id = ctx.engine.links(p.path)["doc_id"]
    out = neighbourhood(ctx.engine.link_graph(), doc_id, p.depth)
    center = out["nodes"][0]
    if center["placeholder"]:
        # An indexed document the link graph leaves out (a commit): itself, with no links.
        for row in ctx.engine.store.find_files(doc_id):
            if row.doc_id == doc_id:
                center.update(title=row.title, path=row.path, placeholder=False)
    return out
