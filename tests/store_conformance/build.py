"""Hand-made rows for the conformance suite: files, keyword queries, vectors.

A store indexes the analyzed terms it is given, so the terms here are plain lower-case words
and every expected result can be read off the data below.
"""

from __future__ import annotations

import hashlib
from collections.abc import Sequence
from datetime import UTC, datetime
from typing import Any

import numpy as np

from noteseek.store.base import Store
from noteseek.types import (
    Chunk,
    Clause,
    FileRecord,
    IndexedChunk,
    KeywordQuery,
    Link,
    PreparedFile,
)

MODEL = "conformance-model"
DIM = 8
WEIGHTS = (10.0, 8.0, 4.0, 6.0, 1.0, 1.0)
"""title, aliases, headings, tags, body, code."""
ROOTS = {"notes": "/data/notes", "docs": "/data/docs"}
ROOT_KINDS = {"notes": "files", "docs": "memory"}
"""The kind of source each root is recorded as (one of each, for the ``kinds`` filter)."""


def day(text: str) -> float:
    return datetime.fromisoformat(text).replace(tzinfo=UTC).timestamp()


def sha(text: str) -> str:
    return hashlib.sha256(text.encode("utf-8")).hexdigest()


def make_file(
    root: str,
    path: str,
    sections: Sequence[tuple[str, str]],
    *,
    title: str | None = None,
    tags: Sequence[str] = (),
    aliases: Sequence[str] = (),
    frontmatter: dict[str, Any] | None = None,
    modified: float = 1_700_000_000.0,
    links: Sequence[Link] = (),
    code: str = "",
    mtime_ns: int = 1,
    size: int = 100,
) -> PreparedFile:
    """A file of ``(heading, body)`` sections; section ``i`` spans lines ``3i+1`` to ``3i+2``.

    ``code`` goes into the last section's code field. A chunk's embedding key is the hash of
    its text, so equal sections (in any file) share one vector.
    """
    title = title if title is not None else path.rsplit("/", 1)[-1].removesuffix(".md")
    doc_id = f"{root}/{path}"
    chunks: list[IndexedChunk] = []
    for i, (heading, body) in enumerate(sections):
        text = (f"# {heading}\n" if heading else "") + body
        last = i == len(sections) - 1
        chunk = Chunk(
            chunk_id=f"{doc_id}#{i}",
            ordinal=i,
            heading_path=(heading,) if heading else (),
            start_line=3 * i + 1,
            end_line=3 * i + 2,
            text=text,
            prose=body,
            code=code if last else "",
            content_hash=sha(text),
        )
        fields = (
            title.lower(),
            " ".join(aliases).lower(),
            heading.lower(),
            " ".join(t.replace("/", " ") for t in tags).lower(),
            body,
            code if last else "",
        )
        chunks.append(IndexedChunk(chunk, fields, embed_key=sha(text)))
    record = FileRecord(
        root=root,
        path=path,
        doc_id=doc_id,
        title=title,
        mtime_ns=mtime_ns,
        size=size,
        content_hash=sha("\n".join(body for _, body in sections) + code),
        modified=modified,
        aliases=list(aliases),
        tags=list(tags),
        frontmatter=dict(frontmatter or {}),
        parser="markdown",
        warnings=[],
    )
    return PreparedFile(record, chunks, list(links))


def corpus() -> list[PreparedFile]:
    """Four files in two roots, with tags, frontmatter, dates, code and a link."""
    return [
        make_file(
            "notes",
            "job/alpha.md",
            [("Goals", "apple banana cherry"), ("Risks", "banana durian")],
            title="Alpha plan",
            tags=["project/atlas", "urgent"],
            aliases=["first"],
            frontmatter={
                "status": "draft",
                "owner": "ana",
                "public": True,
                "author": "Ana Lima",
                "author_email": "ana@example.org",
                "files": ["src/auth.py", "docs/auth.md"],
            },
            modified=day("2024-01-10"),
        ),
        make_file(
            "notes",
            "job/beta.md",
            [("Summary", "apple apple apple elderberry")],
            title="Beta review",
            tags=["project"],
            frontmatter={
                "status": "done",
                "author": "Émile Bo",
                "author_email": "emile@example.org",
                "files": ["README.md", 7],
            },
            modified=day("2024-03-01"),
        ),
        make_file(
            "notes",
            "home/gamma.md",
            [("", "cherry fig grape")],
            title="Gamma",
            tags=["personal"],
            frontmatter={"status": "draft", "public": False},
            modified=day("2023-06-01"),
            code="apple pie",
        ),
        make_file(
            "docs",
            "guide.md",
            [("Install", "apple install guide"), ("Usage", "run it")],
            title="Guide",
            modified=day("2024-05-05"),
            links=[
                Link("job/alpha", "wikilink", 2, anchor="Goals", display="the plan"),
                Link("missing", "markdown", 5, context="see [x](missing)"),
            ],
        ),
    ]


def fill(store: Store, files: Sequence[PreparedFile] | None = None) -> dict[str, int]:
    """Write ``files`` (default: the corpus) in one transaction; doc_id -> file id."""
    ids: dict[str, int] = {}
    with store.transaction():
        for name, path in ROOTS.items():
            store.ensure_root(name, path, ROOT_KINDS[name])
        for prepared in corpus() if files is None else files:
            ids[prepared.record.doc_id] = store.write_file(prepared, 1.0, None)
    return ids


def words(
    *terms: str,
    excluded: Sequence[str] = (),
    fields: Sequence[str] = (),
    prefix: bool = False,
) -> KeywordQuery:
    """A query of one-word clauses."""
    return KeywordQuery(
        tuple(Clause(((t,),), prefix=prefix) for t in terms),
        tuple(Clause(((t,),)) for t in excluded),
        tuple(fields),
    )


def unit(seed: int) -> np.ndarray:
    v = np.random.default_rng(seed).normal(size=DIM).astype(np.float32)
    return v / np.linalg.norm(v)


def store_vectors(store: Store, seed: int = 0) -> dict[int, np.ndarray]:
    """A random unit vector for every key without one; returns chunk rowid -> vector."""
    pending = store.pending_embeddings(MODEL)
    store.put_vectors(
        MODEL, [(key, unit(seed + i).tobytes()) for i, (key, _) in enumerate(pending)]
    )
    return {
        rowid: np.frombuffer(blob, dtype=np.float32)
        for rowid, _key, blob in store.all_chunk_vectors(MODEL)
    }


def paths_of(store: Store, rowids: Sequence[int]) -> list[str]:
    return [row.path for row in store.chunk_rows(list(rowids))]
