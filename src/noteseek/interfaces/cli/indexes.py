"""``noteseek use`` and ``noteseek indexes``: named indexes, and which one commands open.

The model is in ``engine/named.py``: a name stands for an index folder (and the roots it
holds), registered by ``noteseek index FOLDER --name NAME``; ``use NAME`` puts it in use, so
every command without a project file opens it until another ``use``.
"""

from __future__ import annotations

import datetime as dt
import json
from typing import Annotated

import typer
from rich.markup import escape

from noteseek.engine.named import NamedIndex, in_use, named_indexes, remove, use
from noteseek.engine.results import NotFound
from noteseek.interfaces.cli.common import EXIT_NOT_FOUND, EXIT_USAGE, app, err, fail, out
from noteseek.operations.search import index_line


@app.command(name="use")
def use_index(
    name: Annotated[str | None, typer.Argument(help="The index to use from now on.")] = None,
    listing: Annotated[
        bool, typer.Option("--list", "-l", help="List the named indexes (the default).")
    ] = False,
    removing: Annotated[
        str | None,
        typer.Option("--remove", help="Forget the name NAME (its index folder stays)."),
    ] = None,
    as_json: Annotated[bool, typer.Option("--json", help="Print as JSON.")] = False,
) -> None:
    """Put a named index in use: commands without a project file open it from now on."""
    if name is not None and (listing or removing is not None):
        raise fail("give a name to use, or --list, or --remove NAME; not both", EXIT_USAGE)
    try:
        if removing is not None:
            gone = remove(removing)
            _say(
                f"forgot {gone.name!r}; its index stays in {gone.folder}"
                + (" (no index is in use by name now)" if gone.in_use else ""),
                gone,
                as_json,
            )
            return
        if name is not None:
            chosen = use(name)
            _say(f"using {chosen.name!r}: {_line(chosen)}", chosen, as_json)
            return
    except NotFound as exc:
        raise fail(str(exc), EXIT_NOT_FOUND) from None
    _list(as_json)


@app.command()
def indexes(
    as_json: Annotated[bool, typer.Option("--json", help="Print as JSON.")] = False,
) -> None:
    """List the named indexes and the one in use (as noteseek use --list)."""
    _list(as_json)


def _list(as_json: bool) -> None:
    found = named_indexes()
    details = [n.details() for n in found]
    if as_json:
        out.print_json(json.dumps(details, ensure_ascii=False))
        return
    if not found:
        err.print("no named indexes yet: noteseek index FOLDER --name NAME registers one")
        return
    for item, info in zip(found, details, strict=True):
        mark = "*" if item.in_use else " "
        gone = "" if item.exists else "  [red](gone)[/]"
        line = index_line({"dir": info["dir"], "roots": sorted(info["roots"])})
        out.print(f"{mark} [bold]{escape(item.name)}[/]  {escape(line)}{gone}")
        if item.exists:
            written = dt.datetime.fromtimestamp(info["last_written"]).strftime("%Y-%m-%d %H:%M")
            model = info["model"] or "keyword only"
            out.print(
                f"    {info['files']:,} files, {info['chunks']:,} chunks, {model}, "
                f"{info['size_bytes'] / 1e6:,.1f} MB, last written {written}"
            )
    if in_use() is None:
        err.print("[dim]none in use: commands open the index used last[/]")


def _line(item: NamedIndex) -> str:
    return index_line({"dir": str(item.folder), "roots": sorted(item.roots)})


def _say(message: str, item: NamedIndex, as_json: bool) -> None:
    if as_json:
        out.print_json(json.dumps(item.to_dict(), ensure_ascii=False))
    else:
        out.print(escape(message))
