"""The whole settings tree: one section per TOML table, in the order ``config show`` prints."""

from __future__ import annotations

import re

from pydantic import BaseModel, ConfigDict, Field, field_validator

from noteseek.config.git import GitSettings
from noteseek.config.indexing import (
    AnalysisSettings,
    ChunkingSettings,
    IndexSettings,
    RootConfig,
)
from noteseek.config.memory import FlushSettings, HookSettings, MemorySettings
from noteseek.config.milvus import MilvusSettings
from noteseek.config.models import EmbeddingSettings, RerankSettings, VectorSettings
from noteseek.config.search import SearchSettings
from noteseek.config.serving import ServeSettings, WatchSettings

ENV_PREFIX = "NOTESEEK_"


class Settings(BaseModel):
    """Every setting noteseek reads. Sections mirror the TOML tables.

    Each section's ``description`` heads its table in the ``noteseek init`` template. The
    layers (files, environment, flags) are read and merged by ``loading.py``, which passes the
    result in as arguments: a plain model, so a start that reads no environment variables
    never imports pydantic-settings.
    """

    model_config = ConfigDict(extra="forbid", validate_default=True)

    roots: dict[str, RootConfig] = Field(
        default_factory=dict,
        description="One table per folder to index, [roots.NAME] (a name may hold letters, "
        "digits, '_', '-' and '.').",
    )
    index: IndexSettings = Field(
        default_factory=IndexSettings, description="Which files are indexed, and where."
    )
    chunking: ChunkingSettings = Field(
        default_factory=ChunkingSettings, description="How documents are cut into sections."
    )
    analysis: AnalysisSettings = Field(
        default_factory=AnalysisSettings,
        description="Text analysis for keyword search (changing it rebuilds the index).",
    )
    search: SearchSettings = Field(
        default_factory=SearchSettings,
        description="Ranking; takes effect at once, no re-indexing needed.",
    )
    embedding: EmbeddingSettings = Field(
        default_factory=EmbeddingSettings,
        description="The embedding model for semantic and hybrid search.",
    )
    vectors: VectorSettings = Field(
        default_factory=VectorSettings, description="The in-memory vector index."
    )
    watch: WatchSettings = Field(
        default_factory=WatchSettings,
        description="Live indexing while noteseek mcp, watch or serve runs.",
    )
    rerank: RerankSettings = Field(
        default_factory=RerankSettings, description="Optional cross-encoder re-ranking."
    )
    memory: MemorySettings = Field(
        default_factory=MemorySettings,
        description="Agent memory: the folder agents write through noteseek, and its search.",
    )
    flush: FlushSettings = Field(
        default_factory=FlushSettings,
        description="noteseek memory flush: compress memories into a summary in today's log.",
    )
    hooks: HookSettings = Field(
        default_factory=HookSettings,
        description="noteseek hook: memories recalled with each prompt, sessions captured.",
    )
    git: GitSettings = Field(
        default_factory=GitSettings,
        description="Git history: commits of git roots, searched apart from documents.",
    )
    serve: ServeSettings = Field(
        default_factory=ServeSettings,
        description="noteseek serve: the HTTP API, MCP over streamable HTTP and the web page.",
    )
    milvus: MilvusSettings = Field(
        default_factory=MilvusSettings,
        description="Scale-out: the whole index in Milvus (Lite, Server or Zilliz Cloud) "
        "instead of the embedded SQLite file.",
    )

    @field_validator("roots")
    @classmethod
    def _root_names(cls, value: dict[str, RootConfig]) -> dict[str, RootConfig]:
        for name in value:
            if not re.fullmatch(r"[A-Za-z0-9_.-]+", name):
                raise ValueError(
                    f"root name {name!r} may only hold letters, digits, '_', '-' and '.'"
                )
        return value
