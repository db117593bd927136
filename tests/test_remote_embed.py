"""The remote embedder against a small OpenAI-compatible /v1/embeddings server on loopback.

The server is a stand-in: no real embedding API (Ollama, vLLM, a hosted one) can run in this
test environment, so it speaks the same protocol with deterministic bag-of-words vectors
(texts sharing words get similar vectors). Everything on our side of the socket is real.
"""

from __future__ import annotations

import hashlib
import json
import re
import threading
import time
from collections.abc import Iterator
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from noteseek.config import EmbeddingSettings
from noteseek.embed.base import EmbeddingError
from noteseek.embed.factory import create_embedder
from noteseek.embed.remote import RemoteEmbedder
from noteseek.engine import SearchRequest
from tests.helpers import engine_for, project, write

DIM = 64


def bag_of_words(text: str) -> list[float]:
    v = np.zeros(DIM)
    for word in re.findall(r"\w+", text.lower()):
        v[int(hashlib.md5(word.encode()).hexdigest(), 16) % DIM] += 1.0
    return v.tolist()


@dataclass
class Behaviour:
    fail_first: int = 0
    fail_status: int = 503
    retry_after: str | None = None
    delay: float = 0.0
    malformed: bool = False
    requests: list[dict[str, Any]] = field(default_factory=list)
    auth: list[str | None] = field(default_factory=list)


class Handler(BaseHTTPRequestHandler):
    behaviour: Behaviour

    def log_message(self, *args: Any) -> None:  # keep test output clean
        pass

    def do_POST(self) -> None:
        b = self.server.behaviour  # type: ignore[attr-defined]
        length = int(self.headers.get("Content-Length", 0))
        body = json.loads(self.rfile.read(length))
        b.requests.append(body)
        b.auth.append(self.headers.get("Authorization"))
        if self.path != "/v1/embeddings":
            return self._send(404, {"error": {"message": f"no route {self.path}"}})
        if b.delay:
            time.sleep(b.delay)
        if len(b.requests) <= b.fail_first:
            headers = {"Retry-After": b.retry_after} if b.retry_after else {}
            return self._send(b.fail_status, {"error": {"message": "busy"}}, headers)
        if body.get("model") != "nomic-embed-text":
            return self._send(400, {"error": {"message": f"model {body.get('model')} not found"}})
        if b.malformed:
            return self._send(200, {"data": "nope"})
        data = [
            {"object": "embedding", "index": i, "embedding": bag_of_words(t)}
            for i, t in enumerate(body["input"])
        ]
        # Out of order on purpose: clients must sort by index.
        self._send(200, {"object": "list", "data": list(reversed(data)), "model": body["model"]})

    def _send(self, status: int, payload: Any, headers: dict[str, str] | None = None) -> None:
        raw = json.dumps(payload).encode()
        self.send_response(status)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(raw)))
        for k, v in (headers or {}).items():
            self.send_header(k, v)
        self.end_headers()
        self.wfile.write(raw)


@pytest.fixture
def server() -> Iterator[tuple[str, Behaviour]]:
    httpd = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    behaviour = Behaviour()
    httpd.behaviour = behaviour  # type: ignore[attr-defined]
    thread = threading.Thread(target=httpd.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{httpd.server_address[1]}/v1", behaviour
    finally:
        httpd.shutdown()
        httpd.server_close()
        thread.join(5)


def embedder(url: str, **kw: Any) -> RemoteEmbedder:
    kw.setdefault("backoff", 0.01)
    return RemoteEmbedder(base_url=url, model="nomic-embed-text", **kw)


def test_embeds_in_batches_in_order_and_detects_dimension(
    server: tuple[str, Behaviour],
) -> None:
    url, b = server
    e = embedder(url, batch_size=4)
    texts = [f"note number {i} about redis" for i in range(10)]
    vectors = e.embed_documents(texts)
    assert vectors.shape == (10, DIM) and e.dimension == DIM
    assert [len(r["input"]) for r in b.requests] == [4, 4, 2]
    np.testing.assert_allclose(np.linalg.norm(vectors, axis=1), 1.0, atol=1e-5)
    expected = np.asarray(bag_of_words(texts[7]))
    assert float(vectors[7] @ (expected / np.linalg.norm(expected))) == pytest.approx(1.0)
    assert e.model_id == "remote:nomic-embed-text"


def test_query_and_document_prefixes(server: tuple[str, Behaviour]) -> None:
    url, b = server
    e = embedder(url, query_prefix="search_query: ", document_prefix="search_document: ")
    e.embed_query("ttl")
    e.embed_documents(["a note"])
    assert b.requests[0]["input"] == ["search_query: ttl"]
    assert b.requests[1]["input"] == ["search_document: a note"]


def test_retries_with_backoff_then_succeeds(server: tuple[str, Behaviour]) -> None:
    url, b = server
    b.fail_first = 2
    e = embedder(url, retries=3)
    assert e.embed_documents(["x"]).shape == (1, DIM)
    assert len(b.requests) == 3


def test_honours_retry_after(server: tuple[str, Behaviour]) -> None:
    url, b = server
    b.fail_first, b.fail_status, b.retry_after = 1, 429, "0.3"
    started = time.monotonic()
    embedder(url, retries=2).embed_documents(["x"])
    assert time.monotonic() - started >= 0.3


def test_gives_up_after_the_retries(server: tuple[str, Behaviour]) -> None:
    url, b = server
    b.fail_first = 100
    with pytest.raises(EmbeddingError, match=r"HTTP 503: busy \(gave up after 3 attempts\)"):
        embedder(url, retries=2).embed_documents(["x"])
    assert len(b.requests) == 3


def test_client_errors_fail_at_once_with_the_server_message(server: tuple[str, Behaviour]) -> None:
    url, b = server
    e = RemoteEmbedder(base_url=url, model="no-such-model", retries=5, backoff=0.01)
    with pytest.raises(EmbeddingError, match="HTTP 400: model no-such-model not found"):
        e.embed_documents(["x"])
    assert len(b.requests) == 1


def test_timeouts_are_retried_then_reported(server: tuple[str, Behaviour]) -> None:
    url, b = server
    b.delay = 0.5
    with pytest.raises(EmbeddingError, match="timed out"):
        embedder(url, timeout=0.1, retries=1).embed_documents(["x"])
    assert len(b.requests) == 2


def test_unreachable_server_is_a_clear_error() -> None:
    e = RemoteEmbedder(base_url="http://127.0.0.1:9/v1", model="m", retries=0)
    with pytest.raises(EmbeddingError, match="cannot connect"):
        e.embed_query("x")


def test_malformed_answer_is_a_clear_error(server: tuple[str, Behaviour]) -> None:
    url, b = server
    b.malformed = True
    with pytest.raises(EmbeddingError, match="not an OpenAI-style embeddings response"):
        embedder(url).embed_query("x")


def test_api_key_comes_from_the_named_environment_variable(
    server: tuple[str, Behaviour], monkeypatch: pytest.MonkeyPatch
) -> None:
    url, b = server
    monkeypatch.setenv("MY_EMBED_KEY", "sekret")
    settings = EmbeddingSettings(
        provider="remote", model="nomic-embed-text", base_url=url, api_key_env="MY_EMBED_KEY"
    )
    create_embedder(settings).embed_query("x")
    monkeypatch.delenv("MY_EMBED_KEY")
    create_embedder(settings).embed_query("x")
    assert b.auth == ["Bearer sekret", None]


def test_engine_indexes_and_searches_through_the_remote_embedder(
    server: tuple[str, Behaviour], tmp_path: Path
) -> None:
    url, _ = server
    notes = tmp_path / "notes"
    write(notes / "cache.md", "# Cache\n\nEviction of cold entries from the cache.\n")
    write(notes / "db.md", "# Database\n\nVacuum and analyze the tables.\n")
    folder = project(tmp_path, {"n": notes})
    flags = {
        "embedding.provider": "remote",
        "embedding.model": "nomic-embed-text",
        "embedding.base_url": url,
    }
    with engine_for(folder, embeddings=True, **flags) as engine:
        report = engine.index()
        assert report.embedding is not None and report.embedding["embedded"] == 2
        assert report.embedding["model"] == "remote:nomic-embed-text"
        hits = engine.search(SearchRequest("cache eviction", mode="semantic")).hits
        assert hits[0].path == "cache.md" and hits[0].lanes == {"semantic": 1}
        status = engine.status()["embedding"]
        assert (status["embedded"], status["total"], status["model"]) == (
            2,
            2,
            "remote:nomic-embed-text",
        )
