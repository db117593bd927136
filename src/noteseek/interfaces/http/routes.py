"""The API's routes, generated from the operations table: one route per operation with one.

A POST route takes the operation's parameters as a JSON object; a GET route takes the
``{name}`` parts of its path and the query string (a list parameter repeats its name). Either
way they are validated by :func:`noteseek.operations.parse`, exactly as MCP and the CLI validate
them, and the answer is the operation's result model. Errors are JSON ``{"error": "..."}`` with
the status of their kind (``ERROR_STATUS``), documented per route in the OpenAPI description.
"""

from __future__ import annotations

import json
import time
from collections.abc import Callable, Iterator
from typing import Any, get_args, get_origin

from fastapi import APIRouter, Depends, Request
from fastapi.responses import StreamingResponse
from pydantic import BaseModel, Field

from noteseek.interfaces.http.guard import ApiError
from noteseek.operations import (
    ERROR_MEANING,
    Operation,
    Runtime,
    http_operations,
    input_schema,
    parse,
)
from noteseek.operations.errors import HTTP_STATUS
from noteseek.operations.json_shape import MAX_DEPTH, MAX_KEYS
from noteseek.operations.results import IndexInfo, SearchResult

ERROR_STATUS = HTTP_STATUS
"""Each kind of operation error, once, as an HTTP status (``operations/errors.py``)."""

ERROR_TEXT = {
    400: ERROR_MEANING["invalid"] + " Or the body is not valid JSON, or its JSON is nested "
    f"over {MAX_DEPTH} levels deep or holds over {MAX_KEYS:,} keys.",
    401: "Missing or wrong API token (Authorization: Bearer <token>).",
    403: "A browser request from an origin not in serve.cors_origins.",
    404: ERROR_MEANING["not_found"],
    409: f"{ERROR_MEANING['ambiguous']} Or: {ERROR_MEANING['conflict']}",
    413: "Request body larger than serve.max_body_bytes.",
    415: "The body must be JSON (Content-Type: application/json).",
    421: "The Host header is not a name of this server (DNS rebinding; serve.allowed_hosts).",
    431: "The request line and headers are over 16 KiB (the connection is closed).",
    503: ERROR_MEANING["unavailable"] + " Retry after Retry-After seconds.",
}


class ErrorResponse(BaseModel):
    error: str = Field(description="What was wrong, precisely enough to fix the request.")


class SearchDone(BaseModel):
    """The last event of ``/query_documents_stream``."""

    status: str
    index: IndexInfo = Field(description="The index (folder and roots) that answered.")
    query: str
    mode: str
    results: int = Field(description="How many result events were sent.")
    took_ms: float = Field(description="The engine's time for the search.")
    elapsed_ms: float = Field(description="The server's time from request to this event.")
    warnings: list[str]


def error_entries(*codes: int) -> dict[int | str, dict[str, Any]]:
    """OpenAPI entries for the error responses a route can give."""
    return {c: {"model": ErrorResponse, "description": ERROR_TEXT[c]} for c in sorted(set(codes))}


def operation_router(runtime: Runtime, guarded: list[Any]) -> APIRouter:
    router = APIRouter(dependencies=guarded)
    for op in http_operations().values():
        _add_route(router, runtime, op)
    _add_stream_route(router, runtime)
    return router


def _codes(op: Operation) -> list[int]:
    codes = [401, *(ERROR_STATUS[kind] for kind in op.errors)]  # 401: when serve.token is set
    if op.http is not None and op.http.method == "POST":
        codes += [400, 413, 415]
    elif op.params.model_fields:
        codes.append(400)
    return codes


def _add_route(router: APIRouter, runtime: Runtime, op: Operation) -> None:
    assert op.http is not None
    parse_request = _json_parser(op) if op.http.method == "POST" else _query_parser(op)

    def endpoint(params: Any = Depends(parse_request)) -> dict[str, Any]:
        return runtime.run(op, params)

    endpoint.__name__ = op.name
    endpoint.__doc__ = op.text
    router.add_api_route(
        op.http.path,
        endpoint,
        methods=[op.http.method],
        status_code=op.http.status_code,
        summary=op.summary,
        description=op.text,
        response_model=op.result,
        response_model_exclude_unset=op.result.__name__ == "SearchOut",
        responses=error_entries(*_codes(op)),
        tags=["search" if op.name.startswith(("query", "search")) else "index"],
        openapi_extra=_request_doc(op),
        operation_id=op.name,
    )


def _json_parser(op: Operation) -> Callable[[Request], Any]:
    async def parse_body(request: Request) -> Any:
        content_type = request.headers.get("content-type", "").split(";")[0].strip().lower()
        if content_type != "application/json" and not content_type.endswith("+json"):
            raise ApiError(415, "send the parameters as JSON (Content-Type: application/json)")
        try:
            data = json.loads(await request.body())
        except ValueError as exc:
            raise ApiError(400, f"the body is not valid JSON: {exc}") from None
        if not isinstance(data, dict):
            raise ApiError(400, f"the body must be a JSON object of {op.name}'s parameters")
        return parse(op.name, data)[1]

    return parse_body


def _is_list(annotation: Any) -> bool:
    if get_origin(annotation) is list:
        return True
    return any(get_origin(arg) is list for arg in get_args(annotation))


def _scalar_types(annotation: Any) -> set[type]:
    """The plain types an annotation admits (``Int | None`` -> {int, NoneType})."""
    found: set[type] = set()
    for arg in (annotation, *get_args(annotation)):
        if isinstance(arg, type) and arg in (bool, int, float):
            found.add(arg)
        elif get_args(arg):
            found |= _scalar_types(arg)
    return found


def _from_query(value: str, types: set[type]) -> Any:
    """A query string's text as the number or boolean its parameter takes (JSON bodies carry
    typed values, which the parameters insist on; a query string has only text). Text that
    is no such value is left as it is, for the parameter's own error."""
    if bool in types and value.lower() in ("true", "false"):
        return value.lower() == "true"
    for kind in (int, float):
        if kind in types:
            try:
                return kind(value)
            except ValueError:
                continue
    return value


def _query_parser(op: Operation) -> Callable[[Request], Any]:
    fields = op.params.model_fields
    lists = {name for name, info in fields.items() if _is_list(info.annotation)}
    typed = {name: _scalar_types(info.annotation) for name, info in fields.items()}

    def parse_query(request: Request) -> Any:
        args: dict[str, Any] = dict(request.path_params)
        for key in request.query_params:
            values = request.query_params.getlist(key)
            if key in lists:
                args[key] = values
            elif typed.get(key):
                args[key] = _from_query(values[-1], typed[key])
            else:
                args[key] = values[-1]
        return parse(op.name, args)[1]

    return parse_query


def _request_doc(op: Operation) -> dict[str, Any]:
    """The request's OpenAPI entry: the JSON body, or the path and query parameters."""
    assert op.http is not None
    schema = input_schema(op.params)
    if op.http.method == "POST":
        return {
            "requestBody": {"required": True, "content": {"application/json": {"schema": schema}}}
        }
    required = set(schema.get("required", []))
    parameters = []
    for name, prop in schema.get("properties", {}).items():
        in_path = "{" + name + "}" in op.http.path or "{" + name + ":" in op.http.path
        parameters.append(
            {
                "name": name,
                "in": "path" if in_path else "query",
                "required": in_path or name in required,
                "description": prop.get("description", ""),
                "schema": {k: v for k, v in prop.items() if k != "description"},
            }
        )
    return {"parameters": parameters} if parameters else {}


def _add_stream_route(router: APIRouter, runtime: Runtime) -> None:
    """``/query_documents_stream``: the same search as Server-Sent Events."""
    op = http_operations()["query_documents"]
    parse_body = _json_parser(op)

    def stream(params: Any = Depends(parse_body)) -> StreamingResponse:
        started = time.perf_counter()
        payload = runtime.run(op, params)

        def events() -> Iterator[str]:
            for result in payload["results"]:
                yield _sse(
                    "result", SearchResult.model_validate(result).model_dump(exclude_unset=True)
                )
            done = SearchDone(
                status=payload["status"],
                index=payload["index"],
                query=payload["query"],
                mode=payload["mode"],
                results=len(payload["results"]),
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

    router.add_api_route(
        "/query_documents_stream",
        stream,
        methods=["POST"],
        summary="The same search as /query_documents, as a stream of Server-Sent Events.",
        response_class=StreamingResponse,
        tags=["search"],
        openapi_extra=_request_doc(op),
        responses={
            200: {
                "description": "Server-Sent Events: one `result` event per result in rank "
                "order (data: a SearchResult), then one `done` event (data: SearchDone).",
                "content": {"text/event-stream": {"schema": _sse_schema()}},
            },
            **error_entries(*_codes(op)),
        },
    )


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
