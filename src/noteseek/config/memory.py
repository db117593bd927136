"""Settings for agent memory: where the memory folder is, how recency counts, and flush."""

from __future__ import annotations

import re
from typing import Literal

from pydantic import Field, field_validator

from noteseek.config.base import Section
from noteseek.config.search import MAX_EXPAND_CHARS


class MemorySettings(Section):
    """``[memory]``: the memory folder agents write through noteseek, and memory search."""

    enabled: bool = Field(
        default=True,
        description="Give this index a memory folder (the root named by memory.root) that "
        "agents write and search; false = only [roots.*] of kind memory, if any.",
    )
    root: str = Field(
        default="memory",
        description="The root memory tools write to. A [roots.NAME] of kind memory with this "
        "name is used as it is; otherwise the folder below becomes that root.",
    )
    scope: Literal["project", "user"] = Field(
        default="project",
        description="project: .memories/ beside the project file (without one, a folder per "
        "index in the user data dir); user: one folder in the user data dir for every project.",
    )
    path: str | None = Field(
        default=None,
        description="The memory folder itself, overriding scope (an existing memsearch or "
        "OpenClaw folder with MEMORY.md and memory/YYYY-MM-DD.md works as it is).",
    )
    recency_days: float = Field(
        default=7.0, ge=0, le=3650, description="Memories written within this many days..."
    )
    recency_factor: float = Field(
        default=1.2,
        ge=1.0,
        le=10.0,
        description="...rank this many times higher in memory search (1 = no recency boost).",
    )
    chunk_chars: int = Field(
        default=300,
        ge=150,
        le=20_000,
        description="Largest chunk of a memory in characters: one or two dialogue turns or "
        "log entries (measured best at 200-450 on LoCoMo logs; documents keep "
        "chunking.max_chars).",
    )
    expand_chars: int = Field(
        default=900,
        ge=0,
        le=MAX_EXPAND_CHARS,
        description="Memory search returns each match grown to about this many characters "
        "around it (its neighbouring entries), so a short chunk still reads in context.",
    )
    max_per_document: int = Field(
        default=2,
        ge=0,
        le=1000,
        description="Memory search's search.max_per_document: at most this many entries of "
        "one file (a daily log holds a day's topics; measured on LoCoMo logs: 2 keeps recall, "
        "1 loses it, docs/evaluation.md); 0 = no limit.",
    )
    document_weight: float = Field(
        default=0.0,
        ge=0.0,
        le=1.0,
        description="Weight of the whole file's keyword score in memory search (search."
        "document_weight for documents); a daily log mixes a day's topics, so 0 measured best.",
    )
    max_bytes: int = Field(
        default=262_144,
        ge=1024,
        le=5_000_000,
        description="Largest memory text one write may carry, in bytes (a daily log may grow "
        "to four times this).",
    )

    @field_validator("root")
    @classmethod
    def _root_name(cls, value: str) -> str:
        if not re.fullmatch(r"[A-Za-z0-9_.-]+", value):
            raise ValueError("memory.root may only hold letters, digits, '_', '-' and '.'")
        return value


class FlushSettings(Section):
    """``[flush]``: how ``noteseek memory flush`` compresses memories into a summary."""

    base_url: str = Field(
        default="",
        description="An OpenAI-compatible chat API (Ollama http://127.0.0.1:11434/v1, llama.cpp "
        "server, vLLM, hosted); empty = the offline extractive summariser.",
    )
    model: str = Field(default="", description="The chat model the endpoint expects.")
    prompt_file: str | None = Field(
        default=None,
        description="A file with the instructions ({memories} marks where the memories go); "
        "default: a built-in prompt.",
    )
    api_key_env: str = Field(
        default="NOTESEEK_FLUSH_API_KEY",
        description="The environment variable holding the API key (never stored or shown).",
    )
    timeout: float = Field(default=120.0, gt=0, le=3600, description="Seconds per request.")
    max_chars: int = Field(
        default=2_000, ge=200, le=50_000, description="Longest summary, in characters."
    )
