"""The keyword query with other spellings of the words that match nothing (typo tolerance).

Each plain word of the query (not quoted, not excluded, not a prefix, not an identifier) whose
term no document holds gets the alternatives :class:`~noteseek.search.spelling.Spelling`
finds, searched beside it as alternatives of the same clause: ``procrastinaton`` matches
``procrastination`` and the result says so ("also searched"). A word that does match is
never changed, unless ``search.typo_rare_documents`` lets a word held by that few documents be
helped too, and then only by alternatives far more common than it (:data:`MORE_COMMON`).

Whether a word matches costs one look-up in the store's term statistics for all the query's
words; the vocabulary is read only when one does not.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterable
from dataclasses import dataclass, replace
from typing import Any

from noteseek.analysis import Analyzer, fold, split_identifier
from noteseek.search.query import PIECE_RE
from noteseek.search.relevance import FUNCTION_WORDS, content_words, function_word_count
from noteseek.search.spelling import Alternative, Spelling, correctable, osa_distance
from noteseek.store.base import KeywordIndex
from noteseek.types import Clause, KeywordQuery

MORE_COMMON = 20
"""How many times more documents an alternative of a rare word (not of an absent one) must
be in."""
SENTENCE_WORDS = 3
"""A query of this many content words or more, written with function words between them
(:data:`SENTENCE_GLUE` or more), is a question or a sentence. A word of it that no document
holds, while its other words match, is as often a word the notes do not use ("would her
political leaning be") as a typo ("his strucuturing of notes"): it gets only alternatives one
letter away as typed (``strucuturing`` -> ``structuring``), not the looser two-edit matches
of stems (``political`` -> ``posit``, ``considered`` -> ``confid``) that only added noise. On
LoCoMo questions, corrections without this rule and with function words corrected (``does``
-> ``do``, ``done``) cost 3 of 230 questions their answer in the top 5; with them, 1; no note
dev set moved (docs/evaluation.md)."""
SENTENCE_GLUE = 2
_WORD_RE = re.compile(r"^\W*([^\W\d_]+)\W*$")
_TEXT_WORD_RE = re.compile(r"[^\W\d_]{3,}")


@dataclass(frozen=True)
class Correction:
    """A query word that matched nothing (or few) and what was searched besides it."""

    word: str
    documents: int
    """Documents holding the word as typed."""
    alternatives: tuple[Alternative, ...]

    def to_dict(self) -> dict[str, Any]:
        return {
            "word": self.word,
            "documents": self.documents,
            "also_searched": [a.word for a in self.alternatives],
            "terms": [a.term for a in self.alternatives],
            "edits": min(a.distance for a in self.alternatives),
        }


def spelled_as(
    corrections: list[Correction], texts: Iterable[str], analyzer: Analyzer
) -> list[Correction]:
    """``corrections`` with each alternative shown as the results' text writes it.

    The index holds stems, so an alternative found by its stem (``kubernet``) or by an edit
    that only shares the stem (``kubernets``) is shown as the closest word of the results'
    text that has that stem (``kubernetes``), when one does.
    """
    if not corrections:
        return corrections
    wanted = {a.term for c in corrections for a in c.alternatives}
    seen: dict[str, set[str]] = {}
    for text in texts:
        for word in _TEXT_WORD_RE.findall(text):
            folded = fold(word)
            seen.setdefault(folded, set())
    stems = analyzer.stems(list(seen))
    spellings: dict[str, list[str]] = {}
    for folded, stem in zip(seen, stems, strict=True):
        if stem in wanted:
            spellings.setdefault(stem, []).append(folded)
    out: list[Correction] = []
    for c in corrections:
        typed = fold(c.word)
        alternatives = tuple(
            replace(a, word=min(found, key=lambda w: (osa_distance(typed, w, 99), w)))
            if (found := spellings.get(a.term))
            else a
            for a in c.alternatives
        )
        out.append(replace(c, alternatives=alternatives))
    return out


def did_you_mean(text: str, corrections: list[Correction]) -> str:
    """``text`` with each corrected word replaced by its best alternative ('' when none is)."""
    if not corrections:
        return ""
    out = text
    for c in corrections:
        out = re.sub(rf"(?<!\w){re.escape(c.word)}(?!\w)", c.alternatives[0].word, out)
    return out


def typed_words(text: str, analyzer: Analyzer) -> dict[str, str]:
    """Term -> the word typed, for the words of the query's unquoted pieces that may be
    corrected (``sync-notse`` gives ``notse``: a hyphenated piece is a phrase of its words)."""
    out: dict[str, str] = {}
    for m in PIECE_RE.finditer(text):
        piece = m.group(3)
        if piece is None or piece.startswith("-") or piece.endswith("*"):
            continue
        for start, end, terms in analyzer.word_spans(piece):
            word = piece[start:end]
            if len(terms) == 1 and correctable(word):
                out.setdefault(terms[0], word)
            else:  # an identifier: its parts (enablePrtetyRefs -> Prtety)
                for part in split_identifier(word):
                    found = analyzer.word_terms(part)
                    if len(found) == 1 and correctable(part):
                        out.setdefault(found[0], part)
    return out


def correct(
    text: str,
    query: KeywordQuery,
    analyzer: Analyzer,
    store: KeywordIndex,
    spelling: Callable[[], Spelling | None],
    rare: int = 0,
) -> tuple[KeywordQuery, list[Correction]]:
    """``query`` with alternatives for its words held by at most ``rare`` documents (0: none)
    and the corrections made; ``spelling`` gives the vocabulary (read only when needed).

    A one-word clause gains each alternative; a phrase (a hyphenated piece) gains the phrase
    with its misspelled words replaced by their first, second... alternatives."""
    words = typed_words(text, analyzer)
    open_terms = {t for c in query.clauses if _plain(c) for t in c.terms}
    words = {term: word for term, word in words.items() if term in open_terms}
    if analyzer.language == "english":  # "does", "whose": never a typo worth searching for
        words = {t: w for t, w in words.items() if w.casefold() not in FUNCTION_WORDS}
    if not words:
        return query, []
    held = store.term_documents(list(words))
    weak = {t: w for t, w in words.items() if held.get(t, 0) <= rare}
    if not weak:
        return query, []
    # In a question or sentence whose other words match, only a slip of one letter is
    # searched for (see SENTENCE_WORDS).
    edits = (
        1
        if _sentence(text, analyzer) and any(held.get(t, 0) for t in words if t not in weak)
        else 2
    )
    vocabulary = spelling()
    if vocabulary is None:
        return query, []
    corrections: dict[str, Correction] = {}
    for term, word in weak.items():
        n = held.get(term, 0)
        found = vocabulary.alternatives(word, max_edits=edits)
        if n:
            found = [a for a in found if a.documents >= MORE_COMMON * n]
        if found:
            corrections[term] = Correction(word, n, tuple(found))
    if not corrections:
        return query, []
    clauses = tuple(_corrected(c, corrections) if _plain(c) else c for c in query.clauses)
    return KeywordQuery(clauses, query.excluded, query.fields), list(corrections.values())


def _sentence(text: str, analyzer: Analyzer) -> bool:
    """Whether ``text`` reads as a question or a sentence (see :data:`SENTENCE_WORDS`)."""
    if analyzer.language != "english":
        return False
    return (
        function_word_count(text) >= SENTENCE_GLUE
        and len(content_words(text, analyzer)) >= SENTENCE_WORDS
    )


def _corrected(clause: Clause, corrections: dict[str, Correction]) -> Clause:
    """``clause`` and, for each of its alternatives holding misspelled words, that
    alternative with them replaced by their first, second... alternatives."""
    extra: list[tuple[str, ...]] = []
    for words in clause.alternatives:
        fixed = [corrections[t].alternatives if t in corrections else () for t in words]
        for i in range(max(len(f) for f in fixed)):
            extra.append(
                tuple(
                    f[min(i, len(f) - 1)].term if f else t
                    for t, f in zip(words, fixed, strict=True)
                )
            )
    return Clause((*clause.alternatives, *extra)) if extra else clause


def _plain(clause: Clause) -> bool:
    """A clause typed as a word, an identifier or an unquoted phrase (a hyphenated piece):
    not a prefix, not a quoted phrase."""
    return not clause.prefix and not clause.required
