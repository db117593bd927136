"""The keyword query language: plain words, "exact phrases", -excluded, prefix*.

Every piece goes through the same analyzer as the indexed text, so a query matches exactly the
terms indexing produced (stems, folded accents, identifier parts, CJK bigrams).
"""

from __future__ import annotations

import re

from noteseek.analysis import Analyzer, split_identifier
from noteseek.types import Clause, KeywordQuery

# A quoted phrase (closing quote optional), or a run of non-space characters.
PIECE_RE = re.compile(r'(-?)"([^"]*)"?|(\S+)')
_SINGLE_WORD_RE = re.compile(r"^[^\W]+$")


class QuerySyntaxError(ValueError):
    """The query cannot be run; the message says why in words a user understands."""


def parse_query(text: str, analyzer: Analyzer) -> KeywordQuery:
    """Analyze a user query into clauses the store can run (repeats once, no other bound)."""
    return parse_bounded(text, analyzer, 0)[0]


def parse_bounded(text: str, analyzer: Analyzer, max_terms: int) -> tuple[KeywordQuery, bool]:
    """Analyze a user query; a repeated word, phrase or exclusion counts once, and reading
    stops at ``max_terms`` distinct ones (0: no bound). Returns the query and whether the
    text held more than it.

    Each clause is a term of the full-text query, and its cost grows with their number: 800
    copies of one word took 12 s on 992 pages and held the store meanwhile.
    """
    clauses: dict[Clause, None] = {}
    excluded: dict[Clause, None] = {}
    # A piece seen before is not analyzed again: a long query repeating one word stays cheap.
    analyzed: dict[str, tuple[bool, Clause | None]] = {}
    truncated = False
    for m in PIECE_RE.finditer(text):
        piece = m.group(0)
        found = analyzed.get(piece)
        if found is None:
            found = analyzed[piece] = _piece_clause(m, analyzer)
        negated, clause = found
        if clause is None:
            continue
        target = excluded if negated else clauses
        if clause in target:
            continue
        if max_terms and len(clauses) + len(excluded) >= max_terms:
            truncated = True
            break
        target[clause] = None
    if excluded and not clauses:
        # Nothing to find but words to exclude: the dash was part of the word (``-Name`` is a
        # PowerShell parameter, ``-v`` a flag), so search for the words themselves.
        clauses, excluded = excluded, {}
    return KeywordQuery(tuple(clauses), tuple(excluded)), truncated


def _piece_clause(m: re.Match[str], analyzer: Analyzer) -> tuple[bool, Clause | None]:
    """One piece of the query: whether it is an exclusion, and its clause (None: no terms)."""
    negated, phrase, word = m.group(1), m.group(2), m.group(3)
    if phrase is not None:
        terms = tuple(analyzer.terms(phrase))
        return bool(negated), Clause((terms,), required=True) if terms else None
    assert word is not None
    neg = word.startswith("-") and len(word) > 1
    return neg, _word_clause(word[1:] if neg else word, analyzer)


def _word_clause(word: str, analyzer: Analyzer) -> Clause | None:
    if word.endswith("*") and len(word.rstrip("*")) > 0:
        stem = word.rstrip("*")
        terms = analyzer.terms(stem)
        if not terms:
            return None
        if len(terms) == 1 and _SINGLE_WORD_RE.match(stem):
            return Clause(((analyzer.prefix(stem),),), prefix=True)
        # "redis-cl*": the last word is the prefix; treat the whole as a phrase prefix.
        words = re.findall(r"[^\W]+", stem)
        folded = (*terms[:-1], analyzer.prefix(words[-1]) if words else terms[-1])
        return Clause((folded,), prefix=True)
    terms = analyzer.terms(word)
    if not terms:
        return None
    if _SINGLE_WORD_RE.match(word) and split_identifier(word) and len(terms) > 1:
        # An identifier matches itself, or its parts written as words ("get user by id").
        return Clause(((terms[0],), tuple(terms[1:])))
    return Clause((tuple(terms),))


_EXCLUDED_RE = re.compile(r'(?:^|\s)-(?:"[^"]*"?|\S+)')


def semantic_text(text: str) -> str:
    """The query as the embedding model should read it: no exclusions, quotes or wildcards.

    A query made only of dashed words keeps them (``-Name`` is a parameter, not an exclusion),
    as :func:`parse_query` does.
    """
    kept = _EXCLUDED_RE.sub(" ", text)
    if not kept.strip():
        kept = text
    kept = kept.replace('"', " ")
    kept = re.sub(r"(\w)\*+(?=\s|$)", r"\1", kept)
    return " ".join(kept.split())
