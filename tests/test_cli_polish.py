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
