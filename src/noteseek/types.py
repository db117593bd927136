"""Plain data shared across layers: parsed documents, chunks, links, search hits.

Nothing here does I/O or imports another noteseek module, so every layer may depend on it.
Line numbers are 1-based and inclusive everywhere.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Literal

LinkKind = Literal["wikilink", "embed", "markdown", "property"]
BlockKind = Literal[
    "heading", "paragraph", "code", "list", "table", "quote", "html", "outline", "other"
]

KEYWORD_ONLY_NOTE = (
    "keyword only (chosen at index time); run `noteseek index --embed` to add meaning search"
)
"""What every door says when the index holds no vectors because the user chose so."""


@dataclass(frozen=True, slots=True)
class Link:
    """An outgoing reference found in a document, as written (resolution happens later)."""

    target: str
    """Wikilink name (``Note`` in ``[[Note#H|shown]]``) or the relative path of a Markdown link."""
    kind: LinkKind
    line: int
    anchor: str | None = None
    """Heading (``H`` in ``[[Note#H]]``) or block reference (``^id``), without the ``#``."""
    display: str | None = None
    """The shown text (``shown`` in ``[[Note|shown]]`` or ``[shown](note.md)``); for a
    ``property`` link, the frontmatter key it was written under."""
    context: str = ""
    """About a hundred characters of the line around the link, as written (filled in at
    indexing for memories), so a backlink can say what the memory said about its target."""


@dataclass(slots=True)
class Block:
    """One top-level block of a document body, with the source lines it spans."""

    kind: BlockKind
    start_line: int
    end_line: int
    text: str
    """The block's source text (the exact lines, without a trailing newline)."""
    language: str | None = None
    """For code blocks: the fence's info string's first word (``python``), else None."""
    level: int = 0
    """For headings: 1-6."""


@dataclass(slots=True)
class Section:
    """The blocks under one heading (or before the first heading: empty heading path)."""

    heading_path: tuple[str, ...]
    level: int
    start_line: int
    end_line: int
    blocks: list[Block] = field(default_factory=list)


@dataclass(slots=True)
class ParsedDocument:
    """What a parser extracts from one file."""

    title: str
    text: str
    """The normalised source: byte-order mark removed, line ends turned into ``\\n``."""
    line_count: int
    sections: list[Section] = field(default_factory=list)
    frontmatter: dict[str, Any] = field(default_factory=dict)
    aliases: list[str] = field(default_factory=list)
    tags: list[str] = field(default_factory=list)
    links: list[Link] = field(default_factory=list)
    warnings: list[str] = field(default_factory=list)
    body_start_line: int = 1
    """First line after the frontmatter block (1 when there is none)."""


@dataclass(slots=True)
class Chunk:
    """A heading-aware piece of a document: the unit that is indexed and returned."""

    chunk_id: str
    """Stable id: derived from doc id, heading path and ordinal within that heading path."""
    ordinal: int
    """Position of the chunk in its document (0-based)."""
    heading_path: tuple[str, ...]
    start_line: int
    end_line: int
    text: str
    """The chunk's source lines as they are in the file."""
    prose: str
    """Text for the body field: the chunk without its code blocks and heading lines."""
    code: str
    """Text of the code blocks in the chunk."""
    content_hash: str
    subheadings: tuple[str, ...] = ()
    """Headings below ``heading_path`` inside the chunk, when small sections were merged into
    it (the chunk's heading path is then their common parent's)."""

    @property
    def heading(self) -> str:
        return " > ".join(self.heading_path)


@dataclass(slots=True)
class Hit:
    """One search result: a chunk, its document and why it ranked where it did."""

    chunk_id: str
    doc_id: str
    root: str
    path: str
    """POSIX path relative to its root."""
    title: str
    heading_path: tuple[str, ...]
    start_line: int
    end_line: int
    score: float
    snippet: str
    """Original text around the best match, query terms wrapped in highlight markers."""
    rank: int = 0
    text: str | None = None
    explain: dict[str, Any] | None = None
    lanes: dict[str, int] = field(default_factory=dict)
    """The rank this chunk had in each retriever that returned it (``keyword``, ``semantic``)."""
    also: list[dict[str, Any]] = field(default_factory=list)
    """More sections of this document that matched, left out by the per-document limit:
    ``chunk_id``, ``heading_path``, ``start_line``, ``end_line``, best first."""
    expanded_in: int | None = None
    """With expansion: the rank of the better result whose grown text already holds this
    section (its own text is then not repeated)."""

    @property
    def heading(self) -> str:
        return " > ".join(self.heading_path)

    def to_dict(self) -> dict[str, Any]:
        out: dict[str, Any] = {
            "rank": self.rank,
            "chunk_id": self.chunk_id,
            "doc_id": self.doc_id,
            "root": self.root,
            "path": self.path,
            "title": self.title,
            "heading_path": list(self.heading_path),
            "start_line": self.start_line,
            "end_line": self.end_line,
            "score": round(self.score, 6),
            "lanes": dict(self.lanes),
            "snippet": self.snippet,
        }
        if self.text is not None:
            out["text"] = self.text
        if self.explain is not None:
            out["explain"] = self.explain
        if self.also:
            out["also"] = [dict(item) for item in self.also]
        if self.expanded_in is not None:
            out["expanded_in"] = self.expanded_in
        return out


@dataclass(slots=True)
class FileRecord:
    """A file's metadata as the store keeps it."""

    root: str
    path: str
    doc_id: str
    title: str
    mtime_ns: int
    size: int
    content_hash: str
    modified: float
    """Seconds since the epoch: frontmatter ``updated``/``modified``/``date`` or else mtime."""
    aliases: list[str] = field(default_factory=list)
    tags: list[str] = field(default_factory=list)
    frontmatter: dict[str, Any] = field(default_factory=dict)
    parser: str = ""
    warnings: list[str] = field(default_factory=list)


FTS_FIELDS = ("title", "aliases", "headings", "tags", "body", "code")
"""The weighted keyword fields, in index column order."""


@dataclass(slots=True)
class IndexedChunk:
    """A chunk plus its analyzed keyword fields (one string of terms per FTS field)."""

    chunk: Chunk
    fields: tuple[str, str, str, str, str, str]
    embed_key: str = ""
    """Cache key of the text the embedding model reads for this chunk (see chunking.py)."""


@dataclass(slots=True)
class PreparedFile:
    """Everything the store writes for one file, produced by the indexer off the write path."""

    record: FileRecord
    chunks: list[IndexedChunk]
    links: list[Link]


@dataclass(frozen=True, slots=True)
class Clause:
    """One query word or phrase: it matches when any of its alternatives (term sequences) does.

    ``redis`` -> [[redi]]; ``getUserById`` -> [[getuserbyid], [get, user, by, id]];
    ``"exact phrase"`` -> [[exact, phrase]]; a CJK run -> [[bigram, bigram, ...]].
    """

    alternatives: tuple[tuple[str, ...], ...]
    prefix: bool = False
    required: bool = False
    """Quoted phrases are required even when other words are optional."""

    @property
    def terms(self) -> list[str]:
        return [t for alt in self.alternatives for t in alt]


@dataclass(frozen=True, slots=True)
class KeywordQuery:
    """An analyzed keyword query: the same for every store backend."""

    clauses: tuple[Clause, ...]
    excluded: tuple[Clause, ...] = ()
    fields: tuple[str, ...] = ()
    """Match only in these fields (names from FTS_FIELDS); empty = all fields."""

    @property
    def terms(self) -> list[str]:
        seen: dict[str, None] = {}
        for clause in self.clauses:
            for term in clause.terms:
                seen.setdefault(term, None)
        return list(seen)


@dataclass(slots=True)
class Filters:
    """Restrictions applied inside the retrieval query, before any top-k cut."""

    paths: list[str] = field(default_factory=list)
    """Glob patterns over root-relative paths (``**`` spans folders); any may match."""
    tags: list[str] = field(default_factory=list)
    """Every tag must be present (``project`` also matches ``project/atlas``)."""
    roots: list[str] = field(default_factory=list)
    after: float | None = None
    before: float | None = None
    where: list[tuple[str, str, str]] = field(default_factory=list)
    """Frontmatter conditions ``(key, op, value)`` with op ``=`` or ``!=``."""
    exclude_paths: list[str] = field(default_factory=list)
    """Glob patterns (or plain root-relative paths) of files to leave out."""
    kinds: list[str] = field(default_factory=list)
    """Only roots of these source kinds (``files``, ``memory``, ...); keeps memories apart."""
    doc_ids: list[str] | None = None
    """Only these documents (None = any; an empty list lets nothing through)."""
    authors: list[str] = field(default_factory=list)
    """Any of these is part of the document's ``author`` or ``author_email`` field (case
    folded): who made a commit."""
    changed: list[str] = field(default_factory=list)
    """Glob patterns (as :attr:`paths`) over the document's ``files`` field: the files a
    commit changed (new and old names); any may match any file."""

    def is_empty(self) -> bool:
        return self.doc_ids is None and not (
            self.paths
            or self.authors
            or self.changed
            or self.exclude_paths
            or self.tags
            or self.roots
            or self.kinds
            or self.where
            or self.after is not None
            or self.before is not None
        )
