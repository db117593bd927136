"""Personalised PageRank over the link graph (the graph lane's alternative to plain neighbours).

Random walks over the undirected document graph that restart at the seed documents with the
given weights; a document's score is how often the walk visits it. Computed by power iteration
(``np.bincount`` scatters each step), so one query costs a few milliseconds on graphs of tens of
thousands of documents.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass

import numpy as np
import numpy.typing as npt


@dataclass
class WalkGraph:
    """An undirected graph as index arrays, built once per link-graph version."""

    names: list[str]
    index: dict[str, int]
    src: npt.NDArray[np.int64]
    dst: npt.NDArray[np.int64]
    degree: npt.NDArray[np.float64]

    @classmethod
    def build(cls, edges: Iterable[tuple[str, str]]) -> WalkGraph:
        index: dict[str, int] = {}
        pairs: set[tuple[int, int]] = set()
        for a, b in edges:
            if a == b:
                continue
            i = index.setdefault(a, len(index))
            j = index.setdefault(b, len(index))
            pairs.add((min(i, j), max(i, j)))
        arr = np.array(sorted(pairs), dtype=np.int64).reshape(-1, 2)
        src = np.concatenate([arr[:, 0], arr[:, 1]])
        dst = np.concatenate([arr[:, 1], arr[:, 0]])
        degree = np.bincount(src, minlength=len(index)).astype(np.float64)
        return cls(list(index), index, src, dst, degree)

    def personalised(
        self,
        restart: Mapping[str, float],
        alpha: float = 0.85,
        iterations: int = 30,
        tol: float = 1e-7,
    ) -> dict[str, float]:
        """Visit probabilities of a walk that follows a link with probability ``alpha`` and
        otherwise jumps back to a seed (chosen by ``restart`` weight). Seeds not in the graph
        are ignored; no known seed gives an empty result."""
        n = len(self.names)
        p = np.zeros(n)
        for name, weight in restart.items():
            i = self.index.get(name)
            if i is not None and weight > 0:
                p[i] += weight
        total = p.sum()
        if n == 0 or total <= 0:
            return {}
        p /= total
        x = p.copy()
        safe = np.where(self.degree > 0, self.degree, 1.0)
        for _ in range(iterations):
            spread = np.bincount(self.dst, weights=(x / safe)[self.src], minlength=n)
            dangling = x[self.degree == 0].sum()
            nxt = alpha * spread + (1 - alpha + alpha * dangling) * p
            done = float(np.abs(nxt - x).sum()) < tol
            x = nxt
            if done:
                break
        found = np.nonzero(x > 0)[0]
        return {self.names[i]: float(x[i]) for i in found}
