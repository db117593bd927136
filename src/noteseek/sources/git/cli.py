"""Running the ``git`` command line: the one way noteseek reads a repository.

No libgit2 binding: the ``git`` executable is everywhere a repository is, understands every
repository format it wrote (packs, worktrees, alternates, SHA-256, partial clones), and is
the reference for what a repository holds. Every call goes through :func:`command` (used by
:func:`run` and :func:`stream`), which pins down what a user's configuration could otherwise
change in the output noteseek parses (pager, colour, path quoting, external diff drivers,
text conversion, signatures) and never lets git prompt: a search engine in the background
must not hang on a credential or a pager.

A repository is data, not code: noteseek indexes repositories it finds in a notes folder
(``[git] discover``), and a repository's own ``.git/config`` (or a ``.gitattributes`` it
commits) can name programs for git to run. Every call is hardened against that here, in one
place (docs/security.md lists each vector and the test that proves it closed):

* no transport at all: ``GIT_ALLOW_PROTOCOL`` names no protocol (it overrides any
  ``protocol.<name>.allow`` a repository sets, which ``-c protocol.allow=never`` alone does
  not), every protocol is also refused by ``-c``, and ``GIT_NO_LAZY_FETCH=1`` stops a
  partial clone from fetching a missing object (which would run ``remote.*.uploadpack``,
  ``core.sshCommand``, a credential helper or an ``ext::`` command, and the fetch's hooks);
  a missing blob is an error the log reader reports on its commit;
* no hooks (``core.hooksPath=/dev/null``), no fsmonitor, no pager, no automatic gc or
  maintenance, no credential helper or askpass program, no ssh command;
* diff-producing commands get ``--no-ext-diff --no-textconv`` and logs ``--no-show-signature``
  (no external diff, no textconv filter, no gpg) whoever calls them;
* the environment is built from an allow-list (:data:`PASSED_VARIABLES`), not the caller's
  environment: no ``GIT_SSH_COMMAND``, ``GIT_EXTERNAL_DIFF``, ``GIT_CONFIG_*``, ``GIT_DIR``
  or ``GIT_EXEC_PATH`` reaches git.

The user's own configuration is still read (not ``GIT_CONFIG_GLOBAL=/dev/null``): it is where
``safe.directory`` lets a user read a repository another account owns, and every setting that
would change the output or run a program is overridden on the command line instead.
"""

from __future__ import annotations

import contextlib
import os
import re
import subprocess
import threading
from collections.abc import Iterable, Mapping
from pathlib import Path
from typing import IO

GIT = "git"
TIMEOUT = 30.0
"""Seconds a small call (a ref listing, a rev-parse) may take before it counts as failed: a
network filesystem that stalls must not stall an indexing run forever."""
LONG_TIMEOUT = 600.0
"""Seconds a walk of the whole history (:func:`reachable`) may take."""

PROTOCOLS = ("file", "git", "ssh", "http", "https", "ftp", "ftps", "ext", "fd")
"""The transports git knows, each refused by name: a repository's ``protocol.<name>.allow``
outranks ``protocol.allow``, so only a per-name override on the command line beats it."""

NO_PROTOCOL = "none"
"""``GIT_ALLOW_PROTOCOL``: a list naming no protocol, so git allows none, whatever any
configuration says."""

GLOBAL_OPTIONS: tuple[str, ...] = (
    "--no-pager",
    "-c",
    "core.quotePath=false",
    "-c",
    "color.ui=never",
    "-c",
    "log.showSignature=false",
    "-c",
    "diff.noprefix=false",
    "-c",
    "diff.mnemonicPrefix=false",
    # Nothing the repository configures runs: no hook, no fsmonitor, no credential helper or
    # askpass, no ssh command, no automatic gc or maintenance, no submodule recursion.
    "-c",
    "core.hooksPath=/dev/null",
    "-c",
    "core.fsmonitor=false",
    "-c",
    "core.askPass=",
    "-c",
    "credential.helper=",
    "-c",
    "core.sshCommand=",
    "-c",
    "gc.auto=0",
    "-c",
    "maintenance.auto=false",
    "-c",
    "submodule.recurse=false",
    # No transport: a partial clone cannot fetch what it lacks (GIT_NO_LAZY_FETCH too).
    "-c",
    "protocol.allow=never",
    *(arg for name in PROTOCOLS for arg in ("-c", f"protocol.{name}.allow=never")),
)
"""Options before the subcommand of every call: output that is the same whatever the user's
configuration says about pagers, colour, path quoting and diff prefixes, and no program that
a configuration names is ever run."""

DIFF_COMMANDS = frozenset({"log", "show", "whatchanged", "diff", "diff-tree", "diff-index"})
"""Subcommands that may produce a diff: each gets :data:`DIFF_OPTIONS` after its name."""
DIFF_OPTIONS = ("--no-ext-diff", "--no-textconv")
"""No external diff program (``diff.external``, ``diff.<driver>.command``,
``GIT_EXTERNAL_DIFF``) and no textconv filter (``diff.<driver>.textconv`` chosen by a
committed ``.gitattributes``)."""
LOG_COMMANDS = frozenset({"log", "show", "whatchanged"})
"""Subcommands that may verify signatures (``gpg.program``): each gets
``--no-show-signature``."""

PASSED_VARIABLES = (
    "PATH",
    "HOME",
    "XDG_CONFIG_HOME",
    "TMPDIR",
    "TMP",
    "TEMP",
    "SUDO_UID",
    "SYSTEMROOT",
    "WINDIR",
    "COMSPEC",
    "PATHEXT",
    "USERPROFILE",
    "HOMEDRIVE",
    "HOMEPATH",
    "APPDATA",
    "LOCALAPPDATA",
)
"""The caller's variables a git call sees: where git and the user's own configuration are
(``safe.directory``), temporary folders, git's ownership check under sudo, and what Windows
needs to start a process. Everything else is left out: ``GIT_DIR`` and friends would point a
call at another repository, ``GIT_SSH_COMMAND``, ``GIT_EXTERNAL_DIFF``, ``GIT_EXEC_PATH`` or
``GIT_CONFIG_*`` would make it run something, and ``LANG`` would translate its messages."""

FIXED_VARIABLES: dict[str, str] = {
    "LC_ALL": "C",
    "LANGUAGE": "",
    "GIT_NO_LAZY_FETCH": "1",
    "GIT_ALLOW_PROTOCOL": NO_PROTOCOL,
    "GIT_PROTOCOL_FROM_USER": "0",
    "GIT_TERMINAL_PROMPT": "0",
    "GIT_ASKPASS": "",
    "SSH_ASKPASS": "",
    "GIT_PAGER": "cat",
    "PAGER": "cat",
    "GIT_OPTIONAL_LOCKS": "0",
    "GIT_FLUSH": "0",
}
"""Set on every call: messages in English (they are parsed and shown), no lazy fetch and no
protocol, never a prompt (an empty ``GIT_ASKPASS`` also hides ``core.askPass``), no pager,
and no lock taken to refresh the index of a repository a user is working in."""


class GitError(Exception):
    """A git command failed; the message is one human line (git's own reason)."""


class GitMissing(GitError):
    """The ``git`` executable cannot be run."""

    def __init__(self, detail: str = "") -> None:
        extra = f" ({detail})" if detail else ""
        super().__init__(
            f"git is not installed or not on PATH{extra}: install git to index commit history"
        )


def git_env(environ: Mapping[str, str] | None = None) -> dict[str, str]:
    """The environment of every git call: :data:`PASSED_VARIABLES` of ``environ`` (the
    process's environment by default) and :data:`FIXED_VARIABLES`."""
    source = os.environ if environ is None else environ
    env = {k: source[k] for k in PASSED_VARIABLES if k in source}
    env.update(FIXED_VARIABLES)
    return env


def command(repo: Path | str, args: Iterable[str]) -> list[str]:
    """The full command line of ``git args`` in ``repo``, hardened (see the module docstring)."""
    argv = list(args)
    if argv and argv[0] in DIFF_COMMANDS:
        extra = [*DIFF_OPTIONS, *(["--no-show-signature"] if argv[0] in LOG_COMMANDS else [])]
        argv[1:1] = [a for a in extra if a not in argv]
    return [GIT, "-C", os.fspath(repo), *GLOBAL_OPTIONS, *argv]


def error_line(stderr: bytes | str, fallback: str = "git failed") -> str:
    """The first meaningful line of git's stderr, without ``fatal:``/``error:`` prefixes.

    git says what went wrong on the first ``fatal:`` line; hints and usage text after it only
    help at a terminal.
    """
    text = stderr.decode("utf-8", "replace") if isinstance(stderr, bytes) else stderr
    lines = [ln.strip() for ln in text.splitlines() if ln.strip()]
    for prefix in ("fatal:", "error:"):
        for line in lines:
            if line.startswith(prefix):
                return line[len(prefix) :].strip() or fallback
    return lines[0] if lines else fallback


def run(
    repo: Path | str,
    args: Iterable[str],
    *,
    stdin: bytes | None = None,
    timeout: float | None = TIMEOUT,
    ok_codes: tuple[int, ...] = (0,),
) -> bytes:
    """Run one git command in ``repo`` and return its stdout; GitError on failure."""
    argv = command(repo, args)
    try:
        done = subprocess.run(
            argv,
            input=stdin,
            stdin=None if stdin is not None else subprocess.DEVNULL,
            capture_output=True,
            env=git_env(),
            timeout=timeout,
            check=False,
        )
    except FileNotFoundError as exc:
        if not os.path.isdir(repo):
            raise GitError(f"{repo} does not exist or is not a folder") from exc
        raise GitMissing() from exc
    except PermissionError as exc:
        raise GitMissing(str(exc)) from exc
    except subprocess.TimeoutExpired as exc:
        raise GitError(f"git {argv[len(GLOBAL_OPTIONS) + 3]} took over {timeout:g} s") from exc
    except OSError as exc:
        raise GitError(f"cannot run git: {exc.strerror or exc}") from exc
    if done.returncode not in ok_codes:
        raise GitError(error_line(done.stderr, f"git exited with code {done.returncode}"))
    return done.stdout


class Stream:
    """A running git command whose stdout is read as it comes.

    Used as a context manager: leaving it (also when the reading generator is closed early)
    kills the process if it is still running and reaps it, so no git is left behind.
    After the output ended, :meth:`finish` gives the exit code and stderr.
    """

    def __init__(self, repo: Path | str, args: Iterable[str], stdin: bytes | None) -> None:
        argv = command(repo, args)
        try:
            self.proc = subprocess.Popen(
                argv,
                stdin=subprocess.PIPE if stdin is not None else subprocess.DEVNULL,
                stdout=subprocess.PIPE,
                stderr=subprocess.PIPE,
                env=git_env(),
                bufsize=1 << 16,
            )
        except FileNotFoundError as exc:
            if not os.path.isdir(repo):
                raise GitError(f"{repo} does not exist or is not a folder") from exc
            raise GitMissing() from exc
        except OSError as exc:
            raise GitError(f"cannot run git: {exc.strerror or exc}") from exc
        self._stderr = bytearray()
        # stdin and stderr are served by threads: git may fill a pipe while the caller is
        # blocked on the other one, and neither side may wait for the other.
        self._threads = [threading.Thread(target=self._drain, daemon=True)]
        if stdin is not None:
            self._threads.append(threading.Thread(target=self._feed, args=(stdin,), daemon=True))
        for thread in self._threads:
            thread.start()

    @property
    def stdout(self) -> IO[bytes]:
        assert self.proc.stdout is not None
        return self.proc.stdout

    def _feed(self, data: bytes) -> None:
        assert self.proc.stdin is not None
        try:
            self.proc.stdin.write(data)
        except OSError:
            pass  # git stopped reading: it failed, and says why on stderr.
        finally:
            with contextlib.suppress(OSError):
                self.proc.stdin.close()

    def _drain(self) -> None:
        assert self.proc.stderr is not None
        for chunk in iter(lambda: self.proc.stderr.read(8192) if self.proc.stderr else b"", b""):
            if len(self._stderr) < 65536:
                self._stderr += chunk

    def finish(self) -> tuple[int, str]:
        """Wait for the end; (exit code, git's reason when it failed)."""
        code = self.proc.wait()
        for thread in self._threads:
            thread.join(timeout=5)
        return code, error_line(bytes(self._stderr), f"git exited with code {code}")

    def close(self) -> None:
        if self.proc.poll() is None:
            self.proc.kill()
        try:
            self.proc.wait(timeout=10)
        finally:
            for pipe in (self.proc.stdout, self.proc.stderr):
                if pipe is not None:
                    pipe.close()
            for thread in self._threads:
                thread.join(timeout=5)

    def __enter__(self) -> Stream:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


def stream(repo: Path | str, args: Iterable[str], stdin: bytes | None = None) -> Stream:
    """Start ``git args`` in ``repo``, its stdout read as it comes (see :class:`Stream`)."""
    return Stream(repo, args, stdin)


# -- where a repository is -------------------------------------------------------------------


def _folder(path: Path | str) -> Path:
    """``path`` itself when it is a folder, else its parent (git runs in a folder)."""
    p = Path(path).expanduser()
    if not p.exists():
        raise GitError(f"{p} does not exist")
    return p if p.is_dir() else p.parent


def toplevel(path: Path | str) -> Path:
    """The top of the work tree ``path`` is in, or the git dir itself for a bare repository
    (and the work tree of a ``.git`` folder when ``path`` is inside one)."""
    folder = _folder(path)
    out = run(folder, ["rev-parse", "--is-bare-repository", "--is-inside-git-dir"])
    bare, inside_git_dir = [*out.decode("ascii", "replace").split(), "", ""][:2]
    if bare == "true":
        return git_dir(folder)
    if inside_git_dir == "true":
        found = git_dir(folder)
        return found.parent if found.name == ".git" else found
    out = run(folder, ["rev-parse", "--show-toplevel"])
    return Path(out.decode("utf-8", "surrogateescape").strip()).resolve()


def git_dir(path: Path | str) -> Path:
    """The repository's own git dir, absolute and resolved (a ``.git`` file of a worktree or a
    submodule is followed to the folder it names)."""
    folder = _folder(path)
    out = run(folder, ["rev-parse", "--absolute-git-dir"])
    return Path(out.decode("utf-8", "surrogateescape").strip()).resolve()


def common_dir(path: Path | str) -> Path:
    """The folder holding refs and objects shared by all worktrees of the repository."""
    folder = _folder(path)
    out = run(folder, ["rev-parse", "--git-common-dir"]).decode("utf-8", "surrogateescape")
    found = Path(out.strip())
    return (found if found.is_absolute() else folder / found).resolve()


def is_shallow(path: Path | str) -> bool:
    out = run(_folder(path), ["rev-parse", "--is-shallow-repository"])
    return out.strip() == b"true"


def shallow_commits(repo: Path | str) -> frozenset[str]:
    """Hashes of the shallow boundary: commits whose parents the clone does not have."""
    out = run(repo, ["rev-parse", "--git-path", "shallow"]).decode("utf-8", "surrogateescape")
    return _read_shallow(Path(repo), out.strip())


def _read_shallow(repo: Path, git_path: str) -> frozenset[str]:
    path = Path(git_path)
    if not path.is_absolute():
        path = repo / path
    try:
        return frozenset(path.read_text(encoding="ascii", errors="replace").split())
    except OSError:
        return frozenset()


_REACHABLE_ARGS = (
    "rev-list",
    "--ignore-missing",
    "--branches",
    "--remotes",
    "--tags",
    "HEAD",
    "--timestamp",
    "--",
)


def reachable(repo: Path | str) -> list[tuple[str, int]]:
    """Every commit reachable from branches, remote-tracking branches, tags and HEAD, as
    (full hash, committer time in epoch seconds), newest first.

    Not ``--all``: the stash, notes and other refs are not history a user searches. An unborn
    HEAD (a repository with no commits) is ignored rather than an error.
    """
    out = run(repo, _REACHABLE_ARGS, timeout=LONG_TIMEOUT)
    found: list[tuple[str, int]] = []
    for line in out.decode("ascii", "replace").splitlines():
        stamp, _, sha = line.partition(" ")
        if sha:
            found.append((sha, int(stamp)))
    return found


def refs_signature(repo: Path | str) -> str:
    """A cheap string that changes whenever a ref a scan follows moves.

    Every branch, remote-tracking branch and tag with the object it points at (one
    ``for-each-ref`` reads loose and packed refs alike, so repacking refs is no move), HEAD,
    and the shallow boundary (a ``fetch --deepen`` adds history without moving a ref).
    """
    refs = run(
        repo,
        [
            "for-each-ref",
            "--format=%(objectname) %(refname)",
            "refs/heads",
            "refs/remotes",
            "refs/tags",
        ],
    )
    out = run(
        repo, ["rev-parse", "--git-path", "shallow", "-q", "--verify", "HEAD"], ok_codes=(0, 1)
    )
    shallow_path, _, head = out.decode("utf-8", "surrogateescape").partition("\n")
    shallow = _read_shallow(Path(repo), shallow_path)
    return "\n".join([refs.decode("utf-8", "replace"), "HEAD " + head.strip(), *sorted(shallow)])


_HASH = re.compile(r"(?:[0-9a-f]{40}|[0-9a-f]{64})")


def is_hash(text: str) -> bool:
    """Whether ``text`` is a full object name (SHA-1 or SHA-256), lowercase hex."""
    return _HASH.fullmatch(text) is not None
