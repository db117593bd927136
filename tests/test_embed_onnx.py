"""The bundled ONNX embedders: real models from their registry packages."""

from __future__ import annotations

import shutil
from pathlib import Path

import numpy as np
import pytest

from noteseek.config import EmbeddingSettings
from noteseek.embed.base import Embedder, EmbeddingError
from noteseek.embed.factory import configured_model_id, create_embedder
from noteseek.embed.onnx import MODELS, OnnxEmbedder, package_file

pytestmark = pytest.mark.embeddings


@pytest.fixture(scope="module", params=sorted(MODELS))
def model(request: pytest.FixtureRequest) -> OnnxEmbedder:
    return OnnxEmbedder(MODELS[request.param], threads=1)


def test_vectors_are_unit_length_with_the_stated_dimension(model: OnnxEmbedder) -> None:
    assert isinstance(model, Embedder)
    vectors = model.embed_documents(["Redis keys can expire.", "", "x" * 5000])
    assert vectors.shape == (3, model.dimension) == (3, 384)
    assert vectors.dtype == np.float32
    np.testing.assert_allclose(np.linalg.norm(vectors, axis=1), 1.0, atol=1e-4)


def test_similar_meaning_is_closer_than_unrelated_text(model: OnnxEmbedder) -> None:
    q = model.embed_query("a small cat sleeping")
    docs = model.embed_documents(
        ["The kitten naps on the sofa all afternoon.", "Quarterly revenue beat the forecast."]
    )
    near, far = docs @ q
    assert near > far + 0.1


def test_batches_keep_input_order_and_match_single_calls(model: OnnxEmbedder) -> None:
    # bge's int8 graph quantises activations per batch, so padding shifts its vectors a
    # little (cosine >= 0.995 measured); MiniLM's are identical. Order must hold for both.
    texts = [("word " * n).strip() for n in (40, 3, 17, 1, 60, 8)]
    together = model.embed_documents(texts)
    alone = np.vstack([model.embed_documents([t])[0] for t in texts])
    similarity = alone @ together.T
    assert np.all(np.diag(similarity) > 0.99)
    assert np.all(np.argmax(similarity, axis=1) == np.arange(len(texts)))


def test_query_prefix_is_applied_only_to_queries() -> None:
    bge = OnnxEmbedder(MODELS["bge-small-en"], threads=1)
    text = "what is a write-ahead log"
    assert float(bge.embed_query(text) @ bge.embed_documents([text])[0]) < 0.99
    minilm = OnnxEmbedder(MODELS["minilm-l6"], threads=1)
    assert float(minilm.embed_query(text) @ minilm.embed_documents([text])[0]) > 0.999


def test_altered_model_file_is_refused(tmp_path: Path) -> None:
    spec = MODELS["minilm-l6"]
    copy = tmp_path / "model.onnx"
    shutil.copyfile(package_file(spec.package, spec.model_file), copy)
    with copy.open("r+b") as fh:
        fh.seek(1000)
        byte = fh.read(1)
        fh.seek(1000)
        fh.write(bytes([byte[0] ^ 0xFF]))
    with pytest.raises(EmbeddingError, match="sha256 does not match"):
        OnnxEmbedder(spec, model_path=copy)


def test_unknown_model_names_the_choices() -> None:
    with pytest.raises(EmbeddingError, match=r"bge-small-en, minilm-l6"):
        create_embedder(EmbeddingSettings(model="gpt-embed-9000"))


def test_model_ids_are_known_without_loading() -> None:
    assert configured_model_id(EmbeddingSettings()) == "bge-small-en-v1/int8"
    assert configured_model_id(EmbeddingSettings(model="minilm-l6")) == "all-MiniLM-L6-v2/int8"
    remote = EmbeddingSettings(provider="remote", model="nomic-embed-text")
    assert configured_model_id(remote) == "remote:nomic-embed-text"


def test_token_budget_batches_hold_order_and_match_single_calls() -> None:
    bge = OnnxEmbedder(MODELS["bge-small-en"], threads=1, token_budget=64)
    texts = [("word " * n).strip() for n in (40, 3, 17, 1, 60, 8, 2, 25)]
    lengths = np.array([n + 2 for n in (40, 3, 17, 1, 60, 8, 2, 25)])
    batches = bge._batches(np.argsort(lengths, kind="stable"), lengths)
    assert sorted(int(i) for b in batches for i in b) == list(range(len(texts)))
    # Each batch fits the budget unless it is a single text longer than the budget.
    assert all(len(b) == 1 or len(b) * lengths[b].max() <= 64 for b in batches)
    assert len(batches) > 1 and max(len(b) for b in batches) > 1
    together = bge.embed_documents(texts)
    alone = np.vstack([bge.embed_documents([t])[0] for t in texts])
    assert np.all(np.sum(alone * together, axis=1) > 0.99)


def test_engines_of_one_process_share_one_model_instance(tmp_path: Path) -> None:
    from tests.helpers import engine_for, project

    (tmp_path / "notes").mkdir()
    folder = project(tmp_path, {"notes": tmp_path / "notes"})
    writer, reader = engine_for(folder, embeddings=True), engine_for(folder, embeddings=True)
    shared = writer._state.embedder()
    assert reader._state.embedder() is shared
    reader.close()
    assert shared.embed_query("still loaded").shape == (384,)
    writer.close()
    third = engine_for(folder, embeddings=True)
    assert third._state.embedder() is not shared  # the last holder closed it; a new one loads
    third.close()
