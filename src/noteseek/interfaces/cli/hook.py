"""``noteseek hook EVENT``: the door coding agents' hooks call (``operations/memory_hooks.py``).

The agent writes its hook payload as JSON on standard input (Claude Code: ``session_id``,
``transcript_path``, ``cwd``, ``hook_event_name``, and ``prompt`` for UserPromptSubmit); the
answer is plain text on standard output, which Claude Code adds to the model's context for
SessionStart and UserPromptSubmit, or with ``--json`` its structured form
(``hookSpecificOutput.additionalContext``). Events: ``session-start`` (bring the memory index
up to date, print an orientation), ``prompt`` (the memories that answer the prompt),
``stop``, ``session-end`` and ``pre-compact`` (summarise the session into its entry of the
daily log, in a process of its own unless ``--wait``, which says what it did in
``hooks.log`` in noteseek's data folder).

A hook never blocks or breaks the agent: it gives up after ``hooks.time_limit`` seconds, and
any error is one line on standard error with exit status 0 (``--strict``: status 1, for tests).
Started without typer and the other commands (``cli/__init__.py`` sends ``hook`` here first),
so a cold prompt hook spends its time searching, not importing.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import sys
import threading
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from noteseek.engine import Engine

EVENTS = {
    "session-start": "SessionStart",
    "prompt": "UserPromptSubmit",
    "stop": "Stop",
    "session-end": "SessionEnd",
    "pre-compact": "PreCompact",
}
"""Each command and the Claude Code event it answers."""
CAPTURING = ("stop", "session-end", "pre-compact")
MAX_PAYLOAD_BYTES = 4 * 1024 * 1024
LOG_FILE = "hooks.log"
MAX_LOG_BYTES = 1_000_000
SERVER_WAIT = 2.0
"""Seconds a prompt hook waits for a running server's answer before opening the index itself."""
FIRST_LIMIT = 60.0
"""Seconds allowed before the settings (and ``hooks.time_limit``) are read."""


@dataclass(frozen=True, slots=True)
class HookInput:
    """A hook's payload as the agents send it; fields they leave out are empty."""

    event: str = ""
    session_id: str = ""
    transcript_path: str = ""
    cwd: str = ""
    prompt: str = ""
    source: str = ""
    """SessionStart: ``startup``, ``resume``, ``clear`` or ``compact``."""

    @classmethod
    def parse(cls, data: Mapping[str, Any]) -> HookInput:
        def text(*keys: str) -> str:
            for key in keys:
                value = data.get(key)
                if isinstance(value, str):
                    return value
            return ""

        return cls(
            event=text("hook_event_name"),
            session_id=text("session_id", "thread_id", "conversation_id"),
            transcript_path=text("transcript_path"),
            cwd=text("cwd"),
            prompt=text("prompt", "user_prompt"),
            source=text("source"),
        )


class HookError(Exception):
    """A payload or setup the hook cannot work with; its message is the one line shown."""


def run(argv: list[str]) -> int:
    """Run one hook; the exit status (0 unless ``--strict`` and something went wrong)."""
    args = _parser().parse_args(argv)
    watchdog = _Watchdog(FIRST_LIMIT, strict=args.strict)
    event, text, status = EVENTS[args.event], "", 0
    try:
        raw = sys.stdin.buffer.read(MAX_PAYLOAD_BYTES + 1)
        hook = _payload(raw)
        event = hook.event or event
        if args.event in CAPTURING and not (args.wait or args.strict):
            _detach(argv, raw)
        else:
            text = _answer(args, hook, watchdog)
    except Exception as exc:  # a hook never breaks the agent: one line on stderr
        print(f"noteseek hook {args.event}: {_one_line(exc)}", file=sys.stderr)
        status = 1 if args.strict else 0
    finally:
        watchdog.cancel()
    if args.json:
        # Gemini CLI parses stdout as JSON whatever it holds, and names its own events
        # (BeforeAgent for a prompt): the payload's event name is answered when it gives one.
        answer = {"hookSpecificOutput": {"hookEventName": event, "additionalContext": text}}
        text = json.dumps(answer if text else {})
    if text:
        sys.stdout.write(text + "\n")
        sys.stdout.flush()
    return status


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="noteseek hook",
        description="Agent hooks: read the hook's JSON payload on stdin and answer on stdout.",
        add_help=False,
    )
    parser.add_argument("-h", "--help", action="help", help="Show this message and exit.")
    parser.add_argument("event", choices=list(EVENTS), help="the hook event")
    parser.add_argument(
        "--json",
        action="store_true",
        help="answer as {hookSpecificOutput: {hookEventName, additionalContext}}",
    )
    parser.add_argument(
        "--strict", action="store_true", help="exit 1 on any error (tests); default: exit 0"
    )
    parser.add_argument(
        "--wait",
        action="store_true",
        help="stop, session-end, pre-compact: summarise before returning (default: in a "
        "process of its own, so the agent never waits for it)",
    )
    parser.add_argument("--config", type=Path, help="use this config file")
    parser.add_argument("--index-dir", type=Path, help="use the index in this folder")
    parser.add_argument(
        "--index",
        metavar="NAME",
        help="use the named index (noteseek indexes lists them), with its own roots, "
        "whatever folder the agent works in",
    )
    return parser


def _payload(raw: bytes) -> HookInput:
    if len(raw) > MAX_PAYLOAD_BYTES:
        raise HookError(f"the payload is over {MAX_PAYLOAD_BYTES:,} bytes")
    if not raw.strip():
        return HookInput()
    try:
        data = json.loads(raw)
    except ValueError as exc:
        raise HookError(f"the payload on stdin is not JSON ({exc})") from None
    if not isinstance(data, dict):
        raise HookError("the payload on stdin is not a JSON object")
    return HookInput.parse(data)


def _answer(args: argparse.Namespace, hook: HookInput, watchdog: _Watchdog) -> str:
    if args.event == "prompt":
        answer = _ask_server(args, hook)
        if answer is not None:
            return answer
    from noteseek.operations import memory_hooks

    with _engine(args, hook) as engine:
        limits = engine.settings.hooks
        capturing = args.event in CAPTURING
        watchdog.reset(limits.capture_time_limit if capturing else limits.time_limit)
        if args.event == "session-start":
            _bring_up_to_date(engine)
            return memory_hooks.orientation(engine)
        if args.event == "prompt":
            return memory_hooks.recall(engine, hook.prompt)
        message = memory_hooks.capture(engine, hook.session_id, hook.transcript_path)
        print(f"noteseek hook {args.event}: {message}", file=sys.stderr)
        return ""


def _ask_server(args: argparse.Namespace, hook: HookInput) -> str | None:
    """The prompt's memories from a running ``noteseek serve`` of the project, which has the
    index open (``noteseek/servers.py``); None when there is none, or it did not answer in
    ``SERVER_WAIT`` seconds (the hook then opens the index itself)."""
    if args.config is not None or args.index_dir is not None or args.index is not None:
        return None  # the project's server answers for the project's own index only
    from noteseek import servers
    from noteseek.places import find_project_file

    cwd = Path(hook.cwd).expanduser() if hook.cwd else Path.cwd()
    try:
        project = find_project_file(cwd)
        server = servers.find(project) if project is not None else None
    except OSError:
        return None
    if server is None:
        return None
    try:
        answer = servers.ask(
            server,
            servers.RECALL_ROUTE,
            {"prompt": hook.prompt[: servers.PROMPT_CHARS]},
            timeout=SERVER_WAIT,
        )
    except servers.Unreachable:
        return None
    text = answer.get("text")
    return text if isinstance(text, str) else None


def _detach(argv: list[str], payload: bytes) -> None:
    """Run this hook again with ``--wait`` in a process of its own (it outlives the agent's
    hook call), handing it the payload; return at once."""
    import subprocess

    from noteseek.interfaces.cli.detached import start_detached

    log = _log_file()
    try:
        start_detached(
            ["hook", *argv, "--wait"],
            stdout=subprocess.DEVNULL,
            stderr=log if log is not None else subprocess.DEVNULL,
            payload=payload,
        )
    finally:
        if log is not None:
            log.close()


def _log_file() -> Any:
    """``hooks.log`` in noteseek's data folder, where a capture in its own process says what
    it did (started again past 1 MB); None when it cannot be opened."""
    from noteseek.config import data_dir

    path = data_dir() / LOG_FILE
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        big = path.exists() and path.stat().st_size > MAX_LOG_BYTES
        return path.open("wb" if big else "ab")
    except OSError:
        return None


def _engine(args: argparse.Namespace, hook: HookInput) -> Engine:
    from noteseek.engine import open_engine

    cwd = Path(hook.cwd).expanduser() if hook.cwd else Path.cwd()
    if not cwd.is_dir():
        raise HookError(f"the payload's cwd {str(cwd)!r} is not a folder")
    flags: dict[str, Any] = {}
    if args.index_dir is not None:
        flags["index.dir"] = str(args.index_dir)
    return open_engine(cwd, args.config, flags, name=args.index)


def _bring_up_to_date(engine: Engine) -> None:
    """Index the memory folders (fast: they are small); a live writer (serve, mcp, watch)
    keeps them fresh itself, so a busy writer role is no error here."""
    from noteseek.engine.writer import NotWriter

    roots = engine.memory_roots()
    if not roots:
        return
    with contextlib.suppress(NotWriter):
        engine.index(roots, keyword_only=engine.keyword_only())


class _Watchdog:
    """Ends the process quietly when a hook runs past its time (exit 0; ``--strict``: 1)."""

    def __init__(self, seconds: float, *, strict: bool) -> None:
        self.strict = strict
        self._timer: threading.Timer | None = None
        self.reset(seconds)

    def reset(self, seconds: float) -> None:
        self.cancel()
        self._timer = threading.Timer(seconds, self._expire, args=(seconds,))
        self._timer.daemon = True
        self._timer.start()

    def cancel(self) -> None:
        if self._timer is not None:
            self._timer.cancel()

    def _expire(self, seconds: float) -> None:
        sys.stderr.write(f"noteseek hook: gave up after {seconds:g} s (hooks.time_limit)\n")
        sys.stderr.flush()
        os._exit(1 if self.strict else 0)


def _one_line(exc: BaseException) -> str:
    text = " ".join(str(exc).split()) or type(exc).__name__
    return text if len(text) <= 300 else text[:297] + "..."
