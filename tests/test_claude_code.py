"""The Claude Code plugin in the real Claude Code CLI (from npm), as a user installs it.

The CLI is installed with npm into ``.cache/claude-code`` (kept between runs) and run with a
scratch config folder and home, so nothing of the machine's own Claude Code is read or
changed. Its model is :mod:`tests.fake_anthropic`, a stand-in for Anthropic's Messages API on
loopback (no model can run here), or no model at all: the hooks must work either way.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import time
from pathlib import Path

import pytest

from tests.fake_anthropic import REPLY, stand_in_model
from tests.helpers import write

REPO = Path(__file__).resolve().parent.parent
CLI_HOME = REPO / ".cache" / "claude-code"
CLI = CLI_HOME / "node_modules" / ".bin" / "claude"
PACKAGE = "@anthropic-ai/claude-code@2"


@pytest.fixture(scope="module")
def claude() -> Path:
    """The Claude Code CLI, installed from npm on first use."""
    if not CLI.exists():
        npm = shutil.which("npm")
        if npm is None:
            pytest.skip("npm is not installed: the Claude Code CLI comes from npm")
        CLI_HOME.mkdir(parents=True, exist_ok=True)
        done = subprocess.run(
            [npm, "install", "--prefix", str(CLI_HOME), "--no-audit", "--no-fund", PACKAGE],
            capture_output=True,
            text=True,
            timeout=600,
            check=False,
        )
        assert done.returncode == 0, f"npm install {PACKAGE} failed: {done.stderr[-2000:]}"
    return CLI


class Claude:
    """The CLI with a scratch config folder and home. noteseek is where ``uv tool install``
    puts it (``~/.local/bin``), not on PATH: the plugin must find it (hooks run with a
    minimal environment)."""

    def __init__(self, binary: Path, tmp: Path) -> None:
        self.binary = binary
        self.home = tmp / "home"
        (self.home / ".local" / "bin").mkdir(parents=True)
        (self.home / ".local" / "bin" / "noteseek").symlink_to(
            Path(sys.executable).parent / "noteseek"
        )
        node = shutil.which("node")
        bin_dir = str(Path(node).parent) if node else "/usr/bin"
        keep = {k: v for k, v in os.environ.items() if not k.startswith(("NOTESEEK_", "XDG_"))}
        keep = {k: v for k, v in keep.items() if not k.startswith(("ANTHROPIC_", "CLAUDE"))}
        self.env = {
            **keep,
            "HOME": str(self.home),
            "CLAUDE_CONFIG_DIR": str(tmp / "claude-config"),
            "PATH": bin_dir + os.pathsep + os.environ.get("PATH", ""),
            "ANTHROPIC_API_KEY": "sk-stand-in",
            "CLAUDE_CODE_MAX_RETRIES": "0",
            "CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC": "1",
            "DISABLE_AUTOUPDATER": "1",
        }

    def run(
        self, *args: str, cwd: Path | None = None, env: dict[str, str] | None = None
    ) -> subprocess.CompletedProcess[str]:
        return subprocess.run(
            [str(self.binary), *args],
            cwd=cwd,
            env={**self.env, **(env or {})},
            capture_output=True,
            text=True,
            timeout=180,
            check=False,
        )

    def ok(self, *args: str, cwd: Path | None = None) -> str:
        done = self.run(*args, cwd=cwd)
        assert done.returncode == 0, f"claude {' '.join(args)}: {done.stdout}{done.stderr}"
        return done.stdout

    @property
    def hooks_log(self) -> Path:
        """noteseek's hook log (its data folder under the scratch home)."""
        return self.home / ".local" / "share" / "noteseek" / "hooks.log"


def _until(check, timeout: float = 60.0) -> None:  # type: ignore[no-untyped-def]
    started = time.monotonic()
    while not check():
        assert time.monotonic() - started < timeout, "not within the time allowed"
        time.sleep(0.2)


def test_the_plugin_loads_recalls_memory_and_captures_sessions(
    claude: Path, tmp_path: Path
) -> None:
    cli = Claude(claude, tmp_path)
    assert "Validation passed" in cli.ok(
        "plugin", "validate", str(REPO / "integrations" / "claude-code")
    )
    assert "Validation passed" in cli.ok("plugin", "validate", str(REPO))
    cli.ok("plugin", "marketplace", "add", str(REPO))
    cli.ok("plugin", "install", "noteseek@noteseek")
    listed = cli.ok("plugin", "list")
    assert "noteseek@noteseek" in listed and "enabled" in listed, listed
    assert "failed" not in listed, listed
    (plugin,) = json.loads(cli.ok("plugin", "list", "--json"))
    assert plugin["id"] == "noteseek@noteseek" and plugin["enabled"] is True

    project = tmp_path / "project"
    write(project / "notes" / "ops.md", "# Operations\n\nBackups run nightly at 02:00.\n")
    write(
        project / ".noteseek.toml",
        '[roots.notes]\npath = "notes"\n\n[embedding]\nenabled = false\n',
    )
    subprocess.run(["git", "init", "-q", str(project)], check=True)
    noteseek = [str(cli.home / ".local" / "bin" / "noteseek")]
    remembered = "The staging deploy key rotates every Monday at 09:00."
    subprocess.run(
        [*noteseek, "memory", "add", "deploy-keys", remembered],
        cwd=project,
        env=cli.env,
        check=True,
        capture_output=True,
    )

    # The plugin's MCP entry connects (noteseek is found on PATH).
    servers = cli.ok("mcp", "list", cwd=project)
    assert "plugin:noteseek:noteseek" in servers and "Connected" in servers, servers

    # A session: SessionStart orients the agent, the prompt hook recalls the memory into the
    # model's request, and Stop captures the session into today's daily log.
    with stand_in_model() as model:
        done = cli.run(
            "-p",
            "When does the staging deploy key rotate?",
            cwd=project,
            env={"ANTHROPIC_BASE_URL": model.url},
        )
        assert done.returncode == 0, done.stdout + done.stderr
        assert REPLY in done.stdout
        sent = json.dumps(model.messages())
    assert "SessionStart:startup hook success: noteseek" in sent
    assert "rotates every Monday at 09:00" in sent  # recalled with the prompt

    def captured() -> bool:  # in a process of the hook's own, so not at once
        logs = sorted((project / ".memories" / "memory").glob("*.md"))
        text = logs[-1].read_text(encoding="utf-8") if logs else ""
        return "Session: When does the staging deploy key rotate?" in text and REPLY in text

    _until(captured)
    _until(
        lambda: (
            cli.hooks_log.exists()
            and "noteseek hook stop: wrote memory/" in cli.hooks_log.read_text()
        )
    )

    # No model reachable: the session fails, the hooks still run and end with status 0.
    debug = tmp_path / "debug.txt"
    done = cli.run(
        "-p",
        "anything",
        "--debug-file",
        str(debug),
        cwd=project,
        env={"ANTHROPIC_BASE_URL": "http://127.0.0.1:9"},
    )
    assert done.returncode != 0
    trace = debug.read_text(encoding="utf-8")
    assert "Registered 5 hooks from 1 plugins" in trace
    assert "Hook SessionStart:startup (SessionStart) success" in trace
    assert "/bin/noteseek hook session-end] completed with status 0" in trace
