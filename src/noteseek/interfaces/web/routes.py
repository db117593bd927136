"""The page's routes: the page and its static files.

Everything the page shows (search, status, a note rendered as HTML with its links, the
neighbourhood graph) it reads through the API's operation routes, as every door reads the
same operations (``render_document`` renders a note: ``operations/reading.py``).
"""

from __future__ import annotations

from importlib import resources

from fastapi import APIRouter
from fastapi.responses import JSONResponse, Response

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
            return JSONResponse({"error": f"no static file {name!r}"}, status_code=404)
        return Response(
            _static_file(name),
            media_type=media,
            headers={"X-Content-Type-Options": "nosniff", "Cache-Control": "no-cache"},
        )

    return router
