"""Path patterns as filters read them: gitignore-style globs (``**`` spans folders, a pattern
without a slash matches a name at any depth), shared by every store backend and by results.

The meaning is git's, as pathspec translates each pattern into a regular expression; the
matching is ours. Python's ``re`` backtracks, so ``*a*a*a*a*a*ab`` against a long name took
28 s and blocked every other query. Here each expression runs on a Pike VM (Thompson's
simulation with thread priorities, so the result and its directory mark are those ``re``
would give) whose steps are cached as a lazy DFA: matching a path costs O(path length x
pattern length) the first time a state is met, and a dictionary lookup per character after.
``MAX_PATTERNS`` and ``MAX_PATTERN_CHARS`` bound that work; beyond them, and for a pattern git
cannot read, :func:`check_patterns` raises :class:`GlobError` with the reason.
"""

from __future__ import annotations

import threading
from collections.abc import Iterable
from dataclasses import dataclass, field
from functools import lru_cache

MAX_PATTERNS = 64
"""Most patterns one filter holds (``--path`` and ``--exclude`` each)."""
MAX_PATTERN_CHARS = 1024
"""Longest pattern: matching costs at most (path length x this) steps per new DFA state."""
_MAX_DFA_STATES = 4096
"""Cached states per pattern before the cache starts over (bounds memory, not time)."""


class GlobError(ValueError):
    """A path pattern that cannot be used; the message names it and says why."""


# -- the instructions of a compiled expression -----------------------------------------------
_CHAR, _ANY, _SET, _SPLIT, _JMP, _BOL, _EOL, _MARK, _MATCH = range(9)


@dataclass(frozen=True, slots=True)
class _CharSet:
    negated: bool
    chars: frozenset[str]
    ranges: tuple[tuple[str, str], ...]

    def __contains__(self, c: str) -> bool:
        inside = c in self.chars or any(lo <= c <= hi for lo, hi in self.ranges)
        return inside != self.negated


@dataclass
class _Program:
    """Instructions as parallel lists: the operation, its jump targets (the preferred one,
    then the other of a SPLIT), the character of a CHAR and the set of a SET."""

    ops: list[int] = field(default_factory=list)
    first: list[int] = field(default_factory=list)
    second: list[int] = field(default_factory=list)
    chars: list[str] = field(default_factory=list)
    sets: list[_CharSet | None] = field(default_factory=list)

    def emit(
        self,
        op: int,
        first: int = -1,
        second: int = -1,
        char: str = "",
        chars: _CharSet | None = None,
    ) -> int:
        self.ops.append(op)
        self.first.append(first)
        self.second.append(second)
        self.chars.append(char)
        self.sets.append(chars)
        return len(self.ops) - 1

    def cut(self, start: int) -> list[tuple[int, int, int, str, _CharSet | None]]:
        """Remove and return the instructions from ``start`` on."""
        taken = list(
            zip(
                self.ops[start:],
                self.first[start:],
                self.second[start:],
                self.chars[start:],
                self.sets[start:],
                strict=True,
            )
        )
        for column in (self.ops, self.first, self.second, self.chars, self.sets):
            del column[start:]
        return taken


class _Parser:
    """The subset of regular expressions pathspec writes: literals and escapes, ``.``,
    classes, ``^``, ``$``, ``(?:...)``, ``(?P<ps_d>...)``, ``|`` and greedy ``? * +``.
    Anything else is a bug here, not a user error (the tests compare with pathspec)."""

    def __init__(self, regex: str) -> None:
        self.s = regex
        self.i = 0
        self.prog = _Program()

    def compile(self) -> _Program:
        self._alternation()
        if self.i != len(self.s):
            raise AssertionError(f"unsupported expression {self.s!r} at {self.i}")
        self.prog.emit(_MATCH)
        return self.prog

    def _peek(self) -> str:
        return self.s[self.i] if self.i < len(self.s) else ""

    def _alternation(self) -> None:
        # a|b: SPLIT(a, b), a, JMP end, b; without '|' the SPLIT becomes a jump to a.
        prog = self.prog
        split = prog.emit(_JMP)
        self._sequence()
        jumps = []
        while self._peek() == "|":
            self.i += 1
            jumps.append(prog.emit(_JMP))
            prog.ops[split], prog.first[split], prog.second[split] = (
                _SPLIT,
                split + 1,
                len(prog.ops),
            )
            split = prog.emit(_JMP)
            self._sequence()
        prog.first[split] = split + 1
        for j in jumps:
            prog.first[j] = len(prog.ops)

    def _sequence(self) -> None:
        while self.i < len(self.s) and self._peek() not in "|)":
            start = len(self.prog.ops)
            self._atom()
            quant = self._peek()
            if quant in ("?", "*", "+"):
                self.i += 1
                if self._peek() in ("?", "+"):
                    raise AssertionError(f"lazy or possessive quantifier in {self.s!r}")
                self._quantify(start, quant)

    def _quantify(self, start: int, quant: str) -> None:
        # The atom's instructions are at [start, end); wrap them, the atom preferred (greedy).
        prog = self.prog
        body = prog.cut(start)
        shift = 1 if quant in ("?", "*") else 0
        if shift:
            split = prog.emit(_SPLIT, start + 1)
        for op, first, second, char, chars in body:
            prog.emit(
                op,
                first + shift if first >= 0 else first,
                second + shift if second >= 0 else second,
                char,
                chars,
            )
        if quant == "?":
            prog.second[split] = len(prog.ops)
        elif quant == "*":
            prog.emit(_JMP, split)
            prog.second[split] = len(prog.ops)
        else:
            prog.emit(_SPLIT, start, len(prog.ops) + 1)

    def _atom(self) -> None:
        c = self.s[self.i]
        self.i += 1
        prog = self.prog
        if c == "^":
            prog.emit(_BOL)
        elif c == "$":
            prog.emit(_EOL)
        elif c == ".":
            prog.emit(_ANY)
        elif c == "\\":
            prog.emit(_CHAR, char=self.s[self.i])
            self.i += 1
        elif c == "[":
            prog.emit(_SET, chars=self._charset())
        elif c == "(":
            mark = False
            if self.s.startswith("?:", self.i):
                self.i += 2
            elif self.s.startswith("?P<ps_d>", self.i):
                self.i += len("?P<ps_d>")
                mark = True
            else:
                raise AssertionError(f"unsupported group in {self.s!r}")
            self._alternation()
            if self._peek() != ")":
                raise AssertionError(f"unclosed group in {self.s!r}")
            self.i += 1
            if mark:
                prog.emit(_MARK)
        else:
            prog.emit(_CHAR, char=c)

    def _charset(self) -> _CharSet:
        # As re reads a class: a ']' right after '[' or '[^' is a member; '-' between two
        # members makes a range, elsewhere it is a member.
        negated = self._peek() == "^"
        if negated:
            self.i += 1
        chars: set[str] = set()
        ranges: list[tuple[str, str]] = []
        first = True
        while True:
            if self.i >= len(self.s):
                raise AssertionError(f"unclosed class in {self.s!r}")
            if self._peek() == "]" and not first:
                self.i += 1
                return _CharSet(negated, frozenset(chars), tuple(ranges))
            first = False
            c = self._class_char()
            if self._peek() == "-" and self.i + 1 < len(self.s) and self.s[self.i + 1] != "]":
                self.i += 1
                hi = self._class_char()
                if hi < c:
                    raise GlobError(f"the range {c}-{hi} is reversed; write {hi}-{c}")
                ranges.append((c, hi))
            else:
                chars.add(c)

    def _class_char(self) -> str:
        c = self.s[self.i]
        self.i += 1
        if c == "\\":
            c = self.s[self.i]
            self.i += 1
        return c


# -- matching ---------------------------------------------------------------------------------

_State = tuple[tuple[tuple[int, bool], ...], bool | None]
"""The threads (instruction, directory mark) in priority order, and the best match so far
(None: none; else whether the directory mark was set)."""


class _Matcher:
    """One compiled expression, searched as ``re.search`` would, in linear time."""

    def __init__(self, regex: str) -> None:
        self.prog = _Parser(regex).compile()
        pc = 0
        while self.prog.ops[pc] == _JMP:
            pc = self.prog.first[pc]
        self.anchored = self.prog.ops[pc] == _BOL
        """A match can only start at the beginning: no thread is started later."""
        self._ids: dict[_State, int] = {}
        self._states: list[_State] = []
        self._final: set[int] = set()
        """States whose answer cannot change any more (no thread runs, none can start)."""
        self._next: list[dict[str, int]] = []
        """Per state, the state after each character (away from the end of the text)."""
        self._near_end: dict[tuple[int, str, int], int] = {}
        self._starts: dict[int, int] = {}
        self._lock = threading.Lock()  # SQLite calls us from every searching thread

    def search(self, text: str) -> bool | None:
        """None when the expression does not match; else whether the match set the
        directory mark (``ps_d``)."""
        with self._lock:
            return self._search(text)

    def _search(self, text: str) -> bool | None:
        if len(self._states) >= _MAX_DFA_STATES:
            # Start over: one search adds at most len(text) + 1 states, so this bounds memory.
            for cache in (self._ids, self._states, self._final, self._next):
                cache.clear()
            self._near_end.clear()
            self._starts.clear()
        n = len(text)
        end = self._end(0, text, n)
        state = self._starts.get(end)
        if state is None:
            state = self._starts[end] = self._intern(self._start(text, n))
        final, table, last = self._final, self._next, n - 2
        for i, c in enumerate(text):
            if state in final:
                break
            if i < last:  # what '$' sees after this character matters only near the end
                following = table[state].get(c)
                if following is None:
                    following = table[state][c] = self._intern(
                        self._step(self._states[state], c, i + 1, text, n)
                    )
            else:
                key = (state, c, self._end(i + 1, text, n))
                found = self._near_end.get(key)
                if found is None:
                    found = self._near_end[key] = self._intern(
                        self._step(self._states[state], c, i + 1, text, n)
                    )
                following = found
            state = following
        return self._states[state][1]

    @staticmethod
    def _end(pos: int, text: str, n: int) -> int:
        """What ``$`` sees at ``pos``: 1 at the end, 2 before a final newline, else 0."""
        if pos == n:
            return 1
        return 2 if pos == n - 1 and text[-1] == "\n" else 0

    def _intern(self, state: _State) -> int:
        found = self._ids.get(state)
        if found is None:
            found = self._ids[state] = len(self._states)
            self._states.append(state)
            self._next.append({})
            threads, matched = state
            if not threads and (matched is not None or self.anchored):
                self._final.add(found)
        return found

    def _start(self, text: str, n: int) -> _State:
        threads: list[tuple[int, bool]] = []
        self._add(threads, set(), 0, False, 0, text, n)
        return self._settle(threads, None)

    def _step(self, state: _State, c: str, pos: int, text: str, n: int) -> _State:
        threads, matched = state
        following: list[tuple[int, bool]] = []
        seen: set[int] = set()
        prog = self.prog
        for pc, mark in threads:
            op = prog.ops[pc]
            if op == _CHAR:
                ok = c == prog.chars[pc]
            elif op == _ANY:
                ok = c != "\n"  # as re's '.' without DOTALL
            else:
                charset = prog.sets[pc]
                ok = charset is not None and c in charset
            if ok:
                self._add(following, seen, pc + 1, mark, pos, text, n)
        if matched is None and not self.anchored:
            # re.search: a match may also start here, after every thread already running.
            self._add(following, seen, 0, False, pos, text, n)
        return self._settle(following, matched)

    def _settle(self, threads: list[tuple[int, bool]], matched: bool | None) -> _State:
        """A match cuts off the threads of lower priority (leftmost-first, as ``re``); those
        of higher priority run on and may still give a match that wins."""
        for index, (pc, mark) in enumerate(threads):
            if self.prog.ops[pc] == _MATCH:
                return tuple(threads[:index]), mark
        return tuple(threads), matched

    def _add(
        self,
        threads: list[tuple[int, bool]],
        seen: set[int],
        pc: int,
        mark: bool,
        pos: int,
        text: str,
        n: int,
    ) -> None:
        """Follow the jumps and assertions from ``pc`` in priority order (depth first, as
        backtracking would try them); each instruction once per position."""
        prog = self.prog
        stack = [(pc, mark)]
        while stack:
            pc, mark = stack.pop()
            if pc in seen:
                continue
            seen.add(pc)
            op = prog.ops[pc]
            if op == _JMP:
                stack.append((prog.first[pc], mark))
            elif op == _SPLIT:
                stack.append((prog.second[pc], mark))
                stack.append((prog.first[pc], mark))
            elif op == _BOL:
                if pos == 0:
                    stack.append((pc + 1, mark))
            elif op == _EOL:
                if self._end(pos, text, n):
                    stack.append((pc + 1, mark))
            elif op == _MARK:
                stack.append((pc + 1, True))
            else:
                threads.append((pc, mark))


@dataclass(frozen=True)
class _Pattern:
    include: bool
    matcher: _Matcher


def _translate(pattern: str) -> _Pattern | None:
    """One line as git reads it, or None for a line that selects nothing (blank, comment)."""
    shown = pattern if len(pattern) <= 80 else pattern[:77] + "..."
    if "\x00" in pattern:
        raise GlobError(f"the path pattern {shown!r} holds a NUL character")
    if len(pattern) > MAX_PATTERN_CHARS:
        raise GlobError(
            f"the path pattern {shown!r} is {len(pattern)} characters long; "
            f"at most {MAX_PATTERN_CHARS} are allowed"
        )
    try:
        from pathspec.patterns.gitignore.spec import GitIgnoreSpecPattern  # with the first glob

        regex, include = GitIgnoreSpecPattern.pattern_to_regex(pattern)
    except ValueError:
        raise GlobError(_unreadable(pattern, shown)) from None
    if regex is None or include is None:
        stripped = pattern.rstrip()
        if stripped and not stripped.startswith("#") and stripped != "/":
            # pathspec drops a pattern with an unclosed '[' silently, as git does; a filter
            # that silently matches nothing is a wrong answer, so say so.
            raise GlobError(
                f"the path pattern {shown!r} opens a '[' character class it never closes "
                "(write \\[ for a literal bracket)"
            )
        return None
    try:
        return _Pattern(include, _Matcher(regex))
    except GlobError as exc:
        raise GlobError(f"the path pattern {shown!r} is not valid: {exc}") from None


def _unreadable(pattern: str, shown: str) -> str:
    stripped = pattern.rstrip()
    if stripped.endswith("\\") and not stripped.endswith("\\\\"):
        return (
            f"the path pattern {shown!r} ends with a backslash that escapes nothing "
            "(write \\\\ for a literal backslash)"
        )
    if stripped.startswith("!"):
        return f"the path pattern {shown!r} negates nothing: write !pattern (for example !drafts/)"
    return f"the path pattern {shown!r} is not a valid gitignore-style pattern"


@lru_cache(maxsize=64)
def _compile(patterns: str) -> tuple[_Pattern, ...]:
    lines = patterns.split("\n")
    if len(lines) > MAX_PATTERNS:
        raise GlobError(f"{len(lines)} path patterns given; at most {MAX_PATTERNS} are allowed")
    return tuple(p for p in (_translate(line) for line in lines) if p is not None)


def check_patterns(patterns: Iterable[str]) -> None:
    """Raise :class:`GlobError` if any pattern cannot be used (see the module docstring)."""
    _compile("\n".join(patterns))


@lru_cache(maxsize=8192)
def path_match(patterns: str, path: str) -> bool:
    """Whether ``path`` matches the newline-separated ``patterns`` as the lines of one
    ``.gitignore`` file (SQLite's ``ns_path_match``). The last pattern that matches the path
    itself wins, else the last that matches a folder above it. Never raises (it runs inside
    SQL): patterns that :func:`check_patterns` refuses match nothing. Remembered: SQL asks
    again for every section of a file."""
    try:
        compiled = _compile(patterns)
    except GlobError:
        return False
    path = path.removeprefix("./") if path.startswith("./") else path.removeprefix("/")
    result: bool | None = None
    best = 0
    for pattern in reversed(compiled):
        dir_mark = pattern.matcher.search(path)
        if dir_mark is None:
            continue
        priority = 1 if dir_mark else 2
        if priority > best:
            result, best = pattern.include, priority
        if priority == 2:
            break
    return bool(result)


def any_match(patterns: Iterable[str], path: str) -> bool:
    """Whether ``path`` matches any of ``patterns``."""
    return path_match("\n".join(patterns), path)
