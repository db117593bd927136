"""``noteseek get``, ``links``, ``graph``, ``status`` and ``config show``: reading the index."""

from __future__ import annotations

import json
import re
import sys
import time
from typing import Annotated, Any

import typer
from rich.markup import escape
from rich.table import Table

from noteseek.interfaces.cli.common import (
    EXIT_NO_INDEX,
    app,
    call,
    config_app,
    err,
    fail,
    opened,
    out,
)
from noteseek.operations import Context
from noteseek.operations.params import CHUNK_ID_PATTERN, MAX_DOCUMENT_LINES
from noteseek.types import KEYWORD_ONLY_NOTE

_PATH_LINE = re.compile(r"^(.*):(\d+)$")


@app.command()
def get(
    ref: Annotated[
        str,
        typer.Argument(help="Chunk id, path, path:line, or a note's title, file name or alias."),
    ],
    as_json: Annotated[bool, typer.Option("--json", help="Print as JSON.")] = False,
) -> None:
    """Print a chunk, the section holding a line, or a whole document (by path or name)."""
    with opened(need_index=True) as ctx:
        result = _get(ctx, ref.strip())
    if as_json:
        out.print_json(json.dumps(result, ensure_ascii=False))
        return
    text = result.get("text", result.get("content", ""))
    first = result.get("start_line", result.get("from_line"))
    last = result.get("end_line", result.get("to_line"))
    heading = " > ".join(result.get("heading_path", ()))
    err.print(
        f"[bold]{escape(result['title'])}[/]  [green]{escape(result['doc_id'])}:"
        f"{first}-{last}[/]"
        + (f"  [cyan]{escape(heading)}[/]" if heading else "")
        + ("  [yellow](file changed since indexing)[/]" if result.get("stale") else "")
    )
    sys.stdout.write(text + ("\n" if not text.endswith("\n") else ""))


def _get(ctx: Context, ref: str) -> dict[str, Any]:
    """A chunk id, ``path:line`` or a path, each through its operation."""
    if re.match(CHUNK_ID_PATTERN, ref):
        return call(ctx, "get_chunk", {"chunk_id": ref})
    m = _PATH_LINE.match(ref)
    if m:
        return call(ctx, "get_section", {"path": m.group(1), "line": int(m.group(2))})
    # A whole document: every page of it.
    page = call(ctx, "get_document", {"path": ref, "max_lines": MAX_DOCUMENT_LINES})
    parts = [page["content"]]
    while page["more"]:
        page = call(
            ctx,
            "get_document",
            {"path": ref, "from_line": page["to_line"] + 1, "max_lines": MAX_DOCUMENT_LINES},
        )
        parts.append(page["content"])
    return page | {"from_line": 1, "content": "\n".join(parts)}


@app.command()
def links(
    ref: Annotated[str, typer.Argument(help="A document's path or doc id.")],
    as_json: Annotated[bool, typer.Option("--json", help="Print as JSON.")] = False,
) -> None:
    """A document's outgoing links (typed, resolved or not) and its backlinks."""
    with opened(need_index=True) as ctx:
        result = call(ctx, "get_links", {"path": ref})
    if as_json:
        out.print_json(json.dumps(result, ensure_ascii=False))
        return
    out.print(f"[bold]{escape(result['doc_id'])}[/]")
    for label, items in (("links to", result["outgoing"]), ("linked from", result["backlinks"])):
        out.print(f"{label} ({len(items)}):")
        for item in items:
            name = escape(item["doc_id"] or item["placeholder"])
            if not item["doc_id"]:
                name += " [yellow](no such note yet)[/]"
            anchor = f"#{item['anchor']}" if item["anchor"] else ""
            memory = "[magenta]memory[/] " if item.get("memory") else ""
            out.print(
                f"  {memory}{name}{escape(anchor)}  [dim]{item['type']}, line {item['line']}[/]"
            )
            if item.get("memory") and item.get("context"):
                out.print(f"      [dim]{escape(item['context'])}[/]")


@app.command()
def graph(
    ref: Annotated[str, typer.Argument(help="A document's path or doc id.")],
    depth: Annotated[int, typer.Option(help="Links away from the document, 1-2.")] = 1,
    as_json: Annotated[bool, typer.Option("--json", help="Print as JSON.")] = False,
) -> None:
    """A document's neighbourhood: the documents within 1-2 links and the links among them."""
    with opened(need_index=True) as ctx:
        result = call(ctx, "get_neighbourhood", {"path": ref, "depth": depth})
    if as_json:
        out.print_json(json.dumps(result, ensure_ascii=False))
        return
    for node in sorted(result["nodes"], key=lambda n: (n["depth"], n["id"])):
        name = node["id"] if not node["placeholder"] else f"{node['title']} (no such note yet)"
        out.print(f"{'  ' * node['depth']}{escape(name)}  [dim]{escape(node['title'])}[/]")
    out.print(f"[dim]{len(result['nodes'])} documents, {len(result['edges'])} links[/]")
    if result["truncated"]:
        out.print("[yellow]more neighbours exist than shown[/]")


SHOWN_PROBLEMS = 20
"""Problems ``status`` lists by default: a vault can have 50,000, and a terminal is no place
for them (``--problems 0`` or ``--json`` gives all)."""


@app.command()
def status(
    problems_shown: Annotated[
        int,
        typer.Option(
            "--problems",
            min=0,
            help=f"Problems to list (default {SHOWN_PROBLEMS}); 0 lists all. --json lists all.",
        ),
    ] = SHOWN_PROBLEMS,
    as_json: Annotated[bool, typer.Option("--json", help="Print as JSON.")] = False,
    check: Annotated[
        bool,
        typer.Option(
            "--check",
            help="Check the whole index for damage first (seconds on a large index).",
        ),
    ] = False,
) -> None:
    """Roots, counts, problems with reasons, index size, the last run and the last full check
    (exit 3 when the index is damaged)."""
    with opened() as ctx:
        data = call(ctx, "check_index" if check else "index_status", {})
    if as_json:
        out.print_json(json.dumps(data, ensure_ascii=False, default=str))
        if data.get("damaged"):
            raise typer.Exit(EXIT_NO_INDEX)
        return
    location = (data.get("store") or {}).get("location")
    if location:  # kept in Milvus: named by where it is; the folder holds its local state
        out.print(
            f"[bold]index[/] {escape(location)} ([dim]local state in {escape(data['index_dir'])}, "
            f"{escape(data['index_dir_reason'])}[/])"
        )
    else:
        out.print(
            f"[bold]index[/] {escape(data['index_dir'])} "
            f"([dim]{escape(data['index_dir_reason'])}[/])"
        )
    if data.get("damaged"):
        raise fail(data["damaged"], EXIT_NO_INDEX)
    if not data["exists"]:
        out.print("no index yet: run `noteseek index`")
        return
    store = data.get("store") or {}
    if store.get("backend", "sqlite") != "sqlite":
        sizes = ", ".join(f"{k} {v:,}" for k, v in (store.get("collections") or {}).items())
        out.print(
            f"[bold]store[/] {escape(store['backend'])}: "
            + escape(store.get("server") or store.get("uri", ""))
            + (
                f", vector index {escape(', '.join(sorted(set(store['vector_index'].values()))))}"
                if store.get("vector_index")
                else ""
            )
            + (f": {escape(sizes)}" if sizes else "")
        )
        for lease in store.get("leases") or []:
            out.print(
                f"[bold]lease[/] {escape(lease['resource'])}: noteseek "
                f"{escape(lease['command'] or 'writer')} (pid {lease['pid']} on "
                f"{escape(lease['host'])})"
            )
    table = Table("root", "style", "path", "files", "chunks", box=None)
    for r in data["roots"]:
        table.add_row(
            escape(r["name"]),
            escape(r.get("style") or r.get("kind") or ""),
            escape(r["path"]),
            str(r["files"]),
            str(r["chunks"]),
        )
    out.print(table)
    out.print(
        f"{data['documents']} files, {data['chunks']} chunks, {data['links']} links, "
        f"{data['index_bytes'] / 1e6:.1f} MB"
    )
    emb = data.get("embedding")
    if emb:
        if not emb["enabled"]:
            out.print("embeddings off (keyword search only)")
        elif emb.get("keyword_only"):
            out.print(escape(KEYWORD_ONLY_NOTE))
        else:
            pct = 100.0 * emb["embedded"] / emb["total"] if emb["total"] else 100.0
            out.print(
                f"embeddings: {emb['embedded']}/{emb['total']} chunks ({pct:.0f}%) with "
                f"{escape(emb['model'])}"
                + (f", {emb['pending']} pending: {_pending_note(emb)}" if emb["pending"] else "")
            )
    checked = data.get("check")
    if checked:
        when = time.strftime("%Y-%m-%d %H:%M:%S", time.localtime(checked["at"]))
        verdict = "sound" if checked.get("found") is None else escape(str(checked["found"]))
        out.print(f"checked through {when} in {checked['seconds']:.1f} s: {verdict}")
    elif data["exists"]:
        out.print("[dim]not checked through yet (noteseek status --check)[/]")
    run = data.get("last_run")
    if run:
        when = time.strftime("%Y-%m-%d %H:%M:%S", time.localtime(run["finished"]))
        out.print(
            f"last run {when}: {run['added']} added, {run['updated']} updated, "
            f"{run['removed']} removed, {run['skipped']} skipped in {run['seconds']}s"
        )
    problems = data["failures"]
    if problems:
        out.print(
            f"[bold]{data['failed_files']:,} files skipped, {data.get('warned_files', 0):,} "
            "indexed with a warning[/]"
        )
        shown = problems if problems_shown == 0 else problems[:problems_shown]
        for p in shown:
            style = "red" if p["severity"] == "skipped" else "yellow"
            out.print(
                f"  [{style}]{p['severity']}[/] {escape(p['root'])}/{escape(p['path'])}: "
                f"{escape(p['reason'])}"
            )
        if len(shown) < len(problems):
            out.print(
                f"  ... and {len(problems) - len(shown):,} more "
                "(noteseek status --problems 0 lists all, --json too)"
            )


@config_app.command("show")
def config_show(
    as_json: Annotated[bool, typer.Option("--json", help="Print as JSON.")] = False,
) -> None:
    """Every resolved setting and the layer it came from (default, user, project, env, flag)."""
    with opened() as ctx:
        engine = ctx.engine
        cfg = engine.config
        rows = cfg.flat()[:-1]
        files = {
            "user": str(cfg.user_file),
            "project": str(cfg.project_file) if cfg.project_file else None,
        }
    if as_json:
        payload = {
            "files": files,
            "index_dir": str(engine.index_dir),
            "index_dir_reason": engine.config.index_dir_reason,
            "values": [{"key": k, "value": v, "layer": layer} for k, v, layer in rows],
        }
        out.print_json(json.dumps(payload, ensure_ascii=False))
        return
    out.print(f"user file:    {escape(str(files['user']))}")
    # A named index is opened with its own project file only: none is looked for from here.
    none = "(none made this named index)" if engine.config.named else "(none found)"
    out.print(f"project file: {escape(str(files['project'] or none))}")
    out.print(
        f"index dir:    {escape(str(engine.index_dir))} ({escape(engine.config.index_dir_reason)})"
    )
    table = Table("key", "value", "layer", box=None)
    for key, value, layer in rows:
        table.add_row(escape(key), escape(json.dumps(value, ensure_ascii=False)), layer)
    out.print(table)


def _pending_note(emb: dict[str, Any]) -> str:
    """Who embeds the pending chunks: the writer running now, else the command to run."""
    writer = emb.get("writer")
    if not writer:
        return "run noteseek index"
    command = f"noteseek {writer.get('command')}" if writer.get("command") else "another process"
    return f"being embedded by {command} (pid {writer.get('pid')})"
