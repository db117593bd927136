"""Snippets made from a section's plain text, with the words that matched the query highlighted.

The chunk's Markdown is first turned into the text a reader sees (``parse/plain.py``: link
display text, no heading markers, fences or properties), then analyzed again (same analyzer)
with character offsets, so highlights are offsets into that plain text and follow stemming and
folding: a query for ``cafe`` highlights ``Cafés`` in the note.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from functools import lru_cache

from noteseek.analysis import Analyzer
from noteseek.parse.plain import link_addresses, plain_text

_SPACE_RE = re.compile(r"\s+")
ELLIPSIS = "…"
HIT_TABLES = 4
HIT_TABLE_WORDS = 50_000


@lru_cache(maxsize=HIT_TABLES)
def _hit_tables(terms: frozenset[str], prefixes: tuple[str, ...]) -> dict[str, str | None]:
    return {}


def _hit_table(terms: set[str], prefixes: Sequence[str]) -> dict[str, str | None]:
    """Which term each word seen so far matched (None: none), for one set of query terms."""
    table = _hit_tables(frozenset(terms), tuple(prefixes))
    if len(table) > HIT_TABLE_WORDS:
        table.clear()
    return table


def matched_spans(
    text: str, terms: set[str], prefixes: Sequence[str], analyzer: Analyzer
) -> list[tuple[int, int, str]]:
    """(start, end, term) of every word of ``text`` whose term the query asked for."""

    starts = tuple(prefixes)

    def wanted(found: tuple[str, ...]) -> str | None:
        """The first of a word's terms the query asked for."""
        for t in found:
            if t in terms or (starts and t.startswith(starts)):
                return t
        return None

    def wanted_term(word: str) -> str | None:
        return wanted(analyzer.word_terms(word))

    words = analyzer.plain_words(text)
    if words is not None and not starts:
        # No CJK, no prefix: the words holding a query term, by set operations over the words
        # filed by term (``Analyzer.words_holding``), then found in order.
        held = {w: t for w in analyzer.words_holding(words, terms) if (t := wanted_term(w))}
        return _occurrences(text, held) if held else []
    if words is not None:
        # No CJK: each distinct word is looked up once (in a table kept for the query's terms,
        # as every result of a search asks the same), then the words are found in order.
        known = _hit_table(terms, prefixes)
        hits: dict[str, str] = {}
        for word in words:
            if word in known:
                hit = known[word]
            else:
                hit = known[word] = wanted(analyzer.word_terms(word))
            if hit is not None:
                hits[word] = hit
        if not hits:
            return []
        return _occurrences(text, hits)
    spans: list[tuple[int, int, str]] = []
    last_end = -1
    for start, end, found in analyzer.word_spans(text):
        hit = wanted(found)
        if hit is None:
            continue
        if start < last_end:
            # Overlapping terms (CJK bigrams): one span.
            if end > last_end:
                spans[-1] = (spans[-1][0], end, spans[-1][2])
                last_end = end
            continue
        spans.append((start, end, hit))
        last_end = end
    return spans


def _occurrences(text: str, hits: dict[str, str]) -> list[tuple[int, int, str]]:
    """(start, end, term) of every whole-word occurrence of the ``hits`` words, in order: what
    ``\\w+`` finds equal to one of them, by ``str.find`` (a few words in a long text)."""
    found: list[tuple[int, int, str]] = []
    size = len(text)
    for word, term in hits.items():
        n = len(word)
        at = text.find(word)
        while at >= 0:
            end = at + n
            before = text[at - 1] if at else " "
            after = text[end] if end < size else " "
            if not (before.isalnum() or before == "_" or after.isalnum() or after == "_"):
                found.append((at, end, term))
            at = text.find(word, end)
    found.sort()
    return found


KEPT_SNIPPETS = 1024
"""Snippets kept for the next search that shows the same section for the same query terms (a
server answers popular queries over and over; a snippet depends on nothing else). The texts
are those :data:`~noteseek.parse.plain.KEPT_TEXTS` keeps too: a few MB at most."""


def make_snippet(
    text: str,
    terms: set[str],
    prefixes: Sequence[str],
    analyzer: Analyzer,
    width: int = 220,
    markers: tuple[str, str] = ("**", "**"),
    *,
    plain: bool = True,
) -> tuple[str, list[str]]:
    """The best window of about ``width`` characters and the distinct terms it matched.

    ``plain``: ``text`` is Markdown, shown as plain text (false: shown as it is, as a diff).
    """
    snippet, matched = _snippet(
        text, frozenset(terms), tuple(prefixes), analyzer, width, markers, plain
    )
    return snippet, list(matched)


@lru_cache(maxsize=KEPT_SNIPPETS)
def _snippet(
    text: str,
    terms: frozenset[str],
    prefixes: tuple[str, ...],
    analyzer: Analyzer,
    width: int,
    markers: tuple[str, str],
    plain: bool,
) -> tuple[str, tuple[str, ...]]:
    snippet, matched = _make_snippet(text, set(terms), prefixes, analyzer, width, markers, plain)
    return snippet, tuple(matched)


def _make_snippet(
    text: str,
    terms: set[str],
    prefixes: Sequence[str],
    analyzer: Analyzer,
    width: int,
    markers: tuple[str, str],
    plain: bool,
) -> tuple[str, list[str]]:
    if plain:
        markdown = text
        text = plain_text(markdown)
        spans = matched_spans(text, terms, prefixes, analyzer)
        if not spans or not text.strip():
            # The match (or all there is) is in Logseq properties: show them as key: value.
            with_properties = plain_text(markdown, properties=True)
            if with_properties != text:
                text = with_properties
                spans = matched_spans(text, terms, prefixes, analyzer)
        if not spans and "](" in markdown:
            # A link shows its text, and its address only where the query matched it.
            addresses = frozenset(
                url
                for url in link_addresses(markdown)
                if matched_spans(url, terms, prefixes, analyzer)
            )
            if addresses:
                text = plain_text(markdown, urls=addresses)
                spans = matched_spans(text, terms, prefixes, analyzer)
    else:
        spans = matched_spans(text, terms, prefixes, analyzer)
    if not spans:
        return _collapse(_cut(text, 0, width)), []
    start, end = _best_window(spans, width, len(text))
    s, e = _snap(text, start, end)
    out: list[str] = []
    pos = s
    for a, b, _ in spans:
        if a < s or b > e:
            continue
        out.append(text[pos:a])
        out.append(f"{markers[0]}{text[a:b]}{markers[1]}")
        pos = b
    out.append(text[pos:e])
    body = _collapse("".join(out))
    prefix = ELLIPSIS if s > 0 else ""
    suffix = ELLIPSIS if e < len(text) else ""
    matched = sorted({t for a, b, t in spans if a >= s and b <= e})
    return f"{prefix}{body}{suffix}", matched


def _best_window(spans: list[tuple[int, int, str]], width: int, length: int) -> tuple[int, int]:
    """The window holding the most distinct matched terms (then the most matches), the first
    such; windows start at a match and hold the matches that end within ``width`` of it."""
    best_key = (-1, -1)
    best_i = 0
    counts: dict[str, int] = {}
    j = 0  # spans[i:j] is the window starting at match i
    for i, (a, _, _) in enumerate(spans):
        if j < i:
            j = i
        while j < len(spans) and spans[j][1] - a <= width:
            term = spans[j][2]
            counts[term] = counts.get(term, 0) + 1
            j += 1
        key = (len(counts), j - i)
        if key > best_key:
            best_key, best_i = key, i
        if j > i:  # the match at i leaves the window
            term = spans[i][2]
            counts[term] -= 1
            if not counts[term]:
                del counts[term]
    first = spans[best_i][0]
    # Some context before the first match, the rest after it.
    start = max(0, first - min(width // 4, first))
    return start, min(length, start + width)


def _snap(text: str, start: int, end: int) -> tuple[int, int]:
    """Move the window ends to whitespace so no word is cut in half."""
    if start > 0:
        ws = text.rfind(" ", max(0, start - 20), start)
        nl = text.rfind("\n", max(0, start - 20), start)
        cut = max(ws, nl)
        start = cut + 1 if cut >= 0 else start
    if end < len(text):
        cuts = [
            p for p in (text.find(" ", end, end + 20), text.find("\n", end, end + 20)) if p >= 0
        ]
        end = min(cuts) if cuts else end
    return start, end


def _cut(text: str, start: int, width: int) -> str:
    s, e = _snap(text, start, min(len(text), start + width))
    return text[s:e] + (ELLIPSIS if e < len(text) else "")


def _collapse(text: str) -> str:
    return _SPACE_RE.sub(" ", text).strip()
