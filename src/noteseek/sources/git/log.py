"""Commits in bulk: one ``git log -p`` for a whole batch, parsed while it streams, bounded.

Indexing a history of thousands of commits must not start a git process per commit (that
alone costs more than the 300 commits/s the index aims for), and one commit's diff may be a
generated file of millions of lines: lines past :class:`DiffBounds` are counted but never
kept, so memory stays bounded whatever the history holds. A commit git cannot read (a corrupt
or missing object) does not cost the batch: the good ones are still read, and the bad one is
reported with git's reason (see :func:`read_commits`).
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import IO

from noteseek.sources.git.cli import GitError, GitMissing, is_hash, shallow_commits, stream

READ_LIMIT = 1 << 16
"""Longest line read from git at once: a longer one (a minified file, a huge message line)
is cut here and its remainder skipped, so one line cannot take unbounded memory."""
KEPT_LINE_BYTES = 4096
"""Longest diff line kept in a hunk (longer ones are cut, and the file marked truncated)."""


@dataclass(frozen=True, slots=True)
class DiffBounds:
    """How much of a commit's diff is kept: enough to search and show what changed, never a
    whole generated file."""

    max_lines_per_file: int = 300
    max_lines: int = 1500
    """Hunk lines kept per commit, over all its files."""
    max_files: int = 100
    """Files whose hunks are kept; later files are listed with status and counts only."""
    max_listed_files: int = 1000
    """Files listed at all; beyond this a commit only counts them (:attr:`Commit.files_omitted`)."""


@dataclass(frozen=True, slots=True)
class FileChange:
    """One file a commit changed, with its diff hunks within the bounds."""

    path: str
    """POSIX path relative to the repository top, after the change (the old path when deleted)."""
    old_path: str | None
    """The path before a rename or copy; None otherwise."""
    status: str
    """added, modified, deleted, renamed, copied or type changed."""
    binary: bool
    added: int
    removed: int
    hunks: tuple[str, ...]
    """Each hunk from its ``@@`` line, lines with their ``+``/``-``/space markers."""
    truncated: bool
    """Some of the file's diff lines were dropped by the bounds."""


@dataclass(frozen=True, slots=True)
class Commit:
    """One commit as read from git, its diff against its first parent."""

    hash: str
    parents: tuple[str, ...]
    author: str
    author_email: str
    authored: float
    committer: str
    committer_email: str
    committed: float
    subject: str
    body: str
    files: tuple[FileChange, ...] = ()
    files_omitted: int = 0
    diff_truncated: bool = False
    grafted: bool = False
    """A shallow clone's boundary: its parents are not in the clone, so its diff is against
    nothing (every file shows as added)."""
    author_offset: int = 0
    """The author's UTC offset in minutes, as recorded (for showing the date as they saw it)."""
    committer_offset: int = 0
    bounds: DiffBounds = field(default_factory=DiffBounds)
    """The bounds the diff was read with (a render states them when it was truncated)."""


_FIELDS = ("%H", "%P", "%an", "%ae", "%ad", "%cn", "%ce", "%cd", "%s", "%b")
_FORMAT = "--format=%x00%x00" + "%x00".join(_FIELDS) + "%x00%x01"
_HEADER_END = b"\x00\x01\n"

LOG_ARGS: tuple[str, ...] = (
    "log",
    "--no-walk=unsorted",
    "--stdin",
    "--patch",
    "--root",
    "--diff-merges=first-parent",
    "--find-renames",
    "--find-copies",
    "--submodule=short",
    "--no-color",
    "--no-ext-diff",
    "--no-textconv",
    "--no-relative",
    "--no-notes",
    "--no-show-signature",
    "--no-abbrev-commit",
    "--src-prefix=a/",
    "--dst-prefix=b/",
    "--encoding=UTF-8",
    "--date=raw",
    _FORMAT,
)
"""Everything the parser relies on is pinned here, whatever the user's configuration says:
first-parent diffs of merges, renames and copies found, submodules as ``Subproject commit``
lines, messages re-encoded to UTF-8 from the encoding they declare, a/ and b/ prefixes."""


def read_commits(
    repo: Path | str, hashes: Iterable[str], bounds: DiffBounds | None = None
) -> Iterator[tuple[str, Commit | str]]:
    """Read ``hashes`` (full commit hashes) with one git process; yield (hash, Commit), or
    (hash, reason) for each that cannot be read.

    When git fails part way (a corrupt or missing object), the commits already read are kept,
    the one it was on is tried alone, and the rest are read again; a failure before any output
    (git checks every named object first) splits the batch in halves until the bad commits are
    alone. Each good commit is yielded once; the order follows ``hashes`` except around retries.
    Raises GitMissing only when git itself cannot run.
    """
    bounds = bounds or DiffBounds()
    wanted: list[str] = []
    seen: set[str] = set()
    for sha in hashes:
        if sha in seen:
            continue
        seen.add(sha)
        if is_hash(sha):
            wanted.append(sha)
        else:
            yield sha, "not a full commit hash"
    if not wanted:
        return
    try:
        shallow = shallow_commits(repo)
    except GitMissing:
        raise
    except GitError as exc:
        for sha in wanted:
            yield sha, str(exc)
        return
    work = [wanted]
    while work:
        batch = work.pop()
        outcome = _Outcome()
        try:
            yield from _read_batch(repo, batch, bounds, shallow, outcome)
        except GitMissing:
            raise
        except GitError as exc:
            # git could not even start in this repository: no commit of it can be read.
            for sha in (s for b in [batch, *work] for s in b if s not in outcome.done):
                yield sha, str(exc)
            return
        if outcome.code == 0:
            for sha in batch:
                if sha not in outcome.done:
                    yield sha, "not a commit of this repository"
            continue
        rest = [sha for sha in batch if sha not in outcome.done]
        if len(rest) == 1:
            yield rest[0], outcome.reason
        elif outcome.suspect is not None and outcome.suspect in rest:
            work.append([sha for sha in rest if sha != outcome.suspect])
            work.append([outcome.suspect])
        elif rest:
            half = len(rest) // 2
            work.extend([rest[half:], rest[:half]])


@dataclass(slots=True)
class _Outcome:
    """How one git process over a batch ended."""

    code: int = 0
    reason: str = ""
    done: set[str] = field(default_factory=set)
    suspect: str | None = None
    """The commit git was printing when it failed: it is only trusted when read alone."""


def _read_batch(
    repo: Path | str,
    batch: list[str],
    bounds: DiffBounds,
    shallow: frozenset[str],
    outcome: _Outcome,
) -> Iterator[tuple[str, Commit]]:
    """One git process over ``batch``; what happened is left in ``outcome``."""
    wanted = set(batch)
    stdin = "".join(f"{sha}\n" for sha in batch).encode("ascii")
    with stream(repo, LOG_ARGS, stdin=stdin) as proc:
        pending: Commit | None = None
        for commit in parse_log(proc.stdout, bounds, shallow):
            if commit.hash not in wanted:
                continue
            if pending is not None:
                outcome.done.add(pending.hash)
                yield pending.hash, pending
            pending = commit
        outcome.code, outcome.reason = proc.finish()
    if pending is None:
        return
    if outcome.code == 0:
        outcome.done.add(pending.hash)
        yield pending.hash, pending
    else:
        # Its diff may have been cut off by the failure.
        outcome.suspect = pending.hash


# -- parsing ----------------------------------------------------------------------------------


class _File:
    """A file change while its diff lines stream by."""

    __slots__ = (
        "added",
        "binary",
        "hunks",
        "new_path",
        "old_mode",
        "old_path",
        "removed",
        "room",
        "status",
        "truncated",
    )

    def __init__(self, old_path: bytes, new_path: bytes, room: int) -> None:
        self.old_path = old_path
        self.new_path = new_path
        self.status = "modified"
        self.old_mode = b""
        self.binary = False
        self.added = 0
        self.removed = 0
        self.hunks: list[list[bytes]] = []
        self.room = room
        """Hunk lines this file may still keep."""
        self.truncated = False

    def kept(self) -> int:
        return sum(len(h) for h in self.hunks)

    def freeze(self) -> FileChange:
        new = _decode_path(self.new_path)
        old = _decode_path(self.old_path)
        renamed = self.status in ("renamed", "copied")
        return FileChange(
            path=old if self.status == "deleted" else new,
            old_path=old if renamed else None,
            status=self.status,
            binary=self.binary,
            added=self.added,
            removed=self.removed,
            hunks=tuple(_hunk_text(h) for h in self.hunks if h),
            truncated=self.truncated,
        )


class _CommitBuilder:
    __slots__ = ("files", "header", "omitted", "room")

    def __init__(self, header: bytes, bounds: DiffBounds) -> None:
        self.header = header
        self.files: list[_File] = []
        self.omitted = 0
        self.room = bounds.max_lines


def parse_log(
    out: IO[bytes], bounds: DiffBounds, shallow: frozenset[str] = frozenset()
) -> Iterator[Commit]:
    """Parse ``git log`` output made with :data:`LOG_ARGS`, one commit at a time.

    The hot loop looks at a line's first byte only: inside a hunk every line starts with
    ``+``, ``-``, space, ``@`` or ``\\``, and a new file or commit with ``d`` or NUL.
    Lines past the bounds are counted and dropped at once.
    """
    read = out.readline
    builder: _CommitBuilder | None = None
    header: list[bytes] | None = None
    file: _File | None = None
    hunk: list[bytes] = []
    in_hunk = False
    while True:
        line = read(READ_LIMIT)
        if not line:
            break
        if line[-1] != 10:
            line = _finish_long_line(out, line)
        if in_hunk:
            assert file is not None
            first = line[0]
            if first == 43 or first == 45 or first == 32 or first == 10 or first == 92:
                if first == 43:
                    file.added += 1
                elif first == 45:
                    file.removed += 1
                if file.room > 0:
                    file.room -= 1
                    if len(line) > KEPT_LINE_BYTES:
                        line = line[:KEPT_LINE_BYTES] + b"\n"
                        file.truncated = True
                    hunk.append(line)
                else:
                    file.truncated = True
                continue
            if first == 64 and line.startswith(b"@@"):
                hunk = _start_hunk(file, line)
                continue
            in_hunk = False
        if header is not None:
            header.append(line)
            if line.endswith(_HEADER_END):
                assert builder is not None
                builder.header = b"".join(header)
                header = None
            continue
        if line.startswith(b"\x00\x00"):
            if builder is not None:
                yield _freeze(builder, file, bounds, shallow)
            builder, file = _CommitBuilder(b"", bounds), None
            if line.endswith(_HEADER_END):
                builder.header = line
            else:
                header = [line]
            continue
        if builder is None:
            continue
        if line.startswith(b"diff --git "):
            file = _start_file(builder, file, line, bounds)
        elif file is not None:
            if line.startswith(b"@@"):
                hunk = _start_hunk(file, line)
                in_hunk = True
            else:
                _file_header_line(file, line)
    if builder is not None:
        yield _freeze(builder, file, bounds, shallow)


def _finish_long_line(out: IO[bytes], line: bytes) -> bytes:
    """A line cut at READ_LIMIT: skip the rest of it, keep its start as a whole line."""
    if len(line) < READ_LIMIT:
        return line + b"\n"  # The last line of the output, without a newline.
    while True:
        more = out.readline(READ_LIMIT)
        if not more or more[-1] == 10:
            return line + b"\n"


def _start_hunk(file: _File, line: bytes) -> list[bytes]:
    hunk: list[bytes] = []
    if file.room > 0:
        file.room -= 1
        hunk.append(line)
        file.hunks.append(hunk)
    else:
        file.truncated = True
    return hunk


def _start_file(
    builder: _CommitBuilder, previous: _File | None, line: bytes, bounds: DiffBounds
) -> _File:
    if previous is not None:
        _close_file(builder, previous)
    old, new = _split_diff_paths(line[len(b"diff --git ") : -1])
    count = len(builder.files) + builder.omitted
    room = min(bounds.max_lines_per_file, builder.room) if count < bounds.max_files else 0
    file = _File(old, new, room)
    if count < bounds.max_listed_files:
        builder.files.append(file)
    else:
        builder.omitted += 1
    return file


def _close_file(builder: _CommitBuilder, file: _File) -> None:
    builder.room -= file.kept()


def _file_header_line(file: _File, line: bytes) -> None:
    """The extended header lines between ``diff --git`` and the first hunk."""
    text = line.rstrip(b"\n")
    if text.startswith(b"rename from "):
        file.status, file.old_path = "renamed", _unquote(text[12:])
    elif text.startswith(b"rename to "):
        file.status, file.new_path = "renamed", _unquote(text[10:])
    elif text.startswith(b"copy from "):
        file.status, file.old_path = "copied", _unquote(text[10:])
    elif text.startswith(b"copy to "):
        file.status, file.new_path = "copied", _unquote(text[8:])
    elif text.startswith(b"new file mode"):
        file.status = "added"
    elif text.startswith(b"deleted file mode"):
        file.status = "deleted"
    elif text.startswith(b"old mode "):
        file.old_mode = text[9:]
    elif text.startswith(b"new mode "):
        # The file type is the mode's leading digits (100 file, 120 link, 160 submodule).
        if file.old_mode[:-3] != text[9:-3]:
            file.status = "type changed"
    elif text.startswith(b"--- "):
        path = _strip_prefix(_unquote(text[4:].rstrip(b"\t")), b"a/")
        if path is not None:
            file.old_path = path
    elif text.startswith(b"+++ "):
        path = _strip_prefix(_unquote(text[4:].rstrip(b"\t")), b"b/")
        if path is not None:
            file.new_path = path
    elif text.startswith(b"Binary files ") or text == b"GIT binary patch":
        file.binary = True


def _freeze(
    builder: _CommitBuilder, file: _File | None, bounds: DiffBounds, shallow: frozenset[str]
) -> Commit:
    if file is not None:
        _close_file(builder, file)
    fields = builder.header[2 : -len(_HEADER_END)].split(b"\x00")
    if len(fields) > len(_FIELDS):
        # A message holding NUL bytes (git accepts them from commit-tree): keep it whole.
        fields[len(_FIELDS) - 1 :] = [b"\x00".join(fields[len(_FIELDS) - 1 :])]
    fields += [b""] * (len(_FIELDS) - len(fields))
    sha, parents, an, ae, ad, cn, ce, cd, subject, body = (
        f.decode("utf-8", "replace") for f in fields
    )
    authored, author_offset = _raw_date(ad)
    committed, committer_offset = _raw_date(cd)
    files = tuple(f.freeze() for f in builder.files)
    truncated = builder.omitted > 0 or any(f.truncated for f in files)
    return Commit(
        hash=sha,
        parents=tuple(parents.split()),
        author=an,
        author_email=ae,
        authored=authored,
        committer=cn,
        committer_email=ce,
        committed=committed,
        subject=subject,
        body=body.strip("\n"),
        files=files,
        files_omitted=builder.omitted,
        diff_truncated=truncated,
        grafted=sha in shallow,
        author_offset=author_offset,
        committer_offset=committer_offset,
        bounds=bounds,
    )


def _raw_date(raw: str) -> tuple[float, int]:
    """``1670347582 +0800`` -> (epoch seconds, offset in minutes east of UTC)."""
    stamp, _, zone = raw.strip().partition(" ")
    try:
        seconds = float(stamp)
    except ValueError:
        return 0.0, 0
    if len(zone) == 5 and zone[0] in "+-" and zone[1:].isdigit():
        minutes = int(zone[1:3]) * 60 + int(zone[3:])
        return seconds, -minutes if zone[0] == "-" else minutes
    return seconds, 0


def _hunk_text(lines: list[bytes]) -> str:
    text = b"".join(lines).decode("utf-8", "replace")
    return text.replace("\r\n", "\n").rstrip("\n")


def _decode_path(raw: bytes) -> str:
    return raw.decode("utf-8", "replace")


def _strip_prefix(path: bytes, prefix: bytes) -> bytes | None:
    """A ``---``/``+++`` path without its a/ or b/ prefix; None for /dev/null."""
    if path.startswith(prefix):
        return path[len(prefix) :]
    return None


# -- paths as git prints them -----------------------------------------------------------------

_ESCAPES = {
    ord("a"): 7,
    ord("b"): 8,
    ord("t"): 9,
    ord("n"): 10,
    ord("v"): 11,
    ord("f"): 12,
    ord("r"): 13,
    ord('"'): 34,
    ord("\\"): 92,
}


def _unquote(raw: bytes) -> bytes:
    """A path as git printed it, C-style quoted or not, as its bytes."""
    return _quoted_token(raw)[0] if raw.startswith(b'"') else raw


def _quoted_token(raw: bytes) -> tuple[bytes, int]:
    """The bytes of the quoted string at the start of ``raw``, and where it ends.

    git quotes a path with a tab, newline, quote, backslash or control character (and, were
    core.quotePath on, any byte over 0x7f) and writes those as ``\\t``-style or octal escapes.
    """
    out = bytearray()
    i, n = 1, len(raw)
    while i < n:
        ch = raw[i]
        if ch == 34:
            return bytes(out), i + 1
        if ch == 92 and i + 1 < n:
            nxt = raw[i + 1]
            if 48 <= nxt <= 55:
                digits = raw[i + 1 : i + 4]
                out.append(int(digits, 8) & 0xFF)
                i += 1 + len(digits)
                continue
            out.append(_ESCAPES.get(nxt, nxt))
            i += 2
            continue
        out.append(ch)
        i += 1
    return bytes(out), n


def _split_diff_paths(rest: bytes) -> tuple[bytes, bytes]:
    """The two paths of a ``diff --git a/X b/Y`` line, without their prefixes.

    Unquoted paths may hold spaces, so when both sides are plain the line is split where its
    two halves name the same file (the usual case); a rename with spaces is settled later by
    the ``rename from``/``rename to`` lines.
    """
    if rest.startswith(b'"'):
        old, end = _quoted_token(rest)
        new = _unquote(rest[end + 1 :])
    else:
        half = (len(rest) - 1) // 2
        if (
            len(rest) % 2 == 1
            and rest[half : half + 1] == b" "
            and rest[2:half] == rest[half + 3 :]
        ):
            old, new = rest[:half], rest[half + 1 :]
        else:
            quoted = rest.find(b' "b/')
            cut = quoted if quoted >= 0 else rest.find(b" b/")
            if cut < 0:
                return rest, rest
            old, new = rest[:cut], _unquote(rest[cut + 1 :])
    return old.removeprefix(b"a/"), new.removeprefix(b"b/")
