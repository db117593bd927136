"""The memory operations' results, as every door returns them."""

from __future__ import annotations

from pydantic import Field

from noteseek.operations.results import Result, SearchOut


class MemoryWriteOut(Result):
    name: str = Field(description="The memory's name (path in the memory folder, without .md).")
    root: str = Field(description="The memory root it was written to.")
    created: bool = Field(
        description="False when nothing new was written (identical content already there)."
    )
    duplicate_of: str | None = Field(
        default=None, description="The memory that already holds this text."
    )
    message: str
    indexed: str = Field(description="How the change reaches the index (searchable at once, ...).")


class MemoryOut(Result):
    name: str
    root: str
    kind: str = Field(description="memory, daily (a daily log) or long_term (MEMORY.md).")
    type: str
    status: str
    tags: list[str]
    created_at: str
    updated_at: str
    title: str | None
    size: int = Field(description="Bytes.")
    trashed: bool = False
    content: str | None = Field(default=None, description="The text (read_memory only).")


class MemoryProblem(Result):
    name: str
    reason: str


class MemoryListOut(Result):
    root: str
    memories: list[MemoryOut]
    count: int = Field(description="Memories that passed the filters (before the limit).")
    problems: list[MemoryProblem] = Field(
        description="Files that could not be read (reported, never fatal, never rewritten)."
    )


class MemoryStatsOut(Result):
    root: str
    folder: str
    memories: int
    by_type: dict[str, int]
    by_status: dict[str, int]
    daily_logs: int
    total_bytes: int
    trash: int
    oldest: str | None
    newest: str | None
    problems: int
    indexed_memories: int = Field(description="Memories in the index (all memory roots).")


class MemoryLinkOut(Result):
    memory: str = Field(description="The linking memory's doc_id.")
    type: str = Field(description="mentions, refactors or plans.")
    line: int
    context: str = Field(description="The text around the link in the memory.")


class LinkedMemoriesOut(SearchOut):
    target: str = Field(description="The document's doc_id, or ?name for a ghost node.")
    ghost: bool = Field(description="No such document is indexed (yet): a placeholder node.")
    links: list[MemoryLinkOut] = Field(description="Every memory link to the target.")


class FlushOut(Result):
    dry_run: bool
    method: str = Field(description="extractive, or llm:<model>.")
    passages: int = Field(description="Sections that were summarised.")
    sources: list[str] = Field(description="Memories the summary draws on.")
    summary: str
    written_to: str | None = Field(description="The daily log the summary was appended to.")
    archived: list[str] = Field(description="Memories marked archived.")
    message: str
    indexed: str | None = Field(
        default=None, description="How what was written reached the index (null: nothing)."
    )


class RecallOut(Result):
    text: str = Field(
        description="What the prompt hook shows the agent: a header and a line per memory "
        "(path:line, text), or empty when no memory passes the relevance floor."
    )
