"""The web page for people: its static files.

``install`` is called by the HTTP app (``noteseek.interfaces.http``) to add the page at ``/``.
The page itself (``static/``: hand-written HTML, JavaScript and CSS, no build step) searches
through the app's ``POST /query_documents``, polls ``GET /status`` and draws a note's
neighbourhood from ``GET /graph/{path}`` and reads a note through ``GET /render/{path}``
(operation routes, like every other).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from fastapi import FastAPI


def install(app: FastAPI) -> None:
    """Mount the page at ``/`` and its static files (no data: no token needed to load them)."""
    from noteseek.interfaces.web.routes import page_router

    app.include_router(page_router())
