"""The chunks role in Milvus: chunk rows by rowid, chunk id or file, texts, and link rows."""

from __future__ import annotations

from bisect import bisect_right
from collections.abc import Iterator, Sequence
from typing import Any

from noteseek.store.milvus import filters as milvus_filters
from noteseek.store.milvus import rows, schema
from noteseek.store.milvus.core import MilvusCore, lit
from noteseek.store.rows import ChunkRow, LinkRow
from noteseek.types import Filters

FLIP_RETRIES = 3


class MilvusChunks(MilvusCore):
    """:class:`noteseek.store.base.Chunks` over the ``chunks`` and ``files`` collections."""

    def chunk_rows(self, rowids: Sequence[int]) -> list[ChunkRow]:
        found = self._visible(self._query_in(schema.CHUNKS, "rowid", rowids, rows.CHUNK_FIELDS))
        by_id = {int(r["rowid"]): rows.to_chunk_row(r) for r in found}
        return [by_id[i] for i in rowids if i in by_id]

    def chunk_by_id(self, chunk_id: str) -> ChunkRow | None:
        found = self._visible(
            self._query(schema.CHUNKS, f"chunk_id == {lit(chunk_id)}", rows.CHUNK_FIELDS)
        )
        return rows.to_chunk_row(found[0]) if found else None

    def _file_chunk_rows(self, file_id: int, fields: list[str]) -> list[dict[str, Any]]:
        """A file's chunks, all of one generation: read again when the file was rewritten
        between reading its chunks and its row (none of the chunks read is visible then)."""
        found: list[dict[str, Any]] = []
        for _ in range(FLIP_RETRIES):
            read = list(self._scan(schema.CHUNKS, f"file_id == {int(file_id)}", fields))
            found = self._visible(read)
            if found or not read:
                break
        return sorted(found, key=lambda r: int(r["ordinal"]))

    def file_chunks(self, file_id: int) -> list[ChunkRow]:
        return [rows.to_chunk_row(r) for r in self._file_chunk_rows(file_id, rows.CHUNK_FIELDS)]

    def file_chunk_rowids(self, file_id: int) -> list[int]:
        found = self._file_chunk_rows(file_id, ["rowid", "file_id", "gen", "ordinal"])
        return [int(r["rowid"]) for r in found]

    def chunk_files(self, rowids: Sequence[int]) -> dict[int, int]:
        found = self._visible(
            self._query_in(schema.CHUNKS, "rowid", rowids, ["rowid", "file_id", "gen"])
        )
        return {int(r["rowid"]): int(r["file_id"]) for r in found}

    def chunk_modified(self, rowids: Sequence[int]) -> dict[int, float]:
        fields = ["rowid", "file_id", "gen", "modified"]
        found = self._visible(self._query_in(schema.CHUNKS, "rowid", rowids, fields))
        return {int(r["rowid"]): float(r["modified"]) for r in found}

    def iter_chunk_texts(self, batch: int = 2000) -> Iterator[str]:
        page: list[dict[str, Any]] = []
        for row in self._scan(schema.CHUNKS, "", ["file_id", "gen", "text"]):
            page.append(row)
            if len(page) >= batch:
                yield from (str(r["text"]) for r in self._visible(page))
                page = []
        yield from (str(r["text"]) for r in self._visible(page))

    def link_rows(
        self, max_per_document: int = 0, file_ids: Sequence[int] | None = None
    ) -> list[LinkRow]:
        fields = ["file_id", "doc_id", "info"]
        if file_ids is None:
            files = list(self._scan(schema.FILES, "nlinks > 0", fields))
        else:
            files = self._query_in(schema.FILES, "file_id", file_ids, fields, "nlinks > 0")
        starts: dict[int, list[int]] = {}
        headings: dict[int, list[str]] = {}
        if files:
            ids = [int(f["file_id"]) for f in files]
            chunks = self._visible(
                self._query_in(
                    schema.CHUNKS, "file_id", ids, ["file_id", "gen", "start_line", "heading"]
                )
            )
            for c in sorted(chunks, key=lambda r: (int(r["file_id"]), int(r["start_line"]))):
                starts.setdefault(int(c["file_id"]), []).append(int(c["start_line"]))
                headings.setdefault(int(c["file_id"]), []).append(str(c["heading"]))
        out: list[tuple[str, int, int, LinkRow]] = []
        for f in files:
            fid, doc_id = int(f["file_id"]), str(f["doc_id"])
            links = f["info"].get("links", [])
            if max_per_document > 0:
                links = links[:max_per_document]
            for order, (target, kind, line, anchor, display, context) in enumerate(links):
                at = bisect_right(starts.get(fid, []), line) - 1
                heading = headings[fid][at] if at >= 0 else ""
                path = tuple(heading.split(rows.HEADING_SEP)) if heading else ()
                link: LinkRow = (doc_id, target, kind, int(line), anchor, path, display, context)
                out.append((doc_id, int(line), order, link))
        out.sort(key=lambda x: (x[0], x[1], x[2]))
        return [x[3] for x in out]

    def _filter_expr(self, filters: Filters) -> str:
        return milvus_filters.expression(
            filters, lambda expr: self._scan(schema.FILES, expr, ["file_id", "path", "info"])
        )

    def filtered_chunk_ids(self, filters: Filters) -> list[int]:
        expr = self._filter_expr(filters)
        found = self._visible(list(self._scan(schema.CHUNKS, expr, ["rowid", "file_id", "gen"])))
        return sorted(int(r["rowid"]) for r in found)
