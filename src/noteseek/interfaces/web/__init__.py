"""The web page for people: static files and the JSON routes only the page uses.

``install`` is called by the HTTP app (``noteseek.interfaces.http``) to add the page at ``/``.
The page itself (``static/``: hand-written HTML, JavaScript and CSS, no build step) searches
through the app's ``POST /query_documents``, polls ``GET /status`` and draws a note's
neighbourhood from ``GET /graph/{path}`` (operation routes); it reads a note through
``GET /render/{path}`` added here (see ``routes.py``).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from fastapi import FastAPI

    from noteseek.operations import Runtime


def install(app: FastAPI, runtime: Runtime, auth: Callable[..., Any]) -> None:
    """Mount the page at ``/`` and its routes; every data route depends on ``auth``."""
    from noteseek.interfaces.web.routes import data_router, page_router

    app.include_router(page_router())
    app.include_router(data_router(runtime, auth))
