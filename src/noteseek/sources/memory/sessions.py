"""A session's entry in the daily log: one per agent session, however often its hook fires.

An agent's Stop hook fires after every answer, SessionEnd and PreCompact once more; each time
the session's summary is brought up to date in the entry it already has, found by the line that
names the session, so a session is one entry of the log it started in:

    ## 14:32 Session: rotate the auth tokens

    Session `3f2a...` · 12 turns · transcript `~/.claude/projects/.../3f2a....jsonl`

    - The refresh token now expires after 7 days ...

The transcript line is how an agent gets from a memory back to the session it came from.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass

MAX_TITLE_CHARS = 80
FLUSH_TITLE = "Memory summary"
"""How a flush's entry in the daily log is titled (``## HH:MM Memory summary (...)``)."""
_FLUSH_HEADING = re.compile(r"(\d\d:\d\d )?" + re.escape(FLUSH_TITLE) + r" \(")
_MARKER_LINE = re.compile(r"[-*+ ]*Session `[^`\n]*` · ")


@dataclass(frozen=True, slots=True)
class SessionEntry:
    session_id: str
    turns: int
    transcript: str
    title: str
    summary: str
    time: str
    """``HH:MM`` of the session's first capture (kept when the entry is brought up to date)."""

    @property
    def marker(self) -> str:
        return session_marker(self.session_id)

    def text(self, time: str | None = None) -> str:
        """The entry: heading, the line naming session and transcript, the summary."""
        heading = f"## {time or self.time} Session: {self.title}".rstrip()
        line = f"{self.marker} · {self.turns} turns · transcript `{self.transcript}`"
        return f"{heading}\n\n{line}\n\n{self.summary.strip()}\n"


SESSION_ID = re.compile(r"[A-Za-z0-9._-]{1,128}")
"""What a session id may be: agents' ids are UUIDs (Claude Code, Codex) or alike. The id is
written into the daily log, where a newline or a backquote in it could forge another session's
entry."""


def valid_session_id(session_id: str) -> bool:
    return SESSION_ID.fullmatch(session_id) is not None


def session_marker(session_id: str) -> str:
    return f"Session `{session_id}`"


def session_title(first_prompt: str) -> str:
    """The entry's title: the first line of what the person first asked, shortened."""
    line = next((ln.strip() for ln in first_prompt.splitlines() if ln.strip()), "")
    line = " ".join(line.lstrip("#>-* ").split())
    if len(line) > MAX_TITLE_CHARS:
        line = line[: MAX_TITLE_CHARS - 3].rsplit(" ", 1)[0] + "..."
    return line or "(untitled)"


def recorded_turns(log: str, session_id: str) -> int | None:
    """How many turns the session's entry in ``log`` summarised (None: it has none)."""
    found = _section(log, session_marker(session_id))
    if found is None:
        return None
    start, end = found
    line = next((ln for ln in log[start:end].split("\n") if ln.startswith("Session `")), "")
    parts = [p.strip() for p in line.split("·")]
    for part in parts:
        if part.endswith(" turns") and part[: -len(" turns")].isdigit():
            return int(part[: -len(" turns")])
    return 0


def upsert(log: str | None, entry: SessionEntry, day_heading: str) -> str | None:
    """``log`` with ``entry`` in it: its old entry replaced (keeping the time it started), or
    the entry appended; None when the log already says exactly this, or its entry summarises
    more turns (captures of one session may overlap). ``day_heading`` starts a
    new log (``# 2026-11-27``)."""
    if log is None:
        return f"{day_heading}\n\n{entry.text()}"
    found = _section(log, entry.marker)
    if found is None:
        sep = "" if log.endswith("\n") else "\n"
        return f"{log}{sep}\n{entry.text()}"
    start, end = found
    old = log[start:end]
    if (recorded_turns(log, entry.session_id) or 0) > entry.turns:
        return None  # a later capture of the same session finished first: keep it
    time = old[3:8] if old.startswith("## ") and old[5:6] == ":" else None
    new = entry.text(time)
    if old.rstrip("\n") == new.rstrip("\n"):
        return None
    return log[:start] + new + log[end:]


def without_entry(log: str, session_id: str) -> str | None:
    """``log`` less the session's entry (moved to a continuation of the day's log that had
    room for it); None when it has none."""
    found = _section(log, session_marker(session_id))
    if found is None:
        return None
    start, end = found
    head, tail = log[:start], log[end:].lstrip("\n")
    return head + tail if tail else head.rstrip("\n") + "\n"


def _section(log: str, marker: str) -> tuple[int, int] | None:
    """Where the ``## `` section holding the line that starts with ``marker`` begins and ends
    (the next ``## `` heading, or the end of the log)."""
    at = log.find("\n" + marker)
    if at < 0:
        return None
    start = log.rfind("\n## ", 0, at)
    start = start + 1 if start >= 0 else (0 if log.startswith("## ") else at + 1)
    end = log.find("\n## ", at)
    end = len(log) if end < 0 else end + 1
    # The blank line before the next heading belongs to the gap, not to this entry.
    while end > start and end >= 2 and log[end - 2 : end] == "\n\n":
        end -= 1
    return start, end


def flushable(heading_path: Sequence[str], text: str) -> str:
    """What a flush may summarise of a chunk of a memory (its heading path, its text): not an
    earlier flush's summary (a flush of a flush copied the summary again, and again), and not
    the line that names a session and its transcript, which is the session entry's own (a
    summary that copied it named the session twice in the log, and a copy at the start of a
    line would be taken for the entry by the next capture)."""
    inside = any(_FLUSH_HEADING.match(h) for h in heading_path)
    kept = []
    for line in text.split("\n"):
        if line.startswith("#"):
            inside = _FLUSH_HEADING.match(line.lstrip("#").strip()) is not None
        if inside or _MARKER_LINE.match(line):
            continue
        kept.append(line)
    return "\n".join(kept).strip()


def without_session_lines(text: str) -> str:
    """``text`` less any line that would name a session as an entry does: a session's summary
    quoting one (a transcript that pasted a daily log) must not name another session."""
    return "\n".join(ln for ln in text.split("\n") if not _MARKER_LINE.match(ln))
