"""Fast starts: each command loads what it uses and nothing else.

No timings here (bench/starts.py measures them); what is checked is which modules a command
leaves unloaded, since each heavy one costs tens of milliseconds on every start:
``--version`` loads neither typer nor rich nor pydantic, and ``status``, ``get`` and
``links`` load neither numpy, nor the parsers, nor the query pipeline, nor the indexer.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from noteseek.config import PROJECT_FILE
from noteseek.interfaces import cli
from tests.helpers import project, run_cli, write

HEAVY = (
    "numpy",
    "onnxruntime",
    "tokenizers",
    "usearch",
    "networkx",
    "markdown_it",
    "yaml",
    "filelock",
    "Stemmer",
    "noteseek.analysis",
    "watchfiles",
    "httpx",
    "mcp",
    "fastapi",
    "noteseek.search.pipeline",
    "noteseek.indexing.indexer",
    "noteseek.engine.searching",
    "noteseek.engine.memory",
    "noteseek.store.ann",
    "noteseek.interfaces.cli.evaluate",
    "noteseek.interfaces.cli.serving",
    "noteseek.interfaces.cli.indexing",
    "noteseek.operations.memory_table",
    "noteseek.operations.memory_params",
)
"""What a light command (status, get, links) never imports."""

_RUN = """
import json, sys
sys.argv = ["noteseek", *json.loads(sys.argv[1])]
from noteseek.interfaces.cli import main
try:
    main()
except SystemExit as exc:
    assert not exc.code, exc.code
sys.stdout.flush()
print("\\n" + json.dumps(sorted(sys.modules)), file=sys.stderr)
"""


def loaded_by(args: list[str], cwd: Path, env: dict[str, str] | None = None) -> set[str]:
    """The modules loaded after ``noteseek ARGS`` ran in a fresh interpreter."""
    proc = subprocess.run(
        [sys.executable, "-c", _RUN, json.dumps(args)],
        cwd=cwd,
        env=env,
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert proc.returncode == 0, proc.stderr
    return set(json.loads(proc.stderr.strip().splitlines()[-1]))


def test_version_loads_no_cli_framework(tmp_path: Path) -> None:
    loaded = loaded_by(["--version"], tmp_path)
    for name in ("typer", "rich", "pydantic", "numpy", "noteseek.config", "noteseek.engine"):
        assert name not in loaded, name


@pytest.fixture(scope="module")
def vault(tmp_path_factory: pytest.TempPathFactory) -> Path:
    tmp = tmp_path_factory.mktemp("starts")
    write(tmp / "notes" / "hub.md", "# Hub\n\nSee [[Cache]] and [the guide](guide.md).\n")
    write(tmp / "notes" / "Cache.md", "---\ntags: [perf]\n---\n# Cache\n\nBack to [[hub]].\n")
    write(tmp / "notes" / "guide.md", "# Guide\n\n```sh\nnoteseek index\n```\n")
    folder = project(tmp, {"notes": tmp / "notes"})
    run_cli(["index", "--keyword-only"], folder)
    return folder


@pytest.mark.parametrize(
    "args", [["status"], ["get", "notes/hub.md"], ["links", "notes/hub.md"], ["status", "--json"]]
)
def test_light_commands_load_no_heavy_module(vault: Path, args: list[str]) -> None:
    loaded = loaded_by(args, vault)
    assert "noteseek.engine" in loaded  # the command ran against the index
    assert [name for name in HEAVY if name in loaded] == []


def test_settings_files_are_read_without_pydantic_settings(vault: Path) -> None:
    """The project file is read with tomllib; pydantic-settings (25 ms) parses NOTESEEK_*
    variables and is imported only when one is set (the test session sets some)."""
    quiet = {k: v for k, v in os.environ.items() if not k.upper().startswith("NOTESEEK_")}
    assert (vault / PROJECT_FILE).is_file()
    assert "pydantic_settings" not in loaded_by(["status"], vault, quiet)
    assert "pydantic_settings" in loaded_by(["status"], vault)  # the session's variables


def test_a_keyword_search_loads_no_embedding_model(vault: Path) -> None:
    loaded = loaded_by(["search", "cache"], vault)
    assert "noteseek.search.pipeline" in loaded
    for name in (
        "onnxruntime",
        "tokenizers",
        "noteseek.interfaces.cli.serving",
        "mcp",
        "noteseek.operations.memory_table",  # the memory operations load when one is called
    ):
        assert name not in loaded, name


def test_the_light_commands_print_as_before(vault: Path) -> None:
    """The same output as with every command registered (the app ``--help`` shows)."""
    links = run_cli(["links", "notes/hub.md"], vault).stdout
    assert "notes/Cache.md" in links and "linked from (1):" in links
    assert run_cli(["get", "notes/guide.md"], vault).stdout.startswith("# Guide")


def test_every_command_is_mapped_to_the_module_that_registers_it() -> None:
    app = cli._app()
    registered: dict[str, str] = {}
    for command in app.registered_commands:
        name = command.name or command.callback.__name__.replace("_", "-")
        registered[name] = command.callback.__module__
    for group in app.registered_groups:
        callbacks = [c.callback for c in group.typer_instance.registered_commands]
        registered[str(group.name)] = callbacks[0].__module__
    assert set(registered) == set(cli.COMMANDS)
    for name, module in registered.items():
        assert module == f"noteseek.interfaces.cli.{cli.COMMANDS[name]}", name
    assert sorted(set(cli.COMMANDS.values())) == sorted(cli.MODULES)


@pytest.mark.parametrize(
    ("argv", "module"),
    [
        (["status"], "reading"),
        (["--index-dir", "x", "links", "a.md"], "reading"),
        (["--config=c.toml", "search", "q"], "searching"),
        (["-c", "c.toml", "memory", "add"], "memory"),
        (["--index", "work", "config", "show"], "reading"),
        (["--help"], None),
        (["search", "--help"], "searching"),
        ([], None),
        (["no-such-command"], None),
        (["--version", "status"], None),
    ],
)
def test_which_module_a_command_line_loads(argv: list[str], module: str | None) -> None:
    assert cli.command_module(argv) == module


_RUN_WITH_TEARDOWN = """
import atexit, json, sys
atexit.register(lambda: print("torn down", file=sys.stderr))
sys.argv = ["noteseek", *json.loads(sys.argv[1])]
from noteseek.interfaces.cli import run
run()
"""


def exit_of(
    args: list[str], cwd: Path, env: dict[str, str] | None = None
) -> subprocess.CompletedProcess[str]:
    """``noteseek ARGS`` through the installed command's entry point, with an exit handler
    that says whether the interpreter was torn down."""
    return subprocess.run(
        [sys.executable, "-c", _RUN_WITH_TEARDOWN, json.dumps(args)],
        cwd=cwd,
        env={**os.environ, **(env or {})},
        capture_output=True,
        text=True,
        timeout=300,
    )


@pytest.mark.parametrize(
    ("args", "code", "out"),
    [
        (["status"], 0, "notes"),
        (["get", "notes/guide.md"], 0, "# Guide"),
        (["search", "cache", "--json"], 0, "Cache.md"),
        (["search", "qqxzvv"], 1, ""),
        (["get", "notes/missing.md"], 1, ""),
    ],
)
def test_a_reading_command_ends_without_tearing_the_interpreter_down(
    vault: Path, args: list[str], code: int, out: str
) -> None:
    """Its output is whole and its exit code the same; the exit handlers do not run."""
    proc = exit_of(args, vault)
    assert proc.returncode == code, proc.stderr
    assert out in proc.stdout
    if "--json" in args:
        assert json.loads(proc.stdout)["status"] == "ready"  # the whole document came out
    assert "torn down" not in proc.stderr


def test_a_writing_command_exits_as_usual(vault: Path) -> None:
    proc = exit_of(["index", "--keyword-only"], vault)
    assert proc.returncode == 0, proc.stderr
    assert "torn down" in proc.stderr


def test_the_installed_command_is_the_quick_exit_entry_point() -> None:
    text = (Path(__file__).resolve().parent.parent / "pyproject.toml").read_text("utf-8")
    assert 'noteseek = "noteseek.interfaces.cli:run"' in text


def test_a_hybrid_search_ends_without_the_teardown_too(tmp_path: Path) -> None:
    """The query is embedded on a daemon thread beside the keyword lane: no worker of a pool
    is left for the exit to join."""
    write(tmp_path / "notes" / "cache.md", "# Cache\n\nEntries expire after a time to live.\n")
    write(tmp_path / "notes" / "queue.md", "# Queue\n\nJobs wait in line for a worker.\n")
    folder = project(tmp_path, {"notes": tmp_path / "notes"})
    on = {"NOTESEEK_EMBEDDING__ENABLED": "true"}
    run_cli(["index"], folder, on)
    proc = exit_of(["search", "how long do cached entries last", "--json"], folder, on)
    assert proc.returncode == 0, proc.stderr
    found = json.loads(proc.stdout)
    assert found["mode"] == "hybrid" and found["lanes"]["semantic"] >= 1
    assert found["results"][0]["path"] == "cache.md"
    assert "torn down" not in proc.stderr
