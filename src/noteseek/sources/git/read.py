"""Commits in bulk: one ``git log -p`` for a whole batch, parsed while it streams.

Indexing a history of thousands of commits must not start a git process per commit (that
alone costs more than the 300 commits/s the index aims for). A commit git cannot read (a
corrupt or missing object) does not cost the batch: the good ones are still read, and the bad
one is reported with git's reason (see :func:`read_commits`).

A partial clone (``git clone --filter=blob:none``) holds its commits and trees but not every
blob, and noteseek never fetches one (fetching runs programs the repository's configuration
names; see :mod:`noteseek.sources.git.cli`). When a diff needs a blob the clone lacks, the
commits of the batch that lack one are found at once, from their trees and the objects the
clone holds (:func:`lacking_blobs`), and read without their diff: message, people, dates and
the files they changed, with :attr:`Commit.diff_unread` saying why the diff is absent.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Iterator, Mapping
from dataclasses import dataclass, field, replace
from pathlib import Path

from noteseek.sources.git.cli import (
    GitError,
    GitMissing,
    is_hash,
    shallow_commits,
    stream,
)
from noteseek.sources.git.log import (
    LOG_ARGS,
    RAW_ARGS,
    READ_LIMIT,
    Commit,
    DiffBounds,
    parse_log,
)

_MISSING = re.compile(r"could not fetch ([0-9a-f]+) from promisor remote")
"""git's reason when it needs an object a partial clone lacks (lazy fetching is off)."""

_OBJECTS_ARGS = (
    "log",
    "--no-walk=unsorted",
    "--stdin",
    "--raw",
    "--no-renames",
    "--no-abbrev",
    "--root",
    "--diff-merges=first-parent",
    "--format=%x00%H",
)
"""Each commit's hash, then a ``--raw`` line per changed file with its old and new object."""
_BLOB_MODES = frozenset({b"100644", b"100755", b"120000"})
"""Modes whose objects are blobs (not a submodule's commit, not an absent side)."""


def read_commits(
    repo: Path | str, hashes: Iterable[str], bounds: DiffBounds | None = None
) -> Iterator[tuple[str, Commit | str]]:
    """Read ``hashes`` (full commit hashes) with one git process; yield (hash, Commit), or
    (hash, reason) for each that cannot be read.

    When git fails part way (a corrupt or missing object), the commits already read are kept,
    the one it was on is tried alone, and the rest are read again; a failure before any output
    (git checks every named object first) splits the batch in halves until the bad commits are
    alone. The first failure for a blob a partial clone lacks looks up which of the commits
    left lack one, and reads those without their diff. Each good commit is yielded once; the
    order follows ``hashes`` except around retries. Raises GitMissing only when git itself
    cannot run.
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
    partial = False
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
        missing = _MISSING.search(outcome.reason)
        if missing is not None and not partial:
            # A partial clone: find every commit left that lacks a blob at once, rather than
            # by one failing git process per commit.
            partial = True
            left = rest + [sha for b in work for sha in b]
            lacking = lacking_blobs(repo, left)
            yield from _without_diff(repo, lacking, bounds, shallow)
            complete = [sha for sha in left if sha not in lacking]
            work = [complete] if complete else []
        elif len(rest) == 1:
            if missing is None:
                yield rest[0], outcome.reason
            else:
                yield from _without_diff(repo, {rest[0]: missing.group(1)}, bounds, shallow)
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


# -- partial clones ---------------------------------------------------------------------------


def lacking_blobs(repo: Path | str, hashes: list[str]) -> dict[str, str]:
    """Commit -> a blob its diff needs that the repository lacks, for the commits of
    ``hashes`` that lack one; {} when that cannot be told.

    Read from the commits' trees (one ``git log --raw``: each changed file's old and new
    object) and the objects the repository holds (one ``git cat-file --batch-all-objects``,
    which lists what is there and never fetches).
    """
    try:
        present = _present_blobs(repo)
        lacking: dict[str, str] = {}
        stdin = "".join(f"{sha}\n" for sha in hashes).encode("ascii")
        with stream(repo, _OBJECTS_ARGS, stdin=stdin) as proc:
            sha = ""
            for line in iter(lambda: proc.stdout.readline(READ_LIMIT), b""):
                if line.startswith(b"\x00"):
                    sha = line[1:].strip().decode("ascii", "replace")
                elif line.startswith(b":") and sha and sha not in lacking:
                    fields = line.partition(b"\t")[0][1:].split()
                    for mode, oid in zip(fields[:2], fields[2:4], strict=False):
                        if mode in _BLOB_MODES and oid not in present:
                            lacking[sha] = oid.decode("ascii", "replace")
                            break
            code, _ = proc.finish()
    except GitMissing:
        raise
    except GitError:
        return {}
    return lacking if code == 0 else {}


def _present_blobs(repo: Path | str) -> set[bytes]:
    """The names of the blobs the repository holds (in a partial clone, the few it fetched)."""
    found: set[bytes] = set()
    args = [
        "cat-file",
        "--batch-all-objects",
        "--unordered",
        "--batch-check=%(objecttype) %(objectname)",
    ]
    with stream(repo, args) as proc:
        for line in proc.stdout:
            if line.startswith(b"blob "):
                found.add(line[5:].rstrip(b"\n"))
        code, reason = proc.finish()
    if code != 0:
        raise GitError(reason)
    return found


def _without_diff(
    repo: Path | str, lacking: Mapping[str, str], bounds: DiffBounds, shallow: frozenset[str]
) -> Iterator[tuple[str, Commit | str]]:
    """The commits of ``lacking`` (commit -> a blob it lacks) read without blobs, each with
    :attr:`Commit.diff_unread` saying why; (commit, reason) for one that cannot be read."""
    if not lacking:
        return
    read: dict[str, Commit] = {}
    stdin = "".join(f"{sha}\n" for sha in lacking).encode("ascii")
    try:
        with stream(repo, RAW_ARGS, stdin=stdin) as proc:
            for commit in parse_log(proc.stdout, bounds, shallow):
                if commit.hash in lacking:
                    read[commit.hash] = commit
            code, _ = proc.finish()
    except GitMissing:
        raise
    except GitError:
        code = -1
    for sha, blob in lacking.items():
        missing = (
            f"object {blob[:12]} is missing from this partial clone and noteseek never fetches"
        )
        found = read.get(sha) if code == 0 else None
        if found is None:
            yield sha, missing
        else:
            why = f"the diff is not indexed: {missing} (its message and changed files are)"
            yield sha, replace(found, diff_unread=why)
