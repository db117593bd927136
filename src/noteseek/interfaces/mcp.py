"""The MCP server: noteseek's tools for AI agents, over stdio (``noteseek mcp``).

A thin adapter over :class:`~noteseek.engine.Engine` and
:class:`~noteseek.indexing.service.IndexService`: it validates arguments (strictly, with
forgiving aliases), calls the engine on a worker thread, and renders results as structured
content plus a compact text. It never blocks on indexing: the service indexes in the
background and tools answer meanwhile with ``"status": "indexing"`` and whatever is
searchable.
"""

from __future__ import annotations

import json
import logging
import os
import signal
import threading
from collections.abc import Callable, Iterator, Mapping, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any, Literal

import anyio
from pydantic import AliasChoices, BaseModel, ConfigDict, Field, ValidationError

from noteseek import __version__

if TYPE_CHECKING:  # the engine is imported once the server answers, to start fast
    from noteseek.config import LoadedConfig
    from noteseek.engine import Engine, SearchResponse
    from noteseek.engine.live import IndexService

log = logging.getLogger(__name__)

MAX_CONTENT_CHARS = 2_000
"""Characters of section text per result (the rest is cut, and the result says so)."""
MAX_PAYLOAD_CHARS = 40_000
"""Characters of text content across all results of one call."""
MAX_EXPAND_CHARS = 8_000
"""Largest expansion per result; a result's text cap grows to it when asked for."""
MAX_DOCUMENT_LINES = 2_000
MAX_PROBLEMS = 50


class ToolError(Exception):
    """A request the tool cannot serve; the message goes back to the agent as is.

    ``http_status`` is what the HTTP API answers with; the subclasses say why it failed.
    """

    http_status = 400


class InvalidArguments(ToolError):
    """Unknown, duplicated or invalid parameters."""

    http_status = 422


class NotFoundError(ToolError):
    """The chunk or document asked for is not in the index."""

    http_status = 404


class ConflictError(ToolError):
    """The request needs the writer role, which another process holds."""

    http_status = 409


class UnavailableError(ToolError):
    """The index is still opening or being built, or could not be opened: try again later."""

    http_status = 503


# -- parameters ---------------------------------------------------------------------------------


class _Params(BaseModel):
    model_config = ConfigDict(extra="forbid", populate_by_name=True)


_TOP_N = Field(
    default=5,
    ge=1,
    le=100,
    validation_alias=AliasChoices("top_n", "k", "limit", "top_k"),
    description="Number of results, 1-100 (aliases: k, limit, top_k).",
)


class QueryDocuments(_Params):
    query: str = Field(min_length=1, max_length=4000, description="What to look for.")
    top_n: int = _TOP_N
    mode: Literal["hybrid", "keyword", "semantic"] | None = Field(
        default=None,
        description="hybrid (default): keywords and meaning fused; keyword: exact words, "
        "identifiers, quoted phrases; semantic: meaning only.",
    )
    paths: list[str] | None = Field(
        default=None, description="Only files matching these glob patterns (root-relative)."
    )
    tags: list[str] | None = Field(default=None, description="Only documents with every tag.")
    root: str | list[str] | None = Field(default=None, description="Only these roots.")
    after: str | None = Field(
        default=None, description="Modified on or after: YYYY-MM-DD, ISO time, or an age (7d)."
    )
    before: str | None = Field(default=None, description="Modified before (same forms).")
    where: list[str] | None = Field(
        default=None, description="Frontmatter conditions, key=value or key!=value."
    )
    min_score: float = Field(default=0.0, ge=0, le=1, description="Drop results below this.")
    excluded_files: list[str] | None = Field(
        default=None,
        description="Files to leave out (paths as results give them, or glob patterns), "
        "for example those already read.",
    )
    expand_chars: int = Field(
        default=0,
        ge=0,
        le=MAX_EXPAND_CHARS,
        description="Grow each result to its whole section, then neighbouring sections, "
        f"within this many characters (0-{MAX_EXPAND_CHARS}); use it to read around a hit "
        "without another call.",
    )


class QueryCompressed(_Params):
    query: str = Field(min_length=1, max_length=4000, description="What to look for.")
    top_n: int = _TOP_N
    min_score: float = Field(default=0.3, ge=0, le=1, description="Drop results below this.")
    similarity_threshold: float = Field(
        default=0.85,
        ge=0,
        le=1,
        description="Drop a result whose text overlaps a better one at least this much.",
    )


class Hypothesis(_Params):
    hypothesis: str = Field(
        min_length=1,
        max_length=8000,
        description="A passage that would answer the question, written as the note would say it.",
    )
    top_n: int = _TOP_N


class GetChunk(_Params):
    chunk_id: str = Field(
        pattern=r"^[0-9a-f]{16}$", description="A result's chunk_id (16 hex digits)."
    )


class GetDocument(_Params):
    path: str = Field(
        min_length=1,
        max_length=4096,
        description="The document's path as results give it (root-relative), its doc_id "
        "(root/path), or an absolute path inside a root.",
    )
    from_line: int = Field(default=1, ge=1, description="First line to return (1-based).")
    max_lines: int = Field(
        default=400,
        ge=1,
        le=MAX_DOCUMENT_LINES,
        description=f"Lines to return, 1-{MAX_DOCUMENT_LINES}.",
    )


class IndexStatus(_Params):
    pass


class Reindex(_Params):
    paths: list[str] | None = Field(
        default=None,
        description="Root names, or files/folders inside roots; their roots are brought up "
        "to date. Default: every root.",
    )
    force: bool = Field(default=False, description="Re-read files even if they look unchanged.")


# -- the server ---------------------------------------------------------------------------------


@dataclass(frozen=True)
class ToolSpec:
    name: str
    params: type[_Params]
    description: str
    read_only: bool
    handler: str
    """The name of the NoteseekTools method that serves it."""


def _tool_specs() -> dict[str, ToolSpec]:
    cap = (
        f"Each result carries at most {MAX_CONTENT_CHARS:,} characters of text (or "
        f"expand_chars, when larger) and a call at most {MAX_PAYLOAD_CHARS:,} in all; cut "
        "text is marked truncated."
    )
    specs = [
        ToolSpec(
            "query_documents",
            QueryDocuments,
            "Search the indexed Markdown notes and docs. Use this first for any question "
            "the notes may answer. Returns ranked sections with path, title, heading path, "
            "line range, score (0-1), per-retriever ranks and the section text. Narrow "
            "with paths, tags, root, after/before (dates) and where (frontmatter); pass "
            "excluded_files to skip what you already read. " + cap,
            True,
            "_query",
        ),
        ToolSpec(
            "query_documents_compressed",
            QueryCompressed,
            "Like query_documents but token-frugal: drops results below min_score and "
            "near-duplicate sections, and reports the tokens saved. Use it when context "
            "is tight or for broad questions with many similar notes. " + cap,
            True,
            "_query_compressed",
        ),
        ToolSpec(
            "search_with_hypothesis",
            Hypothesis,
            "Semantic search with a hypothetical answer (HyDE): write a short passage as "
            "the ideal note would phrase it, and get the sections closest in meaning. Use "
            "it when query_documents misses because the notes use different words. " + cap,
            True,
            "_hypothesis",
        ),
        ToolSpec(
            "get_chunk",
            GetChunk,
            "The full text of one result section by its chunk_id.",
            True,
            "_get_chunk",
        ),
        ToolSpec(
            "get_document",
            GetDocument,
            "Read an indexed document (or part of it) by path, with line numbers: "
            "from_line and max_lines page through long files. Only documents inside the "
            "configured roots can be read.",
            True,
            "_get_document",
        ),
        ToolSpec(
            "index_status",
            IndexStatus,
            "How the index is doing: documents, sections, embedding progress, files that "
            "failed and why, the watcher, the model, this process's role (writer or "
            "reader) and background jobs.",
            True,
            "_status",
        ),
        ToolSpec(
            "reindex",
            Reindex,
            "Bring the index up to date with the files now (the watcher normally does "
            "this by itself). Runs in the background and returns a job id; index_status "
            "reports the job's state.",
            False,
            "_reindex",
        ),
    ]
    return {s.name: s for s in specs}


TOOL_SPECS = _tool_specs()


def parse_arguments(
    name: str, arguments: dict[str, Any] | None, params: type[_Params] | None = None
) -> _Params:
    """Validate a call's arguments: aliases accepted, unknown names and bad values rejected.

    ``params`` replaces the tool's own model (the HTTP API adds fields to some tools).
    """
    spec = TOOL_SPECS.get(name)
    if spec is None:
        raise ToolError(f"unknown tool {name!r}; tools: {', '.join(TOOL_SPECS)}")
    model = params or spec.params
    args = dict(arguments or {})
    fields = model.model_fields
    accepted: dict[str, str] = {}
    for field_name, info in fields.items():
        accepted[field_name] = field_name
        alias = info.validation_alias
        if isinstance(alias, AliasChoices):
            for choice in alias.choices:
                if isinstance(choice, str):
                    accepted[choice] = field_name
    unknown = [k for k in args if k not in accepted]
    if unknown:
        valid = ", ".join(_describe_field(f, fields[f]) for f in fields) or "none"
        raise InvalidArguments(
            f"unknown parameter{'s' if len(unknown) > 1 else ''} "
            f"{', '.join(repr(k) for k in unknown)} for {name}; valid parameters: {valid}"
        )
    seen: dict[str, str] = {}
    for key in args:
        target = accepted[key]
        if target in seen:
            raise InvalidArguments(f"{seen[target]!r} and {key!r} both set {target}; give one")
        seen[target] = key
    try:
        return model.model_validate(args)
    except ValidationError as exc:
        raise InvalidArguments(_describe_errors(name, exc)) from None


class NoteseekTools:
    """The tools over one index; the engine is used by one call at a time."""

    def __init__(self, config: LoadedConfig, service: IndexService | None) -> None:
        from noteseek.engine import Engine

        self.config = config
        self.service = service
        self.engine = Engine(config)
        self._lock = threading.Lock()
        self.specs = TOOL_SPECS

    def close(self) -> None:
        with self._lock:
            self.engine.close()

    @contextmanager
    def using_engine(self) -> Iterator[Engine]:
        """The engine, held for one caller at a time (the tools use it the same way)."""
        with self._lock:
            yield self.engine

    # -- dispatch ---------------------------------------------------------------------------

    def call(self, name: str, arguments: dict[str, Any] | None) -> dict[str, Any]:
        return self.run(name, parse_arguments(name, arguments))

    def run(self, name: str, params: _Params, **options: Any) -> dict[str, Any]:
        """Serve a call whose arguments ``parse_arguments`` already validated.

        ``options`` go to the handler as keywords (``explain`` for query_documents over HTTP).
        """
        from noteseek.engine import NotFound
        from noteseek.engine.live import NotWriter

        with self._lock:
            try:
                handler: Callable[..., dict[str, Any]] = getattr(self, self.specs[name].handler)
                return handler(params, **options)
            except ToolError:
                raise
            except NotFound as exc:
                raise NotFoundError(str(exc.args[0] if exc.args else exc)) from None
            except NotWriter as exc:
                raise ConflictError(str(exc)) from None
            except LookupError as exc:  # Ambiguous
                raise ToolError(str(exc.args[0] if exc.args else exc)) from None
            except ValueError as exc:  # the engine's precise messages for bad arguments
                raise ToolError(str(exc)) from None

    # -- tools ------------------------------------------------------------------------------

    def _indexing(self) -> bool:
        """Still building: no index yet, work queued or running, or vectors missing."""
        if not self.engine.index_exists:
            return True
        if self.service is not None and self.service.busy:
            return True
        if self.engine.settings.embedding.enabled and not (
            self.service is not None and self.service.embedding_blocked
        ):
            embedded, total = self.engine.embedding_progress(allow_stale=True)
            return embedded < total
        return False

    def _search_payload(
        self, response: SearchResponse, per_result: int = MAX_CONTENT_CHARS
    ) -> dict[str, Any]:
        """Results with their text capped; ``explain`` stays when the search was asked for it."""
        budget = MAX_PAYLOAD_CHARS
        results = []
        for hit in response.hits:
            item = hit.to_dict()
            text = item.pop("text", None) or ""
            limit = max(0, min(per_result, budget))
            item["content"] = text[:limit]
            item["truncated"] = len(text) > limit
            budget -= len(item["content"])
            results.append(item)
        indexing = self._indexing()
        warnings = list(response.warnings)
        if indexing:
            warnings.append("the index is being built or updated: results may be incomplete")
        payload: dict[str, Any] = {
            "status": "indexing" if indexing else "ready",
            "query": response.query,
            "mode": response.mode,
            "took_ms": round(response.took_ms, 1),
            "results": results,
            "warnings": warnings,
        }
        if response.compression is not None:
            payload["compression"] = response.compression
        return payload

    def _query(self, p: QueryDocuments, explain: bool = False) -> dict[str, Any]:
        roots = [p.root] if isinstance(p.root, str) else (p.root or [])
        response = self.engine.search(
            p.query,
            top_k=p.top_n,
            mode=p.mode,
            paths=p.paths or (),
            tags=p.tags or (),
            roots=roots,
            after=p.after,
            before=p.before,
            where=p.where or (),
            min_score=p.min_score,
            exclude_paths=p.excluded_files or (),
            with_text=True,
            expand_chars=p.expand_chars,
            explain=explain,
        )
        return self._search_payload(response, max(MAX_CONTENT_CHARS, p.expand_chars))

    def _query_compressed(self, p: QueryCompressed) -> dict[str, Any]:
        response = self.engine.search(
            p.query,
            top_k=p.top_n,
            min_score=p.min_score,
            compressed=True,
            similarity_threshold=p.similarity_threshold,
        )
        return self._search_payload(response)

    def _hypothesis(self, p: Hypothesis) -> dict[str, Any]:
        response = self.engine.search_with_hypothesis(p.hypothesis, top_k=p.top_n, with_text=True)
        return self._search_payload(response)

    def _get_chunk(self, p: GetChunk) -> dict[str, Any]:
        if not self.engine.index_exists:
            raise UnavailableError("the index is still being built; try again shortly")
        try:
            result = self.engine.get(p.chunk_id)
        except LookupError:
            result = None
        if result is None or result.kind != "chunk":
            raise NotFoundError(f"no chunk with id {p.chunk_id}")
        return result.to_dict()

    def _get_document(self, p: GetDocument) -> dict[str, Any]:
        if not self.engine.index_exists:
            raise UnavailableError("the index is still being built; try again shortly")
        file, text = self.engine.read_document(p.path)
        lines = text.split("\n")
        if text.endswith("\n"):
            lines.pop()
        total = len(lines)
        if p.from_line > max(total, 1):
            raise ToolError(f"{file.doc_id} has {total} lines; from_line {p.from_line} is past it")
        start = p.from_line - 1
        part = lines[start : start + p.max_lines]
        content = "\n".join(part)
        truncated = len(content) > MAX_PAYLOAD_CHARS
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
            "content": content[:MAX_PAYLOAD_CHARS],
        }

    def _status(self, _p: IndexStatus) -> dict[str, Any]:
        status = self.engine.status()
        problems = status.get("problems", [])
        out: dict[str, Any] = {
            "status": "indexing" if self._indexing() else "ready",
            "index_dir": status["index_dir"],
            "documents": status.get("files", 0),
            "chunks": status.get("chunks", 0),
            "roots": status.get("roots", []),
            "embedding": status.get("embedding"),
            "failed_files": len(problems),
            "failures": problems[:MAX_PROBLEMS],
            "last_run": status.get("last_run"),
            "version": __version__,
        }
        if self.service is not None:
            out["service"] = self.service.state()
        return out

    def _reindex(self, p: Reindex) -> dict[str, Any]:
        if self.service is None:
            raise UnavailableError("this server runs without a live index; reindex is unavailable")
        roots = self._roots_of(p.paths) if p.paths else None
        job = self.service.reindex(roots, force=p.force)
        return {"job": job.to_dict(), "hint": "index_status reports the job's state"}

    def _roots_of(self, items: list[str]) -> list[str]:
        known = self.engine.roots()
        chosen: list[str] = []
        for item in items:
            norm = item.replace("\\", "/")
            if ".." in norm.split("/"):
                raise ToolError(f"{item!r}: '..' is not allowed; give a path inside a root")
            if item in known:
                name: str | None = item
            else:
                name = self._root_holding(item, known)
            if name is None:
                raise ToolError(
                    f"{item!r} is neither a root ({', '.join(sorted(known))}) nor inside one"
                )
            if name not in chosen:
                chosen.append(name)
        return chosen

    @staticmethod
    def _root_holding(item: str, known: dict[str, Any]) -> str | None:
        for name, root in known.items():
            base = Path(os.path.realpath(Path(root.path).expanduser()))
            target = Path(os.path.realpath(item if os.path.isabs(item) else base / item))
            if target.is_relative_to(base) and (os.path.isabs(item) or target.exists()):
                return name
        return None


def _describe_field(name: str, info: Any) -> str:
    alias = info.validation_alias
    if isinstance(alias, AliasChoices):
        others = [c for c in alias.choices if isinstance(c, str) and c != name]
        if others:
            return f"{name} (or {', '.join(others)})"
    return name


def _describe_errors(tool: str, exc: ValidationError) -> str:
    return f"invalid arguments for {tool}: " + describe_errors(exc.errors())


def describe_errors(errors: Sequence[Mapping[str, Any]]) -> str:
    """Pydantic's validation errors as one precise line: where, what, and the value given."""
    parts = []
    for err in errors:
        loc = ".".join(str(x) for x in err["loc"]) or "arguments"
        if err["type"] == "missing":
            parts.append(f"{loc} is required")
            continue
        given = err.get("input")
        shown = json.dumps(given, default=str)[:80] if given is not None else "null"
        parts.append(f"{loc}: {err['msg'].lower()} (got {shown})")
    return "; ".join(parts)


# -- rendering ---------------------------------------------------------------------------------


def render_text(name: str, payload: dict[str, Any]) -> str:
    """A compact plain-text rendering of a tool's structured result."""
    if "results" in payload:
        lines = []
        head = f"{len(payload['results'])} results ({payload['mode']}, {payload['took_ms']} ms)"
        if payload["status"] == "indexing":
            head += " - index still building"
        lines.append(head)
        if "compression" in payload:
            c = payload["compression"]
            lines.append(
                f"compressed: {c['dropped_low_score']} below min_score, "
                f"{c['dropped_duplicates']} near-duplicates dropped, "
                f"{c['tokens_saved']} tokens saved"
            )
        for w in payload["warnings"]:
            lines.append(f"warning: {w}")
        for r in payload["results"]:
            where = " > ".join(r["heading_path"])
            ranks = ", ".join(f"{lane} #{rank}" for lane, rank in r["lanes"].items())
            lines.append(
                f"\n[{r['rank']}] {r['doc_id']}"
                + (f" > {where}" if where else "")
                + f" (lines {r['start_line']}-{r['end_line']}, score {r['score']:.3f}"
                + (f"; {ranks}" if ranks else "")
                + f", chunk {r['chunk_id']})"
            )
            body = r.get("content") or r.get("snippet") or ""
            lines.append(body + (" [truncated]" if r.get("truncated") else ""))
        return "\n".join(lines)
    if name == "get_document":
        start = payload["from_line"]
        numbered = [
            f"{start + i:>5}  {line}" for i, line in enumerate(payload["content"].split("\n"))
        ]
        more = " (more: raise from_line)" if payload["more"] else ""
        head = (
            f"{payload['doc_id']} lines {payload['from_line']}-{payload['to_line']} "
            f"of {payload['total_lines']}{more}"
        )
        return head + "\n" + "\n".join(numbered)
    if name == "get_chunk":
        return (
            f"{payload['doc_id']} > {' > '.join(payload['heading_path'])} "
            f"(lines {payload['start_line']}-{payload['end_line']})\n{payload['text']}"
        )
    return json.dumps(payload, indent=1, default=str)


# -- serving -----------------------------------------------------------------------------------


class LiveTools:
    """The tools and the index service, built on a background thread once serving started.

    Importing the engine (numpy, the parsers, the store) and opening the index take a few
    hundred milliseconds; the MCP handshake and ``tools/list`` do not need them, so they answer
    at once and the first tool call waits for this (well under a second).
    """

    def __init__(self, load_config: Callable[[], LoadedConfig], *, watch: bool = True) -> None:
        self.load_config = load_config
        self.watch = watch
        self.tools: NoteseekTools | None = None
        self.service: IndexService | None = None
        self.error: str | None = None
        self._ready = threading.Event()

    def start(self) -> None:
        threading.Thread(target=self._build, name="noteseek-start", daemon=True).start()

    def _build(self) -> None:
        try:
            from noteseek.engine.live import IndexService

            config = self.load_config()
            service = IndexService(config, watch=self.watch)
            self.tools = NoteseekTools(config, service)
            self.service = service
            service.start()
        except Exception as exc:
            log.error("cannot open the index: %s", exc)
            self.error = f"cannot open the index: {exc}"
        finally:
            self._ready.set()

    def get(self, timeout: float = 120.0) -> NoteseekTools:
        if not self._ready.wait(timeout):
            raise UnavailableError("the index is still opening; try again shortly")
        if self.tools is None:
            raise UnavailableError(self.error or "the index could not be opened")
        return self.tools

    def call(self, name: str, arguments: dict[str, Any] | None) -> dict[str, Any]:
        params = parse_arguments(name, arguments)  # bad arguments fail fast, even while opening
        return self.get().run(name, params)

    def shutdown(self) -> None:
        self._ready.wait(30)
        if self.service is not None:
            self.service.stop()
        if self.tools is not None:
            self.tools.close()


def build_server(live: LiveTools) -> Any:
    """The low-level MCP server with noteseek's tools."""
    from mcp import types
    from mcp.server.lowlevel import Server

    listed = [
        types.Tool(
            name=spec.name,
            description=spec.description,
            input_schema=_input_schema(spec.params),
            annotations=types.ToolAnnotations(
                read_only_hint=spec.read_only,
                idempotent_hint=spec.read_only,
                open_world_hint=False,
            ),
        )
        for spec in TOOL_SPECS.values()
    ]

    async def list_tools(_ctx: Any, _params: Any) -> Any:
        return types.ListToolsResult(tools=listed)

    async def call_tool(_ctx: Any, params: Any) -> Any:
        name = params.name
        try:
            payload = await anyio.to_thread.run_sync(live.call, name, params.arguments)
        except ToolError as exc:
            return types.CallToolResult(
                content=[types.TextContent(type="text", text=str(exc))], is_error=True
            )
        except Exception as exc:  # never a stack trace to the agent
            log.exception("tool %s failed", name)
            return types.CallToolResult(
                content=[
                    types.TextContent(type="text", text=f"internal error: {type(exc).__name__}")
                ],
                is_error=True,
            )
        return types.CallToolResult(
            content=[types.TextContent(type="text", text=render_text(name, payload))],
            structured_content=payload,
        )

    return Server(
        "noteseek",
        version=__version__,
        instructions="Search the user's Markdown notes and documentation: start with "
        "query_documents; read more with get_document or get_chunk.",
        on_list_tools=list_tools,
        on_call_tool=call_tool,
    )


def _input_schema(params: type[_Params]) -> dict[str, Any]:
    schema = params.model_json_schema(by_alias=False)
    schema.pop("title", None)
    for prop in schema.get("properties", {}).values():
        prop.pop("title", None)
    return schema


async def _serve_stdio(live: LiveTools) -> None:
    from mcp.server.stdio import stdio_server

    server = build_server(live)
    live.start()
    async with stdio_server() as (read, write):
        await server.run(read, write, server.create_initialization_options())


def run_stdio(load_config: Callable[[], LoadedConfig], *, watch: bool = True) -> None:
    """Serve MCP over stdin/stdout until stdin closes or SIGTERM; then stop cleanly.

    Both ways out stop the watcher, let the worker finish (and commit) its current batch and
    give up the writer role. On SIGTERM that happens in the signal handler, which then ends the
    process: the SDK's stdin reader is a thread blocked in read() that nothing can wake.
    ``load_config`` runs in the background too; if it fails, every tool call says why.
    """
    live = LiveTools(load_config, watch=watch)

    def on_term(_signum: int, _frame: Any) -> None:
        log.info("SIGTERM: stopping")
        live.shutdown()
        logging.shutdown()
        os._exit(0)

    previous = signal.signal(signal.SIGTERM, on_term)
    try:
        anyio.run(_serve_stdio, live)
    except KeyboardInterrupt:
        pass
    finally:
        signal.signal(signal.SIGTERM, previous)
        live.shutdown()
