"""The HTTP app of ``noteseek serve``: the API, MCP over streamable HTTP, and the web page.

A thin door over the operations table: the API's routes are generated from it
(``routes.py``), ``/mcp`` serves the same operations as MCP tools, and the page
(:mod:`noteseek.interfaces.web`) reads notes through them. Errors are JSON
``{"error": "..."}`` with a precise message: an operation's error with the status of its kind,
HTTP's own (token, body, media type) with theirs; a bug gives a JSON 500 without a traceback
(the traceback goes to the server log, once) and the connection stays open for the next request.

``/health``, ``/openapi.json`` and the page's static files are open: they reveal nothing from
the notes. There is no ``/docs`` explorer: FastAPI's loads its scripts from a CDN, which a
local-first server must not depend on (nor run third-party code on its own origin).
"""

from __future__ import annotations

import contextlib
import logging
from collections.abc import AsyncIterator, Callable
from typing import TYPE_CHECKING, Any, Literal

from fastapi import Depends, FastAPI, Request
from fastapi.exceptions import RequestValidationError
from fastapi.responses import JSONResponse
from pydantic import BaseModel
from starlette.datastructures import Headers
from starlette.exceptions import HTTPException as StarletteHTTPException
from starlette.routing import Route
from starlette.types import ASGIApp, Message, Receive, Scope, Send

from noteseek import __version__
from noteseek.interfaces.http.guard import (
    OPEN_PATHS,
    ApiError,
    BodyLimit,
    HostGuard,
    allowed_host_names,
    auth_dependency,
    error_response,
    token_checker,
)
from noteseek.interfaces.http.routes import (
    ERROR_STATUS,
    ERROR_TEXT,
    ErrorResponse,
    operation_router,
)
from noteseek.operations import OperationError, Runtime, describe_errors

if TYPE_CHECKING:
    from noteseek.config import ServeSettings

log = logging.getLogger(__name__)

RETRY_AFTER_SECONDS = "2"


class HealthResponse(BaseModel):
    status: Literal["ok"]


def _install_error_handlers(app: FastAPI) -> None:
    @app.exception_handler(ApiError)
    async def api_error(_request: Request, exc: ApiError) -> JSONResponse:
        return error_response(exc.status, exc.message, exc.headers)

    @app.exception_handler(OperationError)
    async def operation_error(_request: Request, exc: OperationError) -> JSONResponse:
        status = ERROR_STATUS[exc.kind]
        headers = {"Retry-After": RETRY_AFTER_SECONDS} if status == 503 else None
        return error_response(status, str(exc), headers)

    @app.exception_handler(RequestValidationError)
    async def invalid(_request: Request, exc: RequestValidationError) -> JSONResponse:
        return error_response(400, "invalid request: " + describe_errors(exc.errors()))

    @app.exception_handler(StarletteHTTPException)
    async def http_error(request: Request, exc: StarletteHTTPException) -> JSONResponse:
        message = str(exc.detail)
        if exc.status_code == 404 and message == "Not Found":
            message = f"no route {request.url.path}; the API is described at /openapi.json"
        elif exc.status_code == 405:
            message = f"{request.method} is not allowed on {request.url.path}"
        return error_response(exc.status_code, message, exc.headers)

    @app.exception_handler(Exception)
    async def bug(request: Request, exc: Exception) -> JSONResponse:
        # Starlette calls this for every exception that escapes the app (also when the response
        # had started): the one place a bug is logged.
        log.error("%s %s failed", request.method, request.url.path, exc_info=exc)
        return _internal_error(exc)


def _internal_error(exc: BaseException) -> JSONResponse:
    return error_response(500, f"internal error ({type(exc).__name__}); the server log has details")


class ErrorBarrier:
    """The outermost layer: no exception reaches the server.

    Starlette answers a bug with the app's 500 handler, which logs it, then raises it again
    "so that servers can log it". uvicorn would log it a second time and close the connection
    even though the response was whole: a keep-alive client's next request on it was reset.
    Here the exception ends. A response cut off midway (a stream that failed) is left
    incomplete, and the server closes the connection, as HTTP requires.
    """

    def __init__(self, app: ASGIApp) -> None:
        self.app = app

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        started = False

        async def watch(message: Message) -> None:
            nonlocal started
            started = started or message["type"] == "http.response.start"
            await send(message)

        try:
            await self.app(scope, receive, watch)
        except Exception as exc:
            if not started:  # the 500 handler did not answer: it failed itself
                log.error("%s %s failed", scope.get("method"), scope.get("path"), exc_info=exc)
                await _internal_error(exc)(scope, receive, send)


class ServerApp(FastAPI):
    """FastAPI with :class:`ErrorBarrier` outside Starlette's own error middleware."""

    def build_middleware_stack(self) -> ASGIApp:
        return ErrorBarrier(super().build_middleware_stack())


class McpEndpoint:
    """``/mcp``: the token check, then the SDK's session manager."""

    def __init__(self, manager: Any, check: Callable[[str | None], str | None]) -> None:
        self.manager = manager
        self.check = check

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        problem = self.check(Headers(scope=scope).get("authorization"))
        if problem is not None:
            response = error_response(401, problem, {"WWW-Authenticate": "Bearer"})
            await response(scope, receive, send)
            return
        await self.manager.handle_request(scope, receive, send)


def _document_app_wide_errors(app: FastAPI) -> None:
    """Add the errors the middleware and the token give on any route to the OpenAPI document.

    Every operation but /health can get 403 and 421 (the Host/Origin guard); every one 431
    (a request head over 16 KiB); one that takes the token, 401; one with a body, 413.
    """
    build = app.openapi

    def openapi() -> dict[str, Any]:
        if app.openapi_schema is not None:
            return app.openapi_schema
        spec = build()
        ref = {"$ref": "#/components/schemas/ErrorResponse"}
        spec.setdefault("components", {}).setdefault("schemas", {}).setdefault(
            "ErrorResponse", ErrorResponse.model_json_schema()
        )
        for path, operations in spec.get("paths", {}).items():
            for operation in operations.values():
                codes = [431] if path in OPEN_PATHS else [403, 421, 431]
                if operation.get("security"):
                    codes.append(401)
                if "requestBody" in operation:
                    codes.append(413)
                responses = operation.setdefault("responses", {})
                for code in codes:
                    responses.setdefault(
                        str(code),
                        {
                            "description": ERROR_TEXT[code],
                            "content": {"application/json": {"schema": ref}},
                        },
                    )
        app.openapi_schema = spec
        return spec

    app.openapi = openapi  # type: ignore[method-assign]


def create_app(runtime: Runtime, serve: ServeSettings, mcp_server: Any = None) -> FastAPI:
    """The FastAPI app: API routes, the page (``noteseek.interfaces.web``) and, given the MCP
    door's server (``noteseek serve`` composes the doors), ``/mcp`` over streamable HTTP."""
    from mcp.server.streamable_http_manager import StreamableHTTPSessionManager
    from mcp.server.transport_security import TransportSecuritySettings

    from noteseek.interfaces import web

    token = serve.token.get_secret_value() if serve.token else None
    names = allowed_host_names(serve.host, serve.allowed_hosts)
    manager = (
        StreamableHTTPSessionManager(
            app=mcp_server,
            # HostGuard checks /mcp's Host and Origin with the same rule as every other route.
            security_settings=TransportSecuritySettings(enable_dns_rebinding_protection=False),
            max_request_body_size=serve.max_body_bytes,
        )
        if mcp_server is not None
        else None
    )

    @contextlib.asynccontextmanager
    async def lifespan(_app: FastAPI) -> AsyncIterator[None]:
        import anyio

        runtime.start()
        try:
            if manager is None:
                yield
            else:
                async with manager.run():
                    yield
        finally:
            # Stops the watcher, lets the worker commit its batch, gives up the writer role.
            await anyio.to_thread.run_sync(runtime.shutdown)

    app = ServerApp(
        title="noteseek",
        version=__version__,
        summary="Search Markdown notes and docs: hybrid keyword and semantic search.",
        description="The HTTP API of `noteseek serve`: one route per operation of noteseek's "
        "operations table (the MCP tools of the same names, at `/mcp` over streamable HTTP). "
        "When a token is configured, every route except /health, /openapi.json and the page "
        'needs `Authorization: Bearer <token>`. Errors are `{"error": "..."}`.',
        lifespan=lifespan,
        docs_url=None,
        redoc_url=None,
    )
    _install_error_handlers(app)
    auth = auth_dependency(token)

    @app.get(
        "/health",
        tags=["server"],
        response_model=HealthResponse,
        responses={
            503: {
                "description": "The index is damaged: `error` (and `reason`) say why and what "
                "rebuilds it; `status` is `damaged`. A running server rebuilds it by itself.",
                "model": ErrorResponse,
            }
        },
    )
    async def health() -> Any:
        """Liveness: answers as soon as the server listens (no token needed); 503 while the
        index is damaged."""
        # async: answered on the event loop, even while every worker thread runs a query
        # (the damage check reads a small file; it never waits for the index).
        damaged = runtime.damaged()
        if damaged is not None:
            return JSONResponse(
                {"error": damaged, "status": "damaged", "reason": damaged},
                status_code=503,
                headers={"Retry-After": RETRY_AFTER_SECONDS},
            )
        return HealthResponse(status="ok")

    app.include_router(operation_router(runtime, [Depends(auth)]))
    _document_app_wide_errors(app)
    if manager is not None:
        endpoint = McpEndpoint(manager, token_checker(token))
        app.router.routes.append(Route("/mcp", endpoint, include_in_schema=False))
    web.install(app)  # last: the page is mounted at "/"

    app.add_middleware(BodyLimit, limit=serve.max_body_bytes)
    app.add_middleware(HostGuard, names=names, cors_origins=serve.cors_origins)
    if serve.cors_origins:
        from fastapi.middleware.cors import CORSMiddleware

        app.add_middleware(
            CORSMiddleware,
            allow_origins=serve.cors_origins,
            allow_methods=["GET", "POST", "DELETE", "OPTIONS"],
            allow_headers=[
                "Authorization",
                "Content-Type",
                "Mcp-Session-Id",
                "Mcp-Protocol-Version",
                "Last-Event-ID",
            ],
            expose_headers=["Mcp-Session-Id"],
        )
    return app
