"""What every store backend provides, and the rows it hands back.

The engine, indexer and search code talk to a store only through this protocol, so another
backend (PostgreSQL) can sit behind the same calls.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator, Mapping, Sequence
from contextlib import AbstractContextManager
from dataclasses import dataclass
from typing import Any, Literal, Protocol

from noteseek.types import Clause, Filters, KeywordQuery, PreparedFile

MatchMode = Literal["all", "any"]


class IndexCorrupt(RuntimeError):
    """The index file cannot be used; it is a cache, so the caller rebuilds it."""


class WriteRejected(ValueError):
    """The store refused one file's rows (a constraint); the run records it and goes on."""


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


class Store(Protocol):
    """A keyword-searchable store of files and chunks."""

    path: str

    def close(self) -> None: ...
    def transaction(self) -> AbstractContextManager[None]: ...

    # manifest and roots
    def manifest(self) -> dict[str, Any]: ...
    def set_manifest(self, manifest: Mapping[str, Any]) -> None: ...
    def clear(self) -> None: ...
    def ensure_root(self, name: str, path: str) -> int: ...
    def roots(self) -> dict[str, str]: ...

    # writes (call inside transaction())
    def file_states(self, root: str) -> dict[str, FileState]: ...
    def write_file(self, prepared: PreparedFile, indexed_at: float, file_id: int | None) -> int: ...
    def update_file_stat(self, file_id: int, mtime_ns: int, size: int) -> None: ...
    def delete_file(self, file_id: int) -> None: ...
    def set_problems(
        self,
        root: str,
        path: str,
        problems: Iterable[tuple[str, str]],
        mtime_ns: int = 0,
        size: int = 0,
    ) -> None: ...
    def skipped_states(self, root: str) -> dict[str, tuple[int, int]]: ...
    def problem_paths(self, root: str) -> set[str]: ...
    def clear_problems(self, root: str, paths: Iterable[str] | None = None) -> None: ...
    def record_run(self, started: float, finished: float, summary: Mapping[str, Any]) -> None: ...

    # reads
    def is_common(self, clause: Clause, threshold_fraction: float, floor: int) -> bool: ...
    def keyword_search(
        self,
        query: KeywordQuery,
        mode: MatchMode,
        filters: Filters,
        limit: int,
        weights: Sequence[float],
    ) -> list[tuple[int, float]]: ...
    def field_scores(
        self, query: KeywordQuery, mode: MatchMode, rowids: Sequence[int], weights: Sequence[float]
    ) -> dict[int, list[float]]: ...
    def chunk_rows(self, rowids: Sequence[int]) -> list[ChunkRow]: ...
    def chunk_by_id(self, chunk_id: str) -> ChunkRow | None: ...
    def file_chunks(self, file_id: int) -> list[ChunkRow]: ...
    def find_files(self, path: str, root: str | None = None) -> list[FileRow]: ...
    def file_row(self, file_id: int) -> FileRow | None: ...
    def problems(self) -> list[Problem]: ...
    def stats(self) -> dict[str, Any]: ...
    def last_run(self) -> dict[str, Any] | None: ...
    def iter_files(self) -> Iterator[FileRow]: ...
