"""Boilerplate embedded once: chunks whose text is the same share one model call.

The embedding cache is keyed by the whole embedding input, which starts with the chunk's
context (document title and heading path), so a paragraph repeated in many files (the common
parameters of every PowerShell cmdlet page, a licence footer) is a different input in each
file. :class:`SharedVectors` gives such chunks the vector of the first copy embedded in this
run instead of calling the model again: every file keeps its own chunk row and cache key, only
the model call is shared. The text is compared with its whitespace collapsed
(:func:`~noteseek.chunking.text_key`).

The pending list is ordered by text length, so copies of one text arrive close together; the
table of recent texts is bounded (:data:`RECENT_TEXTS`) so memory does not grow with the run.
"""

from __future__ import annotations

import hashlib
from collections import OrderedDict
from collections.abc import Sequence

import numpy as np

from noteseek.chunking import text_key
from noteseek.embed.base import Embedder, Vectors

__all__ = ["RECENT_TEXTS", "SharedVectors"]

RECENT_TEXTS = 4096
"""Distinct texts whose vectors are remembered (about 6 MB at 384 dimensions)."""


class SharedVectors:
    """Embeds documents through ``embedder``, once per distinct chunk text."""

    def __init__(self, embedder: Embedder, recent: int = RECENT_TEXTS) -> None:
        self.embedder = embedder
        self.recent = recent
        self.reused = 0
        """Inputs that got the vector of an identical text instead of a model call."""
        self._vectors: OrderedDict[bytes, Vectors] = OrderedDict()

    def embed(self, chunk_texts: Sequence[str], inputs: Sequence[str]) -> Vectors:
        """One vector per input; ``chunk_texts[i]`` is the chunk text ``inputs[i]`` holds."""
        keys = [
            hashlib.blake2b(text_key(t).encode("utf-8", "surrogatepass"), digest_size=16).digest()
            for t in chunk_texts
        ]
        known = {key: self._vectors[key] for key in keys if key in self._vectors}
        wanted: dict[bytes, int] = {}
        for i, key in enumerate(keys):
            if key not in known and key not in wanted:
                wanted[key] = i
        if wanted:
            fresh = self.embedder.embed_documents([inputs[i] for i in wanted.values()])
            known.update(zip(wanted, fresh, strict=True))
        self.reused += len(keys) - len(wanted)
        for key, vector in known.items():  # most recently used last; the oldest go first
            self._vectors[key] = vector
            self._vectors.move_to_end(key)
        while len(self._vectors) > self.recent:
            self._vectors.popitem(last=False)
        if not keys:
            return np.zeros((0, self.embedder.dimension), np.float32)
        return np.stack([known[key] for key in keys])
