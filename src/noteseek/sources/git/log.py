"""What noteseek reads of ``git log``: the commit it describes, the arguments it is run with,
and the parser that reads its output while it streams, bounded.

One commit's diff may be a generated file of millions of lines: lines past
:class:`DiffBounds` are counted but never kept, so memory stays bounded whatever the history
holds. Running git over batches of commits, and what happens when one cannot be read, is
:mod:`noteseek.sources.git.read`.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import IO

from noteseek.sources.git.paths import split_diff_paths, unquote

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
    """Files the commit changed past :attr:`DiffBounds.max_listed_files`: counted, not listed."""
    omitted_added: int = 0
    """Lines added in the files left out of :attr:`files`."""
    omitted_removed: int = 0
    diff_truncated: bool = False
    grafted: bool = False
    """A shallow clone's boundary: its parents are not in the clone, so its diff is against
    nothing (every file shows as added)."""
    author_offset: int = 0
    """The author's UTC offset in minutes, as recorded (for showing the date as they saw it)."""
    committer_offset: int = 0
    bounds: DiffBounds = field(default_factory=DiffBounds)
    """The bounds the diff was read with (a render states them when it was truncated)."""
    diff_unread: str = ""
    """Why the diff could not be read (a blob a partial clone lacks), when it could not: the
    files are then listed with their status only, without line counts or hunks."""

    @property
    def files_changed(self) -> int:
        """How many files the commit changed, listed or not."""
        return len(self.files) + self.files_omitted

    @property
    def insertions(self) -> int:
        """Lines added over all the files the commit changed, listed or not."""
        return sum(f.added for f in self.files) + self.omitted_added

    @property
    def deletions(self) -> int:
        return sum(f.removed for f in self.files) + self.omitted_removed


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
lines, messages re-encoded to UTF-8 from the encoding they declare, a/ and b/ prefixes.
(:func:`~noteseek.sources.git.cli.command` adds ``--no-ext-diff --no-textconv`` to every
diff-producing call anyway.)"""

_DIFF_ONLY = frozenset({"--patch", "--find-renames", "--find-copies", "--submodule=short"})
RAW_ARGS: tuple[str, ...] = (
    *(a for a in LOG_ARGS if a not in _DIFF_ONLY),
    "--raw",
    "--no-renames",
    "--no-abbrev",
)
"""The same log without blob contents: each changed file as a ``--raw`` line (status and
path, from the trees alone). Renames and copies are not looked for: finding them reads blobs."""

# -- parsing ----------------------------------------------------------------------------------


class _File:
    """A file change while its diff lines stream by."""

    __slots__ = (
        "added",
        "binary",
        "hunks",
        "listed",
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
        self.listed = True
        """False past :attr:`DiffBounds.max_listed_files`: only its line counts are kept."""

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
    __slots__ = ("files", "header", "omitted", "omitted_added", "omitted_removed", "room")

    def __init__(self, header: bytes, bounds: DiffBounds) -> None:
        self.header = header
        self.files: list[_File] = []
        self.omitted = 0
        self.omitted_added = 0
        self.omitted_removed = 0
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
        elif file is None and line.startswith(b":"):
            _raw_file(builder, line, bounds)
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
    old, new = split_diff_paths(line[len(b"diff --git ") : -1])
    count = len(builder.files) + builder.omitted
    room = min(bounds.max_lines_per_file, builder.room) if count < bounds.max_files else 0
    file = _File(old, new, room)
    if count < bounds.max_listed_files:
        builder.files.append(file)
    else:
        builder.omitted += 1
        file.listed = False
    return file


def _close_file(builder: _CommitBuilder, file: _File) -> None:
    builder.room -= file.kept()
    if not file.listed:
        builder.omitted_added += file.added
        builder.omitted_removed += file.removed


_RAW_STATUS = {b"A": "added", b"D": "deleted", b"M": "modified", b"T": "type changed"}


def _raw_file(builder: _CommitBuilder, line: bytes, bounds: DiffBounds) -> None:
    """One ``--raw`` line (``:old-mode new-mode old new STATUS\tpath``) of :data:`RAW_ARGS`."""
    meta, _, raw_path = line.rstrip(b"\n").partition(b"\t")
    if len(builder.files) >= bounds.max_listed_files:
        builder.omitted += 1
        return
    path = unquote(raw_path)
    file = _File(path, path, 0)
    file.status = _RAW_STATUS.get(meta.split()[-1][:1] if meta.split() else b"", "modified")
    builder.files.append(file)


def _file_header_line(file: _File, line: bytes) -> None:
    """The extended header lines between ``diff --git`` and the first hunk."""
    text = line.rstrip(b"\n")
    if text.startswith(b"rename from "):
        file.status, file.old_path = "renamed", unquote(text[12:])
    elif text.startswith(b"rename to "):
        file.status, file.new_path = "renamed", unquote(text[10:])
    elif text.startswith(b"copy from "):
        file.status, file.old_path = "copied", unquote(text[10:])
    elif text.startswith(b"copy to "):
        file.status, file.new_path = "copied", unquote(text[8:])
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
        path = _strip_prefix(unquote(text[4:].rstrip(b"\t")), b"a/")
        if path is not None:
            file.old_path = path
    elif text.startswith(b"+++ "):
        path = _strip_prefix(unquote(text[4:].rstrip(b"\t")), b"b/")
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
        omitted_added=builder.omitted_added,
        omitted_removed=builder.omitted_removed,
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
