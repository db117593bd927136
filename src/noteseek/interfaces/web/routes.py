"""The page's routes: the page and its static files, and a note rendered as HTML.

Everything else the page shows (search, status, links, the neighbourhood graph) it reads
through the API's operation routes. Rendering is the page's own: it reads the note with
``Engine.read_document`` (which keeps every path inside its root) and its links, holding the
engine through ``Runtime.using_engine`` for one request at a time, as operations hold it.
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from dataclasses import dataclass
from importlib import resources
from typing import TYPE_CHECKING, Any

from fastapi import APIRouter, Depends, Path
from fastapi.responses import JSONResponse, Response
from pydantic import BaseModel, Field

from noteseek.interfaces.web.render import Rendered, render_markdown, render_plain
from noteseek.operations import ERROR_MEANING, ErrorKind, Runtime, parse_arguments
from noteseek.operations.params import MAX_PATH_CHARS, GetLinks
from noteseek.operations.results import LinkOut
from noteseek.parse.registry import get_parser

if TYPE_CHECKING:
    from noteseek.engine import Engine
    from noteseek.graph.links import LinkGraph
    from noteseek.store.base import FileRow

log = logging.getLogger(__name__)

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


class RenderOut(BaseModel):
    doc_id: str
    root: str
    path: str
    title: str
    html: str = Field(description="Sanitized HTML; block elements carry data-line.")
    headings: list[HeadingOut]
    outgoing: list[LinkOut]
    backlinks: list[LinkOut]


_STATUS_OF: dict[int, ErrorKind] = {
    404: "not_found",
    409: "ambiguous",
    400: "invalid",
    503: "unavailable",
}
_ERRORS: dict[int | str, dict[str, Any]] = {
    code: {"model": ErrorBody, "description": ERROR_MEANING[kind]}
    for code, kind in _STATUS_OF.items()
}
"""The statuses the app gives these kinds (``interfaces/http/routes.py``), for OpenAPI."""


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
    max_length=MAX_PATH_CHARS,
    description="Root-relative path or doc id (root/path) of an indexed document.",
)


def data_router(runtime: Runtime, auth: Callable[..., Any]) -> APIRouter:
    """The JSON route the page reads a note through (the rest it reads through the API)."""
    router = APIRouter(dependencies=[Depends(auth)], tags=["web page"])

    @router.get(
        "/render/{path:path}",
        response_model=RenderOut,
        responses=_ERRORS,
        summary="A document rendered as safe HTML, with its headings, links and backlinks",
    )
    def render(path: str = _PATH) -> Any:
        ref = parse_arguments("render", GetLinks, {"path": path}).path
        # The engine is held only to read; rendering a long note does not hold up searches.
        with runtime.using_engine() as engine:
            note = _read(engine, ref)
        return _render(note)

    return router


@dataclass(frozen=True)
class _Note:
    file: FileRow
    text: str
    graph: LinkGraph
    links: dict[str, Any]
    kind: str
    """The kind of its root: a commit (``git``) reads as the Markdown its source renders."""


def _read(engine: Engine, ref: str) -> _Note:
    file, text = engine.read_document(ref)
    kind = engine.store.root_kinds().get(file.root, "files")
    return _Note(file, text, engine.link_graph(), engine.links(file.doc_id), kind)


def _render(note: _Note) -> RenderOut:
    file = note.file

    def resolve(target: str, display: str | None, kind: str) -> str | None:
        return note.graph.resolve(file.doc_id, target, kind, display)

    parser = get_parser(file.path)
    rendered: Rendered
    if note.kind == "git" or (parser is not None and parser.name == "markdown"):
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
