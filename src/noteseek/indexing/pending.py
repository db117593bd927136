"""Writes waiting for the writer role: a journal in the index folder.

A process that writes documents (an agent's memory) but is not the index's writer records the
paths here before it answers, so the write is indexed whichever process holds the role: a live
writer takes the journal on its next turn, a one-shot writer (``noteseek index``) before it
gives the role up and again just after, and any process that takes the role later at once.

Each record is one line appended with ``O_APPEND`` (one ``write`` call, far below the size the
system appends atomically), so writers in several processes never interleave. Taking the
journal renames it first: records appended meanwhile land in a new journal, and none is read
twice or lost.
"""

from __future__ import annotations

import json
import os
from collections.abc import Iterable
from pathlib import Path

JOURNAL = "pending-writes.jsonl"
MAX_RECORD = 3_500
"""Bytes of one record's line at most; more paths are split over several lines (appends
below 4 KiB are atomic on every local file system)."""

Pending = dict[str, set[str]]
"""Root name -> root-relative paths written and not indexed yet."""


def record(index_dir: Path, root: str, rels: Iterable[str]) -> None:
    """Append ``rels`` of ``root`` to the journal (made durable before returning)."""
    lines: list[bytes] = []
    batch: list[str] = []
    for rel in sorted(set(rels)):
        batch.append(rel)
        line = _line(root, batch)
        if len(line) > MAX_RECORD and len(batch) > 1:
            lines.append(_line(root, batch[:-1]))
            batch = [rel]
    if batch:
        lines.append(_line(root, batch))
    index_dir.mkdir(parents=True, exist_ok=True)
    fd = os.open(index_dir / JOURNAL, os.O_WRONLY | os.O_CREAT | os.O_APPEND, 0o600)
    try:
        for line in lines:
            os.write(fd, line)
        os.fsync(fd)
    finally:
        os.close(fd)


def _line(root: str, rels: list[str]) -> bytes:
    return (json.dumps({"root": root, "paths": rels}, ensure_ascii=False) + "\n").encode()


def waiting(index_dir: Path) -> bool:
    """Whether any write is waiting (one stat)."""
    try:
        return (index_dir / JOURNAL).stat().st_size > 0
    except OSError:
        return False


def take(index_dir: Path) -> Pending:
    """Every waiting write, removed from the journal (by the writer, which indexes them).
    A line that cannot be read (cut by a crash mid-write) is skipped: the files it named are
    still found by the next reconciliation."""
    journal = index_dir / JOURNAL
    taken = index_dir / f"{JOURNAL}.{os.getpid()}.taken"
    try:
        os.replace(journal, taken)
    except FileNotFoundError:
        return {}
    pending: Pending = {}
    try:
        for line in taken.read_bytes().splitlines():
            try:
                item = json.loads(line)
                root, rels = str(item["root"]), [str(p) for p in item["paths"]]
            except (ValueError, KeyError, TypeError):
                continue
            pending.setdefault(root, set()).update(rels)
    finally:
        taken.unlink(missing_ok=True)
    return pending


def give_back(index_dir: Path, pending: Pending) -> None:
    """Put writes that could not be indexed now back in the journal."""
    for root, rels in pending.items():
        record(index_dir, root, rels)
