"""An agent session's transcript, read as the turns a summary is made of.

Coding agents keep each session as JSON lines: Claude Code writes one object per event
(``{"type": "user" | "assistant", "message": {"role", "content"}}``, content a string or a list
of blocks: ``text``, ``tool_use``, ``tool_result``, ``thinking``), Codex CLI wraps its items
(``{"type": "response_item", "payload": {"type": "message", "role", "content": [{"type":
"input_text" | "output_text", "text"}]}}``). What a person said and what the agent answered
are kept; tool calls and their output, thinking, system and meta lines are not: they are the
bulk of a transcript and rarely what is worth remembering. A line that is not JSON, or not an
object, is counted and skipped: a transcript being written may end in half a line.
"""

from __future__ import annotations

import json
import os
import stat
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

MAX_TRANSCRIPT_BYTES = 64 * 1024 * 1024
"""Most of a transcript read: its end, where the latest turns are, when it is longer."""
MAX_TURN_CHARS = 4_000
"""Longest turn kept whole; a longer one keeps its start (a pasted log says little more)."""
_TEXT_BLOCKS = ("text", "input_text", "output_text")
_ROLES = ("user", "assistant")


@dataclass(frozen=True, slots=True)
class Turn:
    role: str
    """``user`` or ``assistant``."""
    text: str
    line: int
    """The transcript line it came from (1-based)."""


@dataclass(slots=True)
class Transcript:
    path: Path
    turns: list[Turn] = field(default_factory=list)
    lines: int = 0
    skipped: int = 0
    """Lines that were not JSON objects (a line being written, a damaged one)."""


def read_transcript(path: Path, *, max_bytes: int = MAX_TRANSCRIPT_BYTES) -> Transcript:
    """The user and assistant turns of the transcript at ``path`` (OSError when unreadable or
    not a regular file)."""
    data, start = _read_end(path, max_bytes)
    if start:
        data = data[data.find(b"\n") + 1 :]  # from the first whole line
    out = Transcript(path)
    for number, raw in enumerate(data.split(b"\n"), 1):
        if not raw.strip():
            continue
        out.lines += 1
        try:
            event = json.loads(raw)
        except (ValueError, RecursionError):
            # RecursionError: a line nested deeper than the parser goes (the interpreter's
            # recursion limit bounds it) is damage like any other, not the end of the capture.
            out.skipped += 1
            continue
        if not isinstance(event, dict):
            out.skipped += 1
            continue
        turn = _turn(event, number)
        if turn is not None:
            out.turns.append(turn)
    return out


def _read_end(path: Path, max_bytes: int) -> tuple[bytes, int]:
    """At most the last ``max_bytes`` of the regular file at ``path``, and where they start.

    Opened without blocking (a FIFO would wait for a writer) and checked before reading: a
    device (``/dev/zero``, ``/dev/urandom``) has no size, and was read whole, without end."""
    fd = os.open(path, os.O_RDONLY | getattr(os, "O_NONBLOCK", 0))
    with os.fdopen(fd, "rb") as handle:
        if not stat.S_ISREG(os.fstat(fd).st_mode):
            raise OSError(f"{path} is not a regular file")
        size = handle.seek(0, 2)
        start = max(0, size - max_bytes)
        handle.seek(start)
        # A file still being written may have grown since its size was read.
        return handle.read(max_bytes), start


def _turn(event: dict[str, Any], line: int) -> Turn | None:
    if event.get("isMeta") or event.get("isSidechain"):
        return None
    message = event.get("message")
    payload = event.get("payload")
    if isinstance(message, dict):  # Claude Code
        role, content = message.get("role", event.get("type")), message.get("content")
    elif isinstance(payload, dict) and payload.get("type") == "message":  # Codex CLI
        role, content = payload.get("role"), payload.get("content")
    else:
        return None
    if role not in _ROLES:
        return None
    text = _text(content).strip()
    if not text or _is_noise(text):
        return None
    if len(text) > MAX_TURN_CHARS:
        text = text[:MAX_TURN_CHARS].rstrip() + " ..."
    return Turn(str(role), text, line)


def _text(content: object) -> str:
    if isinstance(content, str):
        return content
    if not isinstance(content, list):
        return ""
    parts = [
        block["text"]
        for block in content
        if isinstance(block, dict)
        and block.get("type") in _TEXT_BLOCKS
        and isinstance(block.get("text"), str)
    ]
    return "\n\n".join(parts)


def _is_noise(text: str) -> bool:
    """A turn the agent's own machinery wrote: slash-command wrappers, local command output,
    interruption notices, Codex's environment and instruction preambles."""
    head = text.lstrip()[:40]
    return head.startswith(
        (
            "<command-name>",
            "<command-message>",
            "<local-command-stdout>",
            "<environment_context>",
            "<user_instructions>",
            "[Request interrupted",
            "Caveat: The messages below",
        )
    )
