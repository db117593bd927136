"""What a Milvus server offers, found by asking it rather than by its version number.

Servers differ in what they implement: Milvus Server 2.5+ offers every vector index, Zilliz
Cloud and the C++ engine that milvus-lite 2.5 ships offer only some (``invalid index type:
HNSW, local mode only support FLAT IVF_FLAT AUTOINDEX``), and that engine does not implement
``GetVersion`` at all. So noteseek never refuses a server for the version it reports (or does
not report); it tries what it needs and takes the first thing the server accepts:

* **its identity**: the version ``GetVersion`` reports, or ``None`` when the server does not
  implement it (``status`` says so instead of failing);
* **the vector index**: the first of :data:`VECTOR_INDEXES` that ``create_index`` accepts
  (HNSW, else AUTOINDEX, else IVF_FLAT, else FLAT); the choice is the collection's own index,
  read back by ``describe_index`` for ``status`` and for the search parameters;
* **the essentials**: sparse vectors with an inverted index (the keyword lane) and upsert.
  A server without one of them is one :class:`MissingCapability` naming it.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, TypeVar

from noteseek.store.milvus.errors import (
    MilvusUnavailable,
    grpc_code,
    milvus_errors,
    reason_of,
    unavailable,
)

T = TypeVar("T")


@dataclass(frozen=True, slots=True)
class VectorIndex:
    """One way to index a vector field: its build parameters and how searches use it."""

    kind: str
    build: dict[str, Any]

    def search_params(self, limit: int, described: dict[str, Any]) -> dict[str, Any]:
        """The ``params`` of a search for ``limit`` results on an index ``described`` so.

        HNSW is searched with ``ef`` at least ``limit`` (it returns at most ``ef``); an
        AUTOINDEX that the server built as a graph (its description carries
        ``efConstruction``) takes the same; IVF_FLAT probes a quarter of its lists; FLAT and
        any other AUTOINDEX take the server's defaults.
        """
        if self.kind == "HNSW" or (self.kind == "AUTOINDEX" and "efConstruction" in described):
            return {"ef": max(64, limit)}
        if self.kind == "IVF_FLAT":
            return {"nprobe": max(1, int(described.get("nlist", 128)) // 4)}
        return {}


VECTOR_INDEXES = (
    VectorIndex("HNSW", {"M": 16, "efConstruction": 200}),
    VectorIndex("AUTOINDEX", {}),
    VectorIndex("IVF_FLAT", {"nlist": 128}),
    VectorIndex("FLAT", {}),
)
"""Vector indexes in order of preference: the first the server accepts is used."""
BY_KIND = {v.kind: v for v in VECTOR_INDEXES}

REFUSED = re.compile(
    r"not\s+(be\s+)?support|unsupported|unimplemented|invalid index type|"
    r"invalid (data|field) ?type|unknown (data|field) ?type|unknown method",
    re.IGNORECASE,
)
"""How servers word "I do not offer that" (as opposed to "I cannot be reached")."""


class MissingCapability(MilvusUnavailable):
    """The server lacks something noteseek cannot work without; the message names it."""

    transient = False


def refused(exc: BaseException) -> bool:
    """Whether ``exc`` is the server saying it does not offer what was asked (a gRPC
    UNIMPLEMENTED, or a Milvus error worded so), rather than being unreachable or broken."""
    if grpc_code(exc) == "UNIMPLEMENTED":
        return True
    return bool(REFUSED.search(reason_of(exc)))


def server_version(client: Any) -> str | None:
    """The version the server reports, or None when it does not implement ``GetVersion``."""
    try:
        return str(client.get_server_version())
    except milvus_errors() as exc:
        if refused(exc):
            return None
        raise


def essential(uri: str, what: str, call: Callable[[], T]) -> T:
    """``call()``; a server refusing it is :class:`MissingCapability` naming ``what``."""
    try:
        return call()
    except milvus_errors() as exc:
        if not refused(exc):
            raise
        error = unavailable(uri, f"this Milvus server does not offer {what} ({reason_of(exc)})")
        raise MissingCapability(
            f"{error}; noteseek needs {what}: use Milvus Server 2.5 or later, or Zilliz Cloud",
            error.reason,
        ) from None


def create_vector_index(client: Any, collection: str, field: str, metric: str) -> VectorIndex:
    """Index ``field`` of ``collection`` with the first of :data:`VECTOR_INDEXES` the server
    accepts; returns it. An error other than a refusal propagates."""
    last: BaseException | None = None
    for choice in VECTOR_INDEXES:
        index = client.prepare_index_params()
        index.add_index(field, index_type=choice.kind, metric_type=metric, params=choice.build)
        try:
            client.create_index(collection, index, sync=False)
        except milvus_errors() as exc:
            if not refused(exc):
                raise
            last = exc
            continue
        return choice
    assert last is not None
    raise last


def vector_index_of(client: Any, collection: str, field: str) -> tuple[VectorIndex, dict[str, Any]]:
    """The index ``field`` of ``collection`` has (as built) and the server's description."""
    described = dict(client.describe_index(collection, field) or {})
    kind = str(described.get("index_type", "")).upper()
    return BY_KIND.get(kind, VectorIndex(kind or "unknown", {})), described
