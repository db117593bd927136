"""``noteseek serve`` with two deliberate bugs, for tests of what the server does with an
unexpected error (every real one is a bug that gets fixed, so a test cannot rely on one).

Run as ``python -m tests.reliability.faulty_serve serve ...`` with the repository on
``PYTHONPATH``: the real command, app and server, plus ``GET /_bug`` (raises before
answering) and ``GET /_bug_stream`` (raises after the first chunk of a streamed answer).
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

from fastapi import FastAPI
from fastapi.responses import StreamingResponse
from fastapi.routing import APIRoute

from noteseek.interfaces import http
from noteseek.interfaces.cli import main

real_create_app = http.create_app


def broken() -> None:
    raise RuntimeError("a deliberate bug")


def broken_stream() -> StreamingResponse:
    def chunks() -> Iterator[str]:
        yield "first chunk\n"
        raise RuntimeError("a deliberate bug in a stream")

    return StreamingResponse(chunks(), media_type="text/plain")


def create_app_with_bugs(*args: Any, **kwargs: Any) -> FastAPI:
    app = real_create_app(*args, **kwargs)
    # First: the page is mounted at "/" and would take these paths.
    app.router.routes[:0] = [
        APIRoute("/_bug", broken, methods=["GET"]),
        APIRoute("/_bug_stream", broken_stream, methods=["GET"]),
    ]
    return app


http.create_app = create_app_with_bugs  # serve.run_server imports it from the package
main()
