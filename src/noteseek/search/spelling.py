"""Typo tolerance: other spellings of a query word, taken from the index's own terms.

A word that no document holds (``procrastinaton``) finds nothing by itself, and a query made
of it returns nothing at all. :class:`Spelling` proposes the index terms within a few edits of
it, the number of edits growing with the word's length (:func:`max_edits`): one edit for
words of four to seven letters, two from eight letters on; shorter words, words with digits
(versions, hashes) and code identifiers are left as typed.

Two ways find them, both over the index's vocabulary (every term with the number of
documents holding it, read once per change of the index):

* **one edit, stem-aware**: every string one deletion, transposition, substitution or
  insertion away from the folded word is stemmed; those whose stem the index holds are
  alternatives. The index holds stems, so ``procrastinaton`` (stem: itself) is four edits
  from ``procrastin`` but one from ``procrastination``, whose stem it is. About 60 strings
  per letter, stemmed in one call of the C stemmer.
* **two edits** (long words only, when one edit found nothing): a deletion neighbourhood
  (SymSpell's idea): each term of the vocabulary is filed under itself and each string one
  deletion shorter, built on first use; the word's and its stem's strings up to two
  deletions shorter are looked up there, and every term found is checked with the true
  distance (optimal string alignment: a swap of two neighbours is one edit).

Alternatives at the smallest distance are kept, most common first, dropping those held by
fewer than a tenth of the documents of the most common one (a rare term's high idf would
otherwise let a chance spelling outrank the intended word).
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass

from noteseek.analysis import Analyzer, fold, split_identifier

MIN_LETTERS = 4
"""Shortest word given alternatives: a three-letter word is one edit from dozens of others."""
TWO_EDITS_FROM = 8
"""Letters from which a word may be two edits from its alternatives."""
MAX_ALTERNATIVES = 3
COMMON_SHARE = 0.1
"""An alternative is kept when it is in at least this share of the best one's documents."""
_LETTERS_RE = re.compile(r"^[^\W\d_]+$")
_ASCII = "abcdefghijklmnopqrstuvwxyz"


def allowed_edits(word: str) -> int:
    """Edits allowed between ``word`` and an alternative: 0 (none), 1 or 2 by its length."""
    if len(word) < MIN_LETTERS:
        return 0
    return 1 if len(word) < TWO_EDITS_FROM else 2


def correctable(word: str) -> bool:
    """Whether ``word`` (as typed) may be given alternatives: letters only, not a code
    identifier (``getUserById``), at least :data:`MIN_LETTERS` long."""
    return len(word) >= MIN_LETTERS and bool(_LETTERS_RE.match(word)) and not split_identifier(word)


def osa_distance(a: str, b: str, bound: int) -> int:
    """Optimal string alignment distance of ``a`` and ``b`` (``bound + 1`` when larger)."""
    if abs(len(a) - len(b)) > bound:
        return bound + 1
    prev2: list[int] = []
    prev = list(range(len(b) + 1))
    for i in range(1, len(a) + 1):
        cur = [i] + [0] * len(b)
        for j in range(1, len(b) + 1):
            cost = 0 if a[i - 1] == b[j - 1] else 1
            cur[j] = min(prev[j] + 1, cur[j - 1] + 1, prev[j - 1] + cost)
            if i > 1 and j > 1 and a[i - 1] == b[j - 2] and a[i - 2] == b[j - 1]:
                cur[j] = min(cur[j], prev2[j - 2] + 1)
        if min(cur) > bound:
            return bound + 1
        prev2, prev = prev, cur
    return min(prev[len(b)], bound + 1)


def one_edit(word: str) -> list[str]:
    """Every string one deletion, transposition, insertion or substitution from ``word``."""
    letters = _ASCII + "".join(sorted({c for c in word if c not in _ASCII}))
    splits = [(word[:i], word[i:]) for i in range(len(word) + 1)]
    out = [a + b[1:] for a, b in splits if b]
    out += [a + b[1] + b[0] + b[2:] for a, b in splits if len(b) > 1 and b[0] != b[1]]
    out += [a + c + b for a, b in splits for c in letters]
    out += [a + c + b[1:] for a, b in splits if b for c in letters if c != b[0]]
    return out


def deletions(word: str, depth: int) -> set[str]:
    """``word`` and every string up to ``depth`` deletions shorter."""
    found = {word}
    edge = {word}
    for _ in range(depth):
        edge = {w[:i] + w[i + 1 :] for w in edge for i in range(len(w))} - found
        found |= edge
    return found


@dataclass(frozen=True)
class Alternative:
    """An index term within a few edits of a query word."""

    word: str
    """A spelling of it to show (``procrastination``); the term itself for two-edit finds."""
    term: str
    """The index term searched (a stem: ``procrastin``)."""
    distance: int
    documents: int
    """Documents holding the term."""


class Spelling:
    """The index's vocabulary for typo tolerance (see the module docstring)."""

    def __init__(self, counts: Mapping[str, int], analyzer: Analyzer) -> None:
        self.counts = counts
        self.analyzer = analyzer
        self._filed: dict[str, list[str]] | None = None

    def documents(self, term: str) -> int:
        return self.counts.get(term, 0)

    def alternatives(self, word: str, max_edits: int = 2) -> list[Alternative]:
        """The index terms to search besides ``word`` (as typed), best first; [] when it may
        not be corrected or nothing is close enough. ``max_edits`` caps the edits its length
        allows."""
        if not correctable(word):
            return []
        folded = fold(word)
        edits = min(max_edits, allowed_edits(folded))
        own = set(self.analyzer.word_terms(word))
        found = self._one_edit(folded, own)
        if not found and edits >= 2:
            found = self._two_edits(folded, own)
        if not found:
            return []
        best = min(a.distance for a in found)
        ranked = sorted(
            (a for a in found if a.distance == best), key=lambda a: (-a.documents, a.term)
        )
        floor = ranked[0].documents * COMMON_SHARE
        return [a for a in ranked if a.documents >= floor][:MAX_ALTERNATIVES]

    def _one_edit(self, folded: str, own: set[str]) -> list[Alternative]:
        candidates = one_edit(folded)
        stems = self.analyzer.stems(candidates)
        found: dict[str, Alternative] = {}
        for spelled, term in zip(candidates, stems, strict=True):
            n = self.counts.get(term, 0)
            if not n or term in own or self.analyzer.is_stopword(spelled):
                continue
            # Several spellings share a stem (kubernets, kubernetes): the one as long as the
            # word typed is kept (the results' text later shows the real one: typos.py).
            held = found.get(term)
            if held is None or abs(len(spelled) - len(folded)) < abs(len(held.word) - len(folded)):
                found[term] = Alternative(spelled, term, 1, n)
        return list(found.values())

    def _two_edits(self, folded: str, own: set[str]) -> list[Alternative]:
        filed = self._deletion_index()
        stem = self.analyzer.stems([folded])[0]
        found: dict[str, Alternative] = {}
        for source in {folded, stem}:
            for key in deletions(source, 2):
                for term in filed.get(key, ()):
                    if term in own or term in found:
                        continue
                    d = min(osa_distance(folded, term, 2), osa_distance(stem, term, 2))
                    if d <= 2:
                        found[term] = Alternative(term, term, d, self.counts[term])
        return list(found.values())

    def _deletion_index(self) -> dict[str, list[str]]:
        """Each term filed under itself and every string one deletion shorter (long terms
        only: two edits are allowed from :data:`TWO_EDITS_FROM` letters on, and a stem may be
        two letters shorter than its word)."""
        if self._filed is None:
            filed: dict[str, list[str]] = {}
            for term in self.counts:
                if len(term) < TWO_EDITS_FROM - 2 or not term.isalpha():
                    continue
                for key in deletions(term, 1):
                    filed.setdefault(key, []).append(term)
            self._filed = filed
        return self._filed
