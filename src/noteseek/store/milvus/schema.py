"""The index's collections in Milvus: their names, fields and indexes.

Everything an index holds is in these collections (``PREFIX`` is ``milvus.collection``):

* ``PREFIX_meta``: small named values as JSON: the manifest, meta values, one row per root
  (``root:NAME``), per run (``run:...``) and per root's keyword statistics (``stats:NAME``),
  and the change version.
* ``PREFIX_files``: one row per file: its catalog fields, its links, its tags (with their
  parents, for filters), its generation, and its document-level keyword fields.
* ``PREFIX_chunks``: one row per chunk: its text and position, the file fields filters read,
  its analyzed keyword fields, and the sparse vector the keyword lane retrieves with.
* ``PREFIX_terms``: document frequency of every indexed term, over chunks and over files, one
  row per term and root (summed when read: each root's rows are written by its lease holder
  alone, so two writers never update one row).
* ``PREFIX_problems``: one row per (root, path) with problems.
* ``PREFIX_graph_edges``, ``PREFIX_graph_keys``, ``PREFIX_graph_nodes``,
  ``PREFIX_graph_dirty``, ``PREFIX_communities``: the link graph kept with the index
  (``graph.py``): a file's resolved edges (one row per linking file), the keys its links
  looked up (one row per file and key), what the graph knew of each file, the files written
  since, and the communities.
* ``PREFIX_leases``: one row per claim of a lease (a root's writer, the graph, an id block):
  ``leases.py``.
* ``PREFIX_vec_<model hash>``: one collection per embedding model: vectors by embedding key,
  searched by a COSINE index: HNSW where the server offers it, else AUTOINDEX, IVF_FLAT or
  FLAT (``capabilities.py``).

Milvus wants a vector field in every collection: the tables without one carry a 2-dimension
placeholder (``_v``) that is never searched.
"""

from __future__ import annotations

import contextlib
import hashlib
import logging
from typing import Any

from noteseek.store.milvus import capabilities
from noteseek.store.milvus.capabilities import VectorIndex
from noteseek.store.milvus.errors import milvus_errors, unreachable

log = logging.getLogger(__name__)

VARCHAR_MAX = 65_535
"""Milvus's longest VARCHAR, in bytes."""
KEY_MAX = 1_024
ARRAY_MAX = 1_024
PLACEHOLDER = [0.0, 1.0]

META, FILES, CHUNKS, TERMS, PROBLEMS = "meta", "files", "chunks", "terms", "problems"
GRAPH_EDGES, GRAPH_KEYS, GRAPH_NODES = "graph_edges", "graph_keys", "graph_nodes"
GRAPH_DIRTY, COMMUNITIES = "graph_dirty", "communities"
LEASES = "leases"
GRAPH_TABLES = (GRAPH_EDGES, GRAPH_KEYS, GRAPH_NODES, GRAPH_DIRTY, COMMUNITIES)
KEYWORD_TABLES = (FILES, CHUNKS)
TABLES = (META, FILES, CHUNKS, TERMS, PROBLEMS, *GRAPH_TABLES, LEASES)


BM25_TEXT, BM25_FIELD = "bm", "bms"
"""The files and chunks tables' text for Milvus's BM25 function (each field's analyzed terms,
repeated by the field's weight) and the sparse field the function fills."""
BM25_K1, BM25_B = 1.2, 0.75
"""FTS5's constants, so the two backends' BM25 agree."""

KEYED = ("terms", "problems", "graph_keys")
"""Tables whose VARCHAR primary key is made of names (terms, paths, link keys)."""
SAFE_KEYS = "safe_keys"
"""The meta value marking an index whose keyed tables' primary keys go through
:func:`safe_key` (every index made since; an older one keeps its keys as they were)."""
_SAFE = frozenset("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789_.:/@|-")


def safe_key(value: str) -> str:
    """A primary key every Milvus engine handles: characters other than ASCII letters,
    digits and ``_.:/@|-`` percent-encoded (UTF-8). Milvus's C++ engine in local mode builds
    the delete of an upsert as an expression without escaping, so a key holding a quote fails
    ("internal error"), and one holding a non-ASCII letter is not matched: the upsert adds a
    second row. The readable value stays in its own field (``term``, ``path``, ``key``)."""
    if all(c in _SAFE for c in value):
        return value
    return "".join(c if c in _SAFE else "".join(f"%{b:02X}" for b in c.encode()) for c in value)


def name(prefix: str, table: str) -> str:
    return f"{prefix}_{table}"


def vector_table(prefix: str, model: str, dim: int) -> str:
    """The collection holding ``model``'s vectors (``dim`` wide)."""
    digest = hashlib.sha1(model.encode("utf-8")).hexdigest()[:12]
    return f"{prefix}_vec_{digest}_{dim}"


def create(client: Any, prefix: str, table: str, uri: str, *, bm25: bool = False) -> None:
    """Create ``table`` (one of :data:`TABLES`) with its fields and indexes; a server
    without sparse vectors is :class:`~noteseek.store.milvus.capabilities.MissingCapability`
    (``uri`` names it). ``bm25``: the files and chunks tables carry a BM25 function field
    (:func:`create_keyword_table` decides whether the server offers it)."""
    from pymilvus import DataType

    schema = client.create_schema(auto_id=False, enable_dynamic_field=False)
    index = client.prepare_index_params()
    essential = False
    """Whether the table needs sparse vectors (a server without them cannot hold it)."""
    text = {"datatype": DataType.VARCHAR, "max_length": VARCHAR_MAX}
    key = {"datatype": DataType.VARCHAR, "max_length": KEY_MAX}
    tags = {
        "datatype": DataType.ARRAY,
        "element_type": DataType.VARCHAR,
        "max_capacity": ARRAY_MAX,
        "max_length": KEY_MAX,
    }
    if table == META:
        schema.add_field("key", is_primary=True, **key)
        schema.add_field("value", **text)
    elif table == PROBLEMS:
        schema.add_field("pk", DataType.VARCHAR, is_primary=True, max_length=2 * KEY_MAX + 8)
        schema.add_field("root", **key)
        schema.add_field("path", **text)
        schema.add_field("items", DataType.JSON)
        schema.add_field("mtime_ns", DataType.INT64)
        schema.add_field("size", DataType.INT64)
        schema.add_field("at", DataType.DOUBLE)
    elif table == TERMS:
        schema.add_field("pk", DataType.VARCHAR, is_primary=True, max_length=2 * KEY_MAX + 8)
        schema.add_field("term", **key)
        schema.add_field("root", **key)
        schema.add_field("cdf", DataType.INT64)
        schema.add_field("ddf", DataType.INT64)
    elif table == LEASES:
        schema.add_field("pk", DataType.VARCHAR, is_primary=True, max_length=2 * KEY_MAX + 8)
        schema.add_field("resource", **key)
        schema.add_field("kind", **key)
        schema.add_field("token", **key)
        schema.add_field("holder", DataType.JSON)
        schema.add_field("claimed", DataType.DOUBLE)
        schema.add_field("expires", DataType.DOUBLE)
        schema.add_field("held", DataType.INT64)
        schema.add_field("n", DataType.INT64)
        schema.add_field("m", DataType.INT64)
    elif table == GRAPH_KEYS:
        schema.add_field("pk", DataType.VARCHAR, is_primary=True, max_length=KEY_MAX + 32)
        schema.add_field("key", **key)
        schema.add_field("file_id", DataType.INT64)
    elif table in GRAPH_TABLES:
        schema.add_field("file_id", DataType.INT64, is_primary=True)
        if table == GRAPH_EDGES:
            schema.add_field("edges", DataType.JSON)
        elif table == GRAPH_NODES:
            schema.add_field("names", DataType.JSON)  # {"n": names}: no VARCHAR limit
        elif table == GRAPH_DIRTY:
            schema.add_field("stamp", DataType.INT64)  # the marking commit's version
        elif table == COMMUNITIES:
            schema.add_field("community", DataType.INT64)
    else:
        if table == CHUNKS:
            schema.add_field("rowid", DataType.INT64, is_primary=True)
            schema.add_field("file_id", DataType.INT64)
        else:
            schema.add_field("file_id", DataType.INT64, is_primary=True)
        schema.add_field("gen", DataType.INT64)
        for field in ("root", "kind"):
            schema.add_field(field, **key)
        for field in ("path", "doc_id", "title"):
            schema.add_field(field, **text)
        schema.add_field("tags", **tags)
        schema.add_field("modified", DataType.DOUBLE)
        schema.add_field("kw", DataType.JSON)
        schema.add_field("ntok", DataType.INT64)
        if bm25:
            # Milvus's own BM25: the server tokenizes ``bm`` (noteseek's analyzed terms, so a
            # whitespace tokenizer keeps noteseek's analysis), keeps the statistics and scores.
            from pymilvus import Function, FunctionType

            schema.add_field(
                BM25_TEXT,
                DataType.VARCHAR,
                max_length=VARCHAR_MAX,
                enable_analyzer=True,
                analyzer_params={"tokenizer": "whitespace"},
            )
            schema.add_field(BM25_FIELD, DataType.SPARSE_FLOAT_VECTOR)
            schema.add_function(
                Function(
                    name=f"{table}_bm25",
                    function_type=FunctionType.BM25,
                    input_field_names=[BM25_TEXT],
                    output_field_names=[BM25_FIELD],
                )
            )
            index.add_index(
                BM25_FIELD,
                index_type="SPARSE_INVERTED_INDEX",
                metric_type="BM25",
                params={"bm25_k1": BM25_K1, "bm25_b": BM25_B},
            )
        else:
            schema.add_field("sp", DataType.SPARSE_FLOAT_VECTOR)
            index.add_index("sp", index_type="SPARSE_INVERTED_INDEX", metric_type="IP")
        essential = True
        if table == CHUNKS:
            schema.add_field("chunk_id", **text)
            schema.add_field("ordinal", DataType.INT64)
            schema.add_field("heading", **text)
            schema.add_field("start_line", DataType.INT64)
            schema.add_field("end_line", DataType.INT64)
            schema.add_field("text", **text)
            schema.add_field("content_hash", **key)
            schema.add_field("embed_key", **key)
            schema.add_field("tlen", DataType.INT64)
        else:
            schema.add_field("info", DataType.JSON)
            schema.add_field("mtime_ns", DataType.INT64)
            schema.add_field("size", DataType.INT64)
            schema.add_field("content_hash", **key)
            schema.add_field("indexed_at", DataType.DOUBLE)
            schema.add_field("nlinks", DataType.INT64)
            schema.add_field("aliases", **text)
    if table not in (FILES, CHUNKS):
        schema.add_field("_v", DataType.FLOAT_VECTOR, dim=len(PLACEHOLDER))
        index.add_index("_v", index_type="FLAT", metric_type="L2")
    if essential:
        what = "sparse vectors (SPARSE_FLOAT_VECTOR with SPARSE_INVERTED_INDEX)"
        capabilities.essential(
            uri, what, lambda: _create(client, name(prefix, table), schema, index)
        )
    else:
        _create(client, name(prefix, table), schema, index)


def create_keyword_table(client: Any, prefix: str, table: str, uri: str, bm25: bool) -> bool:
    """Create the files or chunks table, with Milvus's BM25 function when ``bm25`` and the
    server offers it (with a whitespace tokenizer), else with the sparse vectors noteseek
    scores itself; returns whether it has the function. A server that cannot be reached is
    an error here, not a refusal."""
    if bm25:
        try:
            create(client, prefix, table, uri, bm25=True)
            return True
        except milvus_errors() as exc:
            if unreachable(exc):
                raise
            log.info("%s: no BM25 function here (%s); noteseek scores keywords", uri, exc)
            with contextlib.suppress(*milvus_errors()):
                client.drop_collection(name(prefix, table))
    create(client, prefix, table, uri)
    return False


def open_tables(client: Any, prefix: str, uri: str, existing: set[str]) -> dict[str, bool]:
    """Create the index's tables not in ``existing`` and load the others; the files and
    chunks tables get Milvus's BM25 function where the server offers it (the chunks table
    follows the files table's choice). Returns whether each of them has it."""
    bm25, found = True, {}
    for table in TABLES:
        collection = name(prefix, table)
        keyword = table in KEYWORD_TABLES
        if collection not in existing and keyword:
            bm25 = create_keyword_table(client, prefix, table, uri, bm25)
        elif collection not in existing:
            create(client, prefix, table, uri)
        else:
            load(client, collection)
        if keyword:
            found[table] = has_bm25(client, prefix, table)
    return found


def has_bm25(client: Any, prefix: str, table: str) -> bool:
    """Whether the existing files or chunks table carries the BM25 function field."""
    fields = {f["name"] for f in client.describe_collection(name(prefix, table))["fields"]}
    return BM25_FIELD in fields


def create_vectors(client: Any, collection: str, dim: int) -> VectorIndex:
    """A model's vector collection: embedding key -> vector, under the first COSINE index
    the server offers (``capabilities.VECTOR_INDEXES``); returns that index."""
    from pymilvus import DataType

    schema = client.create_schema(auto_id=False, enable_dynamic_field=False)
    schema.add_field("key", DataType.VARCHAR, is_primary=True, max_length=KEY_MAX)
    schema.add_field("vector", DataType.FLOAT_VECTOR, dim=dim)
    client.create_collection(collection, schema=schema, consistency_level="Strong")
    chosen = capabilities.create_vector_index(client, collection, "vector", "COSINE")
    client.load_collection(collection)
    return chosen


def _create(client: Any, collection: str, schema: Any, index: Any) -> None:
    """Create, index and load a collection. The index is built without pymilvus's polling
    wait (half a second per index even when it is ready at once); loading waits for it."""
    client.create_collection(collection, schema=schema, consistency_level="Strong")
    client.create_index(collection, index, sync=False)
    client.load_collection(collection)


def outdated(client: Any, prefix: str) -> str | None:
    """Why existing collections cannot be used by this build (None when they can): those
    made before several writers keep one ``terms`` row per term."""
    fields = {f["name"] for f in client.describe_collection(name(prefix, TERMS))["fields"]}
    if "root" not in fields:
        return (
            f"its collections ({prefix}_*) were made by an earlier noteseek build, before "
            "several writers"
        )
    return None


def load(client: Any, collection: str) -> None:
    """Load an existing collection for searching (an index opened again starts released)."""
    state = str(client.get_load_state(collection).get("state", ""))
    if not state.endswith("Loaded"):
        client.load_collection(collection)
