"""Edges of memory frontmatter and of captures (issue 44): a file whose frontmatter never
closes, updated through the CLI, keeps its text and gets plain block-style frontmatter (no
``!!timestamp`` tag, no flow mapping) even when its time has an offset YAML cannot write
(R15); and a session is captured into the daily log while ``index.db`` is damaged (R10)."""

from __future__ import annotations

import datetime as dt
import os
import re
from pathlib import Path

from noteseek.sources.memory.format import render_frontmatter
from tests.helpers import project, run_cli, write
from tests.test_hooks import NO_EMBEDDING, SESSION_ONE, common, hook, transcript

UNCLOSED = "---\nThis note starts with a rule: {not: yaml}\n\nThe kettle is descaled monthly.\n"
ISO = r"\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}(?:[+-]\d{2}:\d{2})?"
# 1930-01-01 00:00 UTC: Amsterdam kept its local mean time (+00:19:32) until 1937, an offset
# with seconds, which YAML's timestamp form cannot hold.
OLD_MTIME = int(dt.datetime(1930, 1, 1, tzinfo=dt.UTC).timestamp())


def _project(tmp_path: Path) -> Path:
    write(tmp_path / "notes" / "readme.md", "# Project\n\nThe installer is built nightly.\n")
    return project(tmp_path, {"notes": tmp_path / "notes"}, NO_EMBEDDING)


def test_an_unclosed_frontmatter_is_text_and_the_update_writes_plain_block_yaml(
    tmp_path: Path,
) -> None:
    folder = _project(tmp_path)
    note = write(folder / ".memories" / "kettle.md", UNCLOSED)
    os.utime(note, (OLD_MTIME, OLD_MTIME))
    done = run_cli(["memory", "update", "kettle", "--tag", "x"], folder, {"TZ": "Europe/Amsterdam"})
    assert "updated memory 'kettle'" in done.stdout
    text = note.read_text(encoding="utf-8")
    assert "!!" not in text and "{not: yaml}" in text  # the only "{" is the person's own
    updated = re.search(rf"^updated_at: ({ISO})$", text, re.MULTILINE)
    assert updated is not None, text
    assert text == (
        "---\ntags: [x]\n"
        "created_at: 1930-01-01T00:00:00+00:00\n"  # the file's time, in UTC: no tag needed
        f"updated_at: {updated.group(1)}\n---\n\n" + UNCLOSED
    )
    # Read back, the first line of the person's text is text, and the dates are dates.
    shown = run_cli(["memory", "show", "kettle", "--json"], folder).stdout
    assert "The kettle is descaled monthly." in shown and "1930-01-01T00:00:00+00:00" in shown


def test_frontmatter_is_written_in_block_style_with_untagged_dates() -> None:
    lmt = dt.timezone(dt.timedelta(minutes=19, seconds=32))
    out = render_frontmatter(
        {
            "created_at": dt.datetime(1930, 1, 1, 0, 19, 32, tzinfo=lmt),
            "extra": {"k": [1, 2], "deeper": {"a": 1}},
            "tags": ["a", "b"],
        }
    )
    assert out == (
        "---\ncreated_at: 1930-01-01T00:00:00+00:00\n"
        "extra:\n  k: [1, 2]\n  deeper:\n    a: 1\n"
        "tags: [a, b]\n---\n"
    )


def test_a_session_is_captured_while_the_index_is_damaged(tmp_path: Path) -> None:
    folder = _project(tmp_path)
    run_cli(["index"], folder)
    db = folder / ".noteseek" / "index.db"
    with db.open("r+b") as fh:  # the header is gone: "file is not a database"
        fh.write(b"this is not an sqlite header at all")
    path = transcript(folder / "transcripts" / "s1.jsonl", SESSION_ONE[:2])
    stop = {**common(folder, "Stop", "s1"), "transcript_path": str(path), "stop_hook_active": False}
    said = hook("stop", stop, "--wait", "--strict").stderr
    logs = list((folder / ".memories" / "memory").glob("*.md"))
    assert len(logs) == 1, said
    log = logs[0].read_text(encoding="utf-8")
    assert log.count("Session `s1`") == 1 and "MAX_PATH" in log
    assert said.count("\n") == 1 and "noteseek hook stop: wrote memory/" in said, said
    # The files are the truth: the index, a cache, is whole again afterwards.
    assert "MAX_PATH" in run_cli(["memory", "search", "MAX_PATH"], folder).stdout
