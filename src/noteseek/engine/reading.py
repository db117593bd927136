"""Reading the index: a chunk, a section or a document, its links, and its text on disk.

References are resolved here once for every door: a chunk id, a root-relative path, a doc id,
a path on disk inside a root, ``path:line`` for the section holding that line, or else a
note's name: its title, file name without extension (with or without its folders) or a
front matter alias, compared without regard to case; a name several notes answer to is
ambiguous and the error lists them. Text is read
through the root's source as the document is now, and a result says when it changed since it
was indexed (its fingerprint differs).
"""

from __future__ import annotations

import os
import re
from pathlib import Path
from typing import Any

from noteseek.engine.results import Ambiguous, GetResult, NotFound
from noteseek.engine.state import IndexState
from noteseek.graph.links import Edge
from noteseek.sources.base import ReadError, Source
from noteseek.store.rows import ChunkRow, FileRow, NamedFile

_CHUNK_ID_RE = re.compile(r"^[0-9a-f]{16}$")
_PATH_LINE_RE = re.compile(r"^(.*):(\d+)$")


class Reading:
    """``get``, ``read_document`` and ``links`` over one opened index."""

    def __init__(self, state: IndexState) -> None:
        self.state = state

    def get(self, ref: str) -> GetResult:
        """A chunk by id, the section holding ``path:line``, or a whole document by path."""
        store = self.state.store
        ref = ref.strip()
        if not ref:
            raise ValueError("give a chunk id, a path, or path:line")
        if _CHUNK_ID_RE.match(ref):
            row = store.chunk_by_id(ref)
            if row is not None:
                owner = store.file_row(row.file_id)
                if owner is not None:
                    self._guard(owner, ref)
                return _from_chunks("chunk", [row], self._stale(row.file_id))
        m = _PATH_LINE_RE.match(ref)
        if m and not _exists(Path(ref)):
            file = self.resolve_file(m.group(1))
            line = int(m.group(2))
            return self._section_at(file, line)
        file = self._guard(self.resolve_file(ref), ref)
        chunks = store.file_chunks(file.file_id)
        text = self._read_text(file)
        stale = text is None or self._stale(file.file_id)
        lines = (text if text is not None else "\n".join(c.text for c in chunks)).split("\n")
        return GetResult(
            "document",
            file.root,
            file.path,
            file.doc_id,
            file.title,
            (),
            1,
            len(lines),
            "\n".join(lines),
            [c.chunk_id for c in chunks],
            stale,
        )

    def read_document(self, ref: str) -> tuple[FileRow, str]:
        """An indexed document and its current text, never from outside its root.

        ``ref`` is a root-relative path, a doc id, or an absolute path inside a root. ``..``
        is refused, and so is a file whose real path leads out of its root (a symbolic link).
        Raises NotFound or Ambiguous (LookupError) and ValueError with a precise message.
        """
        file = self._document(ref)
        text = self._read_text(file)
        if text is None:
            raise NotFound(f"cannot read {file.doc_id}: the file is gone or unreadable")
        return file, text

    def _document(self, ref: str) -> FileRow:
        """The indexed document ``ref`` names, with read_document's refusals, without reading."""
        norm = ref.replace("\\", "/")
        if ".." in norm.split("/"):
            raise ValueError(f"{ref!r}: '..' is not allowed; give a path inside a root")
        if os.path.isabs(ref):
            try:
                file = self.resolve_file(ref)
            except NotFound:
                raise NotFound(f"{ref!r} is not a document inside the indexed roots") from None
        else:
            file = self.resolve_file(norm)
        return self._guard(file, ref)

    def _guard(self, file: FileRow, ref: str) -> FileRow:
        """``file``, unless its real path leads out of its root: then its text is refused,
        even the copy in the index (an index built when links out of roots were followed)."""
        if not self._source(file).inside(file.path):
            raise NotFound(f"{ref!r} leads outside its root (symbolic link); not readable")
        return file

    def links(self, ref: str) -> dict[str, Any]:
        """A document's outgoing links (resolved or not) and its backlinks, by path or doc id;
        never for a path that leads out of its root (as :meth:`read_document`)."""
        file = self._document(ref)
        graph = self.state.values.document_graph(file.file_id, file.doc_id)

        def describe(edge: Edge, other: str) -> dict[str, Any]:
            doc = graph.docs.get(other)
            return {
                "doc_id": other if doc else None,
                "placeholder": None if doc else other[1:],
                "title": doc.title if doc else None,
                "type": edge.type,
                "line": edge.line,
                "anchor": edge.anchor,
                "context": edge.context,
                "memory": bool(doc and doc.memory),
            }

        return {
            "doc_id": file.doc_id,
            "outgoing": [describe(e, e.target) for e in graph.outgoing(file.doc_id)],
            "backlinks": [describe(e, e.source) for e in graph.backlinks(file.doc_id)],
        }

    def resolve_file(self, ref: str) -> FileRow:
        """The one indexed file ``ref`` names (path, doc id, or a path on disk in a root)."""
        store = self.state.store
        candidates = store.find_files(ref.replace(os.sep, "/"))
        if not candidates:
            # A path on disk (absolute, or relative to the working directory) inside a root.
            try:
                disk = Path(ref).expanduser()
            except RuntimeError:  # ~name of a user this system does not know
                disk = Path(ref)
            real = disk.resolve() if _exists(disk) else None
            if real is not None:
                for name, location in store.roots().items():
                    rel = self.state.source(name, location).locate(real)
                    if rel is None:
                        continue
                    candidates = store.find_files(rel, root=name)
                    if candidates:
                        break
        if not candidates:
            return self._by_name(ref)
        if len(candidates) > 1:
            ids = ", ".join(c.doc_id for c in candidates)
            raise Ambiguous(f"{ref!r} is in several roots: {ids}; give one of these ids")
        return candidates[0]

    def _by_name(self, ref: str) -> FileRow:
        """The one file whose title, file stem or alias is ``ref`` (any case)."""
        wanted = ref.strip().casefold()
        if wanted.endswith(".md"):
            wanted = wanted[:-3]
        found: dict[int, tuple[FileRow, str]] = {}
        if wanted:
            # The names alone (no frontmatter decoded); whole rows only for the matches.
            store = self.state.store
            for named in store.named_files():
                how = _named(named, wanted)
                if how is not None and named.file_id not in found:
                    row = store.file_row(named.file_id)
                    if row is not None:
                        found[named.file_id] = (row, how)
        if not found:
            raise NotFound(
                f"no indexed document at {ref!r}, nor one with that title, file name or alias"
            )
        if len(found) > 1:
            listed = "; ".join(f"{f.doc_id} ({how})" for f, how in found.values())
            raise Ambiguous(f"{ref!r} names several documents: {listed}; give one of these ids")
        return next(iter(found.values()))[0]

    def section(self, ref: str, line: int) -> GetResult:
        """The whole section (neighbouring pieces under one heading) holding ``line`` of the
        document ``ref``; NotFound outside the indexed lines."""
        return self._section_at(self.resolve_file(ref), line)

    def _section_at(self, file: FileRow, line: int) -> GetResult:
        self._guard(file, file.doc_id)
        chunks = self.state.store.file_chunks(file.file_id)
        if not chunks:
            raise NotFound(f"{file.doc_id} has no indexed text")
        last = max(c.end_line for c in chunks)
        if line < 1 or line > last:
            raise NotFound(f"{file.doc_id} has lines 1-{last} indexed; line {line} is outside")
        holding = [c for c in chunks if c.start_line <= line <= c.end_line]
        if not holding:
            # A blank line between chunks: take the chunk that starts after it.
            holding = [min((c for c in chunks if c.start_line > line), key=lambda c: c.start_line)]
        target = holding[0]
        # The whole section: neighbouring pieces of the same heading.
        i = chunks.index(target)
        lo = hi = i
        while lo > 0 and chunks[lo - 1].heading_path == target.heading_path:
            lo -= 1
        while hi + 1 < len(chunks) and chunks[hi + 1].heading_path == target.heading_path:
            hi += 1
        return _from_chunks("section", chunks[lo : hi + 1], self._stale(file.file_id))

    def _stale(self, file_id: int) -> bool:
        """The file changed (or went) since it was indexed."""
        file = self.state.store.file_row(file_id)
        if file is None:
            return True
        now = self._source(file).fingerprint(file.path)
        return now is None or now.mtime_ns != file.mtime_ns or now.size != file.size

    def _source(self, file: FileRow) -> Source:
        return self.state.source(file.root, file.root_path)

    def _read_text(self, file: FileRow) -> str | None:
        """The document's current text with newlines normalised, or None if it cannot be
        read."""
        try:
            data = self._source(file).read(file.path)
        except ReadError:
            return None
        text = data.decode("utf-8", errors="replace").lstrip("\ufeff")
        return text.replace("\r\n", "\n").replace("\r", "\n")


def _named(file: NamedFile, wanted: str) -> str | None:
    """How ``file`` answers to the case-folded name ``wanted`` (title, file name, alias)."""
    if file.title.strip().casefold() == wanted:
        return "title"
    path = file.path.casefold()
    stem = path[:-3] if path.endswith(".md") else path
    if stem == wanted or stem.rsplit("/", 1)[-1] == wanted:
        return "file name"
    if any(alias.strip().casefold() == wanted for alias in file.aliases):
        return "alias"
    return None


def _exists(path: Path) -> bool:
    """Whether ``path`` names something on disk; False for names the system cannot look up
    (a component over 255 bytes, say), which are then no path, not an error."""
    try:
        return path.exists()
    except OSError:
        return False


def _from_chunks(kind: str, chunks: list[ChunkRow], stale: bool) -> GetResult:
    first, last = chunks[0], chunks[-1]
    return GetResult(
        kind,
        first.root,
        first.path,
        first.doc_id,
        first.title,
        first.heading_path,
        first.start_line,
        last.end_line,
        "\n".join(c.text for c in chunks),
        [c.chunk_id for c in chunks],
        stale,
    )
