"""Agent hooks: payloads built from the agents' documented schemas, replayed through the real
``noteseek hook`` command in fresh processes (Claude Code's SessionStart, UserPromptSubmit,
Stop, PreCompact and SessionEnd; Gemini CLI's BeforeAgent answered as JSON), the plugin's
files, and a session captured by one process and recalled by the next."""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import pytest

from noteseek.sources.memory.sessions import SessionEntry, recorded_turns, upsert
from tests.helpers import project, write

ROOT = Path(__file__).resolve().parent.parent
PLUGIN = ROOT / "integrations" / "claude-code"
NO_EMBEDDING = "[embedding]\nenabled = false\n"


def hook(
    event: str, payload: dict[str, Any] | str, *args: str, code: int = 0
) -> subprocess.CompletedProcess[str]:
    """``noteseek hook EVENT ARGS`` with ``payload`` on stdin, as an agent runs it."""
    data = payload if isinstance(payload, str) else json.dumps(payload)
    proc = subprocess.run(
        [sys.executable, "-m", "noteseek.interfaces.cli", "hook", event, *args],
        input=data,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert proc.returncode == code, f"exit {proc.returncode}\n{proc.stdout}\n{proc.stderr}"
    return proc


def common(folder: Path, event: str, session: str = "5e1b0c7e-aa01") -> dict[str, Any]:
    """The fields Claude Code sends with every hook event."""
    return {
        "session_id": session,
        "transcript_path": str(folder / "transcripts" / f"{session}.jsonl"),
        "cwd": str(folder),
        "permission_mode": "default",
        "hook_event_name": event,
    }


def transcript(path: Path, turns: list[tuple[str, str]]) -> Path:
    """A Claude Code transcript: a summary line, user and assistant messages, a tool call and
    its result (which are not what a session is remembered by), and a half-written last line."""
    lines: list[dict[str, Any]] = [{"type": "summary", "summary": "earlier", "leafUuid": "x"}]
    for i, (role, text) in enumerate(turns):
        if role == "user":
            lines.append({"type": "user", "message": {"role": "user", "content": text}})
        else:
            content = [
                {"type": "thinking", "thinking": "the user asked about the runner"},
                {"type": "text", "text": text},
                {"type": "tool_use", "id": f"t{i}", "name": "Bash", "input": {"command": "ls"}},
            ]
            lines.append(
                {"type": "assistant", "message": {"role": "assistant", "content": content}}
            )
            result = {
                "type": "tool_result",
                "tool_use_id": f"t{i}",
                "content": "SECRET-TOOL-OUTPUT",
            }
            lines.append({"type": "user", "message": {"role": "user", "content": [result]}})
    body = "".join(json.dumps(line) + "\n" for line in lines)
    write(path, body + '{"type": "user", "mess')
    return path


SESSION_ONE = [
    ("user", "The release build fails on the Windows runner with a path length error."),
    (
        "assistant",
        "The Windows runner hits the 260 character MAX_PATH limit because node_modules "
        "nests deeply; enabling core.longpaths in git fixes the checkout.",
    ),
    ("user", "Set core.longpaths in the release workflow and keep the Windows runner."),
    (
        "assistant",
        "Done: the release workflow runs git config core.longpaths true before checkout. "
        "We keep the Windows runner because the installer is tested there.",
    ),
]


@pytest.fixture
def folder(tmp_path: Path) -> Path:
    notes = tmp_path / "notes"
    write(notes / "readme.md", "# Project\n\nThe installer is built by the release workflow.\n")
    folder = project(tmp_path, {"notes": notes}, NO_EMBEDDING)
    memories = tmp_path / ".memories"
    write(
        memories / "auth-tokens.md",
        "---\ntype: fact\n---\n# Auth tokens\n\nRefresh tokens rotate every 7 days; the access "
        "token lives 15 minutes. Decided with Maria.\n",
    )
    return folder


def test_session_start_indexes_the_memories_and_orients_the_agent(folder: Path) -> None:
    payload = {**common(folder, "SessionStart"), "source": "startup", "model": "claude"}
    out = hook("session-start", payload, "--strict").stdout
    assert "1 memories in" in out and "search_memories" in out
    structured = json.loads(hook("session-start", payload, "--json", "--strict").stdout)
    answer = structured["hookSpecificOutput"]
    assert answer["hookEventName"] == "SessionStart" and "1 memories" in answer["additionalContext"]


def test_a_prompt_gets_the_memories_that_answer_it_and_nothing_else(folder: Path) -> None:
    hook("session-start", common(folder, "SessionStart"), "--strict")
    asked = {**common(folder, "UserPromptSubmit"), "prompt": "how often do refresh tokens rotate?"}
    out = hook("prompt", asked, "--strict").stdout
    assert "auth-tokens.md:" in out and "every 7 days" in out
    line = re.search(r"- (\S+\.md):(\d+): ", out)
    assert line is not None and int(line.group(2)) >= 1  # a path:line the agent can open
    # Chat, or words no memory holds enough of, recall nothing: no noise in every turn.
    for prompt in ("thanks, looks good", "ok do it", "rotate the kubernetes pods"):
        assert hook("prompt", {**asked, "prompt": prompt}, "--strict").stdout == "", prompt
    # Gemini CLI's BeforeAgent: JSON only on stdout, named as its event, {} when nothing.
    gemini = {**asked, "hook_event_name": "BeforeAgent", "timestamp": "2026-11-27T10:00:00Z"}
    answer = json.loads(hook("prompt", gemini, "--json", "--strict").stdout)
    assert answer["hookSpecificOutput"]["hookEventName"] == "BeforeAgent"
    assert "every 7 days" in answer["hookSpecificOutput"]["additionalContext"]
    silent = hook("prompt", {**gemini, "prompt": "thanks"}, "--json", "--strict").stdout
    assert json.loads(silent) == {}


def test_the_prompt_budget_holds(folder: Path) -> None:
    memories = folder / ".memories"
    for i in range(8):
        words = " ".join(f"word{j}" for j in range(120))
        write(memories / f"canary-{i}.md", f"# Canary {i}\n\nThe canary deploy {i} {words}.\n")
    config = folder / ".noteseek.toml"
    config.write_text(config.read_text() + "[hooks]\nprompt_chars = 600\nprompt_results = 3\n")
    asked = {**common(folder, "UserPromptSubmit"), "prompt": "canary deploy status"}
    hook("session-start", common(folder, "SessionStart"), "--strict")
    out = hook("prompt", asked, "--strict").stdout
    assert out.count("\n- ") == 3  # hooks.prompt_results
    assert len(out.rstrip("\n")) <= 600


def test_a_session_is_captured_once_and_recalled_by_the_next(folder: Path) -> None:
    path = transcript(folder / "transcripts" / "s1.jsonl", SESSION_ONE[:2])
    stop = {**common(folder, "Stop", "s1"), "transcript_path": str(path), "stop_hook_active": False}
    hook("stop", stop, "--wait", "--strict")
    log = next((folder / ".memories" / "memory").glob("*.md"))
    first = log.read_text()
    assert first.count("Session `s1`") == 1 and "· 2 turns ·" in first
    assert f"transcript `{path}`" in first and "SECRET-OUTPUT" not in first
    assert "MAX_PATH" in first
    # The Stop hook fires after every answer: the same transcript changes nothing...
    done = hook("stop", stop, "--wait", "--strict").stderr
    assert "captured up to its last turn already" in done and log.read_text() == first
    # ...and a longer one brings the one entry up to date, in place.
    transcript(path, SESSION_ONE)
    hook("pre-compact", {**stop, "hook_event_name": "PreCompact", "trigger": "auto"}, "--wait")
    hook("session-end", {**stop, "hook_event_name": "SessionEnd", "reason": "exit"}, "--wait")
    later = log.read_text()
    assert later.count("Session `s1`") == 1 and "· 4 turns ·" in later
    assert "core.longpaths" in later
    # Session 2, a fresh process: its first prompt gets what session 1 decided.
    asked = {
        **common(folder, "UserPromptSubmit", "s2"),
        "prompt": "why do we keep the windows runner?",
    }
    out = hook("prompt", asked, "--strict").stdout
    assert "installer" in out and f"{log.relative_to(folder / '.memories').as_posix()}:" in out


def test_the_stop_hook_returns_at_once_and_captures_in_its_own_process(folder: Path) -> None:
    path = transcript(folder / "transcripts" / "s3.jsonl", SESSION_ONE)
    stop = {**common(folder, "Stop", "s3"), "transcript_path": str(path)}
    started = time.monotonic()
    assert hook("stop", stop).stdout == ""
    returned = time.monotonic() - started
    from noteseek.config import data_dir

    said = data_dir() / "hooks.log"  # where the capture says what it did
    deadline = time.monotonic() + 90
    logs: list[Path] = []
    while time.monotonic() < deadline:
        logs = list((folder / ".memories" / "memory").glob("*.md"))
        if said.exists() and "hook stop: wrote memory/" in said.read_text():
            break
        time.sleep(0.2)
    assert logs and "Session `s3`" in logs[0].read_text()
    assert "noteseek hook stop: wrote memory/" in said.read_text()
    assert returned < 5  # it did not wait for the summary (which loads a model)


def test_a_hook_never_breaks_the_agent(folder: Path) -> None:
    for bad in ("not json", "[1, 2]"):
        quiet = hook("prompt", bad)
        assert quiet.stdout == "" and quiet.stderr.count("\n") == 1
        assert "noteseek hook prompt:" in quiet.stderr
        hook("prompt", bad, "--strict", code=1)
    missing = {**common(folder, "Stop"), "transcript_path": str(folder / "nope.jsonl")}
    assert "nope.jsonl" in hook("stop", missing, "--wait").stderr
    gone = {**common(folder, "UserPromptSubmit"), "cwd": str(folder / "gone"), "prompt": "x y"}
    assert "is not a folder" in hook("prompt", gone).stderr
    # Past hooks.capture_time_limit it gives up quietly (exit 0; --strict: 1).
    path = transcript(folder / "transcripts" / "s4.jsonl", SESSION_ONE)
    slow = {**common(folder, "Stop", "s4"), "transcript_path": str(path)}
    env = {"NOTESEEK_HOOKS__CAPTURE_TIME_LIMIT": "0.01"}
    proc = subprocess.run(
        [sys.executable, "-m", "noteseek.interfaces.cli", "hook", "stop", "--wait"],
        input=json.dumps(slow),
        capture_output=True,
        text=True,
        timeout=120,
        env={**os.environ, **env},
    )
    assert proc.returncode == 0 and "gave up after 0.01 s" in proc.stderr


def test_session_entries_are_upserted_in_place() -> None:
    entry = SessionEntry("abc", 3, "~/t.jsonl", "Fix auth", "- one", "14:32")
    log = upsert(None, entry, "# 2026-11-27")
    assert log == (
        "# 2026-11-27\n\n## 14:32 Session: Fix auth\n\nSession `abc` · 3 turns · transcript "
        "`~/t.jsonl`\n\n- one\n"
    )
    log = log + "\n## 16:00 other\n\nbye\n"
    grown = upsert(log, SessionEntry("abc", 5, "~/t.jsonl", "Fix auth", "- two", "15:00"), "")
    assert grown is not None and grown.endswith("- two\n\n## 16:00 other\n\nbye\n")
    assert "## 14:32 Session" in grown  # keeps the time it started
    assert recorded_turns(grown, "abc") == 5 and recorded_turns(grown, "other") is None
    # An overlapping capture that read fewer turns does not undo a later one.
    assert (
        upsert(grown, SessionEntry("abc", 4, "~/t.jsonl", "Fix auth", "- x", "15:30"), "") is None
    )


def test_the_claude_code_plugin_runs_noteseek_hooks(folder: Path) -> None:
    manifest = json.loads((PLUGIN / ".claude-plugin" / "plugin.json").read_text())
    assert manifest["name"] == "noteseek"
    # hooks/hooks.json is loaded by convention: naming it in the manifest too made Claude Code
    # refuse the plugin ("Duplicate hooks file detected"; tests/test_claude_code.py).
    assert "hooks" not in manifest
    hooks = json.loads((PLUGIN / "hooks" / "hooks.json").read_text())["hooks"]
    assert set(hooks) == {"SessionStart", "UserPromptSubmit", "Stop", "PreCompact", "SessionEnd"}
    servers = json.loads((PLUGIN / manifest["mcpServers"]).read_text())["mcpServers"]
    finder = "${CLAUDE_PLUGIN_ROOT}/bin/noteseek"  # finds noteseek wherever it was installed
    assert servers["noteseek"] == {"command": finder, "args": ["mcp"]}
    market = json.loads((ROOT / ".claude-plugin" / "marketplace.json").read_text())
    assert (ROOT / market["plugins"][0]["source"]).resolve() == PLUGIN.resolve()
    # Every configured command, run as the agent runs it, with its event's payload.
    transcript(Path(common(folder, "Stop")["transcript_path"]), SESSION_ONE)
    for event, groups in hooks.items():
        for group in groups:
            for entry in group["hooks"]:
                words = entry["command"].split()
                assert words[:2] == [finder, "hook"] and entry["timeout"] <= 60
                payload = {**common(folder, event), "prompt": "refresh tokens rotate"}
                hook(words[2], payload, "--strict")  # --strict: captures in the foreground
    assert (
        "Session `5e1b0c7e-aa01`" in next((folder / ".memories" / "memory").glob("*")).read_text()
    )


def test_the_readme_hook_setup_runs(folder: Path) -> None:
    """The README's .claude/settings.json block: every command in it, run with its event's
    payload, does its job."""
    readme = (ROOT / "README.md").read_text(encoding="utf-8")
    section = readme.split("### Memory without asking: agent hooks", 1)[1].split("\n## ", 1)[0]
    block = re.search(r"```json\n(.*?)```", section, re.S)
    assert block is not None
    hooks = json.loads(block.group(1))["hooks"]
    assert set(hooks) == {"SessionStart", "UserPromptSubmit", "Stop", "PreCompact", "SessionEnd"}
    transcript(Path(common(folder, "Stop")["transcript_path"]), SESSION_ONE)
    outputs = {}
    for event, groups in hooks.items():
        words = groups[0]["hooks"][0]["command"].split()
        assert words[:2] == ["noteseek", "hook"]
        payload = {**common(folder, event), "prompt": "how often do refresh tokens rotate"}
        outputs[event] = hook(words[2], payload, *words[3:], "--strict").stdout
    assert "memories in" in outputs["SessionStart"]
    assert "every 7 days" in outputs["UserPromptSubmit"]
    log = next((folder / ".memories" / "memory").glob("*.md")).read_text()
    assert log.count("Session `5e1b0c7e-aa01`") == 1 and "core.longpaths" in log


# -- through a running server --------------------------------------------------------------------


def hook_with(env: dict[str, str], event: str, payload: dict[str, Any]) -> str:
    proc = subprocess.run(
        [sys.executable, "-m", "noteseek.interfaces.cli", "hook", event, "--strict"],
        input=json.dumps(payload),
        capture_output=True,
        text=True,
        timeout=120,
        env=env,
    )
    assert proc.returncode == 0, f"exit {proc.returncode}\n{proc.stdout}\n{proc.stderr}"
    return proc.stdout


def test_a_prompt_hook_asks_the_projects_running_server(folder: Path, tmp_path: Path) -> None:
    from noteseek import servers
    from tests.test_serve import serve_env, serving

    env = serve_env(tmp_path / "home")
    asked = {**common(folder, "UserPromptSubmit"), "prompt": "how often do refresh tokens rotate?"}
    # The hook's own settings show nothing (no results); the server's show its memories: what
    # comes back proves who answered.
    silent = {**env, "NOTESEEK_HOOKS__PROMPT_RESULTS": "0"}
    assert hook_with(silent, "prompt", asked) == ""
    registry = tmp_path / "home" / "data" / "noteseek" / servers.SERVERS_DIR
    with serving(folder, env=env) as server:
        with server.client() as client:
            server.wait_ready(client)
            direct = client.post("/memories/recall", json={"prompt": asked["prompt"]})
        assert direct.status_code == 200, direct.text
        entries = list(registry.glob("*.json"))
        assert [p.stem for p in entries] == [str(server.proc.pid)]
        assert oct(entries[0].stat().st_mode & 0o777) == "0o600"
        out = hook_with(silent, "prompt", asked)
        assert "auth-tokens.md:" in out and "every 7 days" in out
        assert out.strip() == direct.json()["text"]
        # A prompt from a folder of another project is not sent to this server.
        (tmp_path / "other").mkdir()
        other = project(tmp_path / "other", {"notes": folder / "notes"}, NO_EMBEDDING)
        assert hook_with(env, "prompt", {**asked, "cwd": str(other)}) == ""
    assert not list(registry.glob("*.json"))  # a stopped server removes its entry
    # A server killed before it could: its entry is dropped, the hook answers by itself.
    with serving(folder, env=env) as server:
        with server.client() as client:
            server.wait_ready(client)
        server.proc.kill()
        server.proc.wait(10)
        assert list(registry.glob("*.json"))
        assert "every 7 days" in hook_with(env, "prompt", asked)
        assert not list(registry.glob("*.json"))


def test_a_prompt_hook_sends_a_token_servers_token(folder: Path, tmp_path: Path) -> None:
    """A server that requires an API token registers it (in its user-only file), and the hook
    sends it: the answer comes from the server, which refuses the route without it."""
    from noteseek import servers
    from tests.test_serve import serve_env, serving

    token = "hook-token-of-a-decent-length"
    env = serve_env(tmp_path / "home", NOTESEEK_SERVE__TOKEN=token)
    asked = {**common(folder, "UserPromptSubmit"), "prompt": "how often do refresh tokens rotate?"}
    silent = {**env, "NOTESEEK_HOOKS__PROMPT_RESULTS": "0"}
    registry = tmp_path / "home" / "data" / "noteseek" / servers.SERVERS_DIR
    with serving(folder, env=env) as server:
        bearer = {"Authorization": f"Bearer {token}"}
        with server.client(headers=bearer) as client:
            server.wait_ready(client)
        with server.client() as anonymous:
            refused = anonymous.post("/memories/recall", json={"prompt": asked["prompt"]})
        assert refused.status_code == 401
        (entry,) = registry.glob("*.json")
        assert oct(entry.stat().st_mode & 0o777) == "0o600"
        out = hook_with(silent, "prompt", asked)
        assert "auth-tokens.md:" in out and "every 7 days" in out
        # A wrong token in the entry: the server refuses, the hook answers by itself (nothing,
        # with these settings), one line on stderr at most, exit 0.
        entry.write_text(entry.read_text().replace(token, "not-the-token-at-all-really"))
        assert hook_with(silent, "prompt", asked) == ""


def test_a_prompt_hook_asks_the_projects_mcp_server(folder: Path, tmp_path: Path) -> None:
    """``noteseek mcp`` talks over stdio, so it listens for the project's hooks on a loopback
    port of its own (with a token of its own) once its index is open; the hook's answer comes
    from it, and the route refuses a request without that token."""
    import anyio
    import httpx

    from noteseek import servers
    from tests.mcp_client import call, eventually, session
    from tests.test_serve import serve_env

    env = serve_env(tmp_path / "home")
    asked = {**common(folder, "UserPromptSubmit"), "prompt": "how often do refresh tokens rotate?"}
    silent = {**env, "NOTESEEK_HOOKS__PROMPT_RESULTS": "0"}
    registry = tmp_path / "home" / "data" / "noteseek" / servers.SERVERS_DIR

    async def main() -> None:
        async with session(folder, env=env) as client:

            async def ready() -> bool:  # the first reconcile done: the memories indexed
                return bool((await call(client, "index_status"))["status"] == "ready")

            await eventually(ready, timeout=60)

            async def listening() -> bool:
                return bool(list(registry.glob("*.json")))

            await eventually(listening, timeout=30)
            (entry,) = registry.glob("*.json")
            assert oct(entry.stat().st_mode & 0o777) == "0o600"
            registered = json.loads(entry.read_text())
            url, token = registered["url"], registered["token"]
            assert url.startswith("http://127.0.0.1:") and len(token) >= 32
            async with httpx.AsyncClient(timeout=60) as http:
                # Asked directly first, with the registered token: the answer the hook must
                # pass on (and the server's first recall, which loads what a search needs,
                # is not timed by the hook's 2 s wait).
                direct = await http.post(
                    url + servers.RECALL_ROUTE,
                    json={"prompt": asked["prompt"]},
                    headers={"Authorization": f"Bearer {token}"},
                )
                assert direct.status_code == 200, direct.text
            out = await anyio.to_thread.run_sync(hook_with, silent, "prompt", asked)
            assert "auth-tokens.md:" in out and "every 7 days" in out
            assert out.strip() == direct.json()["text"]
            async with httpx.AsyncClient() as http:
                refused = await http.post(url + servers.RECALL_ROUTE, json={"prompt": "x y"})
                assert refused.status_code == 401
                other = await http.get(url + "/status")
                assert other.status_code in (404, 405)
        assert not list(registry.glob("*.json"))  # gone with the server

    anyio.run(main)


def test_the_recall_route_validates_its_prompt(folder: Path, tmp_path: Path) -> None:
    from noteseek.servers import PROMPT_CHARS
    from tests.test_serve import serve_env, serving

    with serving(folder, env=serve_env(tmp_path / "home")) as server, server.client() as client:
        server.wait_ready(client)
        for body in ({}, {"prompt": 5}, {"prompt": "x" * (PROMPT_CHARS + 1)}):
            answer = client.post("/memories/recall", json=body)
            assert answer.status_code == 400, (body, answer.text)
            assert "prompt" in answer.json()["error"]
        assert client.post("/memories/recall", json={"prompt": "thanks"}).json() == {"text": ""}


FINDER = PLUGIN / "bin" / "noteseek"


def _finder(args: list[str], env: dict[str, str]) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [str(FINDER), *args], env=env, capture_output=True, text=True, timeout=60, check=False
    )


def test_the_plugin_finds_noteseek_in_the_user_bin_folder(tmp_path: Path) -> None:
    """Hooks run with a minimal PATH: a noteseek that uv or pipx put in ~/.local/bin is
    found there."""
    home = tmp_path / "home"
    (home / ".local" / "bin").mkdir(parents=True)
    installed = Path(sys.executable).parent / "noteseek"
    (home / ".local" / "bin" / "noteseek").symlink_to(installed)
    done = _finder(["--version"], {"HOME": str(home), "PATH": "/usr/bin:/bin"})
    assert done.returncode == 0, done.stderr
    assert done.stdout.startswith("noteseek ")


def test_without_noteseek_a_hook_says_what_to_install_and_exits_0(tmp_path: Path) -> None:
    env = {"HOME": str(tmp_path), "PATH": "/usr/bin:/bin"}
    hook = _finder(["hook", "prompt"], env)
    assert hook.returncode == 0 and hook.stdout == ""
    assert hook.stderr.count("\n") == 1 and "uv tool install noteseek" in hook.stderr
    server = _finder(["mcp"], env)
    assert server.returncode == 1 and "pipx install noteseek" in server.stderr


def test_a_full_daily_log_runs_on_in_a_continuation(tmp_path: Path) -> None:
    """Issue 44 R16: once the day's log reached the limit per file (4 x memory.max_bytes,
    1 MiB by default), every capture that day failed and appends were refused. The log now
    runs on in ``memory/YYYY-MM-DD-2.md``, a daily log too."""
    import datetime as dt

    from tests.helpers import run_cli

    notes = tmp_path / "notes"
    write(notes / "readme.md", "# Project\n\nThe installer is built by the release workflow.\n")
    folder = project(tmp_path, {"notes": notes}, NO_EMBEDDING + "[memory]\nmax_bytes = 1024\n")
    daily = tmp_path / ".memories" / "memory"
    today = dt.date.today().isoformat()
    entries = "".join(
        f"\n## 09:{i:02d} Note {i}\n\nRoutine note number {i} about the build queue.\n"
        for i in range(70)
    )
    full = write(daily / f"{today}.md", f"# {today}\n{entries}"[:4069] + "\n")
    before = full.read_text()
    assert len(before.encode()) == 4070

    added = run_cli(["memory", "append", "The zebra crossing sensor was replaced."], folder)
    assert "memory/" in added.stdout + added.stderr
    assert full.read_text() == before  # the full file is left as it is
    more = daily / f"{today}-2.md"
    assert "zebra crossing sensor" in more.read_text()
    again = run_cli(["memory", "append", "The zebra crossing sensor was replaced."], folder)
    assert "already has this entry" in again.stdout + again.stderr
    assert more.read_text().count("zebra crossing") == 1
    found = run_cli(["memory", "search", "zebra crossing sensor", "--json"], folder)
    assert f"memory/{today}-2" in found.stdout  # recognised and indexed as a daily log

    path = transcript(folder / "transcripts" / "s1.jsonl", SESSION_ONE[:2])
    stop = {**common(folder, "Stop", "s1"), "transcript_path": str(path), "stop_hook_active": False}
    hook("stop", stop, "--wait", "--strict")
    assert "Session `s1`" in more.read_text() and full.read_text() == before
    transcript(path, SESSION_ONE)
    hook("session-end", {**stop, "hook_event_name": "SessionEnd", "reason": "exit"}, "--wait")
    logs = "".join(p.read_text() for p in sorted(daily.glob("*.md")))
    assert logs.count("Session `s1`") == 1 and "· 4 turns ·" in logs
