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

A hook never blocks or breaks the agent: it gives up after ``hooks.time_limit`` seconds
(``hooks.capture_time_limit`` for a capture in its own process), counted from its start, the
reading of its payload included; any error is one line on standard error with exit status 0
(``--strict``: status 1, for tests), and an agent that closed the hook's output gets no
traceback. What it reads is bounded: the payload (4 MB), the transcript (a regular file, its
last 64 MB), the session id (letters, digits and ``-_.``, at most 128 characters: it is
written into the daily log, where a forged one could pass for another session's entry).
Started without typer and the other commands (``cli/__init__.py`` sends ``hook`` here first),
so a cold prompt hook spends its time searching, not importing.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import re
import sys
import threading
import time
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
DEFAULT_TIME_LIMIT = 10.0
DEFAULT_CAPTURE_TIME_LIMIT = 120.0
"""``hooks.time_limit`` and ``hooks.capture_time_limit`` until the settings are read (their
defaults, or their ``NOTESEEK_HOOKS__*`` variables): the payload is read, and the settings
found, under the limit too (a stdin left open held a prompt hook for 60 s)."""
SESSION_ID = re.compile(r"[A-Za-z0-9._-]{1,128}")
"""``sources/memory/sessions.py``'s ``SESSION_ID``, here so that a capture handed to a process
of its own is refused before it is started, without importing the engine's modules."""


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
    # The limit counts from here: reading a payload from a stdin the agent left open is part
    # of the time the agent waits.
    here = args.event not in CAPTURING or args.wait or args.strict
    setting = "hooks.capture_time_limit" if args.event in CAPTURING and here else "hooks.time_limit"
    watchdog = _Watchdog(_early_limit(setting), setting, strict=args.strict)
    event, text, status = EVENTS[args.event], "", 0
    try:
        raw = sys.stdin.buffer.read(MAX_PAYLOAD_BYTES + 1)
        hook = _payload(raw)
        event = hook.event or event
        if args.event in CAPTURING:
            _check_session_id(hook.session_id)
        if not here:
            _detach(argv, raw)
        else:
            text = _answer(args, hook, watchdog)
    except Exception as exc:  # a hook never breaks the agent: one line on stderr
        _say(f"noteseek hook {args.event}: {_one_line(exc)}")
        status = 1 if args.strict else 0
    finally:
        watchdog.cancel()
    if args.json:
        # Gemini CLI parses stdout as JSON whatever it holds, and names its own events
        # (BeforeAgent for a prompt): the payload's event name is answered when it gives one.
        answer = {"hookSpecificOutput": {"hookEventName": event, "additionalContext": text}}
        text = json.dumps(answer if text else {})
    if text:
        _answer_out(text + "\n")
    return status


def _early_limit(setting: str) -> float:
    """``setting``'s value before the settings are read: its environment variable (the form
    the documentation gives) when it is a number in range, else its default."""
    default = (
        DEFAULT_CAPTURE_TIME_LIMIT
        if setting.endswith("capture_time_limit")
        else (DEFAULT_TIME_LIMIT)
    )
    name = "NOTESEEK_" + setting.upper().replace(".", "__")
    try:
        value = float(os.environ.get(name, default))
    except ValueError:
        return default
    return value if 0 < value <= 3600 else default


def _check_session_id(session_id: str) -> None:
    if session_id and SESSION_ID.fullmatch(session_id) is None:
        raise HookError(
            "the payload's session_id is not an id (letters, digits and -_. only, at most "
            "128 characters): nothing captured"
        )


def _say(line: str) -> None:
    """One line on standard error, unless the agent closed it."""
    try:
        sys.stderr.write(line + "\n")
        sys.stderr.flush()
    except (OSError, ValueError, AttributeError):  # closed, or never open (None)
        pass


def _answer_out(text: str) -> None:
    """``text`` on standard output; nothing (and no traceback at exit) when the agent closed
    it: it stopped listening, which is no error of the hook's."""
    try:
        sys.stdout.write(text)
        sys.stdout.flush()
    except (OSError, ValueError, AttributeError):  # a closed pipe; stdout None: fd 1 closed
        _drop_stdout()


def _drop_stdout() -> None:
    """Point standard output at /dev/null, so the interpreter's last flush of what is still
    buffered does not report the closed pipe (a traceback and exit status 120)."""
    try:
        null = os.open(os.devnull, os.O_WRONLY)
        os.dup2(null, 1)
        os.close(null)
    except OSError:
        pass


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
    except RecursionError:
        raise HookError("the payload on stdin is nested too deep") from None
    if not isinstance(data, dict):
        raise HookError("the payload on stdin is not a JSON object")
    return HookInput.parse(data)


def _answer(args: argparse.Namespace, hook: HookInput, watchdog: _Watchdog) -> str:
    if args.event == "prompt":
        answer = _ask_server(args, hook, min(SERVER_WAIT, watchdog.left()))
        if answer is not None:
            return answer
    from noteseek.operations import memory_hooks

    with _engine(args, hook) as engine:
        limits = engine.settings.hooks
        capturing = args.event in CAPTURING
        # The configured limit, still counted from the hook's start.
        watchdog.reset(limits.capture_time_limit if capturing else limits.time_limit)
        if args.event == "session-start":
            _bring_up_to_date(engine, args, hook)
            return memory_hooks.orientation(engine)
        if args.event == "prompt":
            return memory_hooks.recall(engine, hook.prompt)
        message = memory_hooks.capture(engine, hook.session_id, hook.transcript_path)
        _say(f"noteseek hook {args.event}: {message}")
        return ""


def _ask_server(args: argparse.Namespace, hook: HookInput, wait: float) -> str | None:
    """The prompt's memories from a running ``noteseek serve`` of the project, which has the
    index open (``noteseek/servers.py``); None when there is none, or it did not answer in
    ``wait`` seconds (the hook then opens the index itself)."""
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
    if server is None or wait <= 0:
        return None
    # The socket timeout bounds each read, not the answer: a server that sends a byte a
    # second would hold the hook for as long as it likes. The ask runs on a thread of its
    # own, given up (a daemon, left behind) after ``wait``.
    answers: list[dict[str, Any]] = []

    def ask() -> None:
        with contextlib.suppress(servers.Unreachable):
            answers.append(
                servers.ask(
                    server,
                    servers.RECALL_ROUTE,
                    {"prompt": hook.prompt[: servers.PROMPT_CHARS]},
                    timeout=wait,
                )
            )

    asking = threading.Thread(target=ask, name="noteseek-hook-ask", daemon=True)
    asking.start()
    asking.join(wait)
    if not answers:
        return None
    text = answers[0].get("text")
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


def _bring_up_to_date(engine: Engine, args: argparse.Namespace, hook: HookInput) -> None:
    """Index the memory folders by keyword (fast: they are small); chunks left to embed are
    embedded by ``noteseek index`` in a process of its own. Embedding here held the hook past
    the agent's 10 s limit whenever the index had pending chunks (every chunk without a
    vector is embedded by an index run, not only the memories'). A writer holding the index
    (serve, mcp, watch: they keep the memories fresh and embedded themselves; ``noteseek
    index``) is left to it: nothing is indexed or started then."""
    from noteseek.engine.writer import NotWriter, live_holder

    roots = engine.memory_roots()
    if not roots or live_holder(engine.index_dir) is not None:
        return
    # An index run that finds nothing to do still costs half a second: skipped when the
    # memory files are the indexed ones.
    if any(_changed(engine, root) for root in roots):
        try:
            engine.index(roots, keyword_only=True)  # this run only: the index's choice is kept
        except NotWriter:
            return
    if not engine.wants_vectors():
        return
    embedded, total = engine.embedding_progress(allow_stale=True)
    if total > embedded:
        _embed_later(engine, args, hook, roots)


def _changed(engine: Engine, root: str) -> bool:
    """Whether the memory folder of ``root`` may differ from the index: its Markdown files
    (hidden folders aside) are not exactly the indexed ones, by path, size and time. Erring
    towards True costs an index run, never a memory left out."""
    config = engine.roots().get(root)
    if config is None or not engine.index_exists:
        return True
    folder = Path(config.path).expanduser()
    try:
        on_disk = set()
        for path in folder.rglob("*.md"):
            rel = path.relative_to(folder)
            if any(part.startswith(".") for part in rel.parts):
                continue
            st = path.stat()
            on_disk.add((rel.as_posix(), st.st_mtime_ns, st.st_size))
    except OSError:
        return True
    indexed = {(f.path, f.mtime_ns, f.size) for f in engine.memory_files() if f.root == root}
    return on_disk != indexed


def _embed_later(
    engine: Engine, args: argparse.Namespace, hook: HookInput, roots: list[str]
) -> None:
    """``noteseek index ROOTS`` for this index, in a process of its own that outlives the
    hook; it writes what it did to ``embed.log`` in the index folder, as ``noteseek index
    --background`` does. Another writer by then (a second session starting) makes it end at
    once: the writer holding the role embeds."""
    import subprocess

    from noteseek.interfaces.cli.detached import start_detached

    chosen: list[str] = []
    for flag, value in (
        ("--config", args.config),
        ("--index-dir", args.index_dir),
        ("--index", args.index),
    ):
        if value is not None:
            chosen += [flag, str(value)]
    cwd = Path(hook.cwd).expanduser() if hook.cwd else Path.cwd()
    try:
        log: Any = (engine.index_dir / "embed.log").open("ab")
    except OSError:
        log = subprocess.DEVNULL
    try:
        start_detached([*chosen, "index", *roots], stdout=log, stderr=log, cwd=cwd)
    finally:
        if log is not subprocess.DEVNULL:
            log.close()


class _Watchdog:
    """Ends the process quietly when a hook runs past its time (exit 0; ``--strict``: 1),
    counted from when the watchdog was made (the hook's start), naming the setting."""

    def __init__(self, seconds: float, setting: str, *, strict: bool) -> None:
        self.strict = strict
        self.setting = setting
        self.started = time.monotonic()
        self.seconds = seconds
        self._timer: threading.Timer | None = None
        self.reset(seconds)

    def reset(self, seconds: float) -> None:
        """Give up ``seconds`` after the start (at once when they have passed)."""
        self.cancel()
        self.seconds = seconds
        self._timer = threading.Timer(max(0.0, self.left()), self._expire, args=(seconds,))
        self._timer.daemon = True
        self._timer.start()

    def left(self) -> float:
        return self.started + self.seconds - time.monotonic()

    def cancel(self) -> None:
        if self._timer is not None:
            self._timer.cancel()

    def _expire(self, seconds: float) -> None:
        _say(f"noteseek hook: gave up after {seconds:g} s ({self.setting})")
        os._exit(1 if self.strict else 0)


def _one_line(exc: BaseException) -> str:
    text = " ".join(str(exc).split()) or type(exc).__name__
    return text if len(text) <= 300 else text[:297] + "..."
