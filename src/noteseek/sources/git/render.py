"""One commit as a Markdown document, with the line ranges of its parts.

A commit is read, shown and cited like any other document: the message first (what a search
for intent should find), then who and when, then one section per file with its hunks in a
fenced ``diff`` block. The ranges let the indexer chunk the message and each file's hunks
apart and still point at lines of exactly this text, so a result can quote the hunk it
matched. The text is a pure function of the commit: reading it again gives the same lines.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta, timezone

from noteseek.sources.git.log import Commit, FileChange

Range = tuple[int, int]
"""1-based, inclusive first and last line."""


@dataclass(frozen=True, slots=True)
class FileSection:
    """Where one changed file is in the rendered text."""

    change: FileChange
    heading_line: int
    hunks: tuple[Range, ...]
    """One range per hunk, from its ``@@`` line to its last line (inside the fence)."""


@dataclass(frozen=True, slots=True)
class RenderedCommit:
    text: str
    message: Range
    """The ``# subject`` line and the body."""
    metadata: Range
    files: tuple[FileSection, ...]


class _Lines:
    """Lines being written, numbered from 1 as they are added."""

    def __init__(self) -> None:
        self.lines: list[str] = []

    def add(self, text: str) -> int:
        """Append ``text`` (which may span lines); the number of its last line."""
        self.lines.extend(text.split("\n"))
        return len(self.lines)

    @property
    def next(self) -> int:
        return len(self.lines) + 1


def render_commit(commit: Commit) -> RenderedCommit:
    out = _Lines()
    start = out.next
    end = out.add(f"# {_flat(commit.subject).strip() or '(no message)'}")
    body = _text(commit.body).strip("\n")
    if body:
        out.add("")
        end = out.add(body)
    message = (start, end)
    out.add("")
    start = out.next
    end = out.add("\n".join(_metadata(commit)))
    metadata = (start, end)
    sections = []
    for change in commit.files:
        out.add("")
        sections.append(_file_section(out, change, bool(commit.diff_unread)))
    text = "\n".join(out.lines) + "\n"
    return RenderedCommit(text, message, metadata, tuple(sections))


def _metadata(commit: Commit) -> list[str]:
    lines = [
        f"- Commit: `{commit.hash}`",
        f"- Author: {_person(commit.author, commit.author_email)}",
        f"- Date: {iso_date(commit.authored, commit.author_offset)}",
    ]
    if (commit.committer, commit.committer_email) != (commit.author, commit.author_email):
        lines.append(f"- Committer: {_person(commit.committer, commit.committer_email)}")
    if commit.committed != commit.authored:
        lines.append(f"- Committed: {iso_date(commit.committed, commit.committer_offset)}")
    if len(commit.parents) > 1:
        others = ", ".join(f"`{p}`" for p in commit.parents[1:])
        lines.append(
            f"- Merge of {others} into `{commit.parents[0]}`; the diff is against the first parent"
        )
    elif commit.parents:
        lines.append(f"- Parent: `{commit.parents[0]}`")
    if commit.grafted:
        lines.append(
            "- Shallow clone boundary: the parents are not in this clone, "
            "so the diff shows every file as added"
        )
    changed = commit.files_changed
    if commit.diff_unread:
        lines.append(f"- Files changed: {changed:,}")
        lines.append(f"- Diff not read: {commit.diff_unread}")
    else:
        lines.append(f"- Files changed: {changed:,} (+{commit.insertions:,} −{commit.deletions:,})")
    if commit.files_omitted:
        lines.append(
            f"- {files_shown(len(commit.files), changed)}: the other "
            f"{commit.files_omitted:,} are counted, not listed"
        )
    if commit.diff_truncated:
        b = commit.bounds
        lines.append(
            f"- Diff truncated: at most {b.max_lines_per_file} lines per file, {b.max_lines} "
            f"lines per commit and the hunks of {b.max_files} files are shown"
        )
    return lines


def files_shown(listed: int, changed: int) -> str:
    """``1,000 of 100,000 files shown``: what a summary says when it lists only some files."""
    return f"{listed:,} of {changed:,} files shown"


def _file_section(out: _Lines, change: FileChange, unread: bool) -> FileSection:
    what = f"{change.status}, diff not read" if unread else _describe(change)
    heading = out.add(f"## {_code(_one_line(change.path))} ({what})")
    ranges: list[Range] = []
    if change.hunks:
        fence = "`" * max(3, _longest_backticks(change.hunks) + 1)
        out.add(f"{fence}diff")
        for hunk in change.hunks:
            start = out.next
            ranges.append((start, out.add(_text(hunk))))
        out.add(fence)
    return FileSection(change, heading, tuple(ranges))


def _describe(change: FileChange) -> str:
    parts = [change.status]
    if change.old_path is not None:
        verb = "renamed" if change.status == "renamed" else "copied"
        parts = [f"{verb} from {_code(_one_line(change.old_path))}"]
    if change.binary:
        parts.append("binary")
    else:
        parts.append(f"+{change.added} −{change.removed}")
    if change.truncated:
        parts.append("diff truncated" if change.hunks else "diff not shown")
    return ", ".join(parts)


def iso_date(epoch: float, offset_minutes: int) -> str:
    """ISO-8601 with the UTC offset the date was recorded with."""
    try:
        zone = timezone(timedelta(minutes=offset_minutes)) if offset_minutes else UTC
        return datetime.fromtimestamp(epoch, zone).isoformat()
    except (OverflowError, OSError, ValueError):
        return datetime.fromtimestamp(0, UTC).isoformat()


def _person(name: str, email: str) -> str:
    name = _flat(name)
    return f"{name} <{_flat(email)}>" if email else name


def _text(text: str) -> str:
    """Lines end with ``\\n`` alone: a carriage return ends a line for some readers (and for
    ``str.splitlines``), which would shift every range after it."""
    return text.replace("\r\n", "\n").replace("\r", " ")


def _flat(text: str) -> str:
    """A name or subject on one line."""
    return " ".join(text.split("\n")).replace("\r", " ")


def _one_line(text: str) -> str:
    """A value shown on one line (a path may hold a newline or a tab)."""
    return text.replace("\r", "\\r").replace("\n", "\\n").replace("\t", "\\t")


_BACKTICKS = re.compile(r"`+")


def _longest_backticks(texts: tuple[str, ...]) -> int:
    return max((len(m.group()) for t in texts for m in _BACKTICKS.finditer(t)), default=0)


def _code(text: str) -> str:
    """Inline code a Markdown renderer shows as is (``_`` and ``*`` stay literal)."""
    ticks = "`" * (_longest_backticks((text,)) + 1)
    pad = " " if text.startswith("`") or text.endswith("`") else ""
    return f"{ticks}{pad}{text}{pad}{ticks}"
