"""The git source on real repositories: history rewrites, bad input, watching, the bundle."""

from __future__ import annotations

import shutil
import subprocess
import time
from pathlib import Path

import pytest

from noteseek.config import IndexSettings, RootConfig
from noteseek.sources.base import ReadError, SourceContext
from noteseek.sources.git import GIT_KIND
from noteseek.sources.git import cli as git_cli
from noteseek.sources.git.log import Commit
from noteseek.sources.git.source import GitSource, find_repositories
from noteseek.sources.registry import open_source
from tests.git_repos import Repo, git

SHARED_DATA = Path(__file__).resolve().parents[2] / "shared" / "data"


def source(path: Path, name: str = "history") -> GitSource:
    context = SourceContext(index=IndexSettings(), index_dir=path / ".noteseek-index")
    built = open_source(name, RootConfig(path=str(path), kind=GIT_KIND), context)
    assert isinstance(built, GitSource)
    return built


def scanned(src: GitSource) -> list[str]:
    result = src.scan()
    assert result.problems == [] and result.unreadable == []
    return [f.path for f in result.files]


def test_scan_lists_reachable_commits_sorted_with_fixed_fingerprints(tmp_path: Path) -> None:
    repo = Repo(tmp_path / "r")
    shas = [repo.commit(f"c{i}", {"a.md": f"{i}\n"}) for i in range(3)]
    (repo.path / "docs").mkdir()
    src = source(repo.path / "docs")  # A folder inside the work tree names its repository.
    assert src.location == str(repo.path.resolve()) and src.repository == repo.path.resolve()
    result = src.scan()
    assert [f.path for f in result.files] == sorted(shas)
    first = result.files[0]
    assert first.root == "history" and first.abspath == "" and first.size == 0
    when = int(repo.git("show", "-s", "--format=%ct", first.path))
    assert first.mtime_ns == when * 1_000_000_000
    fingerprint = src.fingerprint(first.path)
    assert fingerprint is not None and fingerprint.mtime_ns == first.mtime_ns
    assert src.inside(first.path) and not src.inside("../etc/passwd")
    assert src.locate(repo.path / "a.md") is None
    assert src.watch_folder() == (repo.path / ".git").resolve()
    text = src.read(shas[-1]).decode("utf-8")
    assert text.startswith("# c2\n") and "## `a.md` (modified, +1 −1)" in text
    assert len(src.read(shas[-1], 10)) == 10
    got = dict(src.commits(shas))
    assert all(isinstance(got[s], Commit) for s in shas)


def test_a_scan_where_no_ref_moved_lists_nothing_again(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    repo = Repo(tmp_path / "r")
    repo.commit("one", {"a.md": "1\n"})
    src = source(repo.path)
    calls = []
    real = git_cli.reachable

    def counted(path: Path | str) -> list[tuple[str, int]]:
        calls.append(path)
        return real(path)

    monkeypatch.setattr("noteseek.sources.git.source.reachable", counted)
    first = scanned(src)
    assert scanned(src) == first and len(calls) == 1
    repo.commit("two", {"a.md": "2\n"})
    assert len(scanned(src)) == 2 and len(calls) == 2


def test_amend_and_rebase_drop_the_old_commits(tmp_path: Path) -> None:
    repo = Repo(tmp_path / "r")
    base = repo.commit("base", {"a.md": "a\n"})
    draft = repo.commit("draft", {"b.md": "b\n"})
    src = source(repo.path)
    assert scanned(src) == sorted([base, draft])
    repo.git("commit", "-q", "--amend", "-m", "final")
    amended = repo.head()
    assert scanned(src) == sorted([base, amended])
    # A rebase onto a new commit of main rewrites the branch's commits.
    repo.git("checkout", "-q", "-b", "topic")
    topic = repo.commit("topic work", {"c.md": "c\n"})
    repo.git("checkout", "-q", "main")
    other = repo.commit("main moves", {"d.md": "d\n"})
    repo.git("checkout", "-q", "topic")
    repo.git("rebase", "-q", "main")
    rebased = repo.head()
    assert rebased != topic
    assert scanned(src) == sorted([base, amended, other, rebased])
    # Deleting the branch drops what only it reached.
    repo.git("checkout", "-q", "main")
    repo.git("branch", "-q", "-D", "topic")
    assert scanned(src) == sorted([base, amended, other])
    # The old commits are still objects: they read, but no scan lists them.
    assert src.inside(draft) and src.read(draft).startswith(b"# draft")


def test_force_push_rewrites_leave_the_bare_remote_and_a_fetching_clone(tmp_path: Path) -> None:
    git(tmp_path, "init", "-q", "--bare", "-b", "main", "remote.git")
    remote = tmp_path / "remote.git"
    alice = Repo(tmp_path / "alice")
    alice.git("remote", "add", "origin", str(remote))
    base = alice.commit("base", {"a.md": "a\n"})
    alice.git("push", "-q", "origin", "main")
    git(tmp_path, "clone", "-q", str(remote), "bob")
    bob = tmp_path / "bob"
    oops = alice.commit("oops", {"secret.md": "password\n"})
    alice.git("push", "-q", "origin", "main")
    git(bob, "fetch", "-q")
    bare, clone = source(remote, "remote"), source(bob, "bob")
    assert bare.location == str(remote.resolve()) and bare.watch_folder() == remote.resolve()
    assert scanned(bare) == sorted([base, oops]) == scanned(clone)
    alice.git("commit", "-q", "--amend", "-m", "fixed", "--allow-empty")
    fixed = alice.head()
    alice.git("push", "-q", "--force", "origin", "main")
    git(bob, "fetch", "-q")
    assert scanned(bare) == sorted([base, fixed]) == scanned(clone)


def test_worktree_source_watches_the_common_git_dir(tmp_path: Path) -> None:
    repo = Repo(tmp_path / "r")
    repo.commit("base", {"a.md": "a\n"})
    repo.git("worktree", "add", "-q", "-b", "wt", str(tmp_path / "wt"))
    wt = Repo(tmp_path / "wt", init=False)
    extra = wt.commit("in the worktree", {"w.md": "w\n"})
    src = source(tmp_path / "wt")
    assert src.location == str((tmp_path / "wt").resolve())
    assert src.watch_folder() == (repo.path / ".git").resolve()
    assert extra in scanned(src)


def test_watched_paths_that_move_refs_ask_for_a_full_scan(tmp_path: Path) -> None:
    repo = Repo(tmp_path / "r")
    repo.commit("base", {"a.md": "a\n"})
    src = source(repo.path)
    for rel in ["HEAD", "refs/heads/main", "refs/heads/logs/x", "packed-refs", "shallow"]:
        assert src.scan_paths([rel]).needs_full_scan, rel
    assert src.scan_paths(["worktrees/wt/HEAD", "ORIG_HEAD"]).needs_full_scan
    for rel in ["objects/ab/cdef", "index", "refs/heads/main.lock", "logs/HEAD", "config"]:
        judged = src.scan_paths([rel])
        assert not judged.needs_full_scan and judged.files == [] and judged.gone == [], rel


def test_no_commits_is_empty_and_not_a_problem(tmp_path: Path) -> None:
    repo = Repo(tmp_path / "r")
    src = source(repo.path)
    assert scanned(src) == []
    assert src.watch_folder() == (repo.path / ".git").resolve()


@pytest.mark.parametrize("kind", ["plain folder", "absent"])
def test_not_a_repository_is_reported_never_raised(tmp_path: Path, kind: str) -> None:
    folder = tmp_path / "folder"
    if kind == "plain folder":
        folder.mkdir()
    src = source(folder)
    result = src.scan()
    assert result.files == [] and result.unreadable == ["."]
    [(where, reason)] = result.problems
    assert where == "."
    expected = "not a git repository" if kind == "plain folder" else "does not exist"
    assert expected in reason
    assert src.watch_folder() is None and src.repository is None
    assert src.fingerprint("0" * 40) is None and not src.inside("0" * 40)
    with pytest.raises(ReadError):
        src.read("0" * 40)
    assert [reason for _, reason in src.commits(["0" * 40])] != [""]
    assert src.scan_paths(["HEAD"]).needs_full_scan


def test_unknown_hashes_are_read_errors(tmp_path: Path) -> None:
    repo = Repo(tmp_path / "r")
    repo.commit("base", {"a.md": "a\n"})
    src = source(repo.path)
    for bad in ["0" * 40, "HEAD", "--output=/tmp/x", ""]:
        with pytest.raises(ReadError):
            src.read(bad)
        assert src.fingerprint(bad) is None and not src.inside(bad)


def test_git_missing_says_so(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    repo = Repo(tmp_path / "r")
    sha = repo.commit("base", {"a.md": "a\n"})
    empty = tmp_path / "no-git-here"
    empty.mkdir()
    monkeypatch.setenv("PATH", str(empty))
    src = source(repo.path)
    result = src.scan()
    assert result.unreadable == ["."]
    [(_, reason)] = result.problems
    assert "git is not installed or not on PATH" in reason
    with pytest.raises(ReadError, match="git is not installed"):
        src.read(sha)
    with pytest.raises(git_cli.GitMissing):
        git_cli.reachable(repo.path)


def test_find_repositories_stops_at_git_and_skips_hidden_links_and_excludes(
    tmp_path: Path,
) -> None:
    top = tmp_path / "notes"
    Repo(top / "a")
    Repo(top / "a" / "nested")  # Inside another repository: part of it, not listed.
    Repo(top / "deep" / "er" / "b")
    Repo(top / ".hidden" / "c")
    Repo(top / "skipped" / "d")
    Repo(top / "excluded" / "e")
    git(top, "init", "-q", "--bare", "bare.git")
    (top / "link").symlink_to(top / "deep")
    found = find_repositories(
        top, exclude_dirs=[top / "excluded"], skip=lambda rel: rel == "skipped/"
    )
    assert found == sorted([top / "a", top / "bare.git", top / "deep" / "er" / "b"])
    assert find_repositories(top, max_depth=1) == sorted([top / "a", top / "bare.git"])
    assert find_repositories(top / "a") == [top / "a"]


def test_the_dendron_site_history(tmp_path: Path) -> None:
    bundle = SHARED_DATA / "git" / "dendron-site.bundle"
    if not bundle.exists():
        pytest.skip(f"shared data {bundle} is absent (CI has it)")
    subprocess.run(["git", "clone", "-q", str(bundle), str(tmp_path / "d")], check=True)
    src = source(tmp_path / "d")
    files = scanned(src)
    assert len(files) == 4301  # As ../shared/data/README.md states.
    start = time.perf_counter()
    got = list(src.commits(files))
    elapsed = time.perf_counter() - start
    reasons = [(sha, c) for sha, c in got if isinstance(c, str)]
    assert reasons == [] and len(got) == 4301
    rate = len(got) / elapsed
    print(f"read {len(got)} commits in {elapsed:.2f} s: {rate:.0f} commits/s")
    assert rate > 300
    assert shutil.which("git") is not None
