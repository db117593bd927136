"""Reading commits with one ``git log -p`` and rendering them: real repositories, no mocks."""

from __future__ import annotations

import os
from pathlib import Path

from noteseek.sources.git import cli as git_cli
from noteseek.sources.git.log import Commit, DiffBounds, FileChange
from noteseek.sources.git.read import read_commits
from noteseek.sources.git.render import render_commit
from tests.git_repos import Repo, git, loose_object


def read_one(repo: Path, sha: str, bounds: DiffBounds | None = None) -> Commit:
    [(got, commit)] = list(read_commits(repo, [sha], bounds))
    assert got == sha
    assert isinstance(commit, Commit), commit
    return commit


def by_path(commit: Commit) -> dict[str, FileChange]:
    return {f.path: f for f in commit.files}


def test_a_commit_with_its_message_people_dates_and_hunks(tmp_path: Path) -> None:
    repo = Repo(tmp_path / "r")
    first = repo.commit("Add notes\n\nWhy: the team needs them.", {"notes.md": "one\ntwo\n"})
    second = repo.commit("Edit notes", {"notes.md": "one\n2\n"})
    c = read_one(repo.path, second)
    assert c.hash == second and c.parents == (first,)
    assert (c.author, c.author_email) == ("Ada Author", "ada@example.org")
    assert c.committer == "Ada Author"
    assert c.subject == "Edit notes" and c.body == ""
    assert c.author_offset == 120 and c.committed == c.authored
    [f] = c.files
    assert (f.path, f.status, f.added, f.removed, f.binary) == ("notes.md", "modified", 1, 1, False)
    assert f.hunks == ("@@ -1,2 +1,2 @@\n one\n-two\n+2",)
    root = read_one(repo.path, first)
    assert root.parents == () and root.body == "Why: the team needs them."
    assert root.files[0].status == "added" and root.files[0].added == 2


def test_merge_is_diffed_against_its_first_parent_only(tmp_path: Path) -> None:
    repo = Repo(tmp_path / "r")
    repo.commit("base", {"a.md": "a\n", "b.md": "b\n"})
    repo.git("checkout", "-q", "-b", "side")
    repo.commit("side change", {"b.md": "b side\n"})
    repo.git("checkout", "-q", "main")
    repo.commit("main change", {"a.md": "a main\n"})
    repo.git("merge", "-q", "--no-edit", "side")
    merge = read_one(repo.path, repo.head())
    assert len(merge.parents) == 2
    # Against the first parent (main), only the side branch's change shows.
    assert [f.path for f in merge.files] == ["b.md"]
    text = render_commit(merge).text
    assert "diff is against the first parent" in text


def test_rename_copy_delete_mode_and_submodule_changes(tmp_path: Path) -> None:
    repo = Repo(tmp_path / "r")
    body = "".join(f"line {i}\n" for i in range(40))
    repo.commit("base", {"old name.md": body, "tool.sh": "echo hi\n", "dead.md": "x\n"})
    repo.git("mv", "old name.md", "new name.md")
    repo.write("dead.md", None)
    os.chmod(repo.path / "tool.sh", 0o755)
    sha = repo.commit("rename, delete, chmod")
    files = by_path(read_one(repo.path, sha))
    assert files["new name.md"].status == "renamed"
    assert files["new name.md"].old_path == "old name.md"
    assert files["dead.md"].status == "deleted" and files["dead.md"].removed == 1
    assert files["tool.sh"].status == "modified" and files["tool.sh"].hunks == ()
    # A submodule is a gitlink in the tree: its diff is a "Subproject commit" line.
    repo.git("update-index", "--add", "--cacheinfo", f"160000,{sha},vendor/lib")
    repo.git("commit", "-q", "-m", "add submodule")
    sub = by_path(read_one(repo.path, repo.head()))["vendor/lib"]
    assert sub.status == "added" and f"+Subproject commit {sha}" in sub.hunks[0]


def test_binary_files_have_no_hunks(tmp_path: Path) -> None:
    repo = Repo(tmp_path / "r")
    sha = repo.commit("logo", {"logo.png": bytes(range(256)) * 8, "readme.md": "hi\n"})
    files = by_path(read_one(repo.path, sha))
    assert files["logo.png"].binary and files["logo.png"].hunks == ()
    assert not files["readme.md"].binary
    assert "## `logo.png` (added, binary)" in render_commit(read_one(repo.path, sha)).text


def test_messages_in_a_legacy_encoding_and_invalid_bytes(tmp_path: Path) -> None:
    repo = Repo(tmp_path / "r")
    repo.git("config", "i18n.commitEncoding", "ISO-8859-1")
    (tmp_path / "msg").write_bytes("Caf\xe9 au lait\n\nd\xe9j\xe0 vu\n".encode("latin-1"))
    repo.write("a.md", "a\n")
    repo.git("add", "-A")
    repo.git("commit", "-q", "-F", str(tmp_path / "msg"))
    latin = read_one(repo.path, repo.head())
    assert latin.subject == "Café au lait" and latin.body == "déjà vu"
    # A message that declares no encoding and is not UTF-8 either: replacement characters.
    # (git commit-tree would turn them into Latin-1: write the object itself.)
    tree = repo.git("rev-parse", "HEAD^{tree}")
    who = b"Ada Author <ada@example.org> 1700000000 +0000"
    obj = b"tree %s\nparent %s\nauthor %s\ncommitter %s\n\nbad \xff\xfe bytes\n" % (
        tree.encode(),
        repo.head().encode(),
        who,
        who,
    )
    raw = repo.git("hash-object", "-t", "commit", "-w", "--stdin", "--literally", input=obj)
    bad = read_one(repo.path, raw)
    assert bad.subject == "bad \ufffd\ufffd bytes"
    render_commit(bad).text.encode("utf-8")


def test_paths_git_quotes_are_unquoted(tmp_path: Path) -> None:
    repo = Repo(tmp_path / "r")
    names = ["tab\there.md", 'quote"d.md', "café.md", "back\\slash.md", "a b/c d.md", "x_y*.md"]
    sha = repo.commit("odd names", {name: "x\n" for name in names})
    assert sorted(by_path(read_one(repo.path, sha))) == sorted(names)
    repo.git("mv", "tab\there.md", "tab\tthere é.md")
    renamed = by_path(read_one(repo.path, repo.commit("rename odd")))
    assert renamed["tab\tthere é.md"].old_path == "tab\there.md"
    text = render_commit(read_one(repo.path, sha)).text
    assert "## `x_y*.md` (added, +1 −0)" in text
    assert "## `tab\\there.md`" in text  # A tab is shown escaped: a heading is one line.


def test_non_utf8_path_bytes_are_replaced_never_raised(tmp_path: Path) -> None:
    repo = Repo(tmp_path / "r")
    try:
        (repo.path / os.fsdecode(b"latin\xe9.md")).write_text("x\n")
    except (OSError, UnicodeError):
        return  # A filesystem that refuses such names cannot hold the case.
    sha = repo.commit("latin-1 name")
    [f] = read_one(repo.path, sha).files
    assert f.path == "latin\ufffd.md"


def test_huge_diffs_are_bounded_and_the_bound_is_stated(tmp_path: Path) -> None:
    repo = Repo(tmp_path / "r")
    big = "".join(f"generated line {i}\n" for i in range(5000))
    files: dict[str, str | bytes | None] = {"big.txt": big}
    files.update({f"many/{i:03}.md": f"{i}\n" for i in range(12)})
    files["long.txt"] = "x" * 200_000 + "\n"
    sha = repo.commit("generated", files)
    c = read_one(repo.path, sha)
    big_change = by_path(c)["big.txt"]
    assert big_change.added == 5000 and big_change.truncated
    assert sum(h.count("\n") + 1 for h in big_change.hunks) == 300
    assert by_path(c)["long.txt"].truncated
    assert len(by_path(c)["long.txt"].hunks[0]) < 5000
    assert c.diff_truncated
    text = render_commit(c).text
    assert "Diff truncated: at most 300 lines per file, 1500 lines per commit" in text
    tight = read_one(repo.path, sha, DiffBounds(max_lines=320, max_files=3, max_listed_files=5))
    assert len(tight.files) == 5 and tight.files_omitted == 9
    # The files left out are counted in the totals too (issue 33, N11).
    assert tight.files_changed == c.files_changed == 14
    assert tight.insertions == c.insertions == 5000 + 12 + 1 and tight.deletions == 0
    assert sum(1 for f in tight.files if f.hunks) == 3
    assert sum(h.count("\n") + 1 for f in tight.files for h in f.hunks) <= 320
    assert "5 of 14 files shown" in render_commit(tight).text


def test_shallow_clone_boundary_is_grafted(tmp_path: Path) -> None:
    origin = Repo(tmp_path / "origin")
    for i in range(4):
        origin.commit(f"c{i}", {"a.md": f"{i}\n"})
    git(tmp_path, "clone", "-q", "--depth", "2", f"file://{origin.path}", "shallow")
    clone = tmp_path / "shallow"
    assert git_cli.is_shallow(clone)
    hashes = [sha for sha, _ in git_cli.reachable(clone)]
    assert len(hashes) == 2
    commits = dict(read_commits(clone, hashes))
    newest, boundary = (commits[h] for h in hashes)
    assert isinstance(newest, Commit) and isinstance(boundary, Commit)
    assert not newest.grafted and boundary.grafted
    assert boundary.files[0].status == "added"
    assert "Shallow clone boundary" in render_commit(boundary).text


def test_a_corrupt_object_costs_only_its_commit(tmp_path: Path) -> None:
    repo = Repo(tmp_path / "r")
    good = [repo.commit(f"c{i}", {f"f{i}.md": f"content {i}\n"}) for i in range(3)]
    bad = repo.commit("bad", {"bad.md": "this blob will be lost\n"})
    good += [repo.commit(f"d{i}", {f"g{i}.md": f"more {i}\n"}) for i in range(3)]
    blob = repo.git("rev-parse", f"{bad}:bad.md")
    loose_object(repo.path, blob).unlink()
    missing = "0123456789abcdef0123456789abcdef01234567"
    got = dict(read_commits(repo.path, [*good, bad, missing, "not-a-hash"]))
    assert all(isinstance(got[sha], Commit) for sha in good)
    assert isinstance(got[bad], str) and blob[:7] in got[bad]
    assert isinstance(got[missing], str) and isinstance(got["not-a-hash"], str)
    # An overwritten (not deleted) object fails the same way.
    tree = repo.git("rev-parse", f"{good[-1]}^{{tree}}")
    obj = loose_object(repo.path, tree)
    obj.chmod(0o644)
    obj.write_bytes(b"garbage")
    got = dict(read_commits(repo.path, good))
    assert isinstance(got[good[-1]], str)
    assert all(isinstance(got[sha], Commit) for sha in good[:-1])


def test_empty_commit_and_closing_the_stream_early(tmp_path: Path) -> None:
    repo = Repo(tmp_path / "r")
    shas = [repo.commit(f"c{i}", {"a.md": f"{i}\n"}) for i in range(5)]
    empty = repo.commit("nothing")
    c = read_one(repo.path, empty)
    assert c.files == () and c.subject == "nothing"
    with git_cli.stream(repo.path, ["log", "--format=%H"]) as proc:
        proc.stdout.readline()
    assert proc.proc.returncode is not None
    reader = read_commits(repo.path, shas)
    next(reader)
    reader.close()  # Kills and reaps git; nothing is left running.


def test_render_ranges_point_at_the_parts(tmp_path: Path) -> None:
    repo = Repo(tmp_path / "r")
    repo.commit("base", {"doc.md": "a\n```\ncode\n```\nz\n", "b.md": "1\n"})
    sha = repo.commit(
        "Change the code block\n\nBecause ```fences``` matter.",
        {"doc.md": "a\n````\ncode 2\n````\nz\n", "b.md": "2\n"},
    )
    rendered = render_commit(read_one(repo.path, sha))
    lines = rendered.text.split("\n")
    start, end = rendered.message
    assert lines[start - 1] == "# Change the code block"
    assert lines[end - 1] == "Because ```fences``` matter."
    meta = lines[rendered.metadata[0] - 1 : rendered.metadata[1]]
    assert meta[0] == f"- Commit: `{sha}`" and "- Date: 2023-11-15T" in meta[2]
    doc = next(s for s in rendered.files if s.change.path == "doc.md")
    assert lines[doc.heading_line - 1] == "## `doc.md` (modified, +3 −3)"
    [(h_start, h_end)] = doc.hunks
    assert lines[h_start - 1].startswith("@@ ") and lines[h_end - 1] == " z"
    assert lines[h_start - 2] == "`````diff" and lines[h_end] == "`````"
    assert render_commit(read_one(repo.path, sha)).text == rendered.text
