"""``[git] discover`` enters only the folders indexing a root's files enters (issue 44 item 4):
a repository in a folder the root excludes, or one its ``.gitignore`` ignores, is not found,
so its history is not indexed either."""

from __future__ import annotations

from pathlib import Path

from noteseek.engine import SearchRequest
from tests.git_repos import Repo
from tests.helpers import engine_for, write


def _repo(path: Path, subject: str, note: str) -> Repo:
    repo = Repo(path)
    repo.commit(subject, {"README.md": f"# {note}\n\n{note} text.\n"}, day=1)
    return repo


def test_discovery_honours_the_roots_excludes_and_gitignore(tmp_path: Path) -> None:
    notes = tmp_path / "notes"
    write(notes / "index.md", "# Index\n\nThe notes.\n")
    _repo(notes / "docs", "Describe the quokka habitat", "Docs")
    _repo(notes / "vendor" / "lib", "Vendor the wombat parser", "Lib")
    _repo(notes / "build" / "cache", "Cache the numbat output", "Cache")
    write(notes / ".gitignore", "build/\n")
    folder = tmp_path / "project"
    folder.mkdir()
    (folder / ".noteseek.toml").write_text(
        f'[roots.notes]\npath = "{notes.as_posix()}"\nexclude = ["vendor/**"]\n'
        "[git]\ndiscover = true\n",
        encoding="utf-8",
    )
    with engine_for(folder) as eng:
        eng.index()
        kinds = eng.store.root_kinds()
        assert {name for name, kind in kinds.items() if kind == "git"} == {"notes.git.docs"}
        assert "notes.git.docs" in eng.roots()
        assert not any("vendor" in name or "build" in name for name in eng.roots())
        found = eng.search_commits(SearchRequest("quokka", mode="keyword")).commits
        assert [c.root for c in found] == ["notes.git.docs"]
        for word in ("wombat", "numbat"):
            assert eng.search_commits(SearchRequest(word, mode="keyword")).commits == []
        # The file walk skips the same folders: only the files outside them are indexed.
        hits = eng.search(SearchRequest("text", mode="keyword")).hits
        assert {h.path for h in hits} == {"docs/README.md"}


def test_without_excludes_every_repository_under_the_root_is_found(tmp_path: Path) -> None:
    """The same tree with nothing excluded: both repositories (the test above fails for the
    right reason, not because vendor/lib could never be found)."""
    notes = tmp_path / "notes"
    _repo(notes / "docs", "Describe the quokka habitat", "Docs")
    _repo(notes / "vendor" / "lib", "Vendor the wombat parser", "Lib")
    folder = tmp_path / "project"
    folder.mkdir()
    (folder / ".noteseek.toml").write_text(
        f'[roots.notes]\npath = "{notes.as_posix()}"\n[git]\ndiscover = true\n',
        encoding="utf-8",
    )
    with engine_for(folder) as eng:
        eng.index()
        git_roots = {n for n, k in eng.store.root_kinds().items() if k == "git"}
        assert git_roots == {"notes.git.docs", "notes.git.vendor.lib"}
