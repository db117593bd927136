"""An embedder for any OpenAI-compatible ``/v1/embeddings`` endpoint.

Ollama, vLLM, llama.cpp's server, LocalAI and hosted APIs all speak it:
``POST {base_url}/embeddings`` with ``{"model": ..., "input": [texts]}`` returns
``{"data": [{"index": i, "embedding": [...]}, ...]}``. Requests are batched, time out, and are
retried with exponential backoff (and the server's ``Retry-After``) on connection errors,
429 and 5xx; other 4xx answers fail at once with the server's message. The dimension is
detected from the first answer. Vectors are normalised here, since not every server does.
"""

from __future__ import annotations

import random
import time
from collections.abc import Sequence

import httpx
import numpy as np

from noteseek.embed.base import EmbeddingError, Vectors, normalize
from noteseek.embed.http import RETRY_STATUS, retry_after, server_message


class RemoteEmbedder:
    def __init__(
        self,
        *,
        base_url: str,
        model: str,
        api_key: str | None = None,
        batch_size: int = 64,
        timeout: float = 30.0,
        retries: int = 4,
        backoff: float = 0.5,
        max_backoff: float = 20.0,
        query_prefix: str = "",
        document_prefix: str = "",
    ) -> None:
        if not model:
            raise EmbeddingError("remote embedding needs a model name (embedding.model)")
        self.url = base_url.rstrip("/") + "/embeddings"
        self.model = model
        self.batch_size = max(1, batch_size)
        self.retries = retries
        self.backoff = backoff
        self.max_backoff = max_backoff
        self.query_prefix = query_prefix
        self.document_prefix = document_prefix
        headers = {"Content-Type": "application/json"}
        if api_key:
            headers["Authorization"] = f"Bearer {api_key}"
        self._client = httpx.Client(timeout=timeout, headers=headers)
        self._dimension: int | None = None
        self.requests = 0
        """Requests sent, retries included (for status and tests)."""

    @property
    def model_id(self) -> str:
        return f"remote:{self.model}"

    @property
    def dimension(self) -> int:
        if self._dimension is None:
            self._dimension = int(self._request(["dimension probe"]).shape[1])
        return self._dimension

    def embed_documents(self, texts: Sequence[str]) -> Vectors:
        if not texts:
            return np.zeros((0, self._dimension or 0), dtype=np.float32)
        parts = [
            self._request([self.document_prefix + t for t in texts[i : i + self.batch_size]])
            for i in range(0, len(texts), self.batch_size)
        ]
        return np.vstack(parts)

    def embed_query(self, text: str) -> Vectors:
        vector: Vectors = self._request([self.query_prefix + text])[0]
        return vector

    def close(self) -> None:
        self._client.close()

    # -- one request, with retries --------------------------------------------------------------

    def _request(self, texts: list[str]) -> Vectors:
        payload = {"model": self.model, "input": texts}
        attempt = 0
        while True:
            self.requests += 1
            wait: float | None = None
            try:
                response = self._client.post(self.url, json=payload)
            except httpx.TimeoutException as exc:
                problem = f"timed out: {exc}"
            except httpx.TransportError as exc:
                problem = f"cannot connect: {exc}"
            else:
                if response.status_code == 200:
                    return self._parse(response, len(texts))
                problem = f"HTTP {response.status_code}: {server_message(response)}"
                if response.status_code not in RETRY_STATUS:
                    raise EmbeddingError(f"{self.url}: {problem}")
                wait = retry_after(response)
            if attempt >= self.retries:
                raise EmbeddingError(
                    f"{self.url}: {problem} (gave up after {attempt + 1} attempts)"
                )
            delay = min(self.max_backoff, self.backoff * (2**attempt))
            delay = wait if wait is not None else delay * (0.5 + random.random() / 2)
            time.sleep(min(delay, self.max_backoff))
            attempt += 1

    def _parse(self, response: httpx.Response, expected: int) -> Vectors:
        try:
            body = response.json()
            items = sorted(body["data"], key=lambda d: int(d.get("index", 0)))
            rows = [item["embedding"] for item in items]
            matrix = np.asarray(rows, dtype=np.float32)
        except (ValueError, KeyError, TypeError, AttributeError) as exc:
            raise EmbeddingError(
                f"{self.url}: the answer is not an OpenAI-style embeddings response ({exc})"
            ) from exc
        if matrix.ndim != 2 or matrix.shape[0] != expected or matrix.shape[1] == 0:
            raise EmbeddingError(
                f"{self.url}: asked for {expected} embeddings, got an array of shape {matrix.shape}"
            )
        if self._dimension is None:
            self._dimension = int(matrix.shape[1])
        elif matrix.shape[1] != self._dimension:
            raise EmbeddingError(
                f"{self.url}: embedding dimension changed from {self._dimension} to "
                f"{matrix.shape[1]}"
            )
        return normalize(matrix)
