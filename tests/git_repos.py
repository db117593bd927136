"""Small real git repositories for tests, built with the ``git`` command line.

Dates, names and e-mails are fixed and each commit is one minute after the last, so hashes
are the same on every run and every machine.
"""

from __future__ import annotations

import os
import subprocess
from pathlib import Path

import pytest

BASE_DATE = 1_700_000_000
"""2023-11-14 22:13:20 UTC."""
DAY = 86_400


def git_env(extra: dict[str, str] | None = None) -> dict[str, str]:
    env = dict(os.environ)
    env.update(
        GIT_CONFIG_NOSYSTEM="1",
        GIT_AUTHOR_NAME="Ada Author",
        GIT_AUTHOR_EMAIL="ada@example.org",
        GIT_COMMITTER_NAME="Ada Author",
        GIT_COMMITTER_EMAIL="ada@example.org",
        GIT_TERMINAL_PROMPT="0",
    )
    env.update(extra or {})
    return env


def git(
    cwd: Path, *args: str, input: bytes | None = None, env: dict[str, str] | None = None
) -> str:
    """Run git in ``cwd``; its stdout (stripped). A failure fails the test with git's stderr."""
    done = subprocess.run(
        ["git", *args], cwd=cwd, input=input, capture_output=True, env=git_env(env), check=False
    )
    if done.returncode != 0:
        pytest.fail(f"git {' '.join(args)} failed: {done.stderr.decode(errors='replace')}")
    return done.stdout.decode("utf-8", "replace").strip()


class Repo:
    """A work tree with helpers to write files and commit them at fixed dates."""

    def __init__(self, path: Path, *, init: bool = True) -> None:
        self.path = path
        self.tick = 0
        if init:
            path.mkdir(parents=True, exist_ok=True)
            git(path, "init", "-q", "-b", "main")

    def git(self, *args: str, input: bytes | None = None, env: dict[str, str] | None = None) -> str:
        return git(self.path, *args, input=input, env={**self.dates(), **(env or {})})

    def dates(self) -> dict[str, str]:
        """Author and committer date of the next commit: one minute after the last one."""
        self.tick += 1
        stamp = f"@{BASE_DATE + 60 * self.tick} +0200"
        return {"GIT_AUTHOR_DATE": stamp, "GIT_COMMITTER_DATE": stamp}

    def write(self, rel: str, content: str | bytes | None) -> None:
        """Write (or delete, with None) one file of the work tree."""
        target = self.path / rel
        if content is None:
            target.unlink()
            return
        target.parent.mkdir(parents=True, exist_ok=True)
        if isinstance(content, str):
            content = content.encode("utf-8")
        target.write_bytes(content)

    def commit(
        self,
        message: str,
        files: dict[str, str | bytes | None] | None = None,
        *,
        author: tuple[str, str] | None = None,
        day: int | None = None,
    ) -> str:
        """Write ``files``, stage everything and commit; the new commit's hash. ``author``:
        (name, email) instead of Ada's; ``day``: dated that many days after BASE_DATE (UTC)."""
        for rel, content in (files or {}).items():
            self.write(rel, content)
        self.git("add", "-A")
        env: dict[str, str] = {}
        if author is not None:
            env.update(GIT_AUTHOR_NAME=author[0], GIT_AUTHOR_EMAIL=author[1])
        if day is not None:
            stamp = f"@{BASE_DATE + day * DAY} +0000"
            env.update(GIT_AUTHOR_DATE=stamp, GIT_COMMITTER_DATE=stamp)
        self.git("commit", "-q", "--allow-empty", "-m", message, env=env)
        return self.head()

    def head(self) -> str:
        return self.git("rev-parse", "HEAD")


def loose_object(repo: Path, sha: str) -> Path:
    return repo / ".git" / "objects" / sha[:2] / sha[2:]
