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


class HookSettings(Section):
    """``[hooks]``: what ``noteseek hook`` gives a coding agent without its asking."""

    prompt_results: int = Field(
        # Within one budget, five short results find more than three long ones: LoCoMo dev
        # any-shown 0.504 -> 0.613 (docs/evaluation.md, "What the prompt hook injects").
        default=5,
        ge=0,
        le=20,
        description="Most memories shown with each prompt (hook prompt); 0 = none.",
    )
    prompt_chars: int = Field(
        default=1_500,
        ge=200,
        le=20_000,
        description="Characters of memory text shown with each prompt, all results together.",
    )
    min_terms: int = Field(
        default=2,
        ge=1,
        le=10,
        description="A memory is shown with a prompt only when it holds at least this many of "
        "the prompt's content words (all of them when the prompt has fewer): the relevance "
        "floor that keeps 'thanks, looks good' from pulling up noise.",
    )
    documents: bool = Field(
        default=False,
        description="Search the project's documents with each prompt too, not only memories.",
    )
    capture_chars: int = Field(
        default=1_200,
        ge=200,
        le=20_000,
        description="Longest session summary written to the daily log (hook stop, "
        "session-end, pre-compact).",
    )
    time_limit: float = Field(
        default=10.0,
        gt=0,
        le=600,
        description="Seconds hook session-start and hook prompt may take before they give up "
        "quietly: a hook never holds the agent up for longer.",
    )
    capture_time_limit: float = Field(
        default=120.0,
        gt=0,
        le=3600,
        description="Seconds summarising a session may take (hook stop, session-end, "
        "pre-compact). It runs in a process of its own, so the agent does not wait for it.",
    )
