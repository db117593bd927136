"""The HTTP API of ``noteseek serve``: JSON routes, MCP over streamable HTTP, and the page.

A thin adapter, like the MCP server it sits beside: every route validates its input with the
MCP tool's own parameter model (:func:`~noteseek.interfaces.mcp.parse_arguments`, so HTTP and
MCP accept and refuse exactly the same arguments), runs the tool on a worker thread through
:class:`~noteseek.interfaces.mcp.LiveTools`, and answers with a declared response model. Errors
are JSON ``{"error": "..."}`` with a precise message and a 4xx status; a bug gives a JSON 500
without a traceback (the traceback goes to the server log).

Security, outermost first: CORS (off unless ``serve.cors_origins``), a Host/Origin guard
against DNS rebinding (``/mcp`` uses the MCP SDK's transport security with the same names), a
request body limit (``serve.max_body_bytes``, 413), and the API token (``serve.token``, sent as
``Authorization: Bearer``) on every API and MCP route. ``/health``, ``/openapi.json``,
and the page's static files are open: they reveal nothing from the notes. There is no
``/docs`` explorer: FastAPI's loads its scripts from a CDN, which a local-first server must not
depend on (nor run third-party code on its own origin).
"""

from __future__ import annotations

import contextlib
import hmac
import ipaddress
import json
import logging
import socket
from collections import deque
from collections.abc import AsyncIterator, Awaitable, Callable, Iterator, Mapping
from typing import TYPE_CHECKING, Any, Literal
from urllib.parse import urlsplit

from fastapi import Depends, FastAPI, Path, Query, Request
from fastapi.exceptions import RequestValidationError
from fastapi.responses import JSONResponse, StreamingResponse
from fastapi.security import HTTPAuthorizationCredentials, HTTPBearer
from pydantic import BaseModel, ConfigDict, Field
from starlette.datastructures import Headers
from starlette.exceptions import HTTPException as StarletteHTTPException
from starlette.routing import Route
from starlette.types import ASGIApp, Message, Receive, Scope, Send

from noteseek import __version__
from noteseek.interfaces.mcp import (
    MAX_DOCUMENT_LINES,
    Hypothesis,
    LiveTools,
    QueryDocuments,
    Reindex,
    ToolError,
    _Params,
    build_server,
    describe_errors,
    parse_arguments,
)

if TYPE_CHECKING:
    from noteseek.config import ServeSettings

log = logging.getLogger(__name__)

LOOPBACK_NAMES = ("localhost", "127.0.0.1", "::1")
WILDCARD_HOSTS = ("0.0.0.0", "::", "")
RETRY_AFTER_SECONDS = "2"
OPEN_PATHS = frozenset({"/health"})
"""Answered whatever the Host header says (a load balancer's health check uses an IP)."""


# -- request and response models ---------------------------------------------------------------


class QueryDocumentsRequest(QueryDocuments):
    """The ``query_documents`` tool's parameters, plus ``explain`` for the page."""

    explain: bool = Field(
        default=False,
        description="Add each result's explanation: every lane's rank and raw score and the "
        "fusion (each lane's contribution, boosts, the final score).",
    )


class ErrorResponse(BaseModel):
    error: str = Field(description="What was wrong, precisely enough to fix the request.")


class HealthResponse(BaseModel):
    status: Literal["ok"]


class SearchResult(BaseModel):
    rank: int = Field(description="1-based position.")
    chunk_id: str = Field(description="Stable id of the section piece; GET /chunks/{id}.")
    doc_id: str = Field(description="root/path, unique across roots.")
    root: str
    path: str = Field(description="POSIX path relative to the root.")
    title: str
    heading_path: list[str]
    start_line: int
    end_line: int
    score: float = Field(description="0-1; orders the results of one query.")
    lanes: dict[str, int] = Field(description="The result's rank in each retriever.")
    snippet: str = Field(description="Text around the best match, matches wrapped in **.")
    content: str = Field(description="The section's text (capped; see truncated).")
    truncated: bool
    explain: dict[str, Any] | None = Field(
        default=None, description="With explain=true: each lane's rank, score and contribution."
    )


class Compression(BaseModel):
    kept: int
    dropped_low_score: int
    dropped_duplicates: int
    tokens_before: int
    tokens_after: int
    tokens_saved: int


class SearchResponse(BaseModel):
    status: Literal["ready", "indexing"] = Field(
        description="indexing: the index is being built or updated; results may be incomplete."
    )
    query: str
    mode: str
    took_ms: float
    results: list[SearchResult]
    warnings: list[str]
    compression: Compression | None = None


class SearchDone(BaseModel):
    """The last event of ``/query_documents_stream``."""

    status: Literal["ready", "indexing"]
    query: str
    mode: str
    results: int = Field(description="How many result events were sent.")
    took_ms: float = Field(description="The engine's time for the search.")
    elapsed_ms: float = Field(description="The server's time from request to this event.")
    warnings: list[str]


class ChunkResponse(BaseModel):
    kind: Literal["chunk"]
    root: str
    path: str
    doc_id: str
    title: str
    heading_path: list[str]
    start_line: int
    end_line: int
    chunk_ids: list[str]
    stale: bool = Field(description="The file changed since it was indexed.")
    text: str


class DocumentResponse(BaseModel):
    root: str
    path: str
    doc_id: str
    title: str
    from_line: int
    to_line: int
    total_lines: int
    more: bool = Field(description="Lines follow: ask again with a higher from_line.")
    truncated: bool
    content: str


class RootStatus(BaseModel):
    model_config = ConfigDict(extra="allow")
    name: str
    path: str
    files: int
    chunks: int


class EmbeddingStatus(BaseModel):
    model_config = ConfigDict(extra="allow")
    enabled: bool
    provider: str
    model: str
    embedded: int
    total: int
    pending: int


class Failure(BaseModel):
    root: str
    path: str
    severity: str
    reason: str


class JobInfo(BaseModel):
    id: str
    kind: Literal["reconcile", "reindex"]
    roots: list[str] | None
    force: bool
    state: Literal["queued", "running", "done", "failed"]
    created: float
    started: float | None
    finished: float | None
    result: dict[str, Any] | None
    error: str | None


class ServiceState(BaseModel):
    model_config = ConfigDict(extra="allow")
    role: Literal["starting", "writer", "reader", "stopped"]
    pid: int
    writer_pid: int | None
    activity: str | None
    queued_jobs: int
    queued_paths: int
    last_error: str | None
    watcher: dict[str, Any]
    jobs: list[JobInfo]


class QueueStatus(BaseModel):
    paths: int = Field(description="Changed files waiting to be indexed.")
    jobs: int = Field(description="Re-index and reconcile jobs waiting.")


class StatusResponse(BaseModel):
    status: Literal["ready", "indexing"]
    index_dir: str
    documents: int
    chunks: int
    roots: list[RootStatus]
    embedding: EmbeddingStatus | None
    failed_files: int
    failures: list[Failure] = Field(description="Files skipped or indexed with a warning.")
    last_run: dict[str, Any] | None
    version: str
    service: ServiceState | None = None
    queue: QueueStatus


class ReindexResponse(BaseModel):
    job: JobInfo
    hint: str


# -- errors ------------------------------------------------------------------------------------


class ApiError(Exception):
    """An HTTP error with a JSON message."""

    def __init__(self, status: int, message: str, headers: dict[str, str] | None = None) -> None:
        super().__init__(message)
        self.status = status
        self.message = message
        self.headers = headers


def _error(status: int, message: str, headers: Mapping[str, str] | None = None) -> JSONResponse:
    return JSONResponse({"error": message}, status_code=status, headers=headers)


_ERROR_TEXT = {
    400: "Bad request: a value the engine cannot use (bad filter, '..' in a path, ...).",
    401: "Missing or wrong API token (Authorization: Bearer <token>).",
    403: "A browser request from an origin not in serve.cors_origins.",
    404: "Not found.",
    409: "This process is a reader of the index; the writer takes re-index requests.",
    413: "Request body larger than serve.max_body_bytes.",
    415: "The body must be JSON (Content-Type: application/json).",
    421: "The Host header is not a name of this server (DNS rebinding; serve.allowed_hosts).",
    422: "Invalid parameters: unknown names, wrong types or values out of range.",
    503: "The index is still opening or being built; retry after Retry-After seconds.",
}


def _errors(*codes: int) -> dict[int | str, dict[str, Any]]:
    """OpenAPI entries for the error responses a route can give."""
    return {c: {"model": ErrorResponse, "description": _ERROR_TEXT[c]} for c in codes}


def _install_error_handlers(app: FastAPI) -> None:
    @app.exception_handler(ApiError)
    async def api_error(_request: Request, exc: ApiError) -> JSONResponse:
        return _error(exc.status, exc.message, exc.headers)

    @app.exception_handler(ToolError)
    async def tool_error(_request: Request, exc: ToolError) -> JSONResponse:
        headers = {"Retry-After": RETRY_AFTER_SECONDS} if exc.http_status == 503 else None
        return _error(exc.http_status, str(exc), headers)

    @app.exception_handler(RequestValidationError)
    async def invalid(_request: Request, exc: RequestValidationError) -> JSONResponse:
        return _error(422, "invalid request: " + describe_errors(exc.errors()))

    @app.exception_handler(StarletteHTTPException)
    async def http_error(request: Request, exc: StarletteHTTPException) -> JSONResponse:
        message = str(exc.detail)
        if exc.status_code == 404 and message == "Not Found":
            message = f"no route {request.url.path}; the API is described at /openapi.json"
        elif exc.status_code == 405:
            message = f"{request.method} is not allowed on {request.url.path}"
        return _error(exc.status_code, message, exc.headers)

    @app.exception_handler(Exception)
    async def bug(request: Request, exc: Exception) -> JSONResponse:
        log.error("%s %s failed", request.method, request.url.path, exc_info=exc)
        return _error(500, f"internal error ({type(exc).__name__}); the server log has details")


# -- the token ---------------------------------------------------------------------------------


def token_checker(token: str | None) -> Callable[[str | None], str | None]:
    """A check of an Authorization header value: None when it passes, else why not."""
    expected = token.encode("utf-8") if token else None

    def check(authorization: str | None) -> str | None:
        if expected is None:
            return None
        scheme, _, given = (authorization or "").partition(" ")
        if scheme.lower() != "bearer" or not given.strip():
            return "this server requires an API token: send 'Authorization: Bearer <token>'"
        # Header values arrive decoded as Latin-1: this gives back the bytes that were sent.
        if not hmac.compare_digest(given.strip().encode("latin-1"), expected):
            return "wrong API token"
        return None

    return check


def _auth_dependency(token: str | None) -> Callable[..., None]:
    check = token_checker(token)
    if token is None:

        def no_token() -> None:
            """No token is configured (loopback only): every request passes."""

        return no_token
    bearer = HTTPBearer(
        auto_error=False,
        description="The API token (serve.token or NOTESEEK_SERVE__TOKEN).",
    )

    def require_token(
        request: Request, _credentials: HTTPAuthorizationCredentials | None = Depends(bearer)
    ) -> None:
        problem = check(request.headers.get("authorization"))
        if problem is not None:
            raise ApiError(401, problem, {"WWW-Authenticate": "Bearer"})

    return require_token


# -- Host and Origin: DNS rebinding --------------------------------------------------------------


def is_loopback(host: str) -> bool:
    """True for addresses only this machine can reach (127.0.0.0/8, ::1, localhost)."""
    name = host.strip("[]").lower()
    if name == "localhost":
        return True
    try:
        return ipaddress.ip_address(name).is_loopback
    except ValueError:
        return False


def allowed_host_names(host: str, extra: list[str]) -> set[str] | None:
    """Host header names to accept (lower case, without port); None accepts any."""
    if "*" in extra:
        return None
    names = set(LOOPBACK_NAMES)
    if host in WILDCARD_HOSTS:
        # Listening on every interface: this machine's own names and addresses.
        for name in {socket.gethostname(), socket.getfqdn()}:
            names.add(name)
            with contextlib.suppress(OSError):
                names.update(str(info[4][0]) for info in socket.getaddrinfo(name, None))
    else:
        names.add(host.strip("[]"))
    names.update(e.strip("[]") for e in extra)
    return {n.lower() for n in names if n}


def _host_name(value: str) -> str:
    """``example.org:8765`` -> ``example.org``; ``[::1]:8765`` -> ``::1``."""
    if value.startswith("["):
        return value[1:].partition("]")[0].lower()
    if value.count(":") > 1:  # a bare IPv6 address
        return value.lower()
    return value.partition(":")[0].lower()


def mcp_transport_security(names: set[str] | None, cors_origins: list[str]) -> Any:
    """The MCP SDK's DNS-rebinding settings for /mcp, from the same names as the guard."""
    from mcp.server.transport_security import TransportSecuritySettings

    if names is None:
        return TransportSecuritySettings(enable_dns_rebinding_protection=False)
    shown = sorted(f"[{n}]" if ":" in n else n for n in names)
    return TransportSecuritySettings(
        enable_dns_rebinding_protection=True,
        allowed_hosts=[*shown, *(f"{n}:*" for n in shown)],
        allowed_origins=[
            *(
                f"{scheme}://{n}{port}"
                for n in shown
                for scheme in ("http", "https")
                for port in ("", ":*")
            ),
            *cors_origins,
        ],
    )


class HostGuard:
    """Refuse requests whose Host is not one of this server's names (DNS rebinding), and
    cross-origin browser requests from origins not in ``serve.cors_origins``.

    ``/mcp`` is left to the MCP SDK's own check (configured with the same names).
    """

    def __init__(self, app: ASGIApp, names: set[str] | None, cors_origins: list[str]) -> None:
        self.app = app
        self.names = names
        self.cors = set(cors_origins)

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http" or scope["path"] in OPEN_PATHS or scope["path"] == "/mcp":
            await self.app(scope, receive, send)
            return
        headers = Headers(scope=scope)
        host = headers.get("host", "")
        problem = None
        if self.names is not None and _host_name(host) not in self.names:
            problem = (421, f"Host {host!r} is not a name of this server (serve.allowed_hosts)")
        origin = headers.get("origin")
        if problem is None and origin and origin not in self.cors:
            parts = urlsplit(origin)
            if parts.netloc.lower() != host.lower() or parts.scheme not in ("http", "https"):
                problem = (403, f"origin {origin!r} is not allowed (serve.cors_origins)")
        if problem is not None:
            await _error(*problem)(scope, receive, send)
            return
        await self.app(scope, receive, send)


# -- body size ---------------------------------------------------------------------------------


class BodyLimit:
    """Answer 413 (JSON) to a request body over ``limit`` bytes, before the app reads any.

    The body is read up to the limit first and replayed to the app: at 1 MiB that costs
    little, and a route never sees half a body.
    """

    def __init__(self, app: ASGIApp, limit: int) -> None:
        self.app = app
        self.limit = limit

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        too_large = _error(
            413, f"request body larger than {self.limit} bytes (serve.max_body_bytes)"
        )
        declared = Headers(scope=scope).get("content-length")
        if declared is not None and declared.isdigit() and int(declared) > self.limit:
            await too_large(scope, receive, send)
            return
        messages: deque[Message] = deque()
        size = 0
        while True:
            message = await receive()
            messages.append(message)
            if message["type"] != "http.request":
                break
            size += len(message.get("body", b""))
            if size > self.limit:
                await too_large(scope, receive, send)
                return
            if not message.get("more_body", False):
                break

        async def replay() -> Message:
            return messages.popleft() if messages else await receive()

        await self.app(scope, replay, send)


# -- MCP over streamable HTTP ------------------------------------------------------------------


class McpEndpoint:
    """``/mcp``: the token check, then the SDK's session manager."""

    def __init__(self, manager: Any, check: Callable[[str | None], str | None]) -> None:
        self.manager = manager
        self.check = check

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        problem = self.check(Headers(scope=scope).get("authorization"))
        if problem is not None:
            response = _error(401, problem, {"WWW-Authenticate": "Bearer"})
            await response(scope, receive, send)
            return
        await self.manager.handle_request(scope, receive, send)


# -- the app -----------------------------------------------------------------------------------


def _document_app_wide_errors(app: FastAPI) -> None:
    """Add the errors the middleware and the token give on any route to the OpenAPI document.

    Every operation but /health can get 403 and 421 (the Host/Origin guard); one that takes
    the token, 401; one with a body, 413.
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
                codes = [] if path in OPEN_PATHS else [403, 421]
                if operation.get("security"):
                    codes.append(401)
                if "requestBody" in operation:
                    codes.append(413)
                responses = operation.setdefault("responses", {})
                for code in codes:
                    responses.setdefault(
                        str(code),
                        {
                            "description": _ERROR_TEXT[code],
                            "content": {"application/json": {"schema": ref}},
                        },
                    )
        app.openapi_schema = spec
        return spec

    app.openapi = openapi  # type: ignore[method-assign]


def _json_body(
    tool: str, model: type[_Params]
) -> tuple[Callable[[Request], Awaitable[Any]], dict[str, Any]]:
    """A dependency that validates a JSON body like the MCP tool does, and its OpenAPI entry."""

    async def parse(request: Request) -> Any:
        content_type = request.headers.get("content-type", "").split(";")[0].strip().lower()
        if content_type != "application/json" and not content_type.endswith("+json"):
            raise ApiError(415, "send the parameters as JSON (Content-Type: application/json)")
        try:
            data = json.loads(await request.body())
        except ValueError as exc:
            raise ApiError(400, f"the body is not valid JSON: {exc}") from None
        if not isinstance(data, dict):
            raise ApiError(422, f"the body must be a JSON object of {tool}'s parameters")
        return parse_arguments(tool, data, model)

    schema = model.model_json_schema(by_alias=False)
    for prop in schema.get("properties", {}).values():
        prop.pop("title", None)
    extra = {"requestBody": {"required": True, "content": {"application/json": {"schema": schema}}}}
    return parse, extra


def create_app(live: LiveTools, serve: ServeSettings) -> FastAPI:
    """The FastAPI app: API routes, ``/mcp``, and the page (``noteseek.interfaces.web``)."""
    from mcp.server.streamable_http_manager import StreamableHTTPSessionManager

    from noteseek.interfaces import web

    token = serve.token.get_secret_value() if serve.token else None
    names = allowed_host_names(serve.host, serve.allowed_hosts)
    manager = StreamableHTTPSessionManager(
        app=build_server(live),
        security_settings=mcp_transport_security(names, serve.cors_origins),
        max_request_body_size=serve.max_body_bytes,
    )

    @contextlib.asynccontextmanager
    async def lifespan(_app: FastAPI) -> AsyncIterator[None]:
        import anyio

        live.start()
        try:
            async with manager.run():
                yield
        finally:
            # Stops the watcher, lets the worker commit its batch, gives up the writer role.
            await anyio.to_thread.run_sync(live.shutdown)

    app = FastAPI(
        title="noteseek",
        version=__version__,
        summary="Search Markdown notes and docs: hybrid keyword and semantic search.",
        description="The HTTP API of `noteseek serve`. MCP over streamable HTTP is at `/mcp`. "
        "When a token is configured, every route except /health, /openapi.json and the page "
        'needs `Authorization: Bearer <token>`. Errors are `{"error": "..."}`.',
        lifespan=lifespan,
        docs_url=None,
        redoc_url=None,
    )
    _install_error_handlers(app)
    auth = _auth_dependency(token)
    guarded = [Depends(auth)]

    def tools_call(name: str, params: _Params, **options: Any) -> dict[str, Any]:
        return live.get().run(name, params, **options)

    @app.get("/health", tags=["server"])
    def health() -> HealthResponse:
        """Liveness: answers as soon as the server listens (no token needed)."""
        return HealthResponse(status="ok")

    parse_query, query_body = _json_body("query_documents", QueryDocumentsRequest)
    search_errors = _errors(400, 401, 413, 415, 422, 503)
    search_route: dict[str, Any] = {
        "tags": ["search"],
        "dependencies": guarded,
        "response_model": SearchResponse,
        "response_model_exclude_unset": True,
        "responses": search_errors,
    }

    @app.post("/query_documents", openapi_extra=query_body, **search_route)
    def query_documents(params: Any = Depends(parse_query)) -> dict[str, Any]:
        """Search: ranked sections with path, heading path, line range, score and text.

        The parameters are those of the MCP tool `query_documents` (same names, aliases and
        limits), plus `explain`.
        """
        return tools_call("query_documents", params, explain=params.explain)

    @app.post(
        "/query_documents_stream",
        tags=["search"],
        dependencies=guarded,
        response_class=StreamingResponse,
        openapi_extra=query_body,
        responses={
            200: {
                "description": "Server-Sent Events: one `result` event per result in rank "
                "order (data: a SearchResult), then one `done` event (data: SearchDone).",
                "content": {"text/event-stream": {"schema": _sse_schema()}},
            },
            **search_errors,
        },
    )
    def query_documents_stream(params: Any = Depends(parse_query)) -> StreamingResponse:
        """The same search as /query_documents, as a stream of Server-Sent Events."""
        import time

        started = time.perf_counter()
        payload = tools_call("query_documents", params, explain=params.explain)
        results = [
            SearchResult.model_validate(r).model_dump(exclude_unset=True)
            for r in payload["results"]
        ]

        def events() -> Iterator[str]:
            for result in results:
                yield _sse("result", result)
            done = SearchDone(
                status=payload["status"],
                query=payload["query"],
                mode=payload["mode"],
                results=len(results),
                took_ms=payload["took_ms"],
                elapsed_ms=round((time.perf_counter() - started) * 1000, 1),
                warnings=payload["warnings"],
            )
            yield _sse("done", done.model_dump())

        return StreamingResponse(
            events(),
            media_type="text/event-stream",
            headers={"Cache-Control": "no-cache", "X-Accel-Buffering": "no"},
        )

    parse_hypothesis, hypothesis_body = _json_body("search_with_hypothesis", Hypothesis)

    @app.post("/search_with_hypothesis", openapi_extra=hypothesis_body, **search_route)
    def search_with_hypothesis(params: Any = Depends(parse_hypothesis)) -> dict[str, Any]:
        """Semantic search with a hypothetical answer (HyDE), as the MCP tool of that name."""
        return tools_call("search_with_hypothesis", params)

    read_route: dict[str, Any] = {"tags": ["read"], "dependencies": guarded}

    @app.get(
        "/chunks/{chunk_id}",
        response_model=ChunkResponse,
        **read_route,
        responses=_errors(401, 404, 422, 503),
    )
    def get_chunk(
        chunk_id: str = Path(
            pattern=r"^[0-9a-f]{16}$", description="A result's chunk_id (16 hex digits)."
        ),
    ) -> dict[str, Any]:
        """The full text of one result section."""
        params = parse_arguments("get_chunk", {"chunk_id": chunk_id})
        return tools_call("get_chunk", params)

    @app.get(
        "/documents/{path:path}",
        response_model=DocumentResponse,
        **read_route,
        responses=_errors(400, 401, 404, 422, 503),
    )
    def get_document(
        path: str = Path(
            max_length=4096,
            description="The document's path as results give it (root-relative), or its doc_id "
            "(root/path). Only documents inside the indexed roots can be read.",
        ),
        from_line: int = Query(default=1, ge=1, description="First line (1-based)."),
        max_lines: int = Query(
            default=400, ge=1, le=MAX_DOCUMENT_LINES, description="Lines to return."
        ),
    ) -> dict[str, Any]:
        """Read an indexed document, or part of it, with line numbers."""
        params = parse_arguments(
            "get_document", {"path": path, "from_line": from_line, "max_lines": max_lines}
        )
        return tools_call("get_document", params)

    @app.get(
        "/status",
        tags=["server"],
        dependencies=guarded,
        response_model=StatusResponse,
        responses=_errors(401, 503),
    )
    def status() -> dict[str, Any]:
        """Documents, sections, embedding progress, failed files with reasons, the queue."""
        payload = tools_call("index_status", parse_arguments("index_status", {}))
        service = payload.get("service") or {}
        payload["queue"] = {
            "paths": service.get("queued_paths", 0),
            "jobs": service.get("queued_jobs", 0),
        }
        return payload

    parse_reindex, reindex_body = _json_body("reindex", Reindex)

    @app.post(
        "/reindex",
        tags=["server"],
        status_code=202,
        dependencies=guarded,
        response_model=ReindexResponse,
        openapi_extra=reindex_body,
        responses=_errors(400, 401, 409, 413, 415, 422, 503),
    )
    def reindex(params: Any = Depends(parse_reindex)) -> dict[str, Any]:
        """Queue a re-index (all roots, or those holding the given paths); returns the job.

        `force` re-reads files that look unchanged. GET /status follows the job.
        """
        return tools_call("reindex", params)

    _document_app_wide_errors(app)
    mcp_route = Route("/mcp", McpEndpoint(manager, token_checker(token)), include_in_schema=False)
    app.router.routes.append(mcp_route)
    web.install(app, live, auth)  # last: the page is mounted at "/"

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


def _sse_schema() -> dict[str, Any]:
    """Each event of /query_documents_stream: its name and its JSON data's schema."""

    def event(name: str, model: type[BaseModel]) -> dict[str, Any]:
        return {
            "type": "object",
            "required": ["event", "data"],
            "properties": {
                "event": {"const": name},
                "data": {
                    "type": "string",
                    "contentMediaType": "application/json",
                    "contentSchema": model.model_json_schema(),
                },
            },
        }

    return {"oneOf": [event("result", SearchResult), event("done", SearchDone)]}


def _sse(event: str, data: Any) -> str:
    return f"event: {event}\ndata: {json.dumps(data, ensure_ascii=False)}\n\n"
