"""Query expansion from a concept vocabulary (issue 4, item 9; off by default).

The vocabulary is the index's own words: each word (letters only, three or more) that occurs in
at least ``min_df`` sections and in at most ``max_df`` of them (a word in most sections names no
concept), one surface form per stem (the most frequent), at most ``max_terms`` of them by
section frequency. Each is embedded once, like a document. At query time the words nearest to
the query's embedding (cosine at least ``min_cosine``) whose stems the query does not already
hold are added to the keyword query as optional words: ``cache invalidation`` may gain
``stale`` and ``expiry``.
"""

from __future__ import annotations

import re
from collections import Counter
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass

import numpy as np
import numpy.typing as npt

from noteseek.analysis import Analyzer
from noteseek.search.query import parse_query
from noteseek.types import KeywordQuery

_WORD_RE = re.compile(r"[^\W\d_]{3,40}")
EMBED_BATCH = 256


@dataclass
class ConceptVocabulary:
    words: list[str]
    stems: list[str]
    matrix: npt.NDArray[np.float32]
    """One unit vector per word."""

    @classmethod
    def build(
        cls,
        texts: Iterable[str],
        analyzer: Analyzer,
        embed: Callable[[Sequence[str]], npt.NDArray[np.float32]],
        *,
        max_terms: int = 20_000,
        min_df: int = 2,
        max_df: float = 0.05,
    ) -> ConceptVocabulary:
        df: Counter[str] = Counter()
        sections = 0
        for text in texts:
            sections += 1
            df.update({w.casefold() for w in _WORD_RE.findall(text)})
        ceiling = max(min_df, int(max_df * sections))
        best: dict[str, tuple[int, str]] = {}  # stem -> (section count, surface form)
        for word, count in df.items():
            if not min_df <= count <= ceiling:
                continue
            terms = analyzer.terms(word)
            if len(terms) != 1:
                continue  # a stop word (no term) or a word the analyzer splits
            stem = terms[0]
            if stem not in best or count > best[stem][0]:
                best[stem] = (count, word)
        chosen = sorted(best.items(), key=lambda kv: (-kv[1][0], kv[0]))[:max_terms]
        words = [w for _, (_, w) in chosen]
        stems = [s for s, _ in chosen]
        parts = [embed(words[i : i + EMBED_BATCH]) for i in range(0, len(words), EMBED_BATCH)]
        matrix = np.vstack(parts).astype(np.float32) if parts else np.zeros((0, 0), np.float32)
        norms = np.linalg.norm(matrix, axis=1, keepdims=True)
        matrix /= np.where(norms > 0, norms, 1.0)
        return cls(words, stems, matrix)

    def __len__(self) -> int:
        return len(self.words)

    def nearest(
        self,
        query_vector: npt.NDArray[np.float32],
        n: int,
        min_cosine: float,
        skip_stems: Iterable[str] = (),
    ) -> list[tuple[str, float]]:
        """Up to ``n`` (word, cosine) nearest to the query, best first, skipping its stems."""
        if not len(self) or n <= 0:
            return []
        sims = self.matrix @ np.asarray(query_vector, dtype=np.float32).reshape(-1)
        skip = set(skip_stems)
        top = np.argsort(-sims)[: n + len(skip) + 8]
        out: list[tuple[str, float]] = []
        for i in top:
            if float(sims[i]) < min_cosine or len(out) >= n:
                break
            if self.stems[i] not in skip:
                out.append((self.words[i], float(sims[i])))
        return out


def expand_query(query: KeywordQuery, words: Sequence[str], analyzer: Analyzer) -> KeywordQuery:
    """``query`` with ``words`` added as optional clauses (never required, never excluded)."""
    if not words:
        return query
    extra = parse_query(" ".join(words), analyzer).clauses
    return KeywordQuery((*query.clauses, *extra), query.excluded, query.fields)
