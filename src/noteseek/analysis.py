"""The one analyzer: turns text into index terms, identically at index and at query time.

Steps, per word found in the original text (so character offsets stay valid for highlighting):

1. Words are runs of letter/digit/underscore characters; runs of CJK characters (Han, kana,
   Hangul) are separate words because those scripts do not put spaces between words.
2. Folding: NFKC (full-width and compatibility forms), case folding, and removal of diacritics
   (``café`` -> ``cafe``), so any spelling of a word meets the same term.
3. Code identifiers are split: ``getUserById`` gives ``getuserbyid`` plus ``get``, ``user``,
   ``by``, ``id``; ``parse_json`` gives ``parse_json`` plus ``parse``, ``json``. The whole token
   keeps exact identifier searches precise while the parts let prose queries find code.
4. CJK runs become overlapping character bigrams (``東京都`` -> ``東京``, ``京都``); a single
   CJK character stays a unigram. Bigrams need no dictionary and give good recall for Chinese and
   Japanese, the approach Lucene's CJKAnalyzer takes.
5. Snowball stemming (PyStemmer) of the folded Latin-script terms.
6. Optional removal of 33 English stop words (on by default in the settings: it measured
   slightly better, see docs/evaluation.md).

Every output term is free of whitespace, so the store can index the terms with a tokenizer
that only splits on spaces, and the same terms come back whichever backend runs the query.
"""

from __future__ import annotations

import re
import unicodedata
from collections.abc import Iterable, Iterator, Sequence
from dataclasses import dataclass
from functools import lru_cache

import Stemmer

# Bump when the output of the analyzer changes: the index manifest records it, and a change
# triggers a rebuild.
ANALYZER_VERSION = 3  # 2: compatibility forms that decompose to spaces; 3: no 1-letter parts

_CJK = (
    "\u3040-\u30ff"  # Hiragana, Katakana
    "\u31f0-\u31ff"  # Katakana phonetic extensions
    "\u3400-\u4dbf"  # CJK extension A
    "\u4e00-\u9fff"  # CJK unified ideographs
    "\uac00-\ud7af"  # Hangul syllables
    "\uf900-\ufaff"  # CJK compatibility ideographs
    "\uff66-\uff9f"  # half-width Katakana
    "\U00020000-\U0002ebef"  # CJK extensions B-F
)
# Group 1: a CJK run; group 2: a word of other scripts (letters, digits, marks, underscore).
_WORD_RE = re.compile(rf"([{_CJK}]+)|([^\W{_CJK}]+)")
_CJK_RE = re.compile(rf"[{_CJK}]")
_PLAIN_WORD_RE = re.compile(r"\w+")
# Parts of an identifier: acronyms before a capitalised word (HTTPServer -> HTTP, Server),
# capitalised or lower-case words, remaining capitals, digit runs.
_IDENT_PART_RE = re.compile(r"[A-Z]+(?=[A-Z][a-z])|[A-Z]?[a-z]+|[A-Z]+|[0-9]+|[^\W\d_A-Za-z]+")
_HAS_INNER_UPPER = re.compile(r"[a-z0-9][A-Z]|[A-Z]{2}[a-z]")
_COMBINING = re.compile(r"[\u0300-\u036f\u1ab0-\u1aff\u1dc0-\u1dff\u20d0-\u20ff\ufe20-\ufe2f]")

# Lucene's classic English stop set: short and conservative.
ENGLISH_STOPWORDS = frozenset(
    [
        "a",
        "an",
        "and",
        "are",
        "as",
        "at",
        "be",
        "but",
        "by",
        "for",
        "if",
        "in",
        "into",
        "is",
        "it",
        "no",
        "not",
        "of",
        "on",
        "or",
        "such",
        "that",
        "the",
        "their",
        "then",
        "there",
        "these",
        "they",
        "this",
        "to",
        "was",
        "will",
        "with",
    ]
)


def unicode_text(text: str) -> str:
    """``text`` with every lone surrogate replaced by U+FFFD.

    Python reads command-line bytes that are not UTF-8 as lone surrogates (``\\xff`` becomes
    ``\\udcff``); they are no text: SQLite cannot store them and the embedding tokenizer
    raises a TypeError on them. Bytes read that way become one U+FFFD each.
    """
    try:
        text.encode("utf-8")
        return text
    except UnicodeEncodeError:
        return "".join("\ufffd" if "\ud800" <= c <= "\udfff" else c for c in text)


def fold(word: str) -> str:
    """NFKC, case folding and diacritic removal for one word (not for CJK runs)."""
    if word.isascii():
        return word.lower()
    folded = unicodedata.normalize("NFKC", word).casefold()
    if not folded.isascii():
        folded = unicodedata.normalize(
            "NFC", _COMBINING.sub("", unicodedata.normalize("NFD", folded))
        )
    # Compatibility forms can decompose to text with spaces (U+FE70, an isolated Arabic
    # vowel mark, becomes a space and a combining mark): a term never holds whitespace.
    return "".join(folded.split()) if not folded.isascii() or " " in folded else folded


def split_identifier(word: str) -> list[str]:
    """Parts of a code identifier, in original case; [] when the word is not one."""
    if "_" in word:
        parts = [p for p in word.split("_") if p]
        if len(parts) < 2:
            return []
        out: list[str] = []
        for part in parts:
            sub = split_identifier(part)
            out.extend(sub if sub else [part])
        return out
    if _HAS_INNER_UPPER.search(word):
        parts = _IDENT_PART_RE.findall(word)
        return parts if len(parts) > 1 else []
    return []


def cjk_bigrams(run: str) -> list[str]:
    if len(run) == 1:
        return [run]
    return [run[i : i + 2] for i in range(len(run) - 1)]


@dataclass(frozen=True, slots=True)
class Token:
    """An index term and the span of the original text it came from."""

    term: str
    start: int
    end: int


WORDS_KEPT = 500_000
"""Words an analyzer keeps the terms of (and files by term: :meth:`Analyzer.words_holding`)."""


class Analyzer:
    """Text -> terms. Instances cache per-word results; they are cheap to keep and reuse."""

    def __init__(self, language: str = "english", stopwords: bool = False) -> None:
        self.language = language
        self.stopwords = stopwords
        self._stemmer = Stemmer.Stemmer(language)
        self._stop: frozenset[str] = (
            ENGLISH_STOPWORDS if stopwords and language == "english" else frozenset()
        )
        self._word_cache: dict[str, tuple[str, ...]] = {}
        self._filed: set[str] = set()
        self._words_by_term: dict[str, set[str]] = {}
        self._stem_word = lru_cache(maxsize=200_000)(self._stemmer.stemWord)

    def settings(self) -> dict[str, object]:
        """What the index manifest records: a change here means the index must be rebuilt."""
        return {"version": ANALYZER_VERSION, "language": self.language, "stopwords": self.stopwords}

    # -- index and query terms -------------------------------------------------------------

    def terms(self, text: str) -> list[str]:
        """All terms of ``text`` in order (the hot path of indexing)."""
        out: list[str] = []
        cache = self._word_cache
        for cjk, word in _WORD_RE.findall(text):
            if cjk:
                out.extend(cjk_bigrams(cjk))
                continue
            got = cache.get(word)
            if got is None:
                got = self._analyze_word(word)
                if len(cache) < WORDS_KEPT:
                    cache[word] = got
            out.extend(got)
        return out

    def tokens(self, text: str) -> list[Token]:
        """Terms with the span of original text each came from (for highlighting)."""
        return [
            Token(term, start, end) for start, end, terms in self.word_spans(text) for term in terms
        ]

    def plain_words(self, text: str) -> set[str] | None:
        """The distinct words of ``text``; None when it holds CJK (whose words are bigrams,
        not runs of word characters)."""
        if _CJK_RE.search(text):
            return None
        return set(_PLAIN_WORD_RE.findall(text))

    def word_terms(self, word: str) -> tuple[str, ...]:
        """The terms of one word (no CJK), as :meth:`terms` makes them."""
        got = self._word_cache.get(word)
        if got is None:
            got = self._analyze_word(word)
            if len(self._word_cache) < WORDS_KEPT:
                self._word_cache[word] = got
        return got

    def words_holding(self, words: set[str], terms: set[str] | frozenset[str]) -> set[str]:
        """The words of ``words`` (no CJK) one of whose terms is in ``terms``.

        Each word is filed once under each of its terms (as many words as the word cache
        keeps), so a text's words are matched against a query's terms by set operations, not
        word by word (the snippets of every search do this over their sections' words)."""
        new = words.difference(self._filed)
        if new and len(self._filed) < WORDS_KEPT:
            by_term = self._words_by_term
            for word in new:
                for term in self.word_terms(word):
                    found = by_term.get(term)
                    if found is None:
                        found = by_term[term] = set()
                    found.add(word)
            self._filed.update(new)
        elif new:  # past the limit: those words are checked one by one
            return {w for w in words if not terms.isdisjoint(self.word_terms(w))}
        out: set[str] = set()
        for term in terms:
            found = self._words_by_term.get(term)
            if found:
                out |= words & found if len(found) > len(words) else found & words
        return out

    def word_spans(self, text: str) -> Iterator[tuple[int, int, tuple[str, ...]]]:
        """(start, end, terms) of each word of ``text`` (each CJK bigram), in order."""
        for m in _WORD_RE.finditer(text):
            cjk, word = m.group(1), m.group(2)
            start = m.start()
            if cjk:
                if len(cjk) == 1:
                    yield start, start + 1, (cjk,)
                else:
                    for i in range(len(cjk) - 1):
                        yield start + i, start + i + 2, (cjk[i : i + 2],)
                continue
            got = self.word_terms(word)
            if got:
                yield start, m.end(), got

    def text(self, text: str) -> str:
        """Terms joined by spaces: the form stored in the keyword index."""
        return " ".join(self.terms(text))

    def texts(self, texts: Iterable[str]) -> str:
        return " ".join(" ".join(self.terms(t)) for t in texts)

    def prefix(self, word: str) -> str:
        """A prefix query term that meets the stemmed index terms.

        The index holds stems (``expiry`` is stored as ``expiri``), so the prefix is the part
        the folded word and its stem share: ``expiry*`` -> ``expir*`` finds expiry, expires
        and expired alike.
        """
        folded = fold(word)
        stem = self._stem_word(folded)
        n = 0
        while n < min(len(folded), len(stem)) and folded[n] == stem[n]:
            n += 1
        return folded[: max(n, 1)] if folded else folded

    def stems(self, words: Sequence[str]) -> list[str]:
        """The Snowball stems of already folded words, in one call of the stemmer (spelling
        alternatives stem a thousand candidate strings per word; the word cache is not used,
        so they do not crowd out the words of real text)."""
        return list(self._stemmer.stemWords(list(words)))

    def is_stopword(self, term: str) -> bool:
        return term in self._stop

    def split_terms(self, text: str) -> tuple[str, str]:
        """The terms of ``text`` as two space-joined strings: the words as written (a code
        identifier as one term), and the identifiers' parts. Indexing puts the parts in the
        code field, so a word found only inside an identifier (``change`` in
        ``onDidChangeActiveTextEditor``) ranks below the same word in prose; both strings
        together hold the terms :meth:`terms` gives."""
        words: list[str] = []
        parts: list[str] = []
        for cjk, word in _WORD_RE.findall(text):
            if cjk:
                words.extend(cjk_bigrams(cjk))
                continue
            got = self.word_terms(word)
            if len(got) > 1 and split_identifier(word):
                whole = self._identifier_whole(word)
                words.extend(got[:whole])
                parts.extend(got[whole:])
            else:
                words.extend(got)
        return " ".join(words), " ".join(parts)

    def _identifier_whole(self, word: str) -> int:
        """1 when an identifier's terms start with the whole identifier, else 0."""
        whole = fold(word).strip("_")
        return 1 if "_" in whole or whole not in self._stop else 0

    def _analyze_word(self, word: str) -> tuple[str, ...]:
        stem = self._stem_word
        stop = self._stop
        whole = fold(word).strip("_")
        if not whole:
            return ()
        parts = split_identifier(word)
        if not parts:
            return () if whole in stop else (stem(whole),)
        out = [stem(whole)] if self._identifier_whole(word) else []
        for part in parts:
            folded = fold(part)
            # A one-letter part (the i of iOS, the x of getX) names nothing: indexed, it
            # made the pronoun "I" match iOS.
            if len(folded) > 1 and folded not in stop:
                out.append(stem(folded))
        return tuple(out)


@lru_cache(maxsize=8)
def get_analyzer(language: str = "english", stopwords: bool = False) -> Analyzer:
    """A shared analyzer per setting, so its word cache is reused across calls."""
    return Analyzer(language, stopwords)
