"""What operations return, declared once: HTTP's response models and MCP's output schemas.

An operation returns a plain dict shaped like its model; the doors serialise it (HTTP validates
it against the model, MCP sends it as structured content, the CLI prints it or its text).
"""

from __future__ import annotations

from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field


class Result(BaseModel):
    """Every result model: its validator and schema are built on first use, so a command
    that runs one operation does not build those of the forty others (about 40 ms)."""

    model_config = ConfigDict(defer_build=True)


class LastChangeOut(Result):
    date: str = Field(description="When the commit was authored (ISO 8601).")
    author: str
    commit: str = Field(description="The full hash.")
    short_hash: str
    subject: str
    root: str = Field(description="The git root holding the commit.")


class AlsoSection(Result):
    chunk_id: str
    heading_path: list[str]
    start_line: int
    end_line: int


class SearchResult(Result):
    rank: int = Field(description="1-based position.")
    chunk_id: str = Field(description="Stable id of the section piece; get_chunk reads it.")
    doc_id: str = Field(description="root/path, unique across roots.")
    root: str
    path: str = Field(description="POSIX path relative to the root.")
    title: str
    heading_path: list[str]
    start_line: int
    end_line: int
    score: float = Field(description="0-1; orders the results of one query.")
    lanes: dict[str, int] = Field(description="The result's rank in each retriever.")
    snippet: str = Field(
        description="Plain text around the best match (no Markdown), matches wrapped in **."
    )
    content: str = Field(
        description="The section's Markdown (capped; see truncated). Empty when expanded_in "
        "names the result holding it, or when the answer's text budget is spent (the snippet "
        "is there; get_chunk reads the section)."
    )
    truncated: bool
    also: list[AlsoSection] = Field(
        default_factory=list,
        description="More sections of this document that matched, left out by the "
        "per-document limit (search.max_per_document), best first; get_chunk reads one.",
    )
    expanded_in: int | None = Field(
        default=None,
        description="With expand_chars: the rank of the better result whose grown text "
        "already holds this section (its text is not repeated); content is then what lies "
        "next to that text (start_line-end_line), or empty when nothing does.",
    )
    explain: dict[str, Any] | None = Field(
        default=None, description="With explain: each lane's rank, score and contribution."
    )
    last_change: LastChangeOut | None = Field(
        default=None,
        description="The newest indexed commit that changed the document (when its folder is "
        "in an indexed git repository).",
    )


class CommitResult(Result):
    rank: int
    doc_id: str = Field(description="root/hash: get_document reads the whole commit.")
    root: str = Field(description="The git root (repository) of the commit.")
    hash: str
    short_hash: str
    subject: str
    message: str = Field(description="The commit message's body (the subject when it has none).")
    author: str
    author_email: str
    date: str = Field(description="When it was authored (ISO 8601, UTC).")
    score: float
    lanes: dict[str, int]
    snippet: str = Field(description="Text around the best match, matches wrapped in **.")
    chunk_id: str
    start_line: int = Field(description="Lines of the commit document the match spans.")
    end_line: int
    files: list[str] = Field(
        description="The files the commit changed: only the first ones when it changed "
        "very many (files_changed says how many)."
    )
    insertions: int = Field(description="Lines added, over all the files it changed.")
    deletions: int = Field(description="Lines removed, over all the files it changed.")
    files_changed: int = Field(
        description="How many files the commit changed; more than len(files) when the list "
        "was cut (say so: '1,000 of 100,000 files shown')."
    )
    file: str | None = Field(description="The changed file whose hunk matched best.")
    hunk: str | None = Field(description="That hunk's text (include_diff).")
    hunk_truncated: bool = False
    explain: dict[str, Any] | None = None


class IndexInfo(Result):
    """The index that answered a search: the index used last may not be the one meant."""

    dir: str = Field(description="The index folder (absolute).")
    roots: list[str] = Field(description="The names of the roots it holds.")


class SpellingCorrection(Result):
    word: str = Field(description="The word as typed.")
    documents: int = Field(description="Documents holding the word as typed.")
    also_searched: list[str] = Field(description="Spellings searched besides it, best first.")
    terms: list[str] = Field(description="The index terms (stems) those spellings searched.")
    edits: int = Field(description="Edits between the word and its alternatives.")


class CommitSearchOut(Result):
    index: IndexInfo
    query: str
    mode: str
    took_ms: float
    lanes: dict[str, int]
    commits: list[CommitResult]
    warnings: list[str]
    corrections: list[SpellingCorrection] | None = None
    did_you_mean: str | None = None


class Compression(Result):
    kept: int
    dropped_low_score: int
    dropped_duplicates: int
    tokens_before: int
    tokens_after: int
    tokens_saved: int


class SearchOut(Result):
    status: Literal["ready", "indexing"] = Field(
        description="indexing: the index is being built or updated; results may be incomplete."
    )
    index: IndexInfo = Field(description="The index (folder and roots) that answered.")
    query: str
    mode: str = Field(description="The mode asked for; lanes says which retrievers ran.")
    took_ms: float
    lanes: dict[str, int] = Field(description="Candidates each retriever returned.")
    timings_ms: dict[str, float] = Field(description="Milliseconds per pipeline stage.")
    results: list[SearchResult]
    warnings: list[str]
    compression: Compression | None = None
    expansion: list[str] | None = Field(
        default=None, description="Words query expansion added to the keyword lane."
    )
    corrections: list[SpellingCorrection] | None = Field(
        default=None,
        description="Query words no document holds, and the index's spellings within one or "
        "two edits that were searched besides them (typo tolerance).",
    )
    did_you_mean: str | None = Field(
        default=None, description="The query with each such word replaced by its best spelling."
    )


class ChunkOut(Result):
    kind: Literal["chunk", "section"]
    root: str
    path: str
    doc_id: str
    title: str
    heading_path: list[str]
    start_line: int
    end_line: int
    chunk_ids: list[str]
    stale: bool = Field(description="The file changed since it was indexed.")
    text: str


class DocumentOut(Result):
    root: str
    path: str
    doc_id: str
    title: str
    from_line: int
    to_line: int
    total_lines: int
    more: bool = Field(description="Lines follow: ask again with a higher from_line.")
    truncated: bool
    content: str


class LinkOut(Result):
    doc_id: str | None = Field(description="The linked document; null for a missing note.")
    placeholder: str | None = Field(description="The name of a note that does not exist yet.")
    title: str | None
    type: str = Field(
        description="links_to, embeds, related, implements, tests; from a memory: mentions, "
        "refactors, plans"
    )
    line: int = Field(description="Line of the link in the linking document.")
    anchor: str | None = Field(description="Heading or ^block the link points at.")
    context: str = Field(default="", description="The text around the link where it is written.")
    memory: bool = Field(
        default=False, description="The other side is an agent memory, not a document."
    )


class HeadingOut(Result):
    id: str = Field(description="The heading's element id in `html`.")
    level: int = Field(ge=1, le=6)
    text: str
    line: int = Field(description="1-based source line.")


class RenderOut(Result):
    doc_id: str
    root: str
    path: str
    title: str
    html: str = Field(description="Sanitized HTML; block elements carry data-line.")
    headings: list[HeadingOut]
    outgoing: list[LinkOut]
    backlinks: list[LinkOut]


class LinksOut(Result):
    doc_id: str
    outgoing: list[LinkOut]
    backlinks: list[LinkOut]


class GraphNode(Result):
    id: str = Field(description="doc_id, or ?name for a note that does not exist yet.")
    title: str
    path: str | None
    placeholder: bool
    center: bool
    depth: int = Field(ge=0, le=2, description="Links away from the centre.")


class GraphEdge(Result):
    source: str
    target: str
    type: str


class GraphOut(Result):
    nodes: list[GraphNode]
    edges: list[GraphEdge]
    truncated: bool = Field(description="More neighbours exist than the node cap shows.")


class RootStatus(Result):
    model_config = ConfigDict(extra="allow")
    name: str
    path: str
    files: int
    chunks: int


class EmbeddingStatus(Result):
    model_config = ConfigDict(extra="allow")
    enabled: bool
    keyword_only: bool = Field(
        default=False,
        description="The index was made keyword-only at index time (index --keyword-only); "
        "nothing is embedded until index --embed.",
    )
    provider: str
    model: str
    embedded: int
    total: int
    pending: int


class Failure(Result):
    root: str
    path: str
    severity: str
    reason: str


class JobInfo(Result):
    id: str
    kind: Literal["reconcile", "reindex"]
    roots: list[str] | None
    force: bool
    state: Literal["queued", "running", "done", "failed"]
    created: float
    started: float | None
    finished: float | None
    result: dict[str, Any] | None
    error: str | None
    requests: int = Field(
        default=1,
        description="How many reindex requests the job answers: those made while it was "
        "still queued were merged into it.",
    )


class ServiceState(Result):
    model_config = ConfigDict(extra="allow")
    role: Literal["starting", "writer", "reader", "stopped"]
    pid: int
    writer_pid: int | None
    activity: str | None
    queued_jobs: int
    queued_paths: int
    last_error: str | None
    watcher: dict[str, Any]
    jobs: list[JobInfo]


class QueueStatus(Result):
    paths: int = Field(description="Changed files waiting to be indexed.")
    jobs: int = Field(description="Re-index and reconcile jobs waiting.")


class ScopeOut(Result):
    name: str = Field(description="What `source` takes: docs, memory, commits, all, ...")
    kinds: list[str] = Field(description="The root kinds whose documents it holds.")
    operation: str | None = Field(
        description="The operation that answers it with its kind's own unit (commits: "
        "search_git_history); null: query_documents."
    )


class IndexCheck(Result):
    at: float = Field(description="When the check finished (seconds since the epoch).")
    seconds: float = Field(description="How long it took.")
    found: str | None = Field(
        description="What was wrong (the index is then damaged); null: sound."
    )


class StatusOut(Result):
    status: Literal["ready", "indexing", "damaged"]
    damaged: str | None = Field(
        default=None,
        description="While the index is damaged: where, why, and what rebuilds it (searches "
        "are refused meanwhile); null otherwise.",
    )
    index_dir: str
    index_dir_reason: str
    exists: bool
    documents: int
    chunks: int
    links: int
    index_bytes: int
    store: dict[str, Any] | None = Field(
        default=None,
        description="Where the index lives: backend (sqlite, milvus-lite or milvus); for "
        "Milvus its URI without secrets, collection prefix, server version and rows per "
        "collection.",
    )
    roots: list[RootStatus]
    embedding: EmbeddingStatus | None
    communities: dict[str, int] | None = None
    failed_files: int = Field(description="Files skipped: not indexed.")
    warned_files: int = Field(
        default=0, description="Files indexed with a warning (front matter that did not parse...)."
    )
    failures: list[Failure] = Field(description="Files skipped or indexed with a warning.")
    last_run: dict[str, Any] | None
    notices: list[str]
    version: str
    scopes: list[ScopeOut] = Field(
        default_factory=list, description="What a search can look in (the registered kinds)."
    )
    service: ServiceState | None = None
    queue: QueueStatus
    check: IndexCheck | None = Field(
        default=None,
        description="The last full check of the index file for damage no read has met (run "
        "by the live writer every watch.check_interval seconds, and by `noteseek status "
        "--check`); null when it was never checked through.",
    )


class ReindexOut(Result):
    job: JobInfo
    merged_into: str | None = Field(
        default=None,
        description="The id of the queued reindex job this request was merged into (its "
        "roots became the union of both, force if either asked); null: a new job was queued.",
    )
    hint: str


class IndexOut(Result):
    """What a one-shot index or rebuild did (the CLI's summary)."""

    model_config = ConfigDict(extra="allow")
    index_dir: str
    roots: list[str]
    scanned: int
    added: int
    updated: int
    removed: int
    unchanged: int
    skipped: int
    seconds: float
    problems: list[dict[str, Any]]
    keyword_only: bool = Field(
        default=False, description="The index stays keyword-only (chosen with keyword_only)."
    )


class MigrateCounts(Result):
    roots: int
    files: int
    chunks: int
    vectors: int = Field(description="Chunks with a vector (of any embedding model).")
    links: int
    edges: int = Field(description="Resolved links in the kept link graph.")
    problems: int


class MigrateOut(Result):
    """What a migration copied, counted on both sides (they are equal, or it failed)."""

    source: str
    target: str
    replaced: bool = Field(description="The target's contents were deleted first.")
    counts: dict[Literal["source", "target"], MigrateCounts]
    seconds: float
    next: str = Field(description="The settings that open the copy.")
