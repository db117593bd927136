"""Real git repositories for tests, built with the git command line."""

from __future__ import annotations

import os
import subprocess
from pathlib import Path

DAY = 86_400
BASE = 1_700_000_000
"""2023-11-14: commit n is dated n days later."""


class Repo:
    """A work tree at ``path`` whose commits are dated ``BASE + n days`` unless told."""

    def __init__(self, path: Path, branch: str = "main") -> None:
        self.path = path
        path.mkdir(parents=True, exist_ok=True)
        self.count = 0
        self.git("init", "-q", "-b", branch)

    def git(self, *args: str, env: dict[str, str] | None = None, input: bytes | None = None) -> str:
        out = subprocess.run(
            ["git", "-c", "core.hooksPath=/dev/null", *args],
            cwd=self.path,
            env={**os.environ, **self._env(), **(env or {})},
            input=input,
            capture_output=True,
            check=True,
        )
        return out.stdout.decode("utf-8", "replace").strip()

    def _env(self) -> dict[str, str]:
        when = f"@{BASE + self.count * DAY} +0000"
        return {
            "GIT_AUTHOR_NAME": "Ana Lima",
            "GIT_AUTHOR_EMAIL": "ana@example.org",
            "GIT_COMMITTER_NAME": "Ana Lima",
            "GIT_COMMITTER_EMAIL": "ana@example.org",
            "GIT_AUTHOR_DATE": when,
            "GIT_COMMITTER_DATE": when,
            "GIT_CONFIG_NOSYSTEM": "1",
            "HOME": str(self.path),
        }

    def commit(
        self,
        message: str,
        files: dict[str, str | bytes | None] | None = None,
        *,
        author: tuple[str, str] | None = None,
        day: int | None = None,
    ) -> str:
        """Write (None: delete) ``files``, commit them all; returns the new hash."""
        self.count = self.count + 1 if day is None else day
        for rel, content in (files or {}).items():
            target = self.path / rel
            if content is None:
                target.unlink()
                continue
            target.parent.mkdir(parents=True, exist_ok=True)
            if isinstance(content, bytes):
                target.write_bytes(content)
            else:
                target.write_text(content, encoding="utf-8")
        self.git("add", "-A")
        env = {}
        if author is not None:
            env = {"GIT_AUTHOR_NAME": author[0], "GIT_AUTHOR_EMAIL": author[1]}
        self.git("commit", "-q", "--allow-empty", "-m", message, env=env)
        return self.head()

    def head(self) -> str:
        return self.git("rev-parse", "HEAD")
