"""``noteseek roots list``, ``add`` and ``remove``: the roots an index holds, changed only when
asked.

An index's roots are otherwise set by its settings (``[roots.NAME]``) and by ``noteseek index
FOLDER``; a named index (``--index NAME``) has exactly the roots it holds, so these commands
are how its roots change. ``add`` and ``remove`` write the index as its writer for the run,
as ``noteseek index`` does (beside a running ``serve``, ``mcp`` or ``watch``: exit 4), and
call the engine directly, as ``use`` and ``indexes`` do: no other door offers them (no MCP
tool or HTTP route changes an index's roots).
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from contextlib import contextmanager
from typing import TYPE_CHECKING, Annotated, Any

import typer
from rich.markup import escape

from noteseek.engine.named import record_roots
from noteseek.interfaces.cli.common import app, err, opened, out, use_named
from noteseek.interfaces.cli.indexing import print_report, progress_bar, sigterm_interrupts
from noteseek.operations.errors import as_operation_error
from noteseek.operations.params import KEYWORD_ONLY_HELP
from noteseek.sources.registry import DEFAULT_KIND

if TYPE_CHECKING:
    from noteseek.engine import Engine

roots_app = typer.Typer(
    help="The roots of the index: list them, add a folder, remove one with all it indexed.",
    no_args_is_help=True,
)
app.add_typer(roots_app, name="roots")

Json = Annotated[bool, typer.Option("--json", help="Print as JSON.")]
IndexOption = Annotated[
    str | None,
    typer.Option("--index", help="The named index to change (noteseek indexes lists them)."),
]


@roots_app.command("list")
def list_roots(index: IndexOption = None, as_json: Json = False) -> None:
    """The roots of the index, with their kind, folder, files and chunks (as status)."""
    if index is not None:
        use_named(index)
    with opened() as ctx:
        roots = ctx.engine.status()["roots"]
    if as_json:
        out.print_json(json.dumps(roots, ensure_ascii=False))
        return
    if not roots:
        err.print("no roots yet: noteseek roots add FOLDER (or noteseek index FOLDER)")
    for root in roots:
        out.print(
            f"[bold]{escape(root['name'])}[/]  {escape(root['kind'])}  {escape(root['path'])}  "
            f"{root['files']:,} files, {root['chunks']:,} chunks"
        )


@roots_app.command("add")
def add_root(
    path: Annotated[
        str | None,
        typer.Argument(
            help="The folder to add; without it, the folder the kind gives every index "
            "(--kind memory: the index's own memory folder)."
        ),
    ] = None,
    name: Annotated[
        str | None, typer.Option("--name", help="The root's name (default: the folder's).")
    ] = None,
    kind: Annotated[
        str, typer.Option("--kind", help="Where its documents come from: files, memory, ...")
    ] = DEFAULT_KIND,
    keyword_only: Annotated[bool, typer.Option("--keyword-only", help=KEYWORD_ONLY_HELP)] = False,
    index: IndexOption = None,
    as_json: Json = False,
) -> None:
    """Add a folder to the index as a root and index it (then embed its new chunks)."""
    if index is not None:
        use_named(index)
    with (
        sigterm_interrupts(),
        opened() as ctx,
        progress_bar(as_json, "indexing", "files") as progress,
        progress_bar(as_json, "embedding", "chunks") as embed_progress,
    ):
        engine = ctx.engine
        with _writing(engine):
            added = engine.add_root(
                path,
                name=name,
                kind=kind,
                progress=progress,
                keyword_only=keyword_only,
                embed_progress=embed_progress,
            )
            engine.settle_vectors()
        names = record_roots(engine.index_dir, engine.naming_roots())
        data = added.to_dict() | {"named": names, "index_dir": str(engine.index_dir)}
    if not as_json:
        err.print(f"root {escape(repr(added.name))}: {escape(added.path)} ({escape(added.kind)})")
    print_report(data, as_json)


@roots_app.command("remove")
def remove_root(
    name: Annotated[str, typer.Argument(help="The root to remove (noteseek roots list).")],
    index: IndexOption = None,
    as_json: Json = False,
) -> None:
    """Remove a root and everything indexed from it (its folder is left alone).

    Its files, chunks, keyword entries, links, graph edges and the vectors no other chunk uses.
    """
    if index is not None:
        use_named(index)
    with opened(need_index=True) as ctx:
        engine = ctx.engine
        with _writing(engine):
            removed = engine.remove_root(name)
            engine.settle_vectors()
        names = record_roots(engine.index_dir, engine.naming_roots())
    data: dict[str, Any] = removed.to_dict() | {"named": names}
    if as_json:
        out.print_json(json.dumps(data, ensure_ascii=False))
        return
    out.print(
        f"removed root {escape(repr(removed.name))} ({escape(removed.path)}): {removed.files:,} "
        f"files, {removed.chunks:,} chunks and {removed.vectors:,} vectors dropped; the folder "
        "is left as it is"
    )


@contextmanager
def _writing(engine: Engine) -> Iterator[None]:
    """The block as the index's writer (another process holding the role: a conflict), its
    errors as every door gives them (an operation error, then its exit code)."""
    from noteseek.engine.handoff import one_shot_writer

    try:
        with one_shot_writer(engine, "roots"):
            yield
    except Exception as exc:
        found = as_operation_error(exc)
        if found is None:
            raise
        raise found from None
