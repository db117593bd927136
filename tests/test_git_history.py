"""Git history as a source: commits indexed once each, kept right under history rewrites,
searched one result per commit with filters inside retrieval, and documents' last change."""

from __future__ import annotations

import json
import subprocess
from pathlib import Path
from types import SimpleNamespace

import pytest

from noteseek.engine import Engine, Filter, SearchRequest
from noteseek.search.filters import FilterError
from tests.git_repos import BASE_DATE, DAY, Repo
from tests.helpers import engine_for, project, run_cli

BO = ("Bo Sørensen", "bo@example.org")


@pytest.fixture
def site(tmp_path: Path) -> Repo:
    repo = Repo(tmp_path / "site")
    repo.commit(
        "Add the auth guide",
        {
            "docs/auth.md": "# Auth\n\nThe auth module issues login tokens.\n",
            "docs/setup.md": "# Setup\n\nRun the installer.\n",
        },
        day=1,
    )
    repo.commit(
        "Explain token expiry in the auth guide\n\nUsers were logged out without warning: "
        "say how long a session lasts.",
        {
            "docs/auth.md": "# Auth\n\nThe auth module issues login tokens.\n\n"
            "Tokens expire after 15 minutes; refresh tokens last a week.\n"
        },
        author=BO,
        day=40,
    )
    repo.commit(
        "Add deployment notes",
        {"docs/deploy.md": "# Deploy\n\nRoll out with kubernetes, one zone at a time.\n"},
        day=60,
    )
    repo.git("mv", "docs/setup.md", "docs/install.md")
    repo.commit("Rename setup to install", day=61)
    repo.commit("Add the logo", {"docs/logo.png": b"\x89PNG\r\n\x1a\n\x00\x00binary"}, day=62)
    return repo


def git_project(tmp_path: Path, repo: Repo, extra: str = "") -> Path:
    folder = tmp_path / "project"
    folder.mkdir()
    project(folder, {"docs": repo.path / "docs"}, extra)
    with (folder / ".noteseek.toml").open("a", encoding="utf-8") as fh:
        fh.write(f'[roots.site]\npath = "{repo.path.as_posix()}"\nkind = "git"\n')
    return folder


@pytest.fixture
def engine(tmp_path: Path, site: Repo) -> Engine:
    eng = engine_for(git_project(tmp_path, site))
    eng.index()
    return eng


def hashes(found) -> list[str]:  # type: ignore[no-untyped-def]
    return [c.hash for c in found.commits]


def test_each_commit_is_one_document_of_the_git_root(engine: Engine, site: Repo) -> None:
    rows = list(engine.store.iter_files("site"))
    assert len(rows) == 5
    assert {r.title for r in rows} >= {"Add the auth guide", "Rename setup to install"}
    assert engine.store.root_kinds()["site"] == "git"
    expiry = next(r for r in rows if r.title.startswith("Explain token expiry"))
    assert expiry.frontmatter["author"] == "Bo Sørensen"
    assert expiry.frontmatter["files"] == ["docs/auth.md"]
    assert expiry.modified == BASE_DATE + 40 * DAY


def test_a_commit_is_found_by_its_intent_with_the_hunk_that_matched(
    engine: Engine, site: Repo
) -> None:
    found = engine.search_commits(
        SearchRequest("how long do tokens last", mode="keyword"), include_diff=True
    )
    top = found.commits[0]
    assert top.subject == "Explain token expiry in the auth guide"
    assert top.author == "Bo Sørensen" and top.author_email == "bo@example.org"
    assert top.date.startswith("2023-12-24")
    assert top.file == "docs/auth.md"
    assert top.hunk is not None and "+Tokens expire after 15 minutes" in top.hunk
    assert "logged out without warning" in top.message
    # One result per commit, however many of its sections matched.
    assert len(hashes(found)) == len(set(hashes(found)))


@pytest.mark.parametrize("embed_diffs", [True, False])
def test_git_embed_diffs_decides_whether_hunks_are_embedded(
    tmp_path: Path, site: Repo, embed_diffs: bool
) -> None:
    eng = engine_for(git_project(tmp_path, site), **{"git.embed_diffs": embed_diffs})
    eng.index()
    expiry = next(
        f for f in eng.store.iter_files("site") if f.title.startswith("Explain token expiry")
    )
    rows = eng.store.file_chunks(expiry.file_id)
    message = [r for r in rows if "logged out without warning" in r.text]
    hunks = [r for r in rows if "+Tokens expire after 15 minutes" in r.text]
    assert message and hunks and not set(message) & set(hunks)
    assert all(r.embed_key for r in message)  # the message is always embedded
    assert all(bool(r.embed_key) is embed_diffs for r in hunks)
    pending = {
        r.text for r in eng.store.chunk_rows([i for _, i in eng.store.pending_embeddings("m")])
    }
    assert any("logged out without warning" in t for t in pending)
    assert any("+Tokens expire" in t for t in pending) is embed_diffs
    eng.close()


def test_git_semantic_weight_is_commit_searchs_fusion_weight_alone(
    tmp_path: Path, site: Repo
) -> None:
    eng = engine_for(git_project(tmp_path, site), **{"git.semantic_weight": 0.25})
    searching = eng._searching
    for kind, expected in (("git", 0.25), ("files", eng.settings.search.semantic_weight)):
        resources = SimpleNamespace(settings=eng.settings.search, recency_tiers=None)
        searching._apply(searching._profile(kind), resources)  # type: ignore[arg-type]
        assert resources.settings.semantic_weight == expected, kind
        # Commits keep short queries' all-words matches first; documents rank them softly.
        assert resources.settings.all_terms_bonus == (1.0 if kind == "git" else 0.1), kind
        # Commits keep the field weights their search was tuned with; documents have theirs.
        weights = resources.settings.weights
        assert (weights.title, weights.headings) == (
            (20.0, 5.0) if kind == "git" else (40.0, 1.0)
        ), kind
        assert weights.body == eng.settings.search.weights.body
    assert eng.settings.search.semantic_weight == 1.5  # documents keep theirs
    eng.close()


def test_filters_are_applied_inside_retrieval(engine: Engine) -> None:
    def subjects(**filters: object) -> list[str]:
        query = "auth guide tokens deployment notes"
        asked = Filter(**filters)  # type: ignore[arg-type]
        found = engine.search_commits(SearchRequest(query, mode="keyword", filter=asked))
        return [c.subject for c in found.commits]

    everything = subjects()
    assert "Add deployment notes" in everything and "Add the auth guide" in everything
    assert subjects(authors="bo@") == ["Explain token expiry in the auth guide"]
    assert "Explain token expiry in the auth guide" not in subjects(authors="ada")
    assert subjects(changed="docs/deploy.md") == ["Add deployment notes"]
    assert subjects(changed="*.md", after="2024-01-10") == ["Add deployment notes"]
    assert set(subjects(before="2023-12-01")) == {"Add the auth guide"}
    assert subjects(roots=["site"]) == everything
    with pytest.raises(ValueError, match="unknown root 'nope'"):
        subjects(roots=["nope"])
    with pytest.raises(FilterError, match="cannot read the date"):
        subjects(after="last spring")


def test_renames_and_binary_files_are_found_by_their_paths(engine: Engine) -> None:
    renamed = engine.search_commits(
        SearchRequest("install", mode="keyword", filter=Filter(changed="docs/setup.md"))
    )
    # The commit that added setup.md ("Run the installer") matches too, below the rename.
    assert [c.subject for c in renamed.commits] == ["Rename setup to install", "Add the auth guide"]
    assert renamed.commits[0].files == ["docs/install.md"]  # by its new name
    logo = engine.search_commits(SearchRequest("logo png", mode="keyword"))
    assert logo.commits[0].subject == "Add the logo"
    assert logo.commits[0].file == "docs/logo.png"


def test_documents_and_commits_are_kept_apart(engine: Engine) -> None:
    docs = engine.search(SearchRequest("tokens expire", mode="keyword"))
    assert {h.root for h in docs.hits} == {"docs"}
    commits = engine.search(SearchRequest("tokens expire", mode="keyword", source="commits"))
    assert {h.root for h in commits.hits} == {"site"}
    everything = engine.search(
        SearchRequest("tokens expire", mode="keyword", source="all", top_k=20)
    )
    assert {h.root for h in everything.hits} == {"docs", "site"}


def test_a_document_says_when_it_last_changed_and_by_whom(engine: Engine, site: Repo) -> None:
    changes = engine.last_changes(["docs/auth.md", "docs/deploy.md", "docs/nothing.md"])
    assert changes["docs/auth.md"].author == "Bo Sørensen"
    assert changes["docs/auth.md"].subject == "Explain token expiry in the auth guide"
    assert changes["docs/deploy.md"].date.startswith("2024-01-13")
    assert "docs/nothing.md" not in changes


def test_a_commit_is_indexed_once_and_rewrites_remove_what_left_history(
    engine: Engine, site: Repo
) -> None:
    again = engine.index()
    assert again.added == 0 and again.updated == 0 and again.removed == 0
    new = site.commit("Document password resets", {"docs/reset.md": "# Reset\n\nAsk an admin.\n"})
    report = engine.index(["site"])
    assert report.added == 1 and report.chunks_written >= 2
    site.git("commit", "-q", "--amend", "-m", "Document password resets for admins")
    amended = site.head()
    report = engine.index(["site"])
    assert report.added == 1 and report.removed == 1
    paths = {r.path for r in engine.store.iter_files("site")}
    assert amended in paths and new not in paths
    site.git("reset", "-q", "--hard", "HEAD~2")  # drop the logo and the reset commits
    engine.index(["site"])
    titles = {r.title for r in engine.store.iter_files("site")}
    assert "Add the logo" not in titles and "Document password resets for admins" not in titles
    assert len(titles) == 4


def test_a_commit_reads_as_a_markdown_document(engine: Engine) -> None:
    hit = engine.search_commits(SearchRequest("deployment notes", mode="keyword")).commits[0]
    row, text = engine.read_document(hit.doc_id)
    assert row.title == "Add deployment notes"
    assert text.startswith("# Add deployment notes")
    assert "docs/deploy.md" in text and "+Roll out with kubernetes" in text


def test_a_root_that_is_not_a_repository_is_reported_not_fatal(tmp_path: Path) -> None:
    notes = tmp_path / "notes"
    notes.mkdir()
    (notes / "a.md").write_text("# A\n\nalpha\n", encoding="utf-8")
    folder = project(tmp_path, {"notes": notes})
    with (folder / ".noteseek.toml").open("a", encoding="utf-8") as fh:
        fh.write(f'[roots.history]\npath = "{notes.as_posix()}"\nkind = "git"\n')
    eng = engine_for(folder)
    report = eng.index()
    assert report.added == 1
    reasons = [p["reason"] for p in report.problems if p["root"] == "history"]
    assert reasons and "not a git repository" in reasons[0]
    assert eng.search_commits(SearchRequest("alpha", mode="keyword")).commits == []


def test_discovery_indexes_the_repository_holding_a_root(tmp_path: Path, site: Repo) -> None:
    folder = tmp_path / "project"
    folder.mkdir()
    project(folder, {"docs": site.path / "docs"}, "[git]\ndiscover = true\n")
    eng = engine_for(folder)
    eng.index()
    assert eng.store.root_kinds()["docs.git"] == "git"
    found = eng.search_commits(SearchRequest("deployment", mode="keyword"))
    assert found.commits[0].root == "docs.git"
    assert eng.last_changes(["docs/deploy.md"])["docs/deploy.md"].subject == (
        "Add deployment notes"
    )


def test_the_cli_shows_commits_with_hash_date_author_file_and_hunk(
    tmp_path: Path, site: Repo
) -> None:
    folder = git_project(tmp_path, site, "[embedding]\nenabled = false\n")
    run_cli(["index"], folder)
    shown = run_cli(
        ["search", "--source", "commits", "--diff", "--author", "bo", "token expiry"], folder
    ).stdout
    expiry = site.git("log", "--format=%H", "--author=bo@example.org")
    assert expiry[:10] in shown
    assert "2023-12-24" in shown and "Bo Sørensen" in shown
    assert "Explain token expiry in the auth guide" in shown
    assert "docs/auth.md" in shown and "+Tokens expire after 15 minutes" in shown
    as_json = json.loads(
        run_cli(["search", "--source", "commits", "--json", "deployment"], folder).stdout
    )
    assert as_json["commits"][0]["subject"] == "Add deployment notes"
    refused = run_cli(["search", "--source", "commits", "--tag", "x", "deploy"], folder, code=2)
    assert "--file" in refused.stderr and "Traceback" not in refused.stderr
    docs = run_cli(["search", "--mode", "keyword", "refresh tokens"], folder).stdout
    assert "changed 2023-12-24 by Bo Sørensen" in docs


BUNDLE = Path(__file__).resolve().parents[2] / "shared" / "data" / "git" / "dendron-site.bundle"


def test_a_real_history_is_indexed_by_worker_processes_and_searched(tmp_path: Path) -> None:
    if not BUNDLE.exists():
        pytest.skip(f"shared data {BUNDLE} is absent (CI has it)")
    clone = tmp_path / "dendron-site"
    subprocess.run(["git", "clone", "-q", str(BUNDLE), str(clone)], check=True)
    folder = tmp_path / "project"
    folder.mkdir()
    (folder / ".noteseek.toml").write_text(
        f'[roots.site]\npath = "{clone.as_posix()}"\nkind = "git"\n[memory]\nenabled = false\n',
        encoding="utf-8",
    )
    eng = engine_for(folder, **{"index.workers": 2})
    report = eng.index()
    assert report.added == 4301 and report.skipped == 0, report.problems[:3]
    assert eng.index().added == 0  # indexed once, ever
    # A commit is found by its own subject and by the text it added.
    subject, sha = (
        subprocess.run(
            ["git", "log", "-1", "--skip=1000", "--format=%s%x00%H"],
            cwd=clone,
            capture_output=True,
            text=True,
            check=True,
        )
        .stdout.strip()
        .split("\0")
    )
    found = eng.search_commits(SearchRequest(subject, mode="keyword", top_k=10))
    assert sha in [c.hash for c in found.commits]


def test_a_commit_listing_only_some_of_its_files_says_so(tmp_path: Path) -> None:
    """N11 (issue 33): a commit adding 2,500 files lists the first 1,000
    (``DiffBounds.max_listed_files``), and every door says the list was cut: the commit's
    document, the JSON result (``files_changed``) and the CLI ("1,000 of 2,500 files shown").
    Its line counts cover every file, listed or not."""
    repo = Repo(tmp_path / "bulk")
    repo.commit("Start", {"readme.md": "# Bulk\n"})
    stream = [
        "commit refs/heads/main",
        "committer Ada Author <ada@example.org> 1700003600 +0000",
        "data 24",
        "Import 2,500 stub pages",
        "from refs/heads/main^0",
    ]
    for i in range(2500):
        body = f"stub {i}\n"
        stream += [f"M 100644 inline pages/p{i:04}.md", f"data {len(body)}", body]
    repo.git("fast-import", "--quiet", input=("\n".join(stream) + "\n").encode())
    folder = tmp_path / "project"
    folder.mkdir()
    project(
        folder,
        {},
        f'[embedding]\nenabled = false\n[roots.bulk]\npath = "{repo.path.as_posix()}"\n'
        'kind = "git"\n',
    )
    assert json.loads(run_cli(["index", "--json"], folder).stdout)["problems"] == []

    found = json.loads(
        run_cli(["search", "--source", "commits", "--json", "stub pages"], folder).stdout
    )
    [bulk] = [c for c in found["commits"] if c["subject"] == "Import 2,500 stub pages"]
    assert bulk["files_changed"] == 2500 and len(bulk["files"]) == 1000
    assert bulk["insertions"] == 2500 and bulk["deletions"] == 0
    shown = run_cli(["search", "--source", "commits", "stub pages"], folder).stdout
    assert "1,000 of 2,500 files shown +2,500 -0" in shown
    with engine_for(folder) as eng:
        _, text = eng.read_document(bulk["doc_id"])
    assert "- Files changed: 2,500 (+2,500 −0)" in text
    assert "- 1,000 of 2,500 files shown: the other 1,500 are counted, not listed" in text
