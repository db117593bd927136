"""``noteseek memory ...``: the memory operations from the command line.

Each subcommand calls one entry of the operations table, so the names, bounds and messages are
those of MCP and HTTP. Text comes from an argument or, with ``-``, from standard input.
"""

from __future__ import annotations

import json
import sys
from typing import Annotated, Any

import typer
from rich.markup import escape

from noteseek.interfaces.cli.common import EXIT_NOT_FOUND, State, app, call, err, opened, out
from noteseek.interfaces.cli.searching import QuietOpt, print_hits, print_index

memory_app = typer.Typer(
    help="Agent memory: write, find, link, compact and restore memories (plain Markdown).",
    no_args_is_help=True,
)
app.add_typer(memory_app, name="memory")

Json = Annotated[bool, typer.Option("--json", help="Print as JSON.")]
TagOpt = Annotated[list[str] | None, typer.Option("--tag", help="Tag (repeatable).")]
TypeOpt = Annotated[
    str | None, typer.Option("--type", help="plan, journal, fact, observation or reflection.")
]
StatusOpt = Annotated[
    str | None, typer.Option("--status", help="active (default), archived or all.")
]
DaysOpt = Annotated[int | None, typer.Option("--days", help="Created in the last N days.")]
AfterOpt = Annotated[
    str | None,
    typer.Option(help="Created on/after: 2026-01-31, 7d, today, or Unix time (@1767139200)."),
]
BeforeOpt = Annotated[str | None, typer.Option(help="Created before this date.")]
TopKOpt = Annotated[
    int | None, typer.Option("--top-k", "-k", help="Results, 1-1000 (default search.top_k).")
]
ModeOpt = Annotated[str | None, typer.Option("--mode", "-m", help="hybrid, keyword, semantic.")]


def _text(value: str) -> str:
    """An argument, or standard input for ``-``."""
    return sys.stdin.read() if value == "-" else value


def _run(name: str, arguments: dict[str, Any], as_json: bool) -> dict[str, Any]:
    with opened() as ctx:
        result = call(ctx, name, arguments)
    if as_json:
        out.print_json(json.dumps(result, ensure_ascii=False))
    return result


def _report_write(result: dict[str, Any], as_json: bool) -> None:
    if as_json:
        return
    out.print(f"{escape(result['message'])}")
    err.print(f"[dim]{result['root']}/{escape(result['name'])}.md · {result['indexed']}[/]")


@memory_app.command("add")
def add(
    name: Annotated[str, typer.Argument(help="Name: a path in the memory folder, without .md.")],
    content: Annotated[str, typer.Argument(help="The text, or - to read standard input.")],
    type_: TypeOpt = None,
    tag: TagOpt = None,
    link: Annotated[
        list[str] | None, typer.Option("--link", help="A document it is about (repeatable).")
    ] = None,
    title: Annotated[str | None, typer.Option(help="A title (the # heading).")] = None,
    as_json: Json = False,
) -> None:
    """Write a new named memory (never overwrites; identical text is not written twice)."""
    args = {"name": name, "content": _text(content), "type": type_, "tags": tag}
    args |= {"links": link, "title": title}
    _report_write(_run("create_memory", args, as_json), as_json)


@memory_app.command("append")
def append(
    content: Annotated[str, typer.Argument(help="The entry, or - to read standard input.")],
    title: Annotated[str | None, typer.Option(help="A short title for the entry.")] = None,
    as_json: Json = False,
) -> None:
    """Add an entry to today's daily log (memory/YYYY-MM-DD.md)."""
    result = _run("append_memory", {"content": _text(content), "title": title}, as_json)
    _report_write(result, as_json)


@memory_app.command("update")
def update(
    name: Annotated[str, typer.Argument(help="The memory's name.")],
    content: Annotated[
        str | None, typer.Option("--content", help="New text (- for standard input).")
    ] = None,
    add_text: Annotated[
        str | None, typer.Option("--append", help="A paragraph to add at the end.")
    ] = None,
    type_: TypeOpt = None,
    tag: TagOpt = None,
    status: Annotated[str | None, typer.Option(help="active or archived.")] = None,
    title: Annotated[str | None, typer.Option(help="A new title.")] = None,
    as_json: Json = False,
) -> None:
    """Change a memory's text, type, tags, status or title (other frontmatter is kept)."""
    args = {
        "name": name,
        "content": None if content is None else _text(content),
        "append": add_text,
        "type": type_,
        "tags": tag,
        "status": status,
        "title": title,
    }
    _report_write(_run("update_memory", args, as_json), as_json)


@memory_app.command("delete")
def delete(name: Annotated[str, typer.Argument()], as_json: Json = False) -> None:
    """Move a memory to the trash (.trash/); `noteseek memory restore` brings it back."""
    _report_write(_run("delete_memory", {"name": name}, as_json), as_json)


@memory_app.command("restore")
def restore(
    name: Annotated[str, typer.Argument(help="The name, or its name in the trash.")],
    as_json: Json = False,
) -> None:
    """Bring a deleted memory back from the trash."""
    _report_write(_run("restore_memory", {"name": name}, as_json), as_json)


@memory_app.command("show")
def show(name: Annotated[str, typer.Argument()], as_json: Json = False) -> None:
    """One memory's fields and text."""
    result = _run("read_memory", {"name": name}, as_json)
    if not as_json:
        tags = ", ".join(result["tags"]) or "-"
        title = escape(result["title"] or result["name"])
        out.print(f"[bold]{title}[/]  [dim]{escape(result['name'])}[/]")
        out.print(
            f"[dim]{result['type']} · {result['status']} · tags {escape(tags)} · created "
            f"{result['created_at']} · updated {result['updated_at']}[/]"
        )
        out.print(escape(result["content"] or ""))


@memory_app.command("list")
def list_(
    type_: TypeOpt = None,
    tag: TagOpt = None,
    status: StatusOpt = None,
    days: DaysOpt = None,
    after: AfterOpt = None,
    before: BeforeOpt = None,
    trash: Annotated[bool, typer.Option("--trash", help="Include deleted memories.")] = False,
    limit: Annotated[int | None, typer.Option(help="Most memories listed (100).")] = None,
    as_json: Json = False,
) -> None:
    """Memories newest first."""
    args = {"type": type_, "tags": tag, "status": status, "days": days, "after": after}
    args |= {"before": before, "include_trash": trash or None, "limit": limit}
    result = _run("list_memories", args, as_json)
    if as_json:
        return
    for item in result["memories"]:
        tags = (
            f" [cyan]{escape(' '.join('#' + t for t in item['tags']))}[/]" if item["tags"] else ""
        )
        gone = " [red](in the trash)[/]" if item["trashed"] else ""
        out.print(
            f"{item['created_at'][:16]}  [bold]{escape(item['name'])}[/]  [dim]{item['type']}"
            f" · {item['status']}[/]{tags}{gone}"
        )
    for problem in result["problems"]:
        err.print(f"[yellow]unreadable:[/] {escape(problem['name'])}: {escape(problem['reason'])}")
    err.print(f"[dim]{len(result['memories'])} of {result['count']} memories[/]")


@memory_app.command("stats")
def stats(as_json: Json = False) -> None:
    """How many memories of each type and status, daily logs, size and trash."""
    result = _run("memory_stats", {}, as_json)
    if as_json:
        return
    out.print(f"[bold]{escape(result['folder'])}[/]  (root {escape(result['root'])})")
    out.print(
        f"{result['memories']} memories ({result['daily_logs']} daily logs), "
        f"{result['total_bytes']:,} bytes, {result['trash']} in the trash, "
        f"{result['indexed_memories']} indexed"
    )
    for label in ("by_type", "by_status"):
        parts = ", ".join(f"{k} {v}" for k, v in sorted(result[label].items()))
        out.print(f"  {label.replace('_', ' ')}: {parts or '-'}")
    if result["problems"]:
        err.print(f"[yellow]{result['problems']} files cannot be read[/]: noteseek memory list")


@memory_app.command("search")
def search(
    query: Annotated[str, typer.Argument(help="What to look for.")],
    top_k: TopKOpt = None,
    mode: ModeOpt = None,
    type_: TypeOpt = None,
    tag: TagOpt = None,
    status: StatusOpt = None,
    days: DaysOpt = None,
    after: AfterOpt = None,
    before: BeforeOpt = None,
    explain: Annotated[
        bool, typer.Option("--explain", help="Show why each result ranked (recency too).")
    ] = False,
    full: Annotated[bool, typer.Option("--full", help="Include each section's full text.")] = False,
    as_json: Json = False,
    quiet: QuietOpt = False,
) -> None:
    """Search memories (not documents); recent memories rank higher."""
    args = {"query": query, "top_k": top_k, "mode": mode, "type": type_, "tags": tag}
    args |= {"status": status, "days": days, "after": after, "before": before}
    result = _run("search_memories", args | {"explain": explain or None}, as_json)
    _show_results(result, as_json, explain, full, quiet)


@memory_app.command("linked")
def linked(
    target: Annotated[str, typer.Argument(help="A document (path or doc id), or a file name.")],
    query: Annotated[str, typer.Argument(help="What to look for in those memories.")],
    top_k: TopKOpt = None,
    mode: ModeOpt = None,
    as_json: Json = False,
    quiet: QuietOpt = False,
) -> None:
    """What do my memories say about this document? Searches the memories linking to it."""
    args = {"target_document": target, "query": query, "top_k": top_k, "mode": mode}
    result = _run("search_linked_memories", args, as_json)
    if not as_json:
        print_index(result, quiet)
        ghost = " [yellow](no such document yet)[/]" if result["ghost"] else ""
        out.print(f"[bold]{escape(result['target'])}[/]{ghost}: {len(result['links'])} links")
        for link in result["links"]:
            out.print(
                f"  [magenta]{link['type']}[/] {escape(link['memory'])}:{link['line']}  "
                f"[dim]{escape(link['context'])}[/]"
            )
    _show_results(result, as_json, False, False, quiet=True)


@memory_app.command("flush")
def flush(
    days: DaysOpt = None,
    type_: TypeOpt = None,
    tag: TagOpt = None,
    dry_run: Annotated[bool, typer.Option("--dry-run", help="Show it; write nothing.")] = False,
    archive: Annotated[
        bool,
        typer.Option("--archive", help="Mark what was summarised archived (never deleted)."),
    ] = False,
    max_chars: Annotated[int | None, typer.Option(help="Longest summary (characters).")] = None,
    as_json: Json = False,
) -> None:
    """Summarise memories into today's daily log: with [flush] base_url set, by that LLM;
    otherwise offline, by their most central sentences."""
    args = {"days": days, "type": type_, "tags": tag, "dry_run": dry_run or None}
    args |= {"archive": archive or None, "max_chars": max_chars}
    result = _run("flush_memories", args, as_json)
    if as_json:
        return
    if result["summary"]:
        out.print(escape(result["summary"]))
    err.print(
        f"[dim]{result['message']} ({result['method']}, {result['passages']} sections, "
        f"{len(result['sources'])} memories)[/]"
    )


def _show_results(
    result: dict[str, Any], as_json: bool, explain: bool, full: bool, quiet: bool = False
) -> None:
    if as_json:
        if not result["results"]:
            raise typer.Exit(EXIT_NOT_FOUND)
        return
    print_index(result, quiet)
    print_hits(result["results"], explain, full)
    for warning in result["warnings"]:
        err.print(f"[yellow]note:[/] {escape(warning)}")
    if not result["results"]:
        raise typer.Exit(EXIT_NOT_FOUND)


@app.command(
    "hook",
    context_settings={"allow_extra_args": True, "ignore_unknown_options": True},
    add_help_option=False,
)
def hook(ctx: typer.Context) -> None:
    """Agent hooks: session-start, prompt, stop, session-end, pre-compact (the hook's JSON
    payload on stdin; see noteseek hook --help)."""
    from noteseek.interfaces.cli.hook import run

    # `noteseek --index NAME hook ...`: the app's options reach the hook, which reads its own.
    given = [
        *(["--config", str(State.config_file)] if State.config_file is not None else []),
        *(["--index-dir", str(State.flags["index.dir"])] if "index.dir" in State.flags else []),
        *(["--index", State.named] if State.named is not None else []),
    ]
    raise typer.Exit(run([*ctx.args, *given]))
