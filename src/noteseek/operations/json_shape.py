"""How deep and how wide a request's JSON may be, checked before anything parses or walks it.

Python's ``json`` module and pydantic recurse once per level of nesting: a 10 KB body of
5,000 nested brackets raised RecursionError (a 500) before any parameter was looked at, and a
body of 60,000 unknown keys was answered with an error naming every one. A real request is a
flat object of at most a few dozen parameters, a list of paths or tags at most two levels down,
so the limits below are far above anything a client sends and far below what costs anything:

- :func:`text_problem` reads a raw body (the HTTP door, ``/mcp`` included) without parsing
  it: strings are cut out with bytes operations, the brackets that remain are summed in C
  (``itertools.accumulate``), the keys counted as the colons outside strings. No recursion,
  and no Python loop per byte (``docs/security.md`` has the cost).
- :func:`value_problem` walks a parsed value with a stack (the MCP door's arguments, which the
  SDK has parsed, and every door's through :func:`~noteseek.operations.parse_arguments`).

Both answer with a short sentence (or None): the door turns it into its 400 / ``invalid``.
"""

from __future__ import annotations

import json
from collections.abc import Iterable
from itertools import accumulate, count
from operator import sub
from typing import Any

MAX_DEPTH = 64
"""Most levels of nesting (``{"a": [1]}`` is 2)."""
MAX_KEYS = 10_000
"""Most keys in all the objects of one request."""
MAX_MESSAGE_BYTES = 1_000
"""Longest error message, measured as JSON (with ``{"error": ...}`` around it, under 2 KB)."""
SHOWN_NAMES = 5
"""Unknown names an error quotes (it says how many more there are)."""

_NOT_SCANNED = bytes(b for b in range(256) if b not in b'[]{}:"')
_NOT_BRACKET = bytes(b for b in range(256) if b not in b"[]{}")
# After the deletion only brackets remain: an opening one counts 2 and a closing one 0, so the
# running sum minus the position (1, 2, ...) is the depth after each bracket, summed in C.
_WEIGHTS = bytes.maketrans(b"[{]}", b"\x02\x02\x00\x00")


def text_problem(body: bytes) -> str | None:
    """Why a JSON body is too deep or has too many keys, or None (also for invalid JSON:
    the parser's own error says that better)."""
    text = _as_utf8(body)
    if not text or not (b"[" in text or b"{" in text):
        return None
    structure = _outside_strings(text)
    keys = structure.count(b":")
    if keys > MAX_KEYS:
        return too_many_keys(f"{keys:,}")
    weights = structure.translate(_WEIGHTS, _NOT_BRACKET)
    if weights.count(2) <= MAX_DEPTH:
        return None  # no deeper than its number of opening brackets
    depth = max(map(sub, accumulate(weights), count(1)))
    if depth > MAX_DEPTH:
        return too_deep(f"{depth:,} levels")
    return None


def _outside_strings(text: bytes) -> bytes:
    """The brackets and colons of a JSON text that are not inside a string, each step in C.

    Escapes go first (``\\\\`` then ``\\"``: scanning left to right pairs them as a parser
    does), then every byte but brackets, colons and quotes. Two quotes side by side can go
    (the quotes around them keep their parity): most strings hold no bracket, so few quotes
    remain, and every other piece between them is outside a string.
    """
    text = text.replace(b"\\\\", b"").replace(b'\\"', b"")
    reduced = text.translate(None, _NOT_SCANNED).replace(b'""', b"")
    return b"".join(reduced.split(b'"')[::2])


def value_problem(value: Any) -> str | None:
    """The same check of a parsed value (dicts, lists and tuples), with a stack: it stops at
    the first level or key over the limit, so a huge value costs no more than the limit."""
    keys = 0
    stack: list[tuple[Any, int]] = [(value, 1)]
    while stack:
        item, depth = stack.pop()
        if isinstance(item, dict):
            keys += len(item)
            if keys > MAX_KEYS:
                return too_many_keys(f"more than {MAX_KEYS:,}")
            children: Iterable[Any] = item.values()
        elif isinstance(item, list | tuple):
            children = item
        else:
            continue
        if depth > MAX_DEPTH:
            return too_deep(f"more than {MAX_DEPTH} levels")
        if _SCALARS.issuperset(map(type, children)):
            continue  # nothing below (a long list of numbers or text is skipped in C)
        stack.extend((child, depth + 1) for child in children if isinstance(child, _NESTED))
    return None


_NESTED = (dict, list, tuple)
_SCALARS = frozenset({str, int, float, bool, type(None)})


def too_deep(how: str) -> str:
    return f"the JSON is nested {how} deep; a request may nest at most {MAX_DEPTH} levels"


def too_many_keys(how: str) -> str:
    return f"the JSON holds {how} keys; a request may hold at most {MAX_KEYS:,} in all"


def _as_utf8(body: bytes) -> bytes:
    """The body as UTF-8, where no byte of a multi-byte character is an ASCII one, so the
    byte scan is exact. ``json.loads`` also reads UTF-16 and UTF-32: those are converted."""
    encoding = json.detect_encoding(body)
    if encoding in ("utf-8", "utf-8-sig"):
        return body
    try:
        return body.decode(encoding).encode("utf-8", "surrogatepass")
    except UnicodeDecodeError:
        return body  # not JSON the parser can read: its own error says so


def shown_names(names: list[str]) -> str:
    """A few names quoted (each at most 40 characters), then how many more: an error about
    60,000 unknown keys names five of them, not all."""
    shown = [repr(n) if len(n) <= 40 else repr(n[:37] + "...") for n in names[:SHOWN_NAMES]]
    more = len(names) - len(shown)
    return ", ".join(shown) + (f" and {more:,} more" if more else "")


def shorten(message: str, limit: int = MAX_MESSAGE_BYTES) -> str:
    """``message`` if it is at most ``limit`` bytes as JSON, else its start and end with what
    was left out between them (a message that quotes a 200 KB value keeps its head and the
    advice at its end)."""
    if len(message) * 6 <= limit or _json_bytes(message) <= limit:
        return message
    head = _fit(message, limit * 6 // 10)
    tail = _fit(message[::-1], limit * 3 // 10)[::-1]
    left_out = len(message) - len(head) - len(tail)
    return f"{head} [... {left_out:,} characters left out ...] {tail}"


def _json_bytes(text: str) -> int:
    """Bytes ``text`` takes in a JSON answer (UTF-8, control characters escaped)."""
    return len(json.dumps(text, ensure_ascii=False).encode("utf-8", "surrogatepass")) - 2


def _fit(text: str, budget: int) -> str:
    """The longest start of ``text`` whose JSON escaping takes at most ``budget`` bytes."""
    used = 0
    for end, char in enumerate(text):
        used += _json_bytes(char)
        if used > budget:
            return text[:end]
    return text
