"""The command line as a person meets it: --version, shell completion, and help that shows
flags as flags (no ``<bool>`` beside an option that takes no value)."""

from __future__ import annotations

from importlib.metadata import version
from pathlib import Path

import pytest

from tests.helpers import run_cli

# Commands whose help lists boolean flags (and one group), plus the top level.
COMMANDS = [
    [],
    ["index"],
    ["rebuild"],
    ["search"],
    ["status"],
    ["get"],
    ["serve"],
    ["mcp"],
    ["watch"],
    ["eval"],
    ["memory", "search"],
    ["config", "show"],
]


def test_version_is_the_package_version(tmp_path: Path) -> None:
    proc = run_cli(["--version"], tmp_path)
    assert proc.stdout.strip() == f"noteseek {version('noteseek')}"


@pytest.mark.parametrize("command", COMMANDS, ids=lambda c: " ".join(c) or "noteseek")
def test_help_shows_flags_as_flags(tmp_path: Path, command: list[str]) -> None:
    text = run_cli([*command, "--help"], tmp_path, {"COLUMNS": "200"}).stdout
    assert "<bool>" not in text
    assert "--help" in text and "Show this message and exit." in text
    # Options that take a value still say what kind.
    if command == ["search"]:
        assert "--json" in text and "<int>" in text
    if not command:
        assert "--version" in text
        assert "--install-completion" in text and "--show-completion" in text


def test_shell_completion_script_and_answers(tmp_path: Path) -> None:
    # Shell detection turned off (typer's switch for tests): the shell is given by name.
    script = run_cli(
        ["--show-completion", "bash"],
        tmp_path,
        {"_TYPER_COMPLETE_TEST_DISABLE_SHELL_DETECTION": "1"},
    ).stdout
    assert "complete -o default -F _noteseek_completion noteseek" in script
    # What the installed script asks when the user presses Tab (also when run as python -m).
    ask = {"_NOTESEEK_COMPLETE": "complete_bash", "COMP_CWORD": "1"}
    commands = run_cli([], tmp_path, {**ask, "COMP_WORDS": "noteseek sea"}).stdout
    assert commands.split() == ["search"]
    flags = run_cli(
        [], tmp_path, {**ask, "COMP_WORDS": "noteseek index --keyw", "COMP_CWORD": "2"}
    ).stdout
    assert flags.split() == ["--keyword-only"]


def _commands() -> list[list[str]]:
    from typing import Any

    import typer.main

    from noteseek.interfaces.cli import app

    found: list[list[str]] = []

    def walk(command: Any, prefix: list[str]) -> None:
        found.append(prefix)
        if hasattr(command, "commands"):  # a group (typer vendors its own click)
            for name, sub in command.commands.items():
                walk(sub, [*prefix, name])

    walk(typer.main.get_command(app), [])
    return found


def test_every_commands_help_shows_flags_as_flags() -> None:
    """All commands, in-process: no ``<bool>``, and no ``--no-X`` beside a flag that is off
    by default (``--force --no-force [default: no-force]`` says nothing)."""
    from typer.testing import CliRunner

    from noteseek.interfaces.cli import app

    commands = _commands()
    assert ["use"] in commands and ["indexes"] in commands and ["memory", "search"] in commands
    runner = CliRunner()
    for command in commands:
        text = runner.invoke(app, [*command, "--help"], env={"COLUMNS": "200"}).output
        assert "Show this message and exit." in text, command
        assert "<bool>" not in text, command
        assert "[default: no-" not in text, (command, text)


def test_progress_log_lines_state_rate_and_time_left(capsys: pytest.CaptureFixture[str]) -> None:
    from noteseek.interfaces.cli.indexing import progress_bar, rate_note

    assert rate_note((0.0, 0), 10.0, 300, 1200, "chunks") == ", 30.0 chunks/s, 0:30 left"
    assert rate_note((0.0, 0), 0.1, 3, 1200, "chunks") == ""
    with progress_bar(False, "embedding", "chunks") as update:
        update(0, 100, "")
        update(100, 100, "")
    logged = capsys.readouterr().err
    assert "embedding: 100/100 chunks" in logged
