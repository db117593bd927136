"""When a query has nothing meaningful to find, and what a question's words are.

The semantic lane always returns its nearest sections, however far they are: an embedding
model maps any text (``?!.``, ``to be or not to be``, ``qzxv wplk``, a Thai sentence against an
English vault) somewhere, and something is nearest. Measured on bge-small-en
(``bench/semantic_floor.py``, docs/evaluation.md), neither the best cosine of such queries nor
how far it stands above the query's cosine with the rest of the index separates them from real
queries: Thai and Georgian text reach a cosine of 0.77 on hugo-docs-kis, above half of the real
queries' best matches. So the lane is gated on the query's words instead:

* the query needs a **content word**: a word that is not only punctuation and not a function
  word (``the``, ``what``, ``do``, ``I``...);
* one of its content words must be **known**: it occurs in the index (in at least one
  section), or the embedding model's vocabulary holds it as a whole word (``cat`` finds the
  note about a kitten). Gibberish (``qzxv`` is read as ``q z x v``) and words of a script
  neither the notes nor the model's vocabulary hold (Russian, Greek, Thai against an English
  vault and bge-small-en) fail this. A model that cannot say (a remote one) leaves the
  index's words as the only test.

A query that passes keeps the semantic lane, whose candidates must still reach the model's
cosine floor: the lowest cosine between a real query and the best section of its relevant
document on the calibration sets. It removes about half of the unrelated sections a narrow
filter may leave (empty bullets score like random pairs, 0.36-0.47 for unrelated queries), and
nothing a ranking needs; no cosine separates the rest (empty bullets reach 0.54 for "least
recently used", the section on LRU eviction 0.52).

Question words: a question-shaped query ("how do I add a menu?") carries words that every
page holds (``how``, ``do``, ``I``); :func:`strip_function_words` removes them from the keyword
query when the rest still has a content word.
"""

from __future__ import annotations

import re
from functools import lru_cache

from noteseek.analysis import Analyzer
from noteseek.types import Clause, KeywordQuery

# English function words: pronouns, determiners, auxiliaries, question words, prepositions,
# conjunctions and fillers. Lucene's 33 stop words (dropped at indexing) are a subset.
FUNCTION_WORDS = frozenset(
    """
    a about above after again against all am an and any are as at be because been before being
    below between both but by can could did do does doing done down during each else ever every
    few for from further get gets got had has have having he her here hers herself him himself
    his how i if in into is it its itself just let me might more most must my myself no nor not
    now of off on once only or other ought our ours ourselves out over own please same shall she
    should so some such than that the their theirs them themselves then there these they this
    those through to too under until up upon us very was we were what whatever when whenever
    where wherever whether which while who whoever whom whose why will with within without would
    yes yet you your yours yourself yourselves um uh oh ok okay well hey hi hello
    """.split()  # noqa: SIM905 (a word list reads better as text)
)
_OPENERS = "how what when where which who whom whose why can could do does did is are was were "
QUESTION_OPENERS = frozenset((_OPENERS + "should would will shall may might must am").split())
_WORD_RE = re.compile(r"[^\W_]+")

# Cosine floor of the semantic lane per embedding model, calibrated by bench/semantic_floor.py:
# the lowest cosine, rounded down, between a query and the best section of its relevant
# document over hugo-docs-kis, scifact-dev and dendron-kis (docs/evaluation.md). Higher floors
# cut real matches of short sections ("least recently used" and "LRU drops cold keys": 0.52).
MODEL_FLOORS: dict[str, float] = {
    "bge-small-en-v1/int8": 0.50,
}


def model_floor(model_id: str) -> float:
    """The calibrated cosine floor of ``model_id``; 0 (none) for a model not calibrated."""
    return MODEL_FLOORS.get(model_id, 0.0)


@lru_cache(maxsize=8)
def function_terms(analyzer: Analyzer) -> frozenset[str]:
    """The function words as the analyzer writes them (stemmed, folded)."""
    return frozenset(
        term for word in FUNCTION_WORDS for term in analyzer.terms(word) or (word,)
    ) | frozenset(FUNCTION_WORDS)


def content_clauses(query: KeywordQuery, analyzer: Analyzer) -> list[Clause]:
    """The clauses of ``query`` that hold a word other than a function word."""
    if analyzer.language != "english":
        return list(query.clauses)
    function = function_terms(analyzer)
    return [c for c in query.clauses if any(t not in function for t in c.terms)]


def content_words(text: str, analyzer: Analyzer) -> list[str]:
    """The words of ``text`` that are not function words (in the order written, once each)."""
    english = analyzer.language == "english"
    seen: dict[str, None] = {}
    for word in _WORD_RE.findall(text.casefold()):
        if not (english and word in FUNCTION_WORDS) and analyzer.terms(word):
            seen.setdefault(word, None)
    return list(seen)


def function_word_count(text: str) -> int:
    """How many of the words of ``text`` are function words (repeats counted)."""
    return sum(word in FUNCTION_WORDS for word in _WORD_RE.findall(text.casefold()))


def has_words(text: str) -> bool:
    """Whether ``text`` holds a letter or digit at all (``?!.`` does not)."""
    return _WORD_RE.search(text) is not None


def is_question(text: str) -> bool:
    """A question-shaped query: it ends with ``?`` or opens with a question word."""
    words = _WORD_RE.findall(text.casefold())
    if not words:
        return False
    return text.rstrip().endswith("?") or words[0] in QUESTION_OPENERS


def strip_function_words(query: KeywordQuery, analyzer: Analyzer) -> KeywordQuery:
    """``query`` without its function-word clauses, when a content clause remains.

    Phrases (required clauses) are kept whole; only single optional words are dropped.
    """
    content = content_clauses(query, analyzer)
    if not content:
        return query
    keep = set(content)
    clauses = tuple(c for c in query.clauses if c in keep or c.required)
    return KeywordQuery(clauses, query.excluded, query.fields)
