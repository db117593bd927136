"""The memory operations' parameters, declared once for every door (see ``params.py``)."""

from __future__ import annotations

from typing import Annotated, Literal

from pydantic import Field, WithJsonSchema

from noteseek.operations.dates import WHEN_FORMS, When
from noteseek.operations.params import (
    MAX_QUERY_CHARS,
    Bool,
    DocumentPath,
    Expand,
    Int,
    Mode,
    NotNull,
    Params,
    TopK,
    top_k_field,
)
from noteseek.servers import PROMPT_CHARS

MAX_NAME_CHARS = 200
MAX_MEMORY_CHARS = 64_000
"""Most characters one write request carries (within any door's body limit, even with every
character escaped); the folder's own bound, ``memory.max_bytes``, applies too."""

MemoryType = Literal["plan", "journal", "fact", "observation", "reflection"]
MemoryName = Annotated[
    str,
    Field(
        min_length=1,
        max_length=MAX_NAME_CHARS,
        description="The memory's name: a path inside the memory folder without .md "
        "(auth-decisions, project/atlas; daily logs are memory/YYYY-MM-DD, the long-term "
        "file MEMORY).",
    ),
]
Tags = Annotated[
    list[Annotated[str, Field(min_length=1, max_length=100)]] | None,
    NotNull,
    Field(max_length=50),
    WithJsonSchema({"type": "array", "items": {"type": "string"}, "maxItems": 50}),
]
Status = Annotated[
    Literal["active", "archived", "all"],
    Field(description="active (the default: archived memories left out), archived, or all."),
]
_TITLE = Field(default=None, max_length=200, description="A title, written as the # heading.")


class MemoryFilters(Params):
    """Which memories: pushed into retrieval for searches, applied to the folder for lists."""

    type: MemoryType | None = Field(
        default=None, description="Only memories of this type (daily logs are journal)."
    )
    tags: Tags = Field(default=None, description="Only memories with every tag.")
    status: Status = "active"
    after: When = Field(default=None, description=f"Created on or after: {WHEN_FORMS}.")
    before: When = Field(default=None, description="Created before (same forms).")
    days: Int | None = Field(
        default=None, ge=1, le=36_500, description="Only memories created in the last N days."
    )


class CreateMemory(Params):
    name: MemoryName
    content: str = Field(
        min_length=1, max_length=MAX_MEMORY_CHARS, description="The memory's text (Markdown)."
    )
    type: MemoryType = Field(default="fact", description="What kind of memory it is.")
    tags: Tags = Field(default=None, description="Tags, e.g. project/atlas.")
    status: Literal["active", "archived"] = "active"
    links: Annotated[
        list[Annotated[str, Field(min_length=1, max_length=MAX_NAME_CHARS * 2)]] | None,
        Field(max_length=50),
    ] = Field(
        default=None,
        description="Documents this memory is about (paths such as src/auth.py or note "
        "names); written as [[wikilinks]], so the memory shows in their backlinks.",
    )
    title: str | None = _TITLE


class AppendMemory(Params):
    content: str = Field(
        min_length=1,
        max_length=MAX_MEMORY_CHARS,
        description="What to note in today's daily log (memory/YYYY-MM-DD.md).",
    )
    title: str | None = Field(
        default=None, max_length=200, description="A short title for the entry's heading."
    )


class UpdateMemory(Params):
    name: MemoryName
    content: str | None = Field(
        default=None, max_length=MAX_MEMORY_CHARS, description="New text, replacing the old."
    )
    append: str | None = Field(
        default=None, max_length=MAX_MEMORY_CHARS, description="A paragraph to add at the end."
    )
    type: MemoryType | None = None
    tags: Tags = Field(default=None, description="New tags, replacing the old.")
    status: Literal["active", "archived"] | None = None
    title: str | None = _TITLE


class MemoryRef(Params):
    name: MemoryName


class ListMemories(MemoryFilters):
    include_trash: Bool = Field(default=False, description="List deleted memories too.")
    limit: Int = Field(
        default=100, ge=1, le=1000, description="Most memories listed, newest first."
    )


class SearchMemories(MemoryFilters):
    query: str = Field(min_length=1, max_length=MAX_QUERY_CHARS, description="What to look for.")
    top_k: TopK = top_k_field()
    mode: Mode = Field(default=None, description="hybrid (default), keyword or semantic.")
    explain: Bool = Field(
        default=False, description="Add each result's explanation (the recency factor shows)."
    )
    expand_chars: Expand = Field(
        default=None,
        description="Grow each match to about this many characters around it (its "
        "neighbouring entries); default memory.expand_chars (900).",
    )


class SearchLinkedMemories(Params):
    query: str = Field(min_length=1, max_length=MAX_QUERY_CHARS, description="What to look for.")
    target_document: DocumentPath
    top_k: TopK = top_k_field()
    mode: Mode = Field(default=None, description="hybrid (default), keyword or semantic.")


class FlushMemories(MemoryFilters):
    dry_run: Bool = Field(default=False, description="Show the summary; write nothing.")
    archive: Bool = Field(
        default=False,
        description="Mark what was summarised archived (status: archived; never deleted).",
    )
    max_chars: Int | None = Field(
        default=None, ge=200, le=50_000, description="Longest summary; default flush.max_chars."
    )


class RecallPrompt(Params):
    prompt: str = Field(
        max_length=PROMPT_CHARS,
        description="The prompt the user just gave the agent, as its hook received it.",
    )
