"""The memory operations' entries in the operations table (``table.py`` includes them)."""

from __future__ import annotations

from typing import Any

from noteseek.operations import memory
from noteseek.operations.context import Context
from noteseek.operations.errors import ErrorKind
from noteseek.operations.memory_params import (
    AppendMemory,
    CreateMemory,
    FlushMemories,
    ListMemories,
    MemoryRef,
    RecallPrompt,
    SearchLinkedMemories,
    SearchMemories,
    UpdateMemory,
)
from noteseek.operations.memory_results import (
    FlushOut,
    LinkedMemoriesOut,
    MemoryListOut,
    MemoryOut,
    MemoryStatsOut,
    MemoryWriteOut,
    RecallOut,
)
from noteseek.operations.params import NoParams
from noteseek.operations.results import SearchOut
from noteseek.operations.spec import HttpRoute, Operation
from noteseek.servers import RECALL_ROUTE


def _recall_memories(ctx: Context, p: RecallPrompt) -> dict[str, Any]:
    """``memory_hooks.recall_memories``, loaded with its first call (it loads the analyzer,
    which a light command such as ``noteseek status`` never needs)."""
    from noteseek.operations import memory_hooks

    return memory_hooks.recall_memories(ctx, p)


_WRITE_ERRORS: tuple[ErrorKind, ...] = ("invalid", "not_found", "conflict", "unavailable")
_FILES = (
    "Memories are plain Markdown files in the memory folder (MEMORY.md for lasting facts, "
    "memory/YYYY-MM-DD.md daily logs, one file per named memory) that people can read and edit."
)

MEMORY_OPERATIONS: tuple[Operation, ...] = (
    Operation(
        "create_memory",
        "Write a new named memory (type, tags, status, links to documents).",
        CreateMemory,
        MemoryWriteOut,
        memory.create_memory,
        False,
        _WRITE_ERRORS,
        description="Remember something lasting as a named memory: a fact, plan, observation, "
        "reflection or journal entry, with tags and links to the documents it is about (they "
        "show it in their backlinks). Never overwrites: an existing name is a conflict, and "
        "text already remembered is not written twice. " + _FILES,
        http=HttpRoute("POST", "/memories", status_code=201),
        rendering="memory_write",
    ),
    Operation(
        "append_memory",
        "Add an entry to today's daily log (memory/YYYY-MM-DD.md).",
        AppendMemory,
        MemoryWriteOut,
        memory.append_memory,
        False,
        _WRITE_ERRORS,
        description="Note what happened or was learned in today's daily log, as a timed "
        "entry. The quickest way to remember; flush_memories later compacts the logs.",
        http=HttpRoute("POST", "/memories/append"),
        rendering="memory_write",
    ),
    Operation(
        "update_memory",
        "Change a memory: its text, an added paragraph, type, tags, status or title.",
        UpdateMemory,
        MemoryWriteOut,
        memory.update_memory,
        False,
        _WRITE_ERRORS,
        description="Change a memory: replace its text (content), add a paragraph (append), "
        "or set its type, tags, title or status (archived memories leave searches unless "
        "asked for). Keys a person added to its frontmatter are kept.",
        http=HttpRoute("POST", "/memories/update"),
        rendering="memory_write",
    ),
    Operation(
        "delete_memory",
        "Move a memory to the trash (.trash/), from where restore_memory brings it back.",
        MemoryRef,
        MemoryWriteOut,
        memory.delete_memory,
        False,
        _WRITE_ERRORS,
        http=HttpRoute("POST", "/memories/delete"),
        rendering="memory_write",
    ),
    Operation(
        "restore_memory",
        "Bring a deleted memory back from the trash.",
        MemoryRef,
        MemoryWriteOut,
        memory.restore_memory,
        False,
        _WRITE_ERRORS,
        http=HttpRoute("POST", "/memories/restore"),
        rendering="memory_write",
    ),
    Operation(
        "read_memory",
        "One memory's text and fields (type, status, tags, dates), by name.",
        MemoryRef,
        MemoryOut,
        memory.read_memory,
        True,
        ("invalid", "not_found", "unavailable"),
        http=HttpRoute("GET", "/memory/{name:path}"),
    ),
    Operation(
        "list_memories",
        "Memories newest first, by type, tags, status and creation date.",
        ListMemories,
        MemoryListOut,
        memory.list_memories,
        True,
        ("invalid", "unavailable"),
        description="List memories newest first (without their text), filtered by type, "
        "tags, status (default active) and creation date (after/before, or the last N days). "
        "Files that cannot be read are listed under problems.",
        # POST: a list filter (tags) cannot be told from a single value in a query string.
        http=HttpRoute("POST", "/memories/list"),
    ),
    Operation(
        "memory_stats",
        "How many memories of each type and status, daily logs, size, trash.",
        NoParams,
        MemoryStatsOut,
        memory.memory_stats,
        True,
        ("unavailable",),
        http=HttpRoute("GET", "/memories/stats"),
    ),
    Operation(
        "search_memories",
        "Search agent memories: keyword and meaning fused, recent memories first.",
        SearchMemories,
        SearchOut,
        memory.search_memories,
        True,
        ("invalid", "unavailable"),
        description="Search what was remembered (memories and daily logs, not the documents): "
        "ranked sections with the memory's name, line range and text. Memories written in the "
        "last memory.recency_days days rank higher. Narrow by type, tags, status (default "
        "active) and creation date.",
        http=HttpRoute("POST", "/search_memories"),
        reads_index=True,
        rendering="results",
    ),
    Operation(
        "search_linked_memories",
        "Search the memories that link to one document: what do my memories say about it?",
        SearchLinkedMemories,
        LinkedMemoriesOut,
        memory.search_linked_memories,
        True,
        ("invalid", "ambiguous", "unavailable"),
        description="What do my memories say about this document? Searches only the memories "
        "that link to target_document ([[src/auth.py]] in a memory; the document need not be "
        "indexed or exist yet), and lists every such link with its type (mentions, refactors, "
        "plans) and the text around it.",
        http=HttpRoute("POST", "/search_linked_memories"),
        reads_index=True,
        rendering="results",
    ),
    Operation(
        "flush_memories",
        "Compress memories into a dated summary appended to today's daily log.",
        FlushMemories,
        FlushOut,
        memory.flush_memories,
        False,
        _WRITE_ERRORS,
        description="Compact memory: summarise the selected memories (default: every active "
        "one; narrow by days, type, tags) with the configured LLM endpoint, or offline by "
        "picking their most central sentences, and append the summary with its sources to "
        "today's daily log. dry_run shows it without writing; archive marks what was "
        "summarised archived (never deleted).",
        http=HttpRoute("POST", "/memories/flush"),
        rendering="flush",
    ),
    Operation(
        "recall_memories",
        "The memories an agent's prompt hook shows with a prompt (noteseek hook prompt).",
        RecallPrompt,
        RecallOut,
        _recall_memories,
        True,
        ("invalid", "unavailable"),
        description="What `noteseek hook prompt` injects for a prompt: at most "
        "hooks.prompt_results memories within hooks.prompt_chars, each with its path:line, "
        "or nothing when none holds enough of the prompt's content words. A hook asks a "
        "running server for it, which has the index open.",
        http=HttpRoute("POST", RECALL_ROUTE),
        mcp=False,
        reads_index=True,
        rendering="text",
    ),
)
