"""Read, check, parse, chunk and analyze one file: everything before the write.

Runs in worker processes for large runs, so it takes and returns plain picklable data and
never raises for a bad file: it returns an :class:`Outcome` whose problems say what was wrong.
"""

from __future__ import annotations

import codecs
import functools
import hashlib
import importlib
import re
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass, field, replace
from datetime import date, datetime
from pathlib import PurePosixPath
from typing import TYPE_CHECKING, Any, Literal

from noteseek.analysis import Analyzer, get_analyzer
from noteseek.chunking import chunk_document, embedding_input, embedding_key
from noteseek.graph.links import types_links
from noteseek.sources.base import FoundFile, ReadError, Source
from noteseek.sources.folder import read_regular
from noteseek.types import (
    Chunk,
    FileRecord,
    IndexedChunk,
    Link,
    ParsedDocument,
    PreparedFile,
)

OutcomeKind = Literal["prepared", "same_content", "skipped"]

if TYPE_CHECKING:
    from concurrent.futures import Executor

    from noteseek.parse.registry import ParserRegistry

BulkPreparer = Callable[
    [Source, Sequence[FoundFile], Analyzer, int, "Executor | None"], Iterator["Outcome"]
]
"""prepare(source, found, analyzer, max chars, worker pool) -> an outcome per document: a
kind's bulk preparer (``KindSpec.preparer``), which reads many documents in one pass."""

Reader = Callable[[FoundFile, int], bytes]
"""read(found, limit) -> at most ``limit`` bytes of the document; raises ReadError."""

# Frontmatter fields that say when a note last changed, most specific first.
MODIFIED_KEYS = ("updated", "modified", "lastmod", "last_modified", "date")


@functools.cache
def bulk_preparer(ref: str | None) -> BulkPreparer | None:
    """The bulk preparer a kind's spec names (``module:function``), imported once."""
    if ref is None:
        return None
    module, _, name = ref.partition(":")
    preparer: BulkPreparer = getattr(importlib.import_module(module), name)
    return preparer


@dataclass(frozen=True, slots=True)
class RootRules:
    """How one root's documents are cut, when its kind's profile says otherwise than the
    index (a memory folder: small chunks, never merged, links typed by their words)."""

    max_chars: int
    merge_below: int
    typed_links: bool = False
    """Whether links are typed and kept with the words around them."""


@dataclass(frozen=True, slots=True)
class PrepareSettings:
    language: str
    stopwords: bool
    max_chars: int
    max_file_size: int
    merge_below: int = 0
    """Sections shorter than this merge with their neighbours (0: never)."""
    rules: dict[str, RootRules] = field(default_factory=dict)
    """Root name -> its own rules, for roots whose kind cuts them otherwise."""
    styles: dict[str, str] = field(default_factory=dict)
    """Root name -> its style (``notes``, ``docs``, ``logseq``, ``dendron``): how its Markdown
    notes are titled and read (:mod:`noteseek.parse.conventions`); ``docs`` when absent."""


@dataclass(slots=True)
class Outcome:
    found: FoundFile
    kind: OutcomeKind
    content_hash: str = ""
    prepared: PreparedFile | None = None
    problems: list[tuple[str, str]] = field(default_factory=list)
    """(severity, reason): severity ``skipped`` (not indexed) or ``warning`` (indexed)."""


_STATE: dict[str, Any] = {}


def init_worker(settings: PrepareSettings) -> None:
    """Process-pool initializer: build the analyzer and parsers once per process."""
    _STATE["settings"] = settings
    _STATE["analyzer"] = get_analyzer(settings.language, settings.stopwords)
    from noteseek.parse import default_registry

    _STATE["registry"] = default_registry()


def worker_analyzer() -> Analyzer:
    """The analyzer of this worker process (:func:`init_worker` built it)."""
    analyzer: Analyzer = _STATE["analyzer"]
    return analyzer


def prepare_in_worker(job: tuple[FoundFile, str | None]) -> Outcome:
    """Prepare one document in a worker process, which opens it at ``found.abspath`` itself:
    only sources whose documents are files there (``files``) are parsed in workers."""
    found, known_hash = job
    return prepare_file(
        found, known_hash, _STATE["settings"], _STATE["analyzer"], _STATE["registry"], read_path
    )


def read_path(found: FoundFile, limit: int) -> bytes:
    """Read a found document from its place on disk, as the files source does (never a FIFO
    or a device, which could block a worker for good)."""
    return read_regular(found.abspath, limit)


def prepare_file(
    found: FoundFile,
    known_hash: str | None,
    settings: PrepareSettings,
    analyzer: Analyzer,
    registry: ParserRegistry,
    read: Reader,
) -> Outcome:
    """Turn one found document (its bytes from ``read``) into rows to write, or into a reason
    it was skipped.

    ``known_hash`` is the stored content hash of this path: equal content (a touched file)
    needs only its stat updated, so it is not parsed again.
    """
    # The parsers (markdown-it, PyYAML) load with the first file to parse: a run that finds
    # nothing changed never imports them (an unchanged re-index is mostly start-up).
    from noteseek.parse.conventions import parse_with_style
    from noteseek.parse.logseq import clean_prose
    from noteseek.parse.registry import MARKDOWN_PARSER

    if found.size > settings.max_file_size:
        return _skip(
            found, f"larger than the size limit ({found.size:,} > {settings.max_file_size:,} bytes)"
        )
    parser = registry.parser_for(found.path)
    if parser is None:
        return _skip(found, "no parser for this file type")
    try:
        data = read(found, settings.max_file_size + 1)
    except ReadError as exc:
        return _skip(found, str(exc))
    if len(data) > settings.max_file_size:
        return _skip(found, f"larger than the size limit (> {settings.max_file_size:,} bytes)")
    content_hash = hashlib.blake2b(data, digest_size=16).hexdigest()
    if known_hash is not None and known_hash == content_hash:
        return Outcome(found, "same_content", content_hash)

    text, problems = _decode(data)
    if text is None:
        return Outcome(found, "skipped", content_hash, problems=problems)
    if not text.strip():
        problems.append(("skipped", "empty file"))
        return Outcome(found, "skipped", content_hash, problems=problems)

    style = settings.styles.get(found.root, "docs")
    styled = parser is MARKDOWN_PARSER
    logseq = styled and style == "logseq"
    try:
        doc = parse_with_style(text, found.path, style) if styled else parser(text, found.path)
    except Exception as exc:  # a parser bug must not stop the run
        problems.append(("skipped", f"parser failed: {type(exc).__name__}: {exc}"))
        return Outcome(found, "skipped", content_hash, problems=problems)
    problems.extend(("warning", w) for w in doc.warnings)

    doc_id = f"{found.root}/{found.path}"
    rules = settings.rules.get(found.root) or RootRules(settings.max_chars, settings.merge_below)
    chunks = chunk_document(
        doc,
        doc_id,
        rules.max_chars,
        clean_prose if logseq else None,
        rules.merge_below,
        keep_apart=types_links,
    )
    # Only the links of kinds that type them (memories) are shown by the words around them.
    links = with_context(doc.links, text) if rules.typed_links else list(doc.links)
    if not chunks:
        chunks = [_metadata_chunk(doc, doc_id)]
        problems.append(("warning", "no body text: indexed by its title and metadata only"))

    record = FileRecord(
        root=found.root,
        path=found.path,
        doc_id=doc_id,
        title=doc.title,
        mtime_ns=found.mtime_ns,
        size=found.size,
        content_hash=content_hash,
        modified=modified_time(doc.frontmatter, found.mtime_ns),
        aliases=doc.aliases,
        tags=doc.tags,
        frontmatter=doc.frontmatter,
        parser="logseq" if logseq else getattr(parser, "name", type(parser).__name__),
        warnings=[reason for _, reason in problems],
    )
    fields = document_fields(doc, found.path, analyzer)
    indexed = [
        IndexedChunk(
            c,
            chunk_fields(c, fields, analyzer),
            embedding_key(embedding_input(doc.title, found.path, c.heading_path, c.text)),
        )
        for c in chunks
    ]
    return Outcome(
        found,
        "prepared",
        content_hash,
        PreparedFile(record, indexed, links),
        problems,
    )


CONTEXT_CHARS = 120
"""The text kept around each link (a backlink shows what was said about its target)."""
CONTEXT_LINKS = 2_000
"""Links of one document that get a context; past it (generated link lists) none is kept."""
_BULLET = re.compile(r"^(?:[-*+]\s+(?:\[.\]\s+)?|\d+[.)]\s+|#{1,6}\s+|>\s*)+")


def with_context(links: Sequence[Link], text: str) -> list[Link]:
    """``links`` with the text of their line around them (see :data:`CONTEXT_CHARS`)."""
    if not links:
        return []
    lines = text.split("\n")
    out = []
    for i, link in enumerate(links):
        if i < CONTEXT_LINKS and 1 <= link.line <= len(lines):
            link = replace(link, context=anchor_context(lines[link.line - 1], link.target))
        out.append(link)
    return out


def anchor_context(line: str, target: str, width: int = CONTEXT_CHARS) -> str:
    """The line (list marker, heading marks and extra spaces dropped), cut to ``width``
    characters centred on ``target`` when longer."""
    flat = _BULLET.sub("", " ".join(line.split()))
    if len(flat) <= width:
        return flat
    at = flat.casefold().find(target.casefold()) if target else -1
    centre = at + len(target) // 2 if at >= 0 else 0
    start = max(0, min(centre - width // 2, len(flat) - width))
    piece = flat[start : start + width]
    return ("…" if start else "") + piece + ("…" if start + width < len(flat) else "")


def document_fields(doc: ParsedDocument, path: str, analyzer: Analyzer) -> tuple[str, str, str]:
    """Analyzed title, aliases and tags: the same for every chunk of a document."""
    stem = PurePosixPath(path).stem
    names = list(doc.aliases)
    # The file name is how people often remember a note; index it when the title differs.
    if stem.casefold() != doc.title.casefold():
        names.append(stem)
    return analyzer.text(doc.title), analyzer.texts(names), analyzer.texts(doc.tags)


def chunk_fields(
    chunk: Chunk, doc_fields: tuple[str, str, str], analyzer: Analyzer
) -> tuple[str, str, str, str, str, str]:
    title, aliases, tags = doc_fields
    prose, parts = analyzer.split_terms(chunk.prose)
    code = analyzer.text(chunk.code)
    return (
        title,
        aliases,
        analyzer.texts((*chunk.heading_path, *chunk.subheadings)),
        tags,
        prose,
        f"{code} {parts}" if code and parts else code or parts,
    )


def modified_time(frontmatter: dict[str, Any], mtime_ns: int) -> float:
    """The note's own last-changed date when its frontmatter has one, else the file's mtime."""
    for key in MODIFIED_KEYS:
        value = frontmatter.get(key)
        when = _as_timestamp(value)
        if when is not None:
            return when
    return mtime_ns / 1e9


def _as_timestamp(value: Any) -> float | None:
    if isinstance(value, datetime):
        return value.timestamp()
    if isinstance(value, date):
        return datetime(value.year, value.month, value.day).timestamp()
    if isinstance(value, int | float) and not isinstance(value, bool) and value > 10**9:
        # Epoch seconds or milliseconds (Dendron writes milliseconds).
        return float(value) / (1000.0 if value > 10**11 else 1.0)
    if isinstance(value, str) and value.strip():
        try:
            return datetime.fromisoformat(value.strip().replace("Z", "+00:00")).timestamp()
        except ValueError:
            return None
    return None


def _decode(data: bytes) -> tuple[str | None, list[tuple[str, str]]]:
    problems: list[tuple[str, str]] = []
    if data.startswith((codecs.BOM_UTF16_LE, codecs.BOM_UTF16_BE)):
        try:
            return data.decode("utf-16"), problems
        except UnicodeDecodeError:
            return None, [("skipped", "invalid UTF-16 text")]
    if b"\x00" in data[:8192]:
        return None, [("skipped", "binary content (NUL bytes)")]
    try:
        return data.decode("utf-8"), problems
    except UnicodeDecodeError as exc:
        problems.append(
            (
                "warning",
                f"invalid UTF-8 at byte {exc.start}: decoded with replacement characters",
            )
        )
        return data.decode("utf-8", errors="replace"), problems


def _skip(found: FoundFile, reason: str) -> Outcome:
    return Outcome(found, "skipped", problems=[("skipped", reason)])


def _metadata_chunk(doc: ParsedDocument, doc_id: str) -> Chunk:
    """A chunk for a document without body text, so its title and tags are still findable."""
    end = max(1, doc.body_start_line - 1)
    lines = doc.text.split("\n")[:end]
    text = "\n".join(lines)
    return Chunk(
        chunk_id=hashlib.blake2b(f"{doc_id}\x1f\x1fmeta".encode(), digest_size=8).hexdigest(),
        ordinal=0,
        heading_path=(),
        start_line=1,
        end_line=end,
        text=text,
        prose="",
        code="",
        content_hash=hashlib.blake2b(text.encode(), digest_size=16).hexdigest(),
    )
