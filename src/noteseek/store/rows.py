"""The rows a store hands back (every backend builds the same ones): files' states and rows,
chunk rows, problems, link rows, named files, graph edges, and a file as ``noteseek migrate``
copies it. The roles that return them are in ``store/base.py``, which re-exports them.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Literal

from noteseek.types import PreparedFile


@dataclass(frozen=True, slots=True)
class FileState:
    """What the indexer compares against the file system to skip unchanged files."""

    file_id: int
    path: str
    mtime_ns: int
    size: int
    content_hash: str


@dataclass(frozen=True, slots=True)
class ChunkRow:
    """A stored chunk with the document fields results need."""

    rowid: int
    chunk_id: str
    ordinal: int
    heading_path: tuple[str, ...]
    start_line: int
    end_line: int
    text: str
    content_hash: str
    file_id: int
    root: str
    path: str
    doc_id: str
    title: str
    modified: float
    embed_key: str = ""


@dataclass(frozen=True, slots=True)
class FileRow:
    file_id: int
    root: str
    root_path: str
    path: str
    doc_id: str
    title: str
    aliases: list[str]
    tags: list[str]
    frontmatter: dict[str, Any]
    mtime_ns: int
    size: int
    content_hash: str
    modified: float
    warnings: list[str]
    indexed_at: float


@dataclass(frozen=True, slots=True)
class Problem:
    root: str
    path: str
    severity: Literal["skipped", "warning"]
    reason: str
    at: float


LinkRow = tuple[str, str, str, int, str | None, tuple[str, ...], str | None, str]
"""A stored link: (source doc_id, target, kind, line, anchor, heading path there, display,
context: the text around the link)."""


@dataclass(frozen=True, slots=True)
class NamedFile:
    """What link resolution reads of a file: where it is and the names it goes by."""

    file_id: int
    root: str
    path: str
    doc_id: str
    title: str
    aliases: tuple[str, ...]


@dataclass(frozen=True, slots=True)
class EdgeRow:
    """A resolved link kept with the index (``graph.links.Edge`` by file id)."""

    file_id: int
    """The linking file."""
    target: str
    """The doc_id linked to, or ``?<folded name>`` for a placeholder."""
    target_id: int | None
    """The file id linked to; None for a placeholder."""
    type: str
    line: int
    anchor: str | None = None
    context: str = ""


@dataclass(frozen=True, slots=True)
class StoredFile:
    """One file as an index holds it, with its ids: what ``noteseek migrate`` copies.

    ``prepared`` holds the file's record, its chunks with their analyzed keyword fields and
    embedding keys (the chunks' ``prose`` and ``code`` are not kept by a store: empty) and its
    links in the order of the file; ``rowids`` are the chunks' rowids in the same order.
    """

    file_id: int
    kind: str
    """The kind of its root's source (``files``, ``memory``, ...)."""
    indexed_at: float
    prepared: PreparedFile
    rowids: tuple[int, ...]
    edges: tuple[EdgeRow, ...] = ()
    """Its resolved links in the kept graph (``GraphStore``)."""
    keys: tuple[str, ...] = ()
    """The keys its links looked up in the kept graph."""
    node: str | None = None
    """What the kept graph knew of it (``GraphStore.graph_nodes``), if anything."""
    taken: bool = True
    """False when the kept graph has not taken its last write in (it is marked), or holds
    one of its keys only as a digest (too long for the backend): the copy leaves it marked,
    so the next writer resolves its links again."""
