"""The commit that added a page is found by the page's name (issue 34 item 4): each file a
commit adds gets a short name row (title = the page's title, aliases = the file name), so it
outranks the later edits and merges whose short rows name the same file."""

from __future__ import annotations

from pathlib import Path

import pytest

from noteseek.analysis import Analyzer
from noteseek.engine import SearchRequest
from noteseek.indexing.commits import prepare_commit
from noteseek.sources.base import FoundFile
from noteseek.sources.git.log import Commit, FileChange
from noteseek.sources.git.render import render_commit
from tests.git_repos import Repo
from tests.helpers import engine_for, project

LONG = "".join(f"Line {i}: water the beds at dawn, then mulch.\n" for i in range(40))


def page(title: str, updated: int, body: str = LONG) -> str:
    return f"---\nid: abc\ntitle: {title}\nupdated: {updated}\n---\n\n{body}"


@pytest.fixture
def history(tmp_path: Path) -> tuple[Path, dict[str, str]]:
    """A long page added, then edited many times (each edit rewrites ``updated:`` and one line,
    as Dendron does), merged from a branch, and deleted and added again elsewhere."""
    repo = Repo(tmp_path / "repo")
    made = {"base": repo.commit("start", {"notes/root.md": "# Root\n"})}
    path = "notes/garden.seed-calendar.md"
    made["wrote"] = repo.commit("sync", {path: page("Seed Calendar", 1)})
    for n in range(2, 6):
        body = LONG.replace("Line 3:", f"Line 3 (seed calendar, take {n}):")
        repo.commit(f"update {n}", {path: page("Seed Calendar", n, body)})
    made["edit-subject"] = repo.commit(
        "fix a typo in the seed calendar", {path: page("Seed Calendar", 9, LONG + "Done.\n")}
    )
    repo.git("checkout", "-q", "-b", "topic")
    made["branch-wrote"] = repo.commit(
        "sync", {"notes/garden.pest-control.md": page("Pest Control", 1)}
    )
    repo.git("checkout", "-q", "main")
    repo.commit("tidy", {"notes/root.md": "# Root\n\nAll notes.\n"})
    repo.git("merge", "-q", "--no-ff", "topic", "-m", "Merge branch 'topic'")
    made["merge"] = repo.head()
    made["h1"] = repo.commit("sync", {"notes/p17.md": "# Compost Heaps\n\n" + LONG})
    repo.commit("sync", {"notes/p17.md": "# Compost Heaps\n\nCompost heaps, turned.\n" + LONG})
    folder = tmp_path / "project"
    folder.mkdir()
    project(folder, {"docs": repo.path / "notes"})
    with (folder / ".noteseek.toml").open("a", encoding="utf-8") as fh:
        fh.write(f'[roots.site]\npath = "{repo.path.as_posix()}"\nkind = "git"\n')
    return folder, made


def search(folder: Path, query: str, include_diff: bool = False):  # type: ignore[no-untyped-def]
    with engine_for(folder) as engine:
        engine.index()
        return engine.search_commits(
            SearchRequest(query, mode="keyword"), include_diff=include_diff
        ).commits


def test_the_commit_that_added_a_page_outranks_its_later_edits(
    history: tuple[Path, dict[str, str]],
) -> None:
    folder, made = history
    found = [c.hash for c in search(folder, "Seed Calendar")]
    assert found[0] == made["wrote"]
    assert made["edit-subject"] in found  # still found, below the commit that wrote the page


def test_the_commit_a_branch_added_a_page_in_outranks_the_merge(
    history: tuple[Path, dict[str, str]],
) -> None:
    folder, made = history
    found = [c.hash for c in search(folder, "pest control")]
    assert found[0] == made["branch-wrote"]
    assert made["merge"] not in found[:1]


def test_a_page_without_frontmatter_is_named_by_its_heading(
    history: tuple[Path, dict[str, str]],
) -> None:
    folder, made = history
    assert search(folder, "compost heaps")[0].hash == made["h1"]


def test_a_result_found_by_the_name_row_shows_the_added_file_and_its_first_hunk(
    history: tuple[Path, dict[str, str]],
) -> None:
    folder, made = history
    best = search(folder, "Seed Calendar", include_diff=True)[0]
    assert best.hash == made["wrote"]
    assert best.file == "notes/garden.seed-calendar.md"
    assert best.hunk is not None and best.hunk.startswith("@@")
    assert "+title: Seed Calendar" in best.hunk


def change(path: str, status: str, hunk: str) -> FileChange:
    added = sum(1 for line in hunk.split("\n") if line.startswith("+"))
    return FileChange(path, None, status, False, added, 0, (hunk,) if hunk else (), False)


def commit_of(
    *files: FileChange, parents: tuple[str, ...] = ("p",), grafted: bool = False
) -> Commit:
    return Commit(
        "a" * 40,
        parents,
        "Ada",
        "ada@example.org",
        0.0,
        "Ada",
        "",
        0.0,
        "sync",
        "",
        files=files,
        grafted=grafted,
    )


def name_rows(commit: Commit) -> list[tuple[str, str, str, str]]:
    """(text, title terms, alias terms, headings terms) of each name row of ``commit``."""
    found = FoundFile("site", commit.hash, "", 0, 0)
    prepared = prepare_commit(found, commit, render_commit(commit), Analyzer(), 900, True).prepared
    assert prepared is not None
    return [
        (c.chunk.text, c.fields[0], c.fields[1], c.fields[2])
        for c in prepared.chunks
        if c.chunk.text.startswith("## ")
    ]


@pytest.mark.parametrize(
    ("path", "hunk", "title"),
    [
        ("a/x.md", "@@ -0,0 +1,3 @@\n+---\n+title: 'Quoted Title'\n+---", "Quoted Title"),
        ("a/x.md", "@@ -0,0 +1,2 @@\n+intro\n+# Heading Title", "Heading Title"),
        ("a/rose-garden.md", "@@ -0,0 +1 @@\n+no title here", "rose-garden"),
        ("src/seed_sorter.py", "@@ -0,0 +1 @@\n+# Seed Title", "seed_sorter"),
    ],
)
def test_a_name_row_holds_the_page_title_or_the_file_name(path: str, hunk: str, title: str) -> None:
    [(text, title_terms, aliases, headings)] = name_rows(commit_of(change(path, "added", hunk)))
    assert text.startswith(f"## `{path}` (added")
    assert title_terms == Analyzer().text(title)
    assert aliases.endswith(Analyzer().text(path.rsplit("/", 1)[-1].rsplit(".", 1)[0]))
    assert headings == Analyzer().text(path)


def test_only_a_commit_that_adds_a_file_has_a_name_row() -> None:
    edit = change("a/x.md", "modified", "@@ -1 +1 @@\n-old\n+title: New")
    assert name_rows(commit_of(edit)) == []
    added = change("a/x.md", "added", "@@ -0,0 +1 @@\n+# X")
    assert name_rows(commit_of(added, parents=("p", "q"))) == []  # a merge carried it
    # A shallow clone's boundary shows every file as added: it wrote none of them.
    assert name_rows(commit_of(added, parents=(), grafted=True)) == []
    assert len(name_rows(commit_of(added))) == 1
