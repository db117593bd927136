"""The vector store role in Milvus: one collection per model, searched by Milvus's ANN index.

Vectors are keyed by embedding key (shared by every chunk with that text), in a collection
per model with a COSINE index, HNSW where the server offers it (``schema.create_vectors``,
``capabilities.py``). :class:`MilvusVectorIndex` is
the vector index seam over it: a search restricted to allowed chunks becomes a search whose
filter expression holds their embedding keys, so the restriction applies inside retrieval.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Iterable, Sequence
from typing import Any

import numpy as np
import numpy.typing as npt

from noteseek.store.base import RowIds, VectorDType
from noteseek.store.exact import members
from noteseek.store.milvus import schema
from noteseek.store.milvus.capabilities import vector_index_of
from noteseek.store.milvus.catalog import MilvusCatalog
from noteseek.store.milvus.core import Op, in_list

ANN_LIMIT = 16_384
KEY_BATCH = 4_096
FIELDS = ["rowid", "file_id", "gen", "embed_key"]
"""Embedding keys per filter expression of a restricted search."""


class MilvusVectors(MilvusCatalog):
    """:class:`noteseek.store.base.VectorStore` over the per-model vector collections."""

    def _models(self) -> dict[str, dict[str, Any]]:
        return dict(self._meta_json("vector_models", {}))

    def _collection(self, model: str) -> str | None:
        """The model's vector collection, loaded for searching; None when it has none."""
        found = self._models().get(model)
        if not found:
            return None
        collection = str(found["collection"])
        if collection not in self._loaded:
            if not self.client.has_collection(collection):
                return None
            schema.load(self.client, collection)
            self._loaded.add(collection)
        return collection

    def _search_params(self, collection: str, limit: int) -> dict[str, Any]:
        """The search ``params`` for ``limit`` results on the collection's vector index."""
        found = self._searching.get(collection)
        if found is None:
            found = self._searching[collection] = vector_index_of(self.client, collection, "vector")
        index, described = found
        return index.search_params(limit, described)

    def put_vectors(self, model: str, items: Iterable[tuple[str, bytes]]) -> None:
        batch = [(str(key), bytes(blob)) for key, blob in items]
        if not batch:
            return
        with self.transaction():
            dim = len(batch[0][1]) // 4
            models = self._models()
            if model not in models:
                models[model] = {
                    "collection": schema.vector_table(self.prefix, model, dim),
                    "dim": dim,
                }
                self._put_meta("vector_models", json.dumps(models, sort_keys=True))
            self._ops.append(
                ("vectors", str(models[model]["collection"]), int(models[model]["dim"]), batch)
            )

    def _apply_vector_op(self, op: Op) -> None:
        if op[0] == "vectors":
            _, collection, dim, batch = op
            if not self.client.has_collection(collection):
                schema.create_vectors(self.client, collection, dim)
            rows = [
                {"key": key, "vector": np.frombuffer(blob, dtype=np.float32).tolist()}
                for key, blob in batch
            ]
            self._upsert(collection, rows)
        elif op[0] == "drop_collection":
            self._loaded.discard(op[1])
            self._searching.pop(op[1], None)
            if self.client.has_collection(op[1]):
                self.client.drop_collection(op[1])
        elif op[0] == "delete_vectors":
            if self.client.has_collection(op[1]):
                self._delete_ids(op[1], op[2])
        else:  # pragma: no cover - every op kind is handled above
            raise ValueError(op[0])

    def _existing_keys(self, collection: str | None, keys: Iterable[str]) -> set[str]:
        if collection is None:
            return set()
        return {str(r["key"]) for r in self._query_in(collection, "key", keys, ["key"])}

    def _chunk_keys(self) -> list[dict[str, Any]]:
        """Every visible chunk's rowid, embedding key and text length."""
        fields = ["rowid", "file_id", "gen", "embed_key", "tlen"]
        return self._visible(list(self._scan(schema.CHUNKS, "", fields)))

    def pending_embeddings(self, model: str) -> list[tuple[str, int]]:
        first: dict[str, tuple[int, int]] = {}
        for r in self._chunk_keys():
            key = str(r["embed_key"])
            if not key:
                continue
            rowid = int(r["rowid"])
            if key not in first or rowid < first[key][0]:
                first[key] = (rowid, int(r["tlen"]))
        have = self._existing_keys(self._collection(model), first)
        todo = [(k, rowid, n) for k, (rowid, n) in first.items() if k not in have]
        todo.sort(key=lambda x: (x[2], x[1]))
        return [(k, rowid) for k, rowid, _ in todo]

    def vector_progress(self, model: str) -> tuple[int, int]:
        keys = [key for r in self._chunk_keys() if (key := str(r["embed_key"]))]
        have = self._existing_keys(self._collection(model), set(keys))
        return sum(1 for key in keys if key in have), len(keys)

    def vector_models(self) -> dict[str, int]:
        out = {}
        for model, found in sorted(self._models().items()):
            collection = str(found["collection"])
            if self.client.has_collection(collection):
                out[model] = self._count(collection)
        return {m: n for m, n in out.items() if n}

    def drop_vectors(self, keep_model: str | None = None) -> int:
        with self.transaction():
            models = self._models()
            dropped = 0
            for model in [m for m in models if m != keep_model]:
                collection = str(models.pop(model)["collection"])
                if self.client.has_collection(collection):
                    dropped += self._count(collection)
                self._ops.append(("drop_collection", collection))
            self._put_meta("vector_models", json.dumps(models, sort_keys=True))
            return dropped

    def prune_vectors(self, model: str) -> int:
        with self.transaction():
            collection = self._collection(model)
            if collection is None:  # no vector stored under this model: nothing to prune
                return 0
            used = {str(r["embed_key"]) for r in self._chunk_keys()}
            stale = [
                str(r["key"])
                for r in self._scan(collection, "", ["key"])
                if str(r["key"]) not in used
            ]
            self._ops.append(("delete_vectors", collection, stale))
            return len(stale)

    def vector_chunk_keys(self, model: str) -> list[tuple[int, str]]:
        chunks = self._chunk_keys()
        have = self._existing_keys(self._collection(model), {str(r["embed_key"]) for r in chunks})
        return sorted(
            (int(r["rowid"]), str(r["embed_key"])) for r in chunks if str(r["embed_key"]) in have
        )

    def _vectors(self, collection: str | None, keys: Iterable[str]) -> dict[str, bytes]:
        if collection is None:
            return {}
        return {
            str(r["key"]): np.asarray(r["vector"], dtype=np.float32).tobytes()
            for r in self._query_in(collection, "key", keys, ["key", "vector"])
        }

    def chunk_vectors(self, model: str, rowids: Sequence[int]) -> list[tuple[int, str, bytes]]:
        fields = ["rowid", "file_id", "gen", "embed_key"]
        chunks = self._visible(self._query_in(schema.CHUNKS, "rowid", rowids, fields))
        found = self._vectors(self._collection(model), {str(r["embed_key"]) for r in chunks})
        return [
            (int(r["rowid"]), str(r["embed_key"]), found[str(r["embed_key"])])
            for r in chunks
            if str(r["embed_key"]) in found
        ]

    def all_chunk_vectors(self, model: str) -> list[tuple[int, str, bytes]]:
        chunks = self._chunk_keys()
        found = self._vectors(self._collection(model), {str(r["embed_key"]) for r in chunks})
        return sorted(
            (int(r["rowid"]), str(r["embed_key"]), found[str(r["embed_key"])])
            for r in chunks
            if str(r["embed_key"]) in found
        )

    def vector_index(
        self,
        model: str,
        dimension: int,
        *,
        dtype: VectorDType = "float32",
        hnsw_threshold: int = 0,
        may_save: Callable[[], bool] | None = None,
    ) -> MilvusVectorIndex:
        """Milvus's own ANN index over ``model``'s vectors (``dtype``, the threshold and
        ``may_save`` tune the in-process index only, and are ignored here: Milvus keeps and
        shares its graph itself)."""
        del dtype, hnsw_threshold, may_save
        return MilvusVectorIndex(self, model, dimension)


class MilvusVectorIndex:
    """:class:`noteseek.store.base.VectorIndex` by Milvus search (COSINE, on the index the
    server built: ``capabilities.py``)."""

    def __init__(self, store: MilvusVectors, model: str, dimension: int) -> None:
        self._store = store
        self._model = model
        self._dimension = dimension
        self._size = 0
        self.sync()

    @property
    def size(self) -> int:
        return self._size

    def sync(self) -> None:
        self._size = self._store.vector_progress(self._model)[0]

    def search(
        self,
        query: npt.NDArray[np.float32],
        k: int,
        allowed: RowIds | None = None,
    ) -> list[tuple[int, float]]:
        store = self._store
        collection = store._collection(self._model)
        if k <= 0 or collection is None:
            return []
        vector = np.asarray(query, dtype=np.float32).ravel().tolist()
        if allowed is not None and len(allowed) > KEY_BATCH:
            # A filter that lets many chunks through (the default ``source = docs`` lets
            # nearly all through): search without it, fetching more until ``k`` allowed
            # chunks are among the nearest. Listing 50k allowed keys into search filters took
            # seconds per query. A filter that lets few of the nearest through ends below.
            wanted = np.sort(np.asarray(allowed, dtype=np.int64))
            limit = min(max(4 * k, 64), ANN_LIMIT)
            while True:
                scores = self._nearest(collection, vector, limit, "")
                found = self._chunk_hits(scores)
                through = members(np.fromiter((r for r, _ in found), np.int64, len(found)), wanted)
                hits = [h for h, ok in zip(found, through, strict=True) if ok]
                if len(hits) >= k or len(scores) < limit:
                    return hits[:k]
                if limit >= ANN_LIMIT:
                    break
                limit = min(limit * 4, ANN_LIMIT)
        if allowed is None:
            return self._chunk_hits(self._nearest(collection, vector, max(4 * k, 16), ""))[:k]
        chunks = store._visible(
            store._query_in("chunks", "rowid", [int(r) for r in allowed], FIELDS)
        )
        keys = sorted({str(r["embed_key"]) for r in chunks})
        # The allowed keys go into the search's filter, a batch at a time: each batch's best
        # keys (as many as there are results wanted, or keys) are merged.
        scores = {}
        for start in range(0, len(keys), KEY_BATCH):
            part = keys[start : start + KEY_BATCH]
            expr = f"key in {in_list(part)}"
            scores.update(self._nearest(collection, vector, min(len(part), ANN_LIMIT), expr))
        return _ranked(chunks, scores)[:k]

    def _chunk_hits(self, scores: dict[str, float]) -> list[tuple[int, float]]:
        """The visible chunks of the embedding keys in ``scores``, best first."""
        store = self._store
        return _ranked(
            store._visible(store._query_in("chunks", "embed_key", scores, FIELDS)), scores
        )

    def _nearest(
        self, collection: str, vector: list[float], limit: int, expr: str
    ) -> dict[str, float]:
        """Embedding key -> cosine of the ``limit`` nearest vectors passing ``expr``."""
        params = self._store._search_params(collection, limit)
        result = self._store.client.search(
            collection,
            data=[vector],
            anns_field="vector",
            limit=limit,
            filter=expr,
            output_fields=["key"],
            search_params={"metric_type": "COSINE", "params": params},
            consistency_level="Strong",
        )
        return {
            str(hit["entity"]["key"]): float(hit["distance"])
            for hit in (result[0] if result else [])
        }

    def vectors_for(self, rowids: Sequence[int]) -> dict[int, npt.NDArray[np.float32]]:
        out: dict[int, npt.NDArray[np.float32]] = {}
        for rowid, _key, blob in self._store.chunk_vectors(self._model, rowids):
            vector = np.frombuffer(blob, dtype=np.float32).copy()
            norm = float(np.linalg.norm(vector))
            out[rowid] = vector / norm if norm else vector
        return out

    def settle(self, timeout: float | None = None) -> None:
        """Catch up with the store; Milvus keeps its graph itself, so nothing runs behind."""
        self.sync()

    def close(self) -> None:
        self._size = 0


def _ranked(chunks: Iterable[dict[str, Any]], scores: dict[str, float]) -> list[tuple[int, float]]:
    """(rowid, score) of the chunks whose key has a score, best first (ties by rowid)."""
    hits = [
        (int(r["rowid"]), scores[str(r["embed_key"])])
        for r in chunks
        if str(r["embed_key"]) in scores
    ]
    hits.sort(key=lambda x: (-x[1], x[0]))
    return hits
