"""The bundled local embedder: a BERT-style ONNX model run by ONNX Runtime, no torch.

Model files come inside registry packages (model hubs are not reachable from many machines),
and each file's sha256 is checked when it is loaded, so a damaged or swapped file is refused
instead of producing wrong vectors silently. Tokenization uses the ``tokenizers`` library with
the WordPiece vocabulary shipped next to the bge model (MiniLM uses the same vocabulary).
"""

from __future__ import annotations

import hashlib
import importlib.util
import threading
from collections.abc import Sequence
from functools import lru_cache
from pathlib import Path
from typing import Any

import numpy as np

from noteseek.embed.base import EmbeddingError, Vectors, normalize
from noteseek.embed.models import BGE_INSTRUCTION as BGE_INSTRUCTION
from noteseek.embed.models import MODELS as MODELS
from noteseek.embed.models import ModelSpec


def package_file(package: str, relative: str) -> Path:
    """A data file inside an installed package, without importing the package."""
    spec = importlib.util.find_spec(package)
    if spec is None or not spec.submodule_search_locations:
        raise EmbeddingError(
            f"the package {package!r} that holds the embedding model is not installed; "
            "reinstall noteseek, or run with embedding.enabled = false (keyword search only)"
        )
    path = Path(next(iter(spec.submodule_search_locations))) / relative
    if not path.is_file():
        raise EmbeddingError(f"{path} is missing from the installed package {package!r}")
    return path


@lru_cache(maxsize=8)
def _verified(path: str, size: int, mtime_ns: int, expected: str) -> bool:
    digest = hashlib.sha256()
    with open(path, "rb") as fh:
        for block in iter(lambda: fh.read(1 << 20), b""):
            digest.update(block)
    return digest.hexdigest() == expected


def verify_checksum(path: Path, expected: str) -> None:
    """Raise unless the file's sha256 is ``expected`` (cached per path, size and mtime)."""
    st = path.stat()
    if not _verified(str(path), st.st_size, st.st_mtime_ns, expected.lower()):
        raise EmbeddingError(
            f"{path}: sha256 does not match the published checksum {expected}; "
            "the model file is damaged or was replaced: reinstall its package"
        )


def onnx_session(path: Path, threads: int = 0, *, arena: bool = False) -> Any:
    """An ONNX Runtime CPU session set up for noteseek (raises EmbeddingError if unusable)."""
    import onnxruntime as ort

    options = ort.SessionOptions()
    options.intra_op_num_threads = max(0, threads)
    options.inter_op_num_threads = 1
    options.execution_mode = ort.ExecutionMode.ORT_SEQUENTIAL
    options.graph_optimization_level = ort.GraphOptimizationLevel.ORT_ENABLE_ALL
    # The arena keeps the largest batch's buffers for the life of the process (1.4 GB at
    # 32 x 256 tokens); without it memory follows the batch actually being run.
    options.enable_cpu_mem_arena = arena
    # Idle worker threads must not spin on the cores a query or the indexer needs.
    options.add_session_config_entry("session.intra_op.allow_spinning", "0")
    try:
        return ort.InferenceSession(
            str(path), sess_options=options, providers=["CPUExecutionProvider"]
        )
    except Exception as exc:  # onnxruntime raises its own exception types
        raise EmbeddingError(f"{path}: ONNX Runtime cannot load the model: {exc}") from exc


class OnnxEmbedder:
    """Sentence vectors from an ONNX BERT encoder (mean or CLS pooling, unit length)."""

    def __init__(
        self,
        spec: ModelSpec,
        *,
        threads: int = 0,
        batch_size: int = 4,
        max_tokens: int = 256,
        token_budget: int = 0,
        arena: bool = False,
        model_path: Path | None = None,
        tokenizer_path: Path | None = None,
    ) -> None:
        from tokenizers import Tokenizer

        self.spec = spec
        self.batch_size = max(1, batch_size)
        self.max_tokens = max_tokens
        self.token_budget = token_budget
        path = model_path or package_file(spec.package, spec.model_file)
        if spec.sha256:
            verify_checksum(path, spec.sha256)
        self.model_path = path
        tok_path = tokenizer_path or package_file(spec.tokenizer_package, spec.tokenizer_file)
        tokenizer = Tokenizer.from_file(str(tok_path))
        # Shipped tokenizer files may carry their own fixed padding/truncation: set ours.
        tokenizer.enable_truncation(max_length=max_tokens)
        tokenizer.enable_padding(pad_id=0, pad_token="[PAD]")
        self._tokenizer = tokenizer
        self._session = onnx_session(path, threads, arena=arena)
        self._inputs = {i.name for i in self._session.get_inputs()}
        self._lock = threading.Lock()

    @property
    def model_id(self) -> str:
        return self.spec.model_id

    @property
    def dimension(self) -> int:
        return self.spec.dimension

    def knows_word(self, word: str) -> bool:
        """Whether the model's vocabulary holds ``word`` as one token (``cat`` yes; ``qzxv``,
        a Russian or Thai word for an English model no: they are read letter by letter)."""
        if len(word) < 2:  # single letters are tokens of every script the model has seen
            return False
        tokens = self._tokenizer.encode(word, add_special_tokens=False).tokens
        return len(tokens) == 1 and tokens[0] != "[UNK]"

    def embed_documents(self, texts: Sequence[str]) -> Vectors:
        prefixed = [self.spec.document_prefix + t for t in texts]
        return self._embed(prefixed)

    def embed_query(self, text: str) -> Vectors:
        vector: Vectors = self._embed([self.spec.query_prefix + text])[0]
        return vector

    def _embed(self, texts: Sequence[str]) -> Vectors:
        out = np.zeros((len(texts), self.dimension), dtype=np.float32)
        if not texts:
            return out
        # Tokenized once; similar lengths share a batch (padding costs as much as real tokens).
        encodings = self._tokenizer.encode_batch(list(texts))
        ids = np.array([e.ids for e in encodings], dtype=np.int64)
        mask = np.array([e.attention_mask for e in encodings], dtype=np.int64)
        lengths = mask.sum(axis=1)
        order = np.argsort(lengths, kind="stable")
        for idx in self._batches(order, lengths):
            width = int(lengths[idx].max())
            out[idx] = self._run(ids[idx, :width], mask[idx, :width])
        return out

    def _batches(self, order: np.ndarray, lengths: np.ndarray) -> list[np.ndarray]:
        """Runs of ``order`` (shortest first): ``batch_size`` texts, or with a token budget as
        many as fit in ``token_budget`` padded tokens (more short texts, fewer long ones)."""
        if self.token_budget <= 0:
            return [order[s : s + self.batch_size] for s in range(0, len(order), self.batch_size)]
        batches: list[np.ndarray] = []
        start = 0
        for end in range(1, len(order) + 1):
            n = end - start
            if end == len(order) or (n + 1) * int(lengths[order[end]]) > self.token_budget:
                batches.append(order[start:end])
                start = end
        return batches

    def _run(self, ids: np.ndarray, mask: np.ndarray) -> Vectors:
        feeds: dict[str, Any] = {"input_ids": ids, "attention_mask": mask}
        if "token_type_ids" in self._inputs:
            feeds["token_type_ids"] = np.zeros_like(ids)
        with self._lock:
            hidden = self._session.run(None, feeds)[0]
        if self.spec.pooling == "cls":
            pooled = hidden[:, 0]
        else:
            weights = mask[:, :, None].astype(np.float32)
            pooled = (hidden * weights).sum(axis=1) / np.maximum(weights.sum(axis=1), 1e-9)
        return normalize(pooled)

    def close(self) -> None:
        self._session = None
