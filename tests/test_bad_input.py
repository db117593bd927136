"""Bad files are reported with a reason and skipped; they never stop a run."""

from __future__ import annotations

import builtins
import os
from pathlib import Path
from typing import Any

import pytest

from noteseek.engine import SearchRequest
from tests.helpers import engine_for, project, write


@pytest.fixture
def messy(tmp_path: Path) -> Path:
    notes = tmp_path / "notes"
    write(notes / "good.md", "# Good\n\nA perfectly fine note about lanterns.\n")
    (notes / "binary.md").write_bytes(b"\x89PNG\r\n\x1a\n\x00\x00\x00\rIHDR" + bytes(range(256)))
    (notes / "latin1.md").write_bytes("# Caf\xe9\n\nlantern caf\xe9 cr\xe8me\n".encode("latin-1"))
    (notes / "utf16.md").write_bytes("# Wide\n\nlantern in UTF-16\n".encode("utf-16"))
    write(notes / "huge.md", "# Huge\n\n" + "lantern " * 20_000)
    write(notes / "empty.md", "")
    write(notes / "blank.md", "   \n\n  \n")
    write(notes / "frontmatter-only.md", "---\ntitle: Only metadata\ntags: [lanternish]\n---\n")
    write(
        notes / "bad-yaml.md", "---\ntitle: [unclosed\n---\n# Bad YAML\n\nlantern body survives\n"
    )
    os.symlink(notes, notes / "loop")
    os.symlink(notes / "missing-target.md", notes / "dangling.md")
    write(notes / "locked.md", "# Locked\n\nlantern\n")
    return tmp_path


def test_every_bad_file_is_reported_and_the_rest_indexed(
    messy: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    real_open = builtins.open

    def guarded(file: Any, *args: Any, **kwargs: Any) -> Any:
        # Root can read anything, so simulate an unreadable file at the open() call.
        if str(file).endswith("locked.md"):
            raise PermissionError(13, "Permission denied")
        return real_open(file, *args, **kwargs)

    monkeypatch.setattr(builtins, "open", guarded)
    with engine_for(
        project(messy, {"n": messy / "notes"}), **{"index.max_file_size": 100_000}
    ) as engine:
        report = engine.index()
        reasons = {p["path"]: p["reason"] for p in report.problems}
        assert "binary" in reasons["binary.md"]
        assert "invalid UTF-8 at byte" in reasons["latin1.md"]
        assert "size limit" in reasons["huge.md"]
        assert reasons["empty.md"] == "empty file"
        assert reasons["blank.md"] == "empty file"
        assert "no body text" in reasons["frontmatter-only.md"]
        assert "frontmatter" in reasons["bad-yaml.md"].lower()
        assert "loop" in reasons["loop"]
        assert "broken symbolic link" in reasons["dangling.md"]
        assert "unreadable" in reasons["locked.md"]

        found = {h.path for h in engine.search(SearchRequest("lantern", top_k=50)).hits}
        assert found == {"good.md", "latin1.md", "utf16.md", "bad-yaml.md"}
        assert engine.search(SearchRequest("lanternish")).hits[0].path == "frontmatter-only.md"

        status = engine.status()
        status_reasons = {p["path"]: p["reason"] for p in status["problems"]}
        assert "binary" in status_reasons["binary.md"]
        assert "loop" in status_reasons["loop"]


def test_skipped_files_are_not_reread_until_they_change(messy: Path) -> None:
    with engine_for(
        project(messy, {"n": messy / "notes"}), **{"index.max_file_size": 100_000}
    ) as engine:
        engine.index()
        again = engine.index()
        assert again.added == again.updated == 0
        # Problems stay visible in status while the files are unchanged.
        assert any(p["path"] == "binary.md" for p in engine.status()["problems"])
        write(messy / "notes" / "binary.md", "# Fixed\n\nnow a lantern note\n")
        fixed = engine.index()
        assert fixed.added == 1
        assert not any(p["path"] == "binary.md" for p in engine.status()["problems"])


def test_a_file_that_turns_bad_loses_its_old_copy(tmp_path: Path) -> None:
    notes = tmp_path / "notes"
    write(notes / "a.md", "# A\n\nbeacon\n")
    with engine_for(project(tmp_path, {"n": notes})) as engine:
        engine.index()
        assert engine.search(SearchRequest("beacon")).hits
        (notes / "a.md").write_bytes(b"\x00\x01beacon")
        report = engine.index()
        assert report.removed == 1
        assert not engine.search(SearchRequest("beacon")).hits
