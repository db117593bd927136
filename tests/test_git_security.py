"""A repository cannot make noteseek run a program (issue 33, finding N1; docs/security.md).

Each test takes one way a repository's configuration (or a committed ``.gitattributes``, or
the caller's environment) can name a program for git to run. It first proves the vector is
live on this machine: plain ``git`` with that configuration runs the program, which creates a
canary file. Then noteseek indexes the same repository through the real engine or CLI (a root
of kind ``git``, or ``[git] discover = true`` over a notes folder holding it), and the canary
must not appear. Where the commands noteseek runs (``rev-parse``, ``for-each-ref``,
``rev-list``, ``log``) could not trigger a vector even unhardened, the test says so and also
runs the triggering command itself through noteseek's runner (:mod:`noteseek.sources.git.cli`)
to show the hardening closes it for any future call.

The programs are shell scripts, so these tests need a POSIX shell.
"""

from __future__ import annotations

import http.server
import json
import os
import pty
import subprocess
import threading
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from noteseek.engine import SearchRequest
from noteseek.sources.git import cli as git_cli
from tests.git_repos import Repo, git, git_env
from tests.helpers import engine_for, project, run_cli

pytestmark = pytest.mark.skipif(os.name == "nt", reason="the planted programs are sh scripts")

TIMEOUT = 10


# -- planting ---------------------------------------------------------------------------------


def plant(tmp_path: Path, name: str) -> tuple[Path, Path]:
    """An executable script that creates a canary file and fails; (script, canary)."""
    canary = tmp_path / f"canary-{name}"
    script = tmp_path / f"{name}.sh"
    script.write_text(f"#!/bin/sh\ntouch '{canary}'\nexit 1\n", encoding="utf-8")
    script.chmod(0o755)
    return script, canary


def plain_git(
    cwd: Path, *args: str, env: dict[str, str] | None = None
) -> subprocess.CompletedProcess[bytes]:
    """Plain git, as a user would run it (its exit code is not checked: git often fails
    right after running the planted program, which is all that matters)."""
    return subprocess.run(
        ["git", *args],
        cwd=cwd,
        env=git_env(env),
        stdin=subprocess.DEVNULL,
        capture_output=True,
        timeout=TIMEOUT,
        check=False,
    )


def hardened_git(cwd: Path, *args: str) -> subprocess.CompletedProcess[bytes]:
    """``git args`` exactly as noteseek runs it (its command line and environment)."""
    return subprocess.run(
        git_cli.command(cwd, args),
        env=git_cli.git_env(),
        stdin=subprocess.DEVNULL,
        capture_output=True,
        timeout=TIMEOUT,
        check=False,
    )


def history(tmp_path: Path, name: str = "origin") -> Repo:
    """A small repository of Markdown notes, three commits."""
    repo = Repo(tmp_path / name)
    repo.commit("Add the auth guide", {"auth.md": "# Auth\n\nLogin tokens are issued here.\n"})
    repo.commit("Explain token expiry", {"auth.md": "# Auth\n\nTokens expire in 15 minutes.\n"})
    repo.commit("Add deployment notes", {"deploy.md": "# Deploy\n\nOne zone at a time.\n"})
    repo.git("config", "uploadpack.allowFilter", "true")
    return repo


def partial_clone(origin: Repo, target: Path, config: dict[str, str]) -> Path:
    """A blob-less partial clone of ``origin`` (no work tree checked out, so no blob was
    fetched), with ``config`` written into its ``.git/config``."""
    args = ["clone", "-q", "--filter=blob:none", "--no-checkout", origin.path.as_uri()]
    git(target.parent, *args, target.name)
    for key, value in config.items():
        git(target, "config", key, value)
    assert missing_blobs(target), "the clone should lack its blobs"
    return target


def missing_blobs(repo: Path) -> list[str]:
    out = git(repo, "rev-list", "--objects", "--missing=print", "--all")
    return [line[1:] for line in out.splitlines() if line.startswith("?")]


def git_project(tmp_path: Path, repo: Path) -> Path:
    """A project whose one root is ``repo``'s history (kind ``git``)."""
    folder = tmp_path / "project"
    folder.mkdir()
    project(folder, {}, f'[roots.history]\npath = "{repo.as_posix()}"\nkind = "git"\n')
    return folder


def noteseek_index(tmp_path: Path, repo: Path) -> dict[str, Any]:
    """Index ``repo``'s history with noteseek's engine: the run's report, and under
    ``found`` the subjects of the commits a search for "deployment" finds."""
    with engine_for(git_project(tmp_path, repo)) as eng:
        report = eng.index().to_dict()
        found = eng.search_commits(SearchRequest("deployment", mode="keyword")).commits
        report["found"] = [c.subject for c in found]
    return report


# -- lazy fetch of a partial clone (N1) and the programs a fetch runs -------------------------


def test_partial_clone_uploadpack_is_never_run_and_missing_blobs_are_reported(
    tmp_path: Path,
) -> None:
    """N1: ``git log -p`` in a partial clone fetches missing blobs from the promisor remote,
    and that fetch runs ``remote.origin.uploadpack``. noteseek (``[git] discover`` over the
    notes folder holding the clone, through the CLI) never fetches: each commit is indexed
    by its message and files, with a problem saying its diff is missing, and ``status``
    lists those problems."""
    origin = history(tmp_path)
    script, canary = plant(tmp_path, "uploadpack")
    config = {"remote.origin.uploadpack": str(script)}
    proof = partial_clone(origin, tmp_path / "proof", config)
    plain_git(proof, "log", "-p")
    assert canary.exists(), "the vector is not live: plain git did not run the script"
    canary.unlink()

    notes = tmp_path / "notes"
    notes.mkdir()
    (notes / "readme.md").write_text("# Notes\n\nA vault with a clone inside.\n", "utf-8")
    clone = partial_clone(origin, notes / "vendored", config)
    folder = tmp_path / "project"
    folder.mkdir()
    project(folder, {"notes": notes}, "[git]\ndiscover = true\n[embedding]\nenabled = false\n")
    done = json.loads(run_cli(["index", "--json"], folder).stdout)
    assert not canary.exists()
    assert missing_blobs(clone), "noteseek fetched blobs"
    assert done["added"] == 4  # the note and the three commits
    warned = [p for p in done["problems"] if p["root"] == "notes.git.vendored"]
    assert len(warned) == 3 and all(p["severity"] == "warning" for p in warned)
    assert all("missing from this partial clone" in p["reason"] for p in warned)
    status = json.loads(run_cli(["status", "--json"], folder).stdout)
    assert status["warned_files"] == 3
    assert {p["path"] for p in status["failures"]} == {p["path"] for p in warned}
    shown = run_cli(["search", "--source", "commits", "deployment"], folder).stdout
    assert "Add deployment notes" in shown
    assert not canary.exists()


def test_a_partial_clone_keeps_the_diffs_it_holds_and_lists_the_files_of_the_others(
    tmp_path: Path,
) -> None:
    """A partial clone with its work tree checked out holds the blobs of HEAD: the commit
    whose diff needs only those is indexed with its diff; the two that need an older blob
    are indexed by their message and changed files, and the document a reader opens says
    why their diff is absent."""
    origin = history(tmp_path)
    args = ["clone", "-q", "--filter=blob:none", origin.path.as_uri(), "clone"]
    git(tmp_path, *args)
    clone = tmp_path / "clone"
    assert missing_blobs(clone)
    with engine_for(git_project(tmp_path, clone)) as eng:
        report = eng.index()
        assert report.added == 3 and report.skipped == 0
        warned = {p["path"] for p in report.problems if p["severity"] == "warning"}
        [deploy] = eng.search_commits(SearchRequest("deployment", mode="keyword")).commits
        [expiry] = eng.search_commits(SearchRequest("token expiry", mode="keyword")).commits
        assert expiry.files == ["auth.md"] and expiry.files_changed == 1
        _, deploy_text = eng.read_document(deploy.doc_id)
        _, expiry_text = eng.read_document(expiry.doc_id)
    assert deploy.hash not in warned and len(warned) == 2 and expiry.hash in warned
    assert "+One zone at a time." in deploy_text
    assert "## `auth.md` (modified, diff not read)" in expiry_text
    assert "Diff not read: the diff is not indexed: object" in expiry_text
    assert "15 minutes" not in expiry_text
    assert missing_blobs(clone)


def test_each_layer_alone_stops_the_lazy_fetch(tmp_path: Path) -> None:
    """Defence in depth: the protocol refusal without ``GIT_NO_LAZY_FETCH`` stops the fetch,
    and ``GIT_NO_LAZY_FETCH`` without the protocol refusal does too. And ``-c
    protocol.allow=never`` alone (the issue's suggestion) is not enough: a repository's own
    ``protocol.<name>.allow = always`` outranks it, so noteseek refuses each protocol by
    name and through ``GIT_ALLOW_PROTOCOL``, which no configuration outranks."""
    origin = history(tmp_path)
    script, canary = plant(tmp_path, "uploadpack")
    config = {"remote.origin.uploadpack": str(script), "protocol.file.allow": "always"}
    clone = partial_clone(origin, tmp_path / "clone", config)

    plain_git(clone, "-c", "protocol.allow=never", "log", "-p")
    assert canary.exists(), "protocol.file.allow in the repository should beat -c protocol.allow"
    canary.unlink()

    argv = git_cli.command(clone, ["log", "-p"])
    env = {k: v for k, v in git_cli.git_env().items() if k != "GIT_NO_LAZY_FETCH"}
    protocols_only = subprocess.run(argv, env=env, capture_output=True, timeout=TIMEOUT)
    assert protocols_only.returncode != 0 and not canary.exists()
    assert b"not allowed" in protocols_only.stderr

    lazy_only = plain_git(clone, "log", "-p", env={"GIT_NO_LAZY_FETCH": "1"})
    assert lazy_only.returncode != 0 and not canary.exists()
    assert missing_blobs(clone)


def test_an_ext_remote_allowed_by_the_repository_is_never_run(tmp_path: Path) -> None:
    """A promisor remote ``ext::<program>`` with ``protocol.ext.allow = always`` in the
    repository: a lazy fetch runs the program directly, even under ``-c
    protocol.allow=never``."""
    origin = history(tmp_path)
    script, canary = plant(tmp_path, "ext")
    config = {"remote.origin.url": f"ext::{script}", "protocol.ext.allow": "always"}
    proof = partial_clone(origin, tmp_path / "proof", config)
    plain_git(proof, "-c", "protocol.allow=never", "log", "-p")
    assert canary.exists(), "the vector is not live: plain git did not run the ext command"
    canary.unlink()

    clone = partial_clone(origin, tmp_path / "clone", config)
    report = noteseek_index(tmp_path, clone)
    assert not canary.exists()
    assert report["added"] == 3 and report["found"] == ["Add deployment notes"]


def test_core_ssh_command_of_an_ssh_promisor_remote_is_never_run(tmp_path: Path) -> None:
    """``core.sshCommand`` runs when a lazy fetch talks to an ssh remote."""
    origin = history(tmp_path)
    script, canary = plant(tmp_path, "ssh")
    config = {
        "remote.origin.url": "ssh://git.example.invalid/r.git",
        "core.sshCommand": str(script),
    }
    proof = partial_clone(origin, tmp_path / "proof", config)
    plain_git(proof, "log", "-p")
    assert canary.exists(), "the vector is not live: plain git did not run core.sshCommand"
    canary.unlink()

    clone = partial_clone(origin, tmp_path / "clone", config)
    report = noteseek_index(tmp_path, clone)
    assert not canary.exists()
    assert report["added"] == 3


@pytest.mark.parametrize("variable", ["GIT_SSH_COMMAND", "GIT_SSH"])
def test_ssh_programs_from_the_callers_environment_are_never_run(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, variable: str
) -> None:
    """``GIT_SSH_COMMAND`` or ``GIT_SSH`` in the environment noteseek runs in: git's
    environment is built from an allow-list, so neither reaches it."""
    origin = history(tmp_path)
    script, canary = plant(tmp_path, "ssh-env")
    config = {"remote.origin.url": "ssh://git.example.invalid/r.git"}
    proof = partial_clone(origin, tmp_path / "proof", config)
    plain_git(proof, "log", "-p", env={variable: str(script)})
    assert canary.exists(), f"the vector is not live: plain git did not run {variable}"
    canary.unlink()

    monkeypatch.setenv(variable, str(script))
    clone = partial_clone(origin, tmp_path / "clone", config)
    report = noteseek_index(tmp_path, clone)
    assert not canary.exists()
    assert report["added"] == 3


class _AuthRequired(http.server.BaseHTTPRequestHandler):
    """Every request needs a password: git asks its credential helper, then askpass."""

    def do_GET(self) -> None:
        self.send_response(401)
        self.send_header("WWW-Authenticate", 'Basic realm="repo"')
        self.send_header("Content-Length", "0")
        self.end_headers()

    do_POST = do_GET

    def log_message(self, *args: object) -> None:
        pass


@pytest.fixture
def http_remote() -> Iterator[str]:
    """The URL of a repository on a local HTTP server that demands a password."""
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), _AuthRequired)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}/r.git"
    finally:
        server.shutdown()
        server.server_close()
        thread.join(timeout=5)


@pytest.mark.parametrize("key", ["credential.helper", "core.askPass"])
def test_credential_helper_and_askpass_are_never_run(
    tmp_path: Path, http_remote: str, key: str
) -> None:
    """A lazy fetch from an HTTP remote that answers 401 asks ``credential.helper``, then
    ``core.askPass`` (git runs askpass even with ``GIT_TERMINAL_PROMPT=0``)."""
    origin = history(tmp_path)
    script, canary = plant(tmp_path, "credential")
    config = {"remote.origin.url": http_remote, key: str(script)}
    proof = partial_clone(origin, tmp_path / "proof", config)
    plain_git(proof, "log", "-p")
    assert canary.exists(), f"the vector is not live: plain git did not run {key}"
    canary.unlink()

    clone = partial_clone(origin, tmp_path / "clone", config)
    report = noteseek_index(tmp_path, clone)
    assert not canary.exists()
    assert report["added"] == 3


def test_hooks_are_never_run(tmp_path: Path) -> None:
    """Hooks: none of the commands noteseek runs runs a hook itself, but a lazy fetch does:
    its automatic maintenance runs ``pre-auto-gc`` (and ``reference-transaction`` when gc
    packs refs). Those are the hooks a noteseek command could trigger, so the proof uses a
    working promisor remote and a repository whose ``gc.auto`` asks for maintenance at
    once. ``core.hooksPath=/dev/null`` is also shown to hold on its own: a commit made
    through noteseek's runner runs no ``pre-commit`` hook."""
    origin = history(tmp_path)
    hooks = tmp_path / "hooks"
    hooks.mkdir()
    canaries = []
    for name in ("pre-auto-gc", "reference-transaction", "pre-commit"):
        script, canary = plant(tmp_path, name)
        (hooks / name).symlink_to(script)
        canaries.append(canary)
    config = {
        "core.hooksPath": str(hooks),
        "gc.auto": "1",
        "gc.autoPackLimit": "1",
        "gc.autoDetach": "false",
    }
    proof = partial_clone(origin, tmp_path / "proof", config)
    plain_git(proof, "log", "-p")
    assert canaries[0].exists(), "the vector is not live: the lazy fetch ran no pre-auto-gc"
    for canary in canaries:
        canary.unlink(missing_ok=True)

    clone = partial_clone(origin, tmp_path / "clone", config)
    report = noteseek_index(tmp_path, clone)
    assert report["added"] == 3
    assert not any(c.exists() for c in canaries)

    work = Repo(tmp_path / "work")
    work.commit("first", {"a.md": "a\n"})
    work.git("config", "core.hooksPath", str(hooks))
    identity = ["-c", "user.name=Ada", "-c", "user.email=ada@example.org"]
    plain_git(work.path, *identity, "commit", "-q", "--allow-empty", "-m", "plain")
    assert canaries[2].exists(), "the vector is not live: git commit ran no pre-commit hook"
    canaries[2].unlink()
    done = hardened_git(work.path, *identity, "commit", "-q", "--allow-empty", "-m", "hardened")
    assert done.returncode == 0, done.stderr
    assert not canaries[2].exists()


# -- programs a diff or a log runs ------------------------------------------------------------


def notes_repo(tmp_path: Path, attributes: str = "") -> Repo:
    repo = Repo(tmp_path / "repo")
    files: dict[str, str | bytes | None] = {"auth.md": "# Auth\n\nLogin tokens.\n"}
    if attributes:
        files[".gitattributes"] = attributes
    repo.commit("Add the auth guide", files)
    repo.commit("Add deployment notes", {"deploy.md": "# Deploy\n\nOne zone at a time.\n"})
    return repo


def test_a_textconv_driver_named_by_gitattributes_is_never_run(tmp_path: Path) -> None:
    """A committed ``.gitattributes`` (``*.md diff=conv``) and ``diff.conv.textconv`` in the
    repository's config: plain ``git log -p`` runs the filter on every Markdown blob."""
    script, canary = plant(tmp_path, "textconv")
    repo = notes_repo(tmp_path, "*.md diff=conv\n")
    repo.git("config", "diff.conv.textconv", str(script))
    plain_git(repo.path, "log", "-p")
    assert canary.exists(), "the vector is not live: git log -p ran no textconv"
    canary.unlink()

    report = noteseek_index(tmp_path, repo.path)
    assert not canary.exists()
    assert report["added"] == 2 and report["found"] == ["Add deployment notes"]


@pytest.mark.parametrize("kind", ["diff.external", "driver command"])
def test_an_external_diff_program_is_never_run(tmp_path: Path, kind: str) -> None:
    """``diff.external``, or ``diff.<driver>.command`` chosen by a committed
    ``.gitattributes``: ``git diff`` runs them by default, ``git log -p`` only with
    ``--ext-diff`` (the proof uses that). noteseek's runner adds ``--no-ext-diff`` to every
    diff-producing command, so its own ``git diff`` runs neither."""
    script, canary = plant(tmp_path, "extdiff")
    if kind == "diff.external":
        repo = notes_repo(tmp_path)
        repo.git("config", "diff.external", str(script))
    else:
        repo = notes_repo(tmp_path, "*.md diff=ext\n")
        repo.git("config", "diff.ext.command", str(script))
    plain_git(repo.path, "log", "-p", "--ext-diff")
    assert canary.exists(), f"the vector is not live: git log -p --ext-diff ran no {kind}"
    canary.unlink()

    report = noteseek_index(tmp_path, repo.path)
    assert not canary.exists()
    assert report["added"] == 2
    done = hardened_git(repo.path, "diff", "HEAD~", "HEAD")
    assert done.returncode == 0 and b"+One zone at a time." in done.stdout
    assert not canary.exists()


def test_git_external_diff_from_the_callers_environment_is_never_run(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """``GIT_EXTERNAL_DIFF`` in the environment noteseek runs in (``git diff`` runs it)."""
    script, canary = plant(tmp_path, "extdiff-env")
    repo = notes_repo(tmp_path)
    plain_git(repo.path, "diff", "HEAD~", "HEAD", env={"GIT_EXTERNAL_DIFF": str(script)})
    assert canary.exists(), "the vector is not live: git diff ran no GIT_EXTERNAL_DIFF"
    canary.unlink()

    monkeypatch.setenv("GIT_EXTERNAL_DIFF", str(script))
    report = noteseek_index(tmp_path, repo.path)
    assert report["added"] == 2
    hardened_git(repo.path, "diff", "HEAD~", "HEAD")
    assert not canary.exists()


def test_a_signature_verifier_is_never_run(tmp_path: Path) -> None:
    """``log.showSignature = true`` and ``gpg.program`` in the repository: plain ``git
    log`` hands every signed commit to the program."""
    script, canary = plant(tmp_path, "gpg")
    repo = notes_repo(tmp_path)
    tree = repo.git("rev-parse", "HEAD^{tree}")
    parent = repo.head()
    signed = (
        f"tree {tree}\nparent {parent}\n"
        "author Ada <ada@example.org> 1700000000 +0000\n"
        "committer Ada <ada@example.org> 1700000000 +0000\n"
        "gpgsig -----BEGIN PGP SIGNATURE-----\n \n iQEzBAABCAAdFiEE\n"
        " -----END PGP SIGNATURE-----\n\nA signed deployment commit\n"
    )
    sha = repo.git("hash-object", "-t", "commit", "-w", "--stdin", input=signed.encode())
    repo.git("update-ref", "refs/heads/main", sha)
    repo.git("config", "log.showSignature", "true")
    repo.git("config", "gpg.program", str(script))
    plain_git(repo.path, "log", "-1")
    assert canary.exists(), "the vector is not live: git log ran no gpg.program"
    canary.unlink()

    report = noteseek_index(tmp_path, repo.path)
    assert not canary.exists()
    assert report["added"] == 3


def test_a_pager_is_never_run(tmp_path: Path) -> None:
    """``core.pager`` in the repository: git starts a pager only when its output is a
    terminal, so the proof runs plain ``git log`` on a pseudo-terminal. noteseek reads git
    through pipes with ``--no-pager``; even on a terminal its command line starts none."""
    script, canary = plant(tmp_path, "pager")
    repo = notes_repo(tmp_path)
    repo.git("config", "core.pager", str(script))
    env = {k: v for k, v in git_env().items() if k not in ("GIT_PAGER", "PAGER")}
    on_terminal(["git", "log", "-1"], repo.path, env)
    assert canary.exists(), "the vector is not live: git log on a terminal ran no pager"
    canary.unlink()

    report = noteseek_index(tmp_path, repo.path)
    assert report["added"] == 2
    on_terminal(git_cli.command(repo.path, ["log", "-1"]), repo.path, git_cli.git_env())
    assert not canary.exists()


def on_terminal(argv: list[str], cwd: Path, env: dict[str, str]) -> None:
    """Run ``argv`` with its output on a pseudo-terminal."""
    leader, follower = pty.openpty()
    try:
        subprocess.run(
            argv,
            cwd=cwd,
            env=env,
            stdin=subprocess.DEVNULL,
            stdout=follower,
            stderr=follower,
            timeout=TIMEOUT,
            check=False,
        )
    finally:
        os.close(follower)
        os.close(leader)


# -- what noteseek's commands never trigger ---------------------------------------------------


def test_fsmonitor_is_never_run(tmp_path: Path) -> None:
    """``core.fsmonitor`` naming a program: git runs it when it refreshes the index
    (``git status``). The commands noteseek runs never read the index, so indexing could
    not trigger it even unhardened; ``core.fsmonitor=false`` keeps it off for any call, as
    ``git status`` through noteseek's runner shows."""
    script, canary = plant(tmp_path, "fsmonitor")
    repo = notes_repo(tmp_path)
    repo.git("config", "core.fsmonitor", str(script))
    plain_git(repo.path, "status")
    assert canary.exists(), "the vector is not live: git status ran no fsmonitor"
    canary.unlink()

    report = noteseek_index(tmp_path, repo.path)
    assert report["added"] == 2
    done = hardened_git(repo.path, "status", "--porcelain")
    assert done.returncode == 0, done.stderr
    assert not canary.exists()


def test_receivepack_is_never_run(tmp_path: Path) -> None:
    """``remote.origin.receivepack`` runs on a push. noteseek never pushes; were a call to,
    no protocol is allowed, as a push through noteseek's runner shows."""
    origin = history(tmp_path)
    script, canary = plant(tmp_path, "receivepack")
    clone = tmp_path / "clone"
    git(tmp_path, "clone", "-q", origin.path.as_uri(), "clone")
    git(clone, "config", "remote.origin.receivepack", str(script))
    plain_git(clone, "push", "origin", "HEAD:refs/heads/pushed")
    assert canary.exists(), "the vector is not live: git push ran no receivepack"
    canary.unlink()

    report = noteseek_index(tmp_path, clone)
    assert report["added"] == 3
    done = hardened_git(clone, "push", "origin", "HEAD:refs/heads/pushed")
    assert done.returncode != 0 and b"not allowed" in done.stderr
    assert not canary.exists()


# -- the caller's environment -----------------------------------------------------------------


@pytest.mark.parametrize("style", ["GIT_CONFIG_COUNT", "GIT_CONFIG_PARAMETERS"])
def test_configuration_injected_through_the_environment_never_reaches_git(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, style: str
) -> None:
    """``GIT_CONFIG_COUNT``/``GIT_CONFIG_KEY_n``/``GIT_CONFIG_VALUE_n`` or
    ``GIT_CONFIG_PARAMETERS`` in noteseek's environment set configuration for every git it
    starts; here an uploadpack program for a partial clone's lazy fetch."""
    origin = history(tmp_path)
    script, canary = plant(tmp_path, "injected")
    if style == "GIT_CONFIG_COUNT":
        injected = {
            "GIT_CONFIG_COUNT": "1",
            "GIT_CONFIG_KEY_0": "remote.origin.uploadpack",
            "GIT_CONFIG_VALUE_0": str(script),
        }
    else:
        injected = {"GIT_CONFIG_PARAMETERS": f"'remote.origin.uploadpack={script}'"}
    proof = partial_clone(origin, tmp_path / "proof", {})
    plain_git(proof, "log", "-p", env=injected)
    assert canary.exists(), f"the vector is not live: plain git ignored {style}"
    canary.unlink()

    for key, value in injected.items():
        monkeypatch.setenv(key, value)
    clone = partial_clone(origin, tmp_path / "clone", {})
    report = noteseek_index(tmp_path, clone)
    assert not canary.exists()
    assert report["added"] == 3


def test_the_environment_of_git_is_an_allow_list() -> None:
    """Nothing of the caller's environment reaches git but the allow-listed variables, and
    the fixed ones always win."""
    polluted = {
        "PATH": "/usr/bin",
        "HOME": "/home/ada",
        "GIT_DIR": "/elsewhere/.git",
        "GIT_EXEC_PATH": "/evil",
        "GIT_SSH_COMMAND": "evil",
        "GIT_EXTERNAL_DIFF": "evil",
        "GIT_CONFIG_GLOBAL": "/evil.cfg",
        "GIT_CONFIG_COUNT": "1",
        "GIT_ALLOW_PROTOCOL": "file:ext",
        "GIT_NO_LAZY_FETCH": "0",
        "GIT_ASKPASS": "evil",
        "LD_PRELOAD": "/evil.so",
    }
    env = git_cli.git_env(polluted)
    assert env["PATH"] == "/usr/bin" and env["HOME"] == "/home/ada"
    assert env["GIT_NO_LAZY_FETCH"] == "1" and env["GIT_ALLOW_PROTOCOL"] == "none"
    assert env["GIT_ASKPASS"] == "" and env["GIT_TERMINAL_PROMPT"] == "0"
    assert set(env) <= set(git_cli.PASSED_VARIABLES) | set(git_cli.FIXED_VARIABLES)
    dropped = set(polluted) - {"PATH", "HOME"} - set(git_cli.FIXED_VARIABLES)
    assert dropped == {
        "GIT_DIR",
        "GIT_EXEC_PATH",
        "GIT_SSH_COMMAND",
        "GIT_EXTERNAL_DIFF",
        "GIT_CONFIG_GLOBAL",
        "GIT_CONFIG_COUNT",
        "LD_PRELOAD",
    }
    assert not dropped & set(env)
