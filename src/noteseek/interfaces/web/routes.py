"""The page's routes: the page and its static files, a note rendered, a note's neighbourhood.

Thin over the engine: ``Engine.read_document`` (which keeps every path inside its root),
``Engine.links`` and ``Engine.link_graph``; the engine is held through
``NoteseekTools.using_engine`` for one request at a time, as the tools hold it.
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from dataclasses import dataclass
from importlib import resources
from typing import TYPE_CHECKING, Any

from fastapi import APIRouter, Depends, Path, Query
from fastapi.responses import JSONResponse, Response
from pydantic import BaseModel, Field

from noteseek.engine import Ambiguous, Engine, NotFound
from noteseek.graph.links import LinkGraph
from noteseek.interfaces.mcp import LiveTools, ToolError
from noteseek.interfaces.web.render import Rendered, render_markdown, render_plain
from noteseek.parse.registry import get_parser

if TYPE_CHECKING:
    from noteseek.store.base import FileRow

log = logging.getLogger(__name__)

MAX_GRAPH_NODES = 60
"""Nodes in a neighbourhood graph: the centre, then the nearest first."""
MAX_REF_CHARS = 4096

STATIC_FILES = {
    "app.js": "text/javascript; charset=utf-8",
    "style.css": "text/css; charset=utf-8",
    "favicon.svg": "image/svg+xml",
}
# The page loads nothing from anywhere else, and nothing may frame it.
CONTENT_SECURITY_POLICY = (
    "default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self' data:; "
    "connect-src 'self'; base-uri 'none'; form-action 'none'; frame-ancestors 'none'"
)
SECURITY_HEADERS = {
    "Content-Security-Policy": CONTENT_SECURITY_POLICY,
    "X-Content-Type-Options": "nosniff",
    "Referrer-Policy": "no-referrer",
    "X-Frame-Options": "DENY",
}


# -- response models ---------------------------------------------------------------------------


class ErrorBody(BaseModel):
    error: str = Field(description="What was wrong, in words.")


class HeadingOut(BaseModel):
    id: str = Field(description="The heading's element id in `html`.")
    level: int = Field(ge=1, le=6)
    text: str
    line: int = Field(description="1-based source line.")


class LinkOut(BaseModel):
    doc_id: str | None = Field(description="The linked document; null for a missing note.")
    placeholder: str | None = Field(description="The name of a note that does not exist yet.")
    title: str | None
    type: str = Field(description="links_to, embeds, related, implements or tests.")
    line: int = Field(description="Line of the link in the linking document.")
    anchor: str | None = Field(description="Heading or ^block the link points at.")


class RenderOut(BaseModel):
    doc_id: str
    root: str
    path: str
    title: str
    html: str = Field(description="Sanitized HTML; block elements carry data-line.")
    headings: list[HeadingOut]
    outgoing: list[LinkOut]
    backlinks: list[LinkOut]


class GraphNode(BaseModel):
    id: str = Field(description="doc_id, or ?name for a note that does not exist yet.")
    title: str
    path: str | None
    placeholder: bool
    center: bool
    depth: int = Field(ge=0, le=2, description="Links away from the centre.")


class GraphEdge(BaseModel):
    source: str
    target: str
    type: str


class GraphOut(BaseModel):
    nodes: list[GraphNode]
    edges: list[GraphEdge]
    truncated: bool = Field(description="More neighbours exist than the node cap shows.")


_ERRORS: dict[int | str, dict[str, Any]] = {
    code: {"model": ErrorBody, "description": text}
    for code, text in (
        (
            404,
            "No such document inside the indexed roots (a path with '..', or one that "
            "leads out of its root, never names one)",
        ),
        (409, "The path names documents in several roots"),
        (503, "The index is not open or not built yet"),
    )
}


class _RequestError(Exception):
    def __init__(self, status: int, message: str) -> None:
        super().__init__(message)
        self.status = status


def _error(status: int, message: str) -> JSONResponse:
    return JSONResponse({"error": message}, status_code=status)


# -- the routes --------------------------------------------------------------------------------


def _static_file(name: str) -> bytes:
    return resources.files("noteseek.interfaces.web").joinpath("static", name).read_bytes()


def page_router() -> APIRouter:
    """``/`` and ``/static/...``: no data, so no token needed to load the page."""
    router = APIRouter(include_in_schema=False)

    @router.get("/")
    def page() -> Response:
        return Response(
            _static_file("index.html"),
            media_type="text/html; charset=utf-8",
            headers={**SECURITY_HEADERS, "Cache-Control": "no-cache"},
        )

    @router.get("/static/{name}")
    def static(name: str) -> Response:
        media = STATIC_FILES.get(name)
        if media is None:
            return _error(404, f"no static file {name!r}")
        return Response(
            _static_file(name),
            media_type=media,
            headers={"X-Content-Type-Options": "nosniff", "Cache-Control": "no-cache"},
        )

    return router


_PATH = Path(
    max_length=MAX_REF_CHARS,
    description="Root-relative path or doc id (root/path) of an indexed document.",
)


def data_router(live: LiveTools, auth: Callable[..., Any]) -> APIRouter:
    """The JSON routes the page reads notes through; every one depends on ``auth``."""
    router = APIRouter(dependencies=[Depends(auth)], tags=["web page"])

    def with_engine(work: Callable[[Engine], Any]) -> Any:
        try:
            tools = live.get(timeout=30)
        except ToolError as exc:
            raise _RequestError(503, str(exc)) from None
        with tools.using_engine() as engine:
            if not engine.index_exists:
                raise _RequestError(503, "the index is still being built; try again shortly")
            try:
                return work(engine)
            except Ambiguous as exc:
                raise _RequestError(409, str(exc)) from None
            except (NotFound, ValueError, OSError) as exc:
                # Refused paths ('..', a symbolic link out of its root) name no document.
                raise _RequestError(404, str(exc)) from None

    def check_ref(ref: str) -> None:
        if not ref.strip() or "\x00" in ref:
            raise _RequestError(404, f"no indexed document at {ref!r}")

    @router.get(
        "/render/{path:path}",
        response_model=RenderOut,
        responses=_ERRORS,
        summary="A document rendered as safe HTML, with its headings, links and backlinks",
    )
    def render(
        path: str = _PATH,
    ) -> Any:
        try:
            check_ref(path)
            # The engine is held only to read; rendering a long note does not hold up searches.
            return _render(with_engine(lambda engine: _read(engine, path)))
        except _RequestError as exc:
            return _error(exc.status, str(exc))

    @router.get(
        "/graph/{path:path}",
        response_model=GraphOut,
        responses=_ERRORS,
        summary="A document's link neighbourhood: nodes and typed edges",
    )
    def graph(
        path: str = _PATH,
        depth: int = Query(1, ge=1, le=2, description="Links away from the document, 1-2."),
    ) -> Any:
        try:
            check_ref(path)
            return with_engine(lambda engine: _graph(engine, path, depth))
        except _RequestError as exc:
            return _error(exc.status, str(exc))

    return router


@dataclass(frozen=True)
class _Note:
    file: FileRow
    text: str
    graph: LinkGraph
    links: dict[str, Any]


def _read(engine: Engine, ref: str) -> _Note:
    file, text = engine.read_document(ref)
    return _Note(file, text, engine.link_graph(), engine.links(file.doc_id))


def _render(note: _Note) -> RenderOut:
    file = note.file

    def resolve(target: str, display: str | None, kind: str) -> str | None:
        return note.graph.resolve(file.doc_id, target, kind, display)

    parser = get_parser(file.path)
    rendered: Rendered
    if parser is not None and parser.name == "markdown":
        rendered = render_markdown(note.text, file.doc_id, resolve)
    else:
        rendered = render_plain(note.text)
    return RenderOut(
        doc_id=file.doc_id,
        root=file.root,
        path=file.path,
        title=file.title,
        html=rendered.html,
        headings=[
            HeadingOut(id=h.id, level=h.level, text=h.text, line=h.line) for h in rendered.headings
        ],
        outgoing=[LinkOut(**item) for item in note.links["outgoing"]],
        backlinks=[LinkOut(**item) for item in note.links["backlinks"]],
    )


def _graph(engine: Engine, ref: str, depth: int) -> GraphOut:
    file, _text = engine.read_document(ref)
    return neighbourhood(engine.link_graph(), file.doc_id, depth)


def neighbourhood(
    graph: LinkGraph, center: str, depth: int, cap: int = MAX_GRAPH_NODES
) -> GraphOut:
    """Documents within ``depth`` links of ``center`` (either direction), nearest first.

    Placeholders (notes that do not exist yet) are leaves. At most ``cap`` nodes; the edges
    are every link between the nodes shown, one per (source, target, type).
    """
    depths: dict[str, int] = {center: 0}
    frontier = [center]
    truncated = False
    for level in range(1, depth + 1):
        found: list[str] = []
        for node in frontier:
            if node.startswith("?"):
                continue
            around = {e.target for e in graph.outgoing(node)}
            around |= {e.source for e in graph.backlinks(node)}
            for other in sorted(around - depths.keys()):
                if len(depths) >= cap:
                    truncated = True
                    break
                depths[other] = level
                found.append(other)
        frontier = found
    edges: dict[tuple[str, str, str], GraphEdge] = {}
    for node in depths:
        for e in graph.outgoing(node):
            if e.target in depths and (e.source, e.target, e.type) not in edges:
                edges[(e.source, e.target, e.type)] = GraphEdge(
                    source=e.source, target=e.target, type=e.type
                )
    nodes = []
    for node, level in depths.items():
        doc = graph.docs.get(node)
        nodes.append(
            GraphNode(
                id=node,
                title=doc.title if doc else node[1:],
                path=doc.path if doc else None,
                placeholder=doc is None,
                center=node == center,
                depth=level,
            )
        )
    return GraphOut(nodes=nodes, edges=list(edges.values()), truncated=truncated)
