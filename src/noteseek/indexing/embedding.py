"""The embedding phase: give every chunk a vector, after its keyword rows are written.

Keyword search works as soon as a file's rows are committed; this phase then embeds the chunks
whose embedding input has no vector yet for the current model. Inputs are embedded once per
distinct text (the cache key is the input's hash), shortest first so each batch pads little,
and every batch is committed on its own: stopping at any moment (Ctrl-C, kill -9) loses at
most one batch, and the next run resumes with what is still missing.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import Literal

from noteseek.chunking import embedding_input
from noteseek.embed.base import MODEL_META_KEY as MODEL_META_KEY
from noteseek.embed.base import Embedder
from noteseek.parse.plain import reading_text
from noteseek.store.base import EmbeddingTarget

Progress = Callable[[int, int, str], None]
Reads = Literal["prose", "markdown"]
"""What the model reads of a chunk after its context line (``embedding.reads``)."""

READS_META_KEY = "embedding_reads"
"""The meta row recording what the index's vectors were made from (absent: ``markdown``, what
every index made before the setting existed read)."""

# Texts per committed batch: large enough to amortise a commit, small enough to lose little.
COMMIT_TEXTS = 64


@dataclass
class EmbedReport:
    model: str
    embedded: int = 0
    """Distinct texts embedded by this run."""
    pending: int = 0
    """Distinct texts that lacked a vector when the run started."""
    seconds: float = 0.0
    interrupted: bool = False
    pruned: int = 0
    notice: str | None = None
    shared: int = 0
    """Texts given the vector of an identical chunk text (boilerplate): no model call."""

    def to_dict(self) -> dict[str, object]:
        return {
            "model": self.model,
            "embedded": self.embedded,
            "pending": self.pending,
            "seconds": round(self.seconds, 3),
            "texts_per_second": (
                round(self.embedded / self.seconds, 2) if self.embedded and self.seconds else None
            ),
            "interrupted": self.interrupted,
            "shared": self.shared,
            "notice": self.notice,
        }


def switch_model(store: EmbeddingTarget, model_id: str) -> str | None:
    """Record ``model_id`` as the index's model; drop other models' vectors. A notice or None."""
    previous = store.meta(MODEL_META_KEY)
    notice = None
    others = {m: n for m, n in store.vector_models().items() if m != model_id}
    if others:
        dropped = store.drop_vectors(keep_model=model_id)
        was = previous or ", ".join(sorted(others))
        notice = (
            f"embedding model changed from {was} to {model_id}: removed {dropped:,} vectors of "
            "the old model; every chunk is embedded again"
        )
    if previous != model_id:
        store.set_meta(MODEL_META_KEY, model_id)
    return notice


def switch_reading(store: EmbeddingTarget, reads: Reads) -> str | None:
    """Record what the model reads; drop the vectors made from other input. A notice or None.
    The vectors go before the record changes: a run stopped between the two drops them again."""
    previous = store.meta(READS_META_KEY)
    if previous == reads:
        return None
    was = previous or "markdown"
    dropped = store.drop_vectors(None) if was != reads and store.vector_models() else 0
    store.set_meta(READS_META_KEY, reads)
    if not dropped:
        return None
    return (
        f"the embedding input changed from {was} to {reads} (embedding.reads): removed "
        f"{dropped:,} vectors; every chunk is embedded again"
    )


def model_input(
    reads: Reads, title: str, path: str, heading_path: tuple[str, ...], text: str
) -> str:
    """What the model reads of a chunk: its context line, then its text as ``reads`` says."""
    body = reading_text(text) if reads == "prose" else text
    return embedding_input(title, path, heading_path, body)


def embed_pending(
    store: EmbeddingTarget,
    embedder: Embedder,
    *,
    progress: Progress | None = None,
    stop: threading.Event | None = None,
    prune: bool = True,
    reads: Reads = "prose",
) -> EmbedReport:
    """Embed every chunk text that lacks a vector of ``embedder``'s model.

    The cache key of a chunk's vector stays the hash of its context and Markdown (computed
    when the file is indexed); ``reads`` says what the model is given of that Markdown."""
    import numpy as np  # here: a command that embeds nothing (most index runs) never loads it

    from noteseek.indexing.boilerplate import SharedVectors

    started = time.monotonic()
    model = embedder.model_id
    report = EmbedReport(model)
    notices = [n for n in (switch_model(store, model), switch_reading(store, reads)) if n]
    report.notice = "; ".join(notices) or None
    pending = store.pending_embeddings(model)
    shared = SharedVectors(embedder)
    report.pending = len(pending)
    if progress:
        progress(0, len(pending), "")
    try:
        for start in range(0, len(pending), COMMIT_TEXTS):
            if stop is not None and stop.is_set():
                report.interrupted = True
                break
            batch = pending[start : start + COMMIT_TEXTS]
            rows = store.chunk_rows([rowid for _, rowid in batch])
            # A chunk may have been rewritten since the pending list was read: embed what the
            # store holds now, under the key it holds now.
            keys = [row.embed_key for row in rows]
            texts = [
                model_input(reads, row.title, row.path, row.heading_path, row.text) for row in rows
            ]
            vectors = shared.embed([row.text for row in rows], texts)
            blobs = [np.asarray(v, dtype=np.float32).tobytes() for v in vectors]
            store.put_vectors(model, zip(keys, blobs, strict=True))
            report.embedded += len(keys)
            if progress:
                progress(min(start + len(batch), len(pending)), len(pending), "")
    except KeyboardInterrupt:
        report.interrupted = True
        raise
    finally:
        report.shared = shared.reused
        if prune and not report.interrupted:
            report.pruned = store.prune_vectors(model)
        report.seconds = time.monotonic() - started
    return report
