"""The table of operations: what noteseek offers, once, for every door.

MCP lists a tool per entry with ``mcp=True`` and HTTP adds a route per entry with an
``http`` route, both generated from this table; the CLI's commands call the same entries. A
new capability is one entry here plus the engine method it runs.
"""

from __future__ import annotations

from noteseek.operations import admin, git, reading, search
from noteseek.operations.errors import ErrorKind, Invalid
from noteseek.operations.params import (
    GetChunk,
    GetDocument,
    GetLinks,
    GetNeighbourhood,
    GetSection,
    Hypothesis,
    IndexRoots,
    Migrate,
    NoParams,
    QueryCompressed,
    QueryDocuments,
    Rebuild,
    Reindex,
    RenderDocument,
)
from noteseek.operations.results import (
    ChunkOut,
    CommitSearchOut,
    DocumentOut,
    GraphOut,
    IndexOut,
    LinksOut,
    MigrateOut,
    ReindexOut,
    RenderOut,
    SearchOut,
    StatusOut,
)
from noteseek.operations.spec import Door, HttpRoute, Operation

__all__ = ["Door", "HttpRoute", "Operation", "every_operation", "operation"]

_CAP = (
    "Each result carries at most 2,000 characters of text (or expand_chars, when larger) and a "
    "call at most 40,000 in all; cut text is marked truncated."
)
_SEARCH_ERRORS: tuple[ErrorKind, ...] = ("invalid", "unavailable")
_READ_ERRORS: tuple[ErrorKind, ...] = ("invalid", "not_found", "ambiguous", "unavailable")

_DOCUMENT_OPERATIONS: dict[str, Operation] = {
    op.name: op
    for op in (
        Operation(
            "query_documents",
            "Search: ranked sections with path, heading path, line range, score and text.",
            QueryDocuments,
            SearchOut,
            search.query_documents,
            True,
            _SEARCH_ERRORS,
            description="Search the indexed Markdown notes and docs. Use this first for any "
            "question the notes may answer. Returns ranked sections with path, title, heading "
            "path, line range, score (0-1), per-retriever ranks and the section text. Narrow "
            "with paths, tags, root, after/before (dates) and where (frontmatter); pass "
            "excluded_files to skip what you already read; explain shows why each ranked "
            "where it did. " + _CAP,
            http=HttpRoute("POST", "/query_documents"),
            reads_index=True,
            rendering="results",
        ),
        Operation(
            "query_documents_compressed",
            "Search, token-frugal: low scores and near-duplicate sections dropped.",
            QueryCompressed,
            SearchOut,
            search.query_documents_compressed,
            True,
            _SEARCH_ERRORS,
            description="Like query_documents but token-frugal: drops results below min_score "
            "and near-duplicate sections, and reports the tokens saved. Use it when context is "
            "tight or for broad questions with many similar notes. " + _CAP,
            http=HttpRoute("POST", "/query_documents_compressed"),
            reads_index=True,
            rendering="results",
        ),
        Operation(
            "search_with_hypothesis",
            "Search with a hypothetical answer (HyDE), fused with its keyword matches.",
            Hypothesis,
            SearchOut,
            search.search_with_hypothesis,
            True,
            _SEARCH_ERRORS,
            description="Search with a hypothetical answer (HyDE): write a short passage as "
            "the ideal note would phrase it, and get the sections closest to it in meaning, "
            "fused with its keyword matches. Use it when query_documents misses because the "
            "notes use different words. " + _CAP,
            http=HttpRoute("POST", "/search_with_hypothesis"),
            reads_index=True,
            rendering="results",
        ),
        Operation(
            "search_git_history",
            "Search git history: commits with hash, date, author, message and the hunk that "
            "matched.",
            git.SearchGitHistory,
            CommitSearchOut,
            git.search_git_history,
            True,
            _SEARCH_ERRORS,
            description="Search the git history of the indexed repositories: when and why did "
            "something change, and who changed it? Returns one result per commit (best first) "
            "with short hash, date, author, subject and message, the files it changed, and the "
            "changed file whose hunk matched best (include_diff adds that hunk's text). Narrow "
            "with file_pattern (glob over changed files), author, after/before (dates or ages "
            "such as 30d) and repository. get_document with a result's doc_id reads the "
            "whole commit.",
            http=HttpRoute("POST", "/search_git_history"),
            reads_index=True,
            rendering="commits",
        ),
        Operation(
            "get_chunk",
            "The full text of one result section by its chunk_id.",
            GetChunk,
            ChunkOut,
            reading.get_chunk,
            True,
            ("invalid", "not_found", "unavailable"),
            http=HttpRoute("GET", "/chunks/{chunk_id}"),
            needs_index=True,
            rendering="section",
        ),
        Operation(
            "get_section",
            "The whole section holding a line of a document (path:line).",
            GetSection,
            ChunkOut,
            reading.get_section,
            True,
            _READ_ERRORS,
            description="The whole section (under one heading) holding a line of a document: "
            "for a path:line reference from a result, a log or a grep.",
            http=HttpRoute("GET", "/sections/{path:path}"),
            needs_index=True,
            rendering="section",
        ),
        Operation(
            "get_document",
            "Read an indexed document, or part of it, with line numbers.",
            GetDocument,
            DocumentOut,
            reading.get_document,
            True,
            _READ_ERRORS,
            description="Read an indexed document (or part of it) by path or by name (title, "
            "file name or alias), with line numbers: "
            "from_line and max_lines page through long files. Only documents inside the "
            "configured roots can be read.",
            http=HttpRoute("GET", "/documents/{path:path}"),
            needs_index=True,
            rendering="document",
        ),
        Operation(
            "get_links",
            "A document's outgoing links (typed, resolved or not) and its backlinks.",
            GetLinks,
            LinksOut,
            reading.get_links,
            True,
            _READ_ERRORS,
            description="A document's outgoing links (wikilinks, embeds, Markdown links and "
            "frontmatter relations, typed, with the line they are on; a link to a note that "
            "does not exist yet is a placeholder) and the documents linking to it.",
            http=HttpRoute("GET", "/links/{path:path}"),
            needs_index=True,
            rendering="links",
        ),
        Operation(
            "render_document",
            "A document rendered as safe HTML, with its headings, links and backlinks",
            RenderDocument,
            RenderOut,
            reading.render_document,
            True,
            _READ_ERRORS,
            description="The web page's view of a document: sanitized HTML whose blocks carry "
            "their source lines, its headings, outgoing links and backlinks. HTML is for "
            "people: agents read get_document.",
            http=HttpRoute("GET", "/render/{path:path}"),
            mcp=False,
            finish=reading.rendered,
            needs_index=True,
        ),
        Operation(
            "get_neighbourhood",
            "A document's link neighbourhood: the documents within 1-2 links, typed edges.",
            GetNeighbourhood,
            GraphOut,
            reading.get_neighbourhood,
            True,
            _READ_ERRORS,
            description="The documents within depth (1-2) links of a document in either "
            "direction, nearest first (at most 60), and the typed links between them: for "
            "exploring what surrounds a note.",
            http=HttpRoute("GET", "/graph/{path:path}"),
            needs_index=True,
        ),
        Operation(
            "index_status",
            "Documents, sections, embedding progress, failed files with reasons, the queue.",
            NoParams,
            StatusOut,
            admin.index_status,
            True,
            ("unavailable",),
            description="How the index is doing: documents, sections, embedding progress, files "
            "that failed and why, the watcher, the model, this process's role (writer or "
            "reader) and background jobs.",
            http=HttpRoute("GET", "/status"),
        ),
        Operation(
            "check_index",
            "Check the whole index for damage now, then report its status.",
            NoParams,
            StatusOut,
            admin.check_index,
            True,
            ("unavailable",),
            description="Read the whole index through (PRAGMA integrity_check: seconds on a "
            "large one) for damage no search has met; damage found is recorded, reported by "
            "every door and rebuilt by the live writer. noteseek status --check.",
            mcp=False,
        ),
        Operation(
            "reindex",
            "Queue a re-index (all roots, or those holding the given paths); returns the job "
            "(a request made while a reindex job still waits is merged into that job).",
            Reindex,
            ReindexOut,
            admin.reindex,
            False,
            ("invalid", "conflict", "unavailable"),
            description="Bring the index up to date with the files now (the watcher normally "
            "does this by itself). Runs in the background and returns a job id; index_status "
            "reports the job's state.",
            http=HttpRoute("POST", "/reindex", status_code=202),
        ),
        Operation(
            "index",
            "Index roots incrementally, then embed new chunks, as the index's writer.",
            IndexRoots,
            IndexOut,
            admin.index,
            False,
            ("invalid", "conflict", "unavailable"),
            mcp=False,
        ),
        Operation(
            "rebuild",
            "Drop the index and build it again from the files (cached vectors are reused).",
            Rebuild,
            IndexOut,
            admin.rebuild,
            False,
            ("invalid", "conflict", "unavailable"),
            mcp=False,
        ),
        Operation(
            "migrate",
            "Copy the index into another backend (SQLite, Milvus Lite or Milvus Server), "
            "vectors included.",
            Migrate,
            MigrateOut,
            admin.migrate,
            False,
            ("invalid", "conflict", "unavailable"),
            mcp=False,
            reads_index=True,
        ),
    )
}
"""Every operation but the memory ones (``memory_table.py``)."""

_every: dict[str, Operation] | None = None


def every_operation() -> dict[str, Operation]:
    """The whole table in order, the memory operations last. Their entries (and their
    parameter and result models) load with the first call that needs them: a search of the
    documents or ``noteseek status`` never does (17 ms of each start)."""
    global _every
    if _every is None:
        from noteseek.operations.memory_table import MEMORY_OPERATIONS

        _every = {**_DOCUMENT_OPERATIONS, **{op.name: op for op in MEMORY_OPERATIONS}}
    return _every


def __getattr__(name: str) -> dict[str, Operation]:
    if name == "OPERATIONS":  # the whole table, as it always was
        return every_operation()
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


def operation(name: str) -> Operation:
    """The operation called ``name``; Invalid (listing the names) when there is none."""
    op = _DOCUMENT_OPERATIONS.get(name) or every_operation().get(name)
    if op is None:
        raise Invalid(f"unknown tool {name!r}; tools: {', '.join(mcp_operations())}")
    return op


def mcp_operations() -> dict[str, Operation]:
    return {name: op for name, op in every_operation().items() if op.mcp}


def http_operations() -> dict[str, Operation]:
    return {name: op for name, op in every_operation().items() if op.http is not None}
