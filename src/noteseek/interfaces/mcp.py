"""The MCP server: noteseek's operations as tools for AI agents, over stdio (``noteseek mcp``).

A thin door over the operations table (:mod:`noteseek.operations`): every operation marked for
MCP is listed as a tool with its parameter model as input schema and its result model as
output schema; a call is validated and run by the :class:`~noteseek.operations.Runtime` on a
worker thread and answered as structured content plus a compact text. Errors of any kind come
back as ``isError`` with the operation's precise message; a bug as "internal error" (the
traceback goes to the log). The index opens in the background, so the handshake and
``tools/list`` answer at once; tools answer meanwhile with ``"status": "indexing"``.
"""

from __future__ import annotations

import logging
import os
import signal
import threading
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

import anyio

from noteseek import __version__, servers
from noteseek.operations import (
    Operation,
    OperationError,
    Runtime,
    input_schema,
    mcp_operations,
    operation,
)
from noteseek.operations.errors import HTTP_STATUS
from noteseek.operations.search import index_line
from noteseek.operations.spec import Rendering
from noteseek.parse.plain import plain_text

if TYPE_CHECKING:
    from noteseek.config import LoadedConfig

OPEN_AFTER = 1.0
"""Seconds after the server starts at which the index opens even if no tools were listed."""

log = logging.getLogger(__name__)


# -- rendering ---------------------------------------------------------------------------------


def render_text(op: Operation, payload: dict[str, Any]) -> str:
    """A compact plain-text rendering of a tool's structured result, in the style its
    operation names (:attr:`Operation.rendering`)."""
    return _RENDERERS[op.rendering](payload)


def _results(payload: dict[str, Any]) -> str:
    """Searches: a head line, the index's state, warnings, then each result with its text."""
    lines = []
    count = len(payload["results"])
    head = f"{count} result{'' if count == 1 else 's'} ({payload['mode']}, {payload['took_ms']} ms)"
    if payload["status"] == "indexing":
        head += " - index still building"
    lines.append(head)
    if "index" in payload:
        lines.append(index_line(payload["index"]))
    if "compression" in payload:
        c = payload["compression"]
        lines.append(
            f"compressed: {c['dropped_low_score']} below min_score, "
            f"{c['dropped_duplicates']} near-duplicates dropped, "
            f"{c['tokens_saved']} tokens saved"
        )
    for w in payload["warnings"]:
        lines.append(f"warning: {w}")
    if "target" in payload:  # search_linked_memories: every memory link, typed
        ghost = " (no such document yet)" if payload["ghost"] else ""
        lines.append(f"memory links to {payload['target']}{ghost}:")
        for link in payload["links"]:
            lines.append(f"  {link['type']}: {link['memory']}:{link['line']} “{link['context']}”")
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
        lines.append(_result_body(r))
        if r.get("also"):
            lines.append("also in this document: " + "; ".join(_also(a) for a in r["also"]))
    return "\n".join(lines)


def _memory_write(payload: dict[str, Any]) -> str:
    return f"{payload['message']} ({payload['root']}/{payload['name']}.md; {payload['indexed']})"


def _flush(payload: dict[str, Any]) -> str:
    """flush_memories: what was done, where it went, then the summary and its sources."""
    lines = [payload["message"]]
    if payload.get("indexed"):
        lines[0] += f" ({payload['indexed']})"
    lines.append(
        f"method {payload['method']}, {payload['passages']} passages from "
        f"{len(payload['sources'])} memories"
        + (f"; archived {len(payload['archived'])}" if payload["archived"] else "")
    )
    if payload["summary"]:
        lines.append("\n" + payload["summary"].strip())
    if payload["sources"]:
        lines.append("\nsources: " + ", ".join(payload["sources"]))
    return "\n".join(lines)


def _document(payload: dict[str, Any]) -> str:
    start = payload["from_line"]
    numbered = [f"{start + i:>5}  {line}" for i, line in enumerate(payload["content"].split("\n"))]
    more = " (more: raise from_line)" if payload["more"] else ""
    head = (
        f"{payload['doc_id']} lines {payload['from_line']}-{payload['to_line']} "
        f"of {payload['total_lines']}{more}"
    )
    return head + "\n" + "\n".join(numbered)


def _links(payload: dict[str, Any]) -> str:
    lines = [payload["doc_id"]]
    for label, items in (("links to", payload["outgoing"]), ("linked from", payload["backlinks"])):
        lines.append(f"{label} ({len(items)}):")
        for item in items:
            target = item["doc_id"] or f"{item['placeholder']} (no such note yet)"
            anchor = f"#{item['anchor']}" if item["anchor"] else ""
            memory = "memory " if item.get("memory") else ""
            lines.append(f"  {memory}{target}{anchor} ({item['type']}, line {item['line']})")
            if item.get("memory") and item.get("context"):
                lines.append(f"    “{item['context']}”")
    return "\n".join(lines)


def _section(payload: dict[str, Any]) -> str:
    return (
        f"{payload['doc_id']} > {' > '.join(payload['heading_path'])} "
        f"(lines {payload['start_line']}-{payload['end_line']})\n{payload['text']}"
    )


def _text(payload: dict[str, Any]) -> str:
    return str(payload["text"])


def _commits(payload: dict[str, Any]) -> str:
    """search_git_history: a line per commit, then its message, file and hunk."""
    commits = payload["commits"]
    lines = [f"{len(commits)} commits ({payload['mode']}, {payload['took_ms']} ms)"]
    if "index" in payload:
        lines.append(index_line(payload["index"]))
    lines += [f"warning: {w}" for w in payload["warnings"]]
    for c in commits:
        total = c.get("files_changed", len(c["files"]))
        shown = (
            f"{len(c['files']):,} of {total:,} files"
            if total > len(c["files"])
            else (f"{total:,} files")
        )
        lines.append(
            f"\n[{c['rank']}] {c['short_hash']} {c['date'][:10]} {c['author']}: {c['subject']} "
            f"({shown} +{c['insertions']} -{c['deletions']}, score {c['score']:.3f})"
        )
        body = c["message"].strip()
        if body and body != c["subject"]:
            lines.append(body)
        if c.get("file"):
            lines.append(f"best match in {c['file']}: {c.get('snippet') or ''}".rstrip())
        if c.get("hunk"):
            lines.append(c["hunk"] + (" [truncated]" if c.get("hunk_truncated") else ""))
    return "\n".join(lines)


def _compact(payload: dict[str, Any]) -> str:
    """Any other result, a line per field (a list of objects, a line per item): the JSON is in
    the structured content, the text is for reading."""

    def value(v: Any) -> str:
        if isinstance(v, dict):
            return ", ".join(f"{k}={value(x)}" for k, x in v.items()) or "none"
        if isinstance(v, list):
            return ", ".join(value(x) for x in v) or "none"
        return str(v)

    lines = []
    for key, v in payload.items():
        if isinstance(v, list) and v and all(isinstance(x, dict) for x in v):
            lines.append(f"{key} ({len(v)}):")
            lines += [f"  - {value(x)}" for x in v]
        elif isinstance(v, str) and "\n" in v:
            lines.append(f"{key}:\n{v}")
        else:
            lines.append(f"{key}: {value(v)}")
    return "\n".join(lines)


_RENDERERS: dict[Rendering, Callable[[dict[str, Any]], str]] = {
    "results": _results,
    "commits": _commits,
    "document": _document,
    "section": _section,
    "links": _links,
    "memory_write": _memory_write,
    "flush": _flush,
    "text": _text,
    "fields": _compact,
}


def _also(section: dict[str, Any]) -> str:
    where = " > ".join(section["heading_path"]) or "before the first heading"
    lines = f"{section['start_line']}-{section['end_line']}"
    return f"{where} (lines {lines}, chunk {section['chunk_id']})"


def _result_body(result: dict[str, Any]) -> str:
    """A result's text as an agent reads it: plain text, never repeated, never empty."""
    snippet = result.get("snippet") or ""
    content = plain_text(result.get("content") or "").strip()
    if result.get("expanded_in") is not None:
        held = f"(this section is in the text of result [{result['expanded_in']}]) {snippet}"
        return (
            f"{held}\nnext to it, lines {result['start_line']}-{result['end_line']}:\n{content}"
            if content
            else held
        )
    if content:
        return content + (" [truncated]" if result.get("truncated") else "")
    if result.get("truncated"):
        return (
            f"{snippet}\n(text left out: this answer's text budget is spent; "
            f"get_chunk {result['chunk_id']} reads it)"
        )
    return snippet


# -- serving -----------------------------------------------------------------------------------


def build_server(runtime: Runtime) -> Any:
    """The low-level MCP server with a tool per operation marked for MCP."""
    from mcp import types
    from mcp.server.lowlevel import Server

    listed = [
        types.Tool(
            name=op.name,
            description=op.text,
            input_schema=input_schema(op.params),
            output_schema=_output_schema(op.result),
            annotations=types.ToolAnnotations(
                read_only_hint=op.read_only,
                idempotent_hint=op.read_only,
                open_world_hint=False,
            ),
        )
        for op in mcp_operations().values()
    ]

    async def list_tools(_ctx: Any, _params: Any) -> Any:
        runtime.start()  # the handshake is over (see _serve_stdio)
        return types.ListToolsResult(tools=listed)

    async def call_tool(_ctx: Any, params: Any) -> Any:
        runtime.start()
        name = params.name
        try:
            payload = await anyio.to_thread.run_sync(runtime.call, name, params.arguments)
        except OperationError as exc:
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
            content=[types.TextContent(type="text", text=render_text(operation(name), payload))],
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


def _output_schema(model: Any) -> dict[str, Any]:
    schema: dict[str, Any] = model.model_json_schema(mode="serialization")
    schema.pop("title", None)
    return schema


async def _serve_stdio(runtime: Runtime, hooks: _Hooks) -> None:
    from mcp.server.stdio import stdio_server

    server = build_server(runtime)
    # The index opens once the client has listed the tools (or OPEN_AFTER seconds in, if it
    # never does): opening it imports and reads much, and in a thread of this process it took
    # the interpreter's lock from the answers to initialize and tools/list.
    opener = threading.Timer(OPEN_AFTER, runtime.start)
    opener.daemon = True
    opener.start()
    threading.Thread(target=hooks.listen, name="noteseek-hooks-start", daemon=True).start()
    async with stdio_server() as (read, write):
        await server.run(read, write, server.create_initialization_options())


class _Hooks:
    """The prompt hook's route beside the stdio server (``servers.HookListener``): an agent's
    prompt hook in this project asks this process, which has the index open, instead of
    opening it again. Listens once the index is open, on loopback, with a token of its own."""

    def __init__(self, runtime: Runtime) -> None:
        self.runtime = runtime
        self.listener: servers.HookListener | None = None
        self._lock = threading.Lock()
        self._stopped = False

    def listen(self) -> None:
        ctx = self.runtime.opened()
        project_file = None if ctx is None else ctx.engine.config.project_file
        if ctx is None or project_file is None:
            return  # no index, or no project a hook could find this process by
        listener = servers.HookListener(self.answer, project_file, ctx.engine.config.index_dir)
        with self._lock:
            if self._stopped:
                return
            try:
                listener.start()
            except OSError as exc:
                log.info("the project's hooks will not find this server: %s", exc)
                listener.stop()
                return
            self.listener = listener

    def answer(self, body: dict[str, Any]) -> tuple[int, dict[str, Any]]:
        try:
            return 200, self.runtime.call("recall_memories", body)
        except OperationError as exc:
            return HTTP_STATUS[exc.kind], {"error": str(exc)}
        except Exception:
            log.exception("the prompt hook's route failed")
            return 500, {"error": "internal error (see the log)"}

    def stop(self) -> None:
        with self._lock:
            self._stopped = True
            listener, self.listener = self.listener, None
        if listener is not None:
            listener.stop()


def run_stdio(load_config: Callable[[], LoadedConfig], *, watch: bool = True) -> None:
    """Serve MCP over stdin/stdout until stdin closes, SIGTERM or SIGINT; then stop cleanly.

    Every way out stops the watcher, lets the worker finish (and commit) its current batch and
    gives up the writer role. On a signal that happens in the signal handler, which then ends the
    process: the SDK's stdin reader is a thread blocked in read() that nothing can wake.
    ``load_config`` runs in the background too; if it fails, every tool call says why.
    """
    runtime = Runtime(load_config, watch=watch, command="mcp", settle=True)
    hooks = _Hooks(runtime)

    def on_term(signum: int, _frame: Any) -> None:
        log.info("%s: stopping", signal.Signals(signum).name)
        hooks.stop()
        runtime.shutdown()
        logging.shutdown()
        os._exit(0)

    # SIGINT too: as a KeyboardInterrupt it cancelled the event loop, which then waited for
    # the stdin reader's thread, blocked in read() until the client closed the pipe.
    stopping = (signal.SIGTERM, signal.SIGINT)
    previous = {sig: signal.signal(sig, on_term) for sig in stopping}
    try:
        anyio.run(_serve_stdio, runtime, hooks)
    except KeyboardInterrupt:
        pass
    finally:
        for sig, handler in previous.items():
            signal.signal(sig, handler)
        hooks.stop()
        runtime.shutdown()
