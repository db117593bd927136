"""Paths as ``git`` prints them in a diff: C-style quoted when they hold special bytes, and
the two paths of a ``diff --git`` line, which are not quoted when plain (and may hold spaces).
Used by the log parser (:mod:`noteseek.sources.git.log`)."""

from __future__ import annotations

_ESCAPES = {
    ord("a"): 7,
    ord("b"): 8,
    ord("t"): 9,
    ord("n"): 10,
    ord("v"): 11,
    ord("f"): 12,
    ord("r"): 13,
    ord('"'): 34,
    ord("\\"): 92,
}


def unquote(raw: bytes) -> bytes:
    """A path as git printed it, C-style quoted or not, as its bytes."""
    return _quoted_token(raw)[0] if raw.startswith(b'"') else raw


def _quoted_token(raw: bytes) -> tuple[bytes, int]:
    """The bytes of the quoted string at the start of ``raw``, and where it ends.

    git quotes a path with a tab, newline, quote, backslash or control character (and, were
    core.quotePath on, any byte over 0x7f) and writes those as ``\\t``-style or octal escapes.
    """
    out = bytearray()
    i, n = 1, len(raw)
    while i < n:
        ch = raw[i]
        if ch == 34:
            return bytes(out), i + 1
        if ch == 92 and i + 1 < n:
            nxt = raw[i + 1]
            if 48 <= nxt <= 55:
                digits = raw[i + 1 : i + 4]
                out.append(int(digits, 8) & 0xFF)
                i += 1 + len(digits)
                continue
            out.append(_ESCAPES.get(nxt, nxt))
            i += 2
            continue
        out.append(ch)
        i += 1
    return bytes(out), n


def split_diff_paths(rest: bytes) -> tuple[bytes, bytes]:
    """The two paths of a ``diff --git a/X b/Y`` line, without their prefixes.

    Unquoted paths may hold spaces, so when both sides are plain the line is split where its
    two halves name the same file (the usual case); a rename with spaces is settled later by
    the ``rename from``/``rename to`` lines.
    """
    if rest.startswith(b'"'):
        old, end = _quoted_token(rest)
        new = unquote(rest[end + 1 :])
    else:
        half = (len(rest) - 1) // 2
        if (
            len(rest) % 2 == 1
            and rest[half : half + 1] == b" "
            and rest[2:half] == rest[half + 3 :]
        ):
            old, new = rest[:half], rest[half + 1 :]
        else:
            quoted = rest.find(b' "b/')
            cut = quoted if quoted >= 0 else rest.find(b" b/")
            if cut < 0:
                return rest, rest
            old, new = rest[:cut], unquote(rest[cut + 1 :])
    return old.removeprefix(b"a/"), new.removeprefix(b"b/")
