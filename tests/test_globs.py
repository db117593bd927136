"""Path patterns: git's meaning (as pathspec reads it), matched in linear time, bad ones refused.

The matcher replaces pathspec's use of Python's backtracking ``re``; comparing the two on
thousands of generated patterns and paths shows the meaning did not change.
"""

from __future__ import annotations

import random
import time
import warnings

import pytest
from pathspec import GitIgnoreSpec

from noteseek.globs import (
    MAX_PATTERN_CHARS,
    MAX_PATTERNS,
    GlobError,
    any_match,
    check_patterns,
    path_match,
)
from noteseek.search.ask import Filter
from noteseek.search.filters import FilterError, build_filters

PATTERN_ATOMS = ["a", "b", "*", "**", "?", "/", "[ab]", "[!a]", "[a-b]", "[]a]", "\\*", ".",
                 "!", " ", "\\\\", "[^b]", "[-a]", "[a-]", "#"]  # fmt: skip
PATH_ATOMS = ["a", "b", "/", ".", "ab", "ba", "*", "\\", " ", "\n", "[", "]", "!"]


def test_the_meaning_is_pathspecs_on_generated_patterns_and_paths() -> None:
    rng = random.Random(18)
    compared = matched = 0
    for _ in range(3000):
        lines = [
            "".join(rng.choice(PATTERN_ATOMS) for _ in range(rng.randint(1, 5)))
            for _ in range(rng.choice([1, 1, 2, 3]))
        ]
        try:
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")  # re's "possible nested set" on '[['
                spec = GitIgnoreSpec.from_lines(lines)
            check_patterns(lines)
        except (GlobError, ValueError):
            continue
        for _ in range(8):
            path = "".join(rng.choice(PATH_ATOMS) for _ in range(rng.randint(0, 8)))
            expected = spec.match_file(path)
            assert path_match("\n".join(lines), path) == expected, (lines, path)
            compared += 1
            matched += expected
    assert compared > 15_000 and matched > 2_000  # both answers were exercised


@pytest.mark.parametrize(
    ("patterns", "path", "expected"),
    [
        (["notes/"], "notes/redis.md", True),
        (["*.txt"], "notes/a.txt", True),
        (["**/dns.md"], "a/b/dns.md", True),
        (["redis.md"], "deep/down/redis.md", True),
        (["/redis.md"], "deep/redis.md", False),
        (["notes/", "!notes/draft.md"], "notes/draft.md", False),
        (["notes/", "!notes/draft.md"], "notes/final.md", True),
        (["a/**/b"], "a/x/y/b", True),
        (["[!a]b"], "cb", True),
        (["[!a]b"], "ab", False),
    ],
)
def test_gitignore_rules(patterns: list[str], path: str, expected: bool) -> None:
    assert any_match(patterns, path) is expected


def test_a_backtracking_pattern_is_matched_in_linear_time() -> None:
    # Python's re took minutes on this; each path here costs microseconds to milliseconds.
    names = ["a" * 250, "notes/" + "a" * 250 + ".md", "x/" * 1000 + "a" * 250]
    started = time.process_time()  # CPU time: a busy machine does not stretch it
    for name in names:
        assert not path_match("*a*a*a*a*a*ab", name)
        assert not path_match("**/**/**/**/**/**/b", name)
    assert path_match("*a*a*a*a*a*ab", "a" * 250 + "b")
    assert time.process_time() - started < 1.0


@pytest.mark.parametrize(
    ("pattern", "reason"),
    [
        ("[z-a]", "the range z-a is reversed"),
        ("!", "negates nothing"),
        ("\\", "ends with a backslash"),
        ("notes/\\", "ends with a backslash"),
        ("[abc", "never closes"),
        ("a\x00b", "NUL"),
        ("a" * (MAX_PATTERN_CHARS + 1), f"at most {MAX_PATTERN_CHARS}"),
    ],
)
def test_a_bad_pattern_is_refused_with_the_reason(pattern: str, reason: str) -> None:
    with pytest.raises(GlobError, match=reason):
        check_patterns([pattern])
    # Inside SQL (ns_path_match) it never raises: it matches nothing.
    assert path_match(pattern, "anything") is False
    # Filters refuse it with the same message, as an invalid argument.
    with pytest.raises(FilterError, match=reason):
        build_filters(Filter(paths=[pattern]))


def test_too_many_patterns_are_refused() -> None:
    with pytest.raises(FilterError, match=f"at most {MAX_PATTERNS}"):
        build_filters(Filter(exclude_paths=[f"n{i}.md" for i in range(MAX_PATTERNS + 1)]))
    build_filters(Filter(exclude_paths=[f"n{i}.md" for i in range(MAX_PATTERNS)]))


def test_escaped_specials_are_literal() -> None:
    check_patterns(["\\[draft\\].md", "\\!important.md", "a\\\\b"])
    assert path_match("\\[draft\\].md", "notes/[draft].md")
    assert path_match("\\!important.md", "!important.md")
