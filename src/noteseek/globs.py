"""Path patterns as filters read them: gitignore-style globs (``**`` spans folders, a pattern
without a slash matches a name at any depth), shared by every store backend and by results."""

from __future__ import annotations

from collections.abc import Iterable
from functools import lru_cache

from pathspec import GitIgnoreSpec


@lru_cache(maxsize=64)
def _spec(patterns: str) -> GitIgnoreSpec:
    return GitIgnoreSpec.from_lines(patterns.split("\n"))


def path_match(patterns: str, path: str) -> bool:
    """Whether ``path`` matches any of the newline-separated ``patterns`` (SQLite's
    ``ns_path_match``)."""
    return _spec(patterns).match_file(path)


def any_match(patterns: Iterable[str], path: str) -> bool:
    """Whether ``path`` matches any of ``patterns``."""
    return path_match("\n".join(patterns), path)
