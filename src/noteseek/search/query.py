"""The keyword query language: plain words, "exact phrases", -excluded, prefix*.

Every piece goes through the same analyzer as the indexed text, so a query matches exactly the
terms indexing produced (stems, folded accents, identifier parts, CJK bigrams).
"""

from __future__ import annotations

import re

from noteseek.analysis import Analyzer, split_identifier
from noteseek.types import Clause, KeywordQuery

# A quoted phrase (closing quote optional), or a run of non-space characters.
_PIECE_RE = re.compile(r'(-?)"([^"]*)"?|(\S+)')
_SINGLE_WORD_RE = re.compile(r"^[^\W]+$")


class QuerySyntaxError(ValueError):
    """The query cannot be run; the message says why in words a user understands."""


def parse_query(text: str, analyzer: Analyzer) -> KeywordQuery:
    """Analyze a user query into clauses the store can run."""
    clauses: list[Clause] = []
    excluded: list[Clause] = []
    for m in _PIECE_RE.finditer(text):
        negated, phrase, word = m.group(1), m.group(2), m.group(3)
        if phrase is not None:
            terms = tuple(analyzer.terms(phrase))
            if terms:
                clause = Clause((terms,), required=True)
                (excluded if negated else clauses).append(clause)
            continue
        assert word is not None
        neg = word.startswith("-") and len(word) > 1
        if neg:
            word = word[1:]
        clause_ = _word_clause(word, analyzer)
        if clause_ is not None:
            (excluded if neg else clauses).append(clause_)
    if excluded and not clauses:
        # Nothing to find but words to exclude: the dash was part of the word (``-Name`` is a
        # PowerShell parameter, ``-v`` a flag), so search for the words themselves.
        clauses, excluded = excluded, []
    return KeywordQuery(tuple(clauses), tuple(excluded))


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
