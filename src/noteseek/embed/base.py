"""The embedder protocol every backend (bundled ONNX model, remote HTTP API) provides.

Vectors are float32 rows of unit length, so a dot product is the cosine similarity. Documents
and queries are embedded by separate calls because retrieval models expect a query
instruction or prefix that documents must not get.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING, Protocol, TypeAlias, runtime_checkable

if TYPE_CHECKING:  # numpy loads with the first vector, not with `noteseek status`
    import numpy as np
    import numpy.typing as npt

Vectors: TypeAlias = "npt.NDArray[np.float32]"

MODEL_META_KEY = "embedding_model"
"""The index's meta key naming the model its vectors are of."""


class EmbeddingError(RuntimeError):
    """The embedder cannot produce vectors (model file missing or altered, API unreachable)."""


@runtime_checkable
class Embedder(Protocol):
    @property
    def model_id(self) -> str:
        """Identifies the vectors: two embedders with the same id give the same vectors."""
        ...

    @property
    def dimension(self) -> int: ...

    def embed_documents(self, texts: Sequence[str]) -> Vectors:
        """One unit-length row per text, in order."""
        ...

    def embed_query(self, text: str) -> Vectors:
        """A 1-D unit-length vector for a search query (with the model's query prefix)."""
        ...

    def close(self) -> None: ...


def normalize(rows: npt.NDArray[np.floating]) -> Vectors:
    """Rows scaled to unit length (zero rows stay zero)."""
    import numpy as np

    out = np.asarray(rows, dtype=np.float32)
    norms = np.linalg.norm(out, axis=-1, keepdims=True)
    norms[norms == 0] = 1.0
    return np.ascontiguousarray(out / norms, dtype=np.float32)
