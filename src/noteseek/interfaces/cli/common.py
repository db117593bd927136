"""What every command shares: the app, the consoles, the exit codes, running an operation.

Exit codes: 0 success (files skipped for bad input are reported, not failures); 1 nothing found
(search without results, an unknown chunk, path or line, or a path in several roots); 2 usage
or configuration error (bad option, bad query, bad filter, invalid config); 3 no index or
nothing to index yet; 4 another process is the writer of the index (ask it, or stop it); 130
interrupted (Ctrl-C; the index stays consistent and the next run resumes).
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import TYPE_CHECKING, Any

import typer
from rich.console import Console
from rich.markup import escape
from typer.core import TyperOption

from noteseek.config import ConfigError
from noteseek.interfaces.cli.version import package_version
from noteseek.operations import NO_LIMITS, Context, ErrorKind, OperationError, execute, parse

if TYPE_CHECKING:  # imported where used, so `noteseek mcp` starts without them
    from noteseek.engine import Engine

EXIT_OK, EXIT_NOT_FOUND, EXIT_USAGE, EXIT_NO_INDEX, EXIT_CONFLICT, EXIT_INTERRUPTED = (
    0,
    1,
    2,
    3,
    4,
    130,
)
EXIT_CODE: dict[ErrorKind, int] = {
    "invalid": EXIT_USAGE,
    "not_found": EXIT_NOT_FOUND,
    "ambiguous": EXIT_NOT_FOUND,
    "conflict": EXIT_CONFLICT,
    "unavailable": EXIT_NO_INDEX,
}
"""Each kind of operation error, once, as an exit code."""

app = typer.Typer(
    name="noteseek",
    help="Local-first search over Markdown notes, docs and agent memory.",
    no_args_is_help=True,
    add_completion=True,  # --install-completion / --show-completion for bash, zsh, fish, pwsh
    rich_markup_mode="rich",
    pretty_exceptions_enable=False,
)
config_app = typer.Typer(help="Inspect the resolved configuration.", no_args_is_help=True)
app.add_typer(config_app, name="config")

# User text (titles, paths, snippets, reasons) is printed as written: never highlighted, never
# read as emoji codes (root:x:0:0 showed a red cross), and escaped wherever it meets markup.
out = Console(highlight=False, soft_wrap=True, emoji=False)
err = Console(stderr=True, highlight=False, soft_wrap=True, emoji=False)  # paths stay whole

NO_INDEX = "no index yet: run `noteseek index <folder>` (or `noteseek init`)"


class State:
    config_file: Path | None = None
    flags: dict[str, Any] = {}  # noqa: RUF012 - one CLI invocation per process
    named: str | None = None
    """``--index NAME``: the named index every command of this process opens."""


def _print_version(asked: bool) -> None:
    if asked:
        out.print(f"noteseek {package_version()}")
        raise typer.Exit()


def _flag_type(self: TyperOption, ctx: Any) -> str | None:
    """No type column for flags: typer shows every option's type, and ``<bool>`` beside a
    flag that takes no value reads as if it wanted one (``--json <bool>``)."""
    if self.is_flag:
        return None
    return _option_type(self, ctx)


_option_type = TyperOption.display_type_rich
TyperOption.display_type_rich = _flag_type  # type: ignore[method-assign]


@app.callback()
def _main(
    config: Path | None = typer.Option(None, "--config", "-c", help="Project config file to use."),
    index_dir: Path | None = typer.Option(
        None, "--index-dir", help="Index folder (overrides index.dir)."
    ),
    index: str | None = typer.Option(
        None, "--index", help="A named index (noteseek indexes lists them) instead of this one."
    ),
    version: bool = typer.Option(
        False,
        "--version",
        help="Print noteseek's version and exit.",
        callback=_print_version,
        is_eager=True,
    ),
) -> None:
    State.config_file = config
    State.flags = {"index.dir": str(index_dir)} if index_dir else {}
    State.named = None
    if index is not None:
        if index_dir is not None:
            raise fail("give --index NAME or --index-dir DIR, not both", EXIT_USAGE)
        use_named(index)


def use_named(name: str) -> None:
    """Open the index registered as ``name`` (``noteseek index FOLDER --name NAME``) with its
    own roots and settings, whatever folder the command runs in (``engine/opening.py``)."""
    from noteseek.engine.named import named
    from noteseek.engine.results import NotFound

    try:
        named(name)  # an unknown or gone name is a usage error before anything opens
    except NotFound as exc:
        raise fail(str(exc), EXIT_USAGE) from None
    State.named = name


def open_state_engine(roots: list[str] | None = None) -> Engine:
    """The engine of this command's options: the named index, or the one found from here.

    Raises ConfigError with the problem.
    """
    from noteseek.engine import open_engine

    return open_engine(
        Path.cwd(), State.config_file, State.flags, roots=roots or [], name=State.named
    )


def fail(message: str, code: int) -> typer.Exit:
    err.print(f"[bold red]error:[/] {escape(message)}")
    return typer.Exit(code)


@contextmanager
def opened(roots: list[str] | None = None, *, need_index: bool = False) -> Iterator[Context]:
    """The index for one command, with every error turned into a message and an exit code."""
    try:
        engine = open_state_engine(roots)
    except ConfigError as exc:
        raise fail(str(exc), EXIT_USAGE) from None
    try:
        if need_index and not engine.index_exists:
            raise fail(NO_INDEX, EXIT_NO_INDEX)
        yield Context(engine, None, NO_LIMITS)
    except OperationError as exc:
        raise fail(str(exc), EXIT_CODE[exc.kind]) from None
    except ValueError as exc:  # ConfigError and the engine's precise messages for bad values
        raise fail(str(exc), EXIT_USAGE) from None
    except KeyboardInterrupt:
        err.print("interrupted: the index is consistent; run the command again to finish")
        raise typer.Exit(EXIT_INTERRUPTED) from None
    finally:
        for notice in engine.notices:
            err.print(f"[yellow]note:[/] {escape(notice)}")
        engine.close()


def call(ctx: Context, name: str, arguments: dict[str, Any], **options: Any) -> dict[str, Any]:
    """Run an operation as every door does: the same validation, the same errors.

    Options left unset (None) take the operation's defaults, which come from the settings.
    """
    given = {k: v for k, v in arguments.items() if v is not None}
    cleaned = {k: _from_argv(v) for k, v in given.items()}
    if cleaned != given:
        err.print(
            "[yellow]note:[/] the arguments held bytes that are not UTF-8; each was read as "
            "U+FFFD (\ufffd)",
            markup=True,
        )
    op, params = parse(name, cleaned)
    return execute(op, ctx, params, **options)


def _from_argv(value: Any) -> Any:
    """Python decodes command-line bytes that are not UTF-8 into lone surrogates, which no
    door accepts as text; a person who typed them means to search anyway (U+FFFD each)."""
    if isinstance(value, str):
        return _text(value)
    if isinstance(value, list):
        return [_text(v) if isinstance(v, str) else v for v in value]
    return value


def _text(value: str) -> str:
    if value.isascii():  # most arguments: the analyzer (regexes, the stemmer) stays unloaded
        return value
    from noteseek.analysis import unicode_text

    return unicode_text(value)
