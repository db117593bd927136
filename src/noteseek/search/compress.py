"""Compressed results for agents: fewer, non-redundant sections within a token budget.

Low-relevance sections are dropped (score below ``min_score``), then near-duplicates: a
section whose word 3-gram set overlaps an earlier (better-ranked) kept section by at least
``similarity_threshold`` (Jaccard) is removed, so copies of one paragraph across notes, or a
section repeated by a template, cost the agent's context once. Tokens are estimated as
characters / 4 (close to the usual BPE rate for English prose); the saving is reported so an
agent can tell what it did not receive. The kept sections' text is their plain text
(``parse/plain.py``: no link targets, heading markers, fences or properties), which is both
what a reader needs and fewer tokens; duplicates are judged on it.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Any

from noteseek.parse.plain import plain_text
from noteseek.types import Hit

_WORD_RE = re.compile(r"\w+")
CHARS_PER_TOKEN = 4


@dataclass
class Compression:
    kept: int
    dropped_low_score: int
    dropped_duplicates: int
    tokens_before: int
    tokens_after: int

    def to_dict(self) -> dict[str, Any]:
        return {
            "kept": self.kept,
            "dropped_low_score": self.dropped_low_score,
            "dropped_duplicates": self.dropped_duplicates,
            "tokens_before": self.tokens_before,
            "tokens_after": self.tokens_after,
            "tokens_saved": self.tokens_before - self.tokens_after,
        }


def estimate_tokens(text: str) -> int:
    return (len(text) + CHARS_PER_TOKEN - 1) // CHARS_PER_TOKEN


def shingles(text: str, n: int = 3) -> frozenset[int]:
    """The hashes of the text's word ``n``-grams (ints: set operations on them are several
    times faster than on tuples of strings, whose hashes are not cached)."""
    words = _WORD_RE.findall(text.casefold())
    if len(words) < n:
        return frozenset({hash(tuple(words))}) if words else frozenset()
    return frozenset(hash(tuple(words[i : i + n])) for i in range(len(words) - n + 1))


def jaccard(a: frozenset[Any], b: frozenset[Any]) -> float:
    if not a or not b:
        return 0.0
    inter = len(a & b)
    return inter / (len(a) + len(b) - inter)


def similar(a: frozenset[Any], b: frozenset[Any], threshold: float) -> bool:
    """Whether the Jaccard similarity reaches ``threshold``; sets whose sizes alone rule it
    out (it is at most min/max of the sizes) are not intersected."""
    small, large = sorted((len(a), len(b)))
    if not small or small < threshold * large:
        return False
    return jaccard(a, b) >= threshold


def compress(
    hits: list[Hit], *, min_score: float = 0.3, similarity_threshold: float = 0.85
) -> tuple[list[Hit], Compression]:
    """The hits to keep, best first, and what was dropped; hits need ``text`` or a snippet."""

    def body(hit: Hit) -> str:
        return hit.text if hit.text is not None else hit.snippet

    before = sum(estimate_tokens(body(h)) for h in hits)
    for hit in hits:
        if hit.text is not None:
            hit.text = plain_text(hit.text)
    relevant = [h for h in hits if h.score >= min_score]
    kept: list[Hit] = []
    kept_sets: list[frozenset[int]] = []
    for hit in relevant:
        grams = shingles(body(hit))
        if any(similar(grams, other, similarity_threshold) for other in kept_sets):
            continue
        kept.append(hit)
        kept_sets.append(grams)
    for rank, hit in enumerate(kept, start=1):
        hit.rank = rank
    after = sum(estimate_tokens(body(h)) for h in kept)
    return kept, Compression(
        len(kept), len(hits) - len(relevant), len(relevant) - len(kept), before, after
    )
