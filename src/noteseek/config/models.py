"""Settings for the models: embedding (local or remote), the vector index and re-ranking."""

from __future__ import annotations

from typing import Literal

from pydantic import Field

from noteseek.config.base import Section


class EmbeddingSettings(Section):
    enabled: bool = Field(
        default=True,
        description="Embed chunks for semantic and hybrid search. false = keyword search only "
        "(huge corpora, quick starts).",
    )
    provider: Literal["local", "remote"] = Field(
        default="local",
        description="local: a bundled ONNX model; remote: an OpenAI-compatible /v1/embeddings "
        "endpoint (Ollama, vLLM, llama.cpp server, hosted APIs).",
    )
    model: str = Field(
        default="bge-small-en",
        description="Local: bge-small-en (default, chosen by measurement) or minilm-l6. "
        "Remote: the model name the endpoint expects.",
    )
    threads: int = Field(
        default=0, ge=0, le=256, description="ONNX Runtime threads; 0 = one per core."
    )
    batch_size: int = Field(
        default=0,
        ge=0,
        le=256,
        description="Texts per model call (bounds peak memory); 0 = 4 for the local models "
        "(fastest measured on 2 cores), 16 for a remote endpoint.",
    )
    max_tokens: int = Field(
        default=256, ge=16, le=512, description="Longer chunks are truncated to this."
    )
    reads: Literal["prose", "markdown"] = Field(
        default="prose",
        description="What the model reads of a chunk, after its title and headings. prose: its "
        "Markdown without link and image addresses, and without fenced code when it has 20 "
        "words besides (faster, ranked as well: docs/evaluation.md); markdown: "
        "the chunk as written. Changing it embeds every chunk again.",
    )
    base_url: str = Field(
        default="http://127.0.0.1:11434/v1",
        description="Remote: the API base; /embeddings is appended.",
    )
    api_key_env: str = Field(
        default="NOTESEEK_EMBEDDING_API_KEY",
        description="Remote: the environment variable holding the API key (sent as a Bearer "
        "token; unset = no key).",
    )
    timeout: float = Field(default=30.0, gt=0, le=600, description="Remote: seconds per request.")
    retries: int = Field(
        default=4, ge=0, le=20, description="Remote: retries with exponential backoff."
    )
    query_prefix: str = Field(default="", description="Remote: text put before every query.")
    document_prefix: str = Field(
        default="", description="Remote: text put before every document chunk."
    )


class VectorSettings(Section):
    dtype: Literal["float32", "float16"] = Field(
        default="float32",
        description="In-memory vector precision; float16 halves memory for a small loss.",
    )
    hnsw_threshold: int = Field(
        default=50_000,
        ge=0,
        description="From this many vectors on, search an HNSW graph (usearch, built in the "
        "background; exact until it is ready) instead of the exact matrix. Exact search reads "
        "every vector for each query: 17 ms at 67k vectors on a busy 2-core machine, against "
        "1.5 ms for the graph, whose recall@10 was 0.997 on 30k real vectors "
        "(docs/benchmarks.md). 0 = always exact.",
    )


class RerankSettings(Section):
    enabled: bool = Field(
        default=False,
        description="Re-order the top fused results with the bundled cross-encoder "
        "(ms-marco-MiniLM-L-12-v2). Off by default: see docs/evaluation.md for its effect "
        "and docs/benchmarks.md for its cost.",
    )
    depth: int = Field(
        default=20,
        ge=1,
        le=100,
        description="How many of the best fused results are re-ranked per query; the rest "
        "keep their order below them.",
    )
    max_tokens: int = Field(
        default=256, ge=32, le=512, description="Query plus section, truncated to this."
    )
    threads: int = Field(default=0, ge=0, le=256, description="ONNX Runtime threads; 0 = all.")
