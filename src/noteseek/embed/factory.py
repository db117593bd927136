"""Pick the embedder the settings ask for."""

from __future__ import annotations

import os
import threading

from noteseek.config import EmbeddingSettings
from noteseek.embed.base import Embedder, EmbeddingError

# Texts per ONNX call: int8 bge-small-en on 2 cores spends about 27 CPU ms per chunk in calls
# of 4 against 47 in calls of 16 (bench/embed_levers.py; docs/benchmarks.md).
LOCAL_BATCH = 4


def create_embedder(settings: EmbeddingSettings) -> Embedder:
    """The configured embedder (loads the model; raises EmbeddingError with the reason)."""
    if settings.provider == "remote":
        from noteseek.embed.remote import RemoteEmbedder

        return RemoteEmbedder(
            base_url=settings.base_url,
            model=settings.model,
            api_key=os.environ.get(settings.api_key_env) or None,
            batch_size=settings.batch_size or 16,
            timeout=settings.timeout,
            retries=settings.retries,
            query_prefix=settings.query_prefix,
            document_prefix=settings.document_prefix,
        )
    from noteseek.embed.onnx import MODELS, OnnxEmbedder

    spec = MODELS.get(settings.model)
    if spec is None:
        raise EmbeddingError(
            f"unknown local embedding model {settings.model!r}; choose one of: "
            f'{", ".join(MODELS)} (or set embedding.provider = "remote")'
        )
    return OnnxEmbedder(
        spec,
        threads=settings.threads,
        batch_size=settings.batch_size or LOCAL_BATCH,
        max_tokens=settings.max_tokens,
    )


def configured_model_id(settings: EmbeddingSettings) -> str:
    """The model id vectors made with these settings carry, without loading the model."""
    if settings.provider == "remote":
        return f"remote:{settings.model}"
    from noteseek.embed.models import MODELS

    spec = MODELS.get(settings.model)
    return spec.model_id if spec else settings.model


_SHARED: dict[str, tuple[Embedder, int]] = {}
_SHARED_LOCK = threading.Lock()


def acquire_embedder(settings: EmbeddingSettings) -> Embedder:
    """One embedder per process and settings: the live writer's embedding worker and its
    searches share one loaded model instead of two. Pair with ``release_embedder``."""
    key = settings.model_dump_json()
    with _SHARED_LOCK:
        held = _SHARED.get(key)
        embedder = held[0] if held else create_embedder(settings)
        _SHARED[key] = (embedder, (held[1] if held else 0) + 1)
        return embedder


def release_embedder(embedder: Embedder) -> None:
    """Drop one holder of a shared embedder; the last one closes it."""
    with _SHARED_LOCK:
        for key, (held, count) in list(_SHARED.items()):
            if held is embedder:
                if count > 1:
                    _SHARED[key] = (held, count - 1)
                    return
                del _SHARED[key]
                break
    embedder.close()
