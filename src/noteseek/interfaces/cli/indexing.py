"""``noteseek init``, ``index``, ``rebuild`` and ``migrate``: writing the index from the command
line.

``index``, ``rebuild`` and ``migrate`` run the operations of those names, which take the
index's writer role for the run: beside a running ``serve``, ``mcp`` or ``watch`` they refuse
(exit 4) and say which process to ask instead. SIGTERM interrupts them as Ctrl-C does.
"""

from __future__ import annotations

import json
import signal
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Annotated, Any

import typer
from rich.markup import escape
from rich.progress import (
    BarColumn,
    MofNCompleteColumn,
    Progress,
    ProgressColumn,
    Task,
    TextColumn,
    TimeRemainingColumn,
)
from rich.text import Text

from noteseek.config import PROJECT_FILE, init_template
from noteseek.engine.named import check_name, register
from noteseek.interfaces.cli.common import (
    EXIT_INTERRUPTED,
    EXIT_USAGE,
    app,
    call,
    err,
    fail,
    opened,
    out,
)
from noteseek.operations.params import EMBED_HELP, KEYWORD_ONLY_HELP
from noteseek.types import KEYWORD_ONLY_NOTE


@app.command()
def init(
    path: Annotated[str, typer.Option(help="Folder of notes for the first root.")] = ".",
    force: Annotated[bool, typer.Option("--force", help="Overwrite an existing file.")] = False,
) -> None:
    """Write a commented .noteseek.toml in the current folder."""
    target = Path.cwd() / PROJECT_FILE
    if target.exists() and not force:
        raise fail(f"{target} exists (use --force to overwrite)", EXIT_USAGE)
    target.write_text(init_template(path), encoding="utf-8")
    out.print(f"wrote {target}\nnext: noteseek index")


@app.command()
def index(
    roots: Annotated[
        list[str] | None, typer.Argument(help="Root names or folders (default: all roots).")
    ] = None,
    force: Annotated[
        bool, typer.Option("--force", help="Re-read every file, even unchanged ones.")
    ] = False,
    keyword_only: Annotated[bool, typer.Option("--keyword-only", help=KEYWORD_ONLY_HELP)] = False,
    embed: Annotated[bool, typer.Option("--embed", help=EMBED_HELP)] = False,
    background: Annotated[
        bool,
        typer.Option(
            "--background",
            help="Index the files, then embed them in a process of its own: keyword search "
            "works at once, and noteseek status shows the embedding's progress.",
        ),
    ] = False,
    as_json: Annotated[bool, typer.Option("--json", help="Print the summary as JSON.")] = False,
    name: Annotated[
        str | None,
        typer.Option(
            "--name",
            help="Register this index under NAME and put it in use (noteseek use NAME "
            "switches back to it later).",
        ),
    ] = None,
) -> None:
    """Index roots incrementally, then embed new chunks (keyword search works meanwhile)."""
    if name is not None:
        try:
            check_name(name)
        except ValueError as exc:
            raise fail(str(exc), EXIT_USAGE) from None
    with (
        sigterm_interrupts(),
        opened(roots) as ctx,
        progress_bar(as_json, "indexing", "files") as progress,
        progress_bar(as_json, "embedding", "chunks") as embed_progress,
    ):
        engine = ctx.engine
        # The project file whose settings made the index: --index NAME opens it with them.
        own = engine.config.project_file
        if name is not None:
            configured = {n: r.path for n, r in engine.settings.roots.items()}
            register(name, engine.index_dir, configured, use=True, config=own)
        data = call(
            ctx,
            "index",
            {
                "roots": roots or None,
                "force": force,
                "keyword_only": keyword_only,
                "embed": embed,
                "embed_later": background,
            },
            progress=progress,
            embed_progress=embed_progress,
        )
        if name is not None:
            register(name, engine.index_dir, engine.naming_roots(), use=True, config=own)
        pending = _pending(engine) if background else 0
        if pending:
            data["embedding"] = _embed_in_background(engine.index_dir, pending)
    print_report(data, as_json)
    if name is not None and not as_json:
        err.print(f"index named {escape(name)!r} and in use (noteseek use --list shows them all)")


EMBED_RATE = 15.0
"""Chunks a second assumed for the estimate before a background embedding: what bge-small-en
(int8, the default model) gave on 2 cores for sections of a few hundred words (8-10 on a busy
machine, about 20 on a quiet one; docs/benchmarks.md)."""
EMBED_LOG = "embed.log"


def _pending(engine: Any) -> int:
    """Chunks left to embed, when this index embeds at all."""
    if not engine.wants_vectors():
        return 0
    embedded, total = engine.embedding_progress()
    return int(total - embedded)


def _embed_in_background(index_dir: Path, pending: int) -> dict[str, Any]:
    """Start ``noteseek index`` again (the same options, less the ones this run did) in a
    process of its own that outlives this one, to embed the ``pending`` chunks; what it is."""
    import sys

    from noteseek.interfaces.cli.detached import start_detached

    dropped = {"--background", "--force", "--json", "--embed"}
    argv = [a for a in sys.argv[1:] if a not in dropped]
    log_path = index_dir / EMBED_LOG
    with log_path.open("ab") as log:
        pid = start_detached(argv, stdout=log, stderr=log)
    return {
        "background": True,
        "pid": pid,
        "pending": pending,
        "estimate_seconds": round(pending / EMBED_RATE),
        "log": str(log_path),
    }


@app.command()
def rebuild(
    keyword_only: Annotated[bool, typer.Option("--keyword-only", help=KEYWORD_ONLY_HELP)] = False,
    embed: Annotated[bool, typer.Option("--embed", help=EMBED_HELP)] = False,
    as_json: Annotated[bool, typer.Option("--json", help="Print the summary as JSON.")] = False,
) -> None:
    """Drop the index and build it again from the files (cached vectors are reused)."""
    with (
        sigterm_interrupts(),
        opened() as ctx,
        progress_bar(as_json, "indexing", "files") as progress,
        progress_bar(as_json, "embedding", "chunks") as embed_progress,
    ):
        data = call(
            ctx,
            "rebuild",
            {"keyword_only": keyword_only, "embed": embed},
            progress=progress,
            embed_progress=embed_progress,
        )
    print_report(data, as_json)


@app.command()
def migrate(
    to: Annotated[
        str,
        typer.Option(
            "--to",
            help="Where to copy the index: http(s)://host:19530 (Milvus Server, Zilliz Cloud), "
            "milvus:PATH or PATH.db (Milvus Lite), sqlite:FOLDER or any other path (the "
            "embedded SQLite index in FOLDER).",
        ),
    ],
    replace: Annotated[
        bool, typer.Option("--replace", help="Delete what the target holds first.")
    ] = False,
    collection: Annotated[
        str | None,
        typer.Option(help="The Milvus target's collection prefix (default: milvus.collection)."),
    ] = None,
    as_json: Annotated[bool, typer.Option("--json", help="Print the summary as JSON.")] = False,
) -> None:
    """Copy the index in use into another backend: vectors, links and graph included, nothing
    parsed or embedded again; both sides are counted and must agree."""
    with (
        sigterm_interrupts(),
        opened(need_index=True) as ctx,
        progress_bar(as_json, "migrating", "files") as progress,
    ):
        try:
            data = call(
                ctx,
                "migrate",
                {"to": to, "replace": replace, "collection": collection},
                progress=progress,
            )
        except KeyboardInterrupt:
            raise fail(
                "interrupted: the source is unchanged; the target holds part of the copy "
                "(run the migration again with --replace)",
                EXIT_INTERRUPTED,
            ) from None
    if as_json:
        out.print_json(json.dumps(data, ensure_ascii=False))
        return
    source, target = data["counts"]["source"], data["counts"]["target"]
    out.print(f"copied {escape(data['source'])}")
    out.print(f"    to {escape(data['target'])}")
    for key in source:
        out.print(f"  {key:<9} {source[key]:>9,} -> {target[key]:,}")
    out.print(f"in {data['seconds']:.1f}s; {escape(data['next'])}")


@contextmanager
def sigterm_interrupts() -> Iterator[None]:
    """SIGTERM stops the command as Ctrl-C does: the parser processes are stopped, every
    committed batch is kept, and it exits 130 with the "interrupted" message (the next run
    resumes). Without this, SIGTERM ended the process at once and left its workers running.

    Only the first SIGTERM interrupts; more while it stops are ignored, so they cannot break
    off the cleanup (SIGKILL still ends it, and the workers die with it).
    """

    def on_term(_signum: int, _frame: Any) -> None:
        signal.signal(signal.SIGTERM, signal.SIG_IGN)
        raise KeyboardInterrupt

    previous = signal.signal(signal.SIGTERM, on_term)
    try:
        yield
    finally:
        signal.signal(signal.SIGTERM, previous)


@contextmanager
def progress_bar(quiet: bool, label: str = "indexing", unit: str = "files") -> Iterator[Any]:
    """A progress bar on a terminal, plain log lines every few seconds otherwise."""
    if quiet:
        yield None
        return
    if err.is_terminal:
        bar = Progress(
            TextColumn(f"[bold]{label}"),
            BarColumn(),
            MofNCompleteColumn(),
            RateColumn(unit),
            TimeRemainingColumn(),
            TextColumn("{task.fields[path]}", style="dim"),
            console=err,
            transient=True,
        )
        with bar:
            task = bar.add_task("index", total=None, path="")

            def update(done: int, total: int, path: str) -> None:
                bar.update(task, completed=done, total=total or None, path=path[-50:])

            yield update
        return
    last = [0.0]
    began: list[tuple[float, int]] = []

    def log(done: int, total: int, path: str) -> None:
        now = time.monotonic()
        if not began:
            began.append((now, done))
        if done == total or now - last[0] >= 2.0:
            last[0] = now
            err.print(
                f"{label}: {done}/{total} {unit}{rate_note(began[0], now, done, total, unit)}"
            )

    yield log


class RateColumn(ProgressColumn):
    """The measured rate, e.g. ``31.2 chunks/s`` (blank until rich has timed some steps)."""

    def __init__(self, unit: str) -> None:
        super().__init__()
        self.unit = unit

    def render(self, task: Task) -> Text:
        speed = task.speed
        return Text("" if speed is None else f"{speed:.1f} {self.unit}/s", style="cyan")


def rate_note(began: tuple[float, int], now: float, done: int, total: int, unit: str) -> str:
    """``, 31.2 chunks/s, 5:12 left`` once some work is timed, else ``""``."""
    start, first = began
    if now - start < 0.5 or done <= first:
        return ""
    rate = (done - first) / (now - start)
    left = int((total - done) / rate)
    return f", {rate:.1f} {unit}/s, {left // 60}:{left % 60:02d} left"


def print_report(data: dict[str, Any], as_json: bool) -> None:
    """An index run's summary (or its JSON): the counts, the problems, the embedding."""
    if as_json:
        out.print_json(json.dumps(data, ensure_ascii=False))
        return
    if data["rebuilt_because"]:
        err.print(f"[yellow]rebuilt the index:[/] {escape(data['rebuilt_because'])}")
    parts = [
        f"{data['added']} added",
        f"{data['updated']} updated",
        f"{data['renamed']} renamed",
        f"{data['removed']} removed",
        f"{data['unchanged']} unchanged",
        f"{data['skipped']} skipped",
    ]
    if data["touched"]:
        parts.insert(3, f"{data['touched']} touched (same content)")
    out.print(
        f"[bold]{data['scanned']}[/] files in {escape(', '.join(data['roots']))}: "
        f"{', '.join(parts)} in {data['seconds']:.2f}s"
    )
    problems = data["problems"]
    for p in problems[:20]:
        style = "red" if p["severity"] == "skipped" else "yellow"
        out.print(
            f"  [{style}]{p['severity']}[/] {escape(p['root'])}/{escape(p['path'])}: "
            f"{escape(p['reason'])}"
        )
    if len(problems) > 20:
        out.print(f"  ... and {len(problems) - 20} more (noteseek status --problems 0 lists all)")
    if data.get("keyword_only"):
        out.print(escape(KEYWORD_ONLY_NOTE))
    emb = data["embedding"]
    if emb and emb.get("background"):
        minutes = max(1, round(emb["estimate_seconds"] / 60))
        out.print(
            f"embedding {emb['pending']} chunks in the background (pid {emb['pid']}, about "
            f"{minutes} min); keyword search works now, and noteseek status shows the "
            f"progress (log: {escape(emb['log'])})"
        )
    elif emb:
        if emb.get("error"):
            out.print(f"[red]embedding failed:[/] {escape(emb['error'])} (keyword search works)")
        elif emb["embedded"]:
            rate = emb.get("texts_per_second") or 0
            out.print(
                f"embedded {emb['embedded']} chunks with {escape(emb['model'])} in "
                f"{emb['seconds']:.1f}s ({rate:.1f}/s)"
                + ("  [yellow]interrupted: the next run resumes[/]" if emb["interrupted"] else "")
            )
