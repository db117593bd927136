"""Query expansion from the concept vocabulary."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

import numpy as np
import numpy.typing as npt
import pytest

from noteseek.analysis import Analyzer
from noteseek.engine import SearchRequest
from noteseek.search.concepts import ConceptVocabulary, expand_query
from noteseek.search.query import parse_query
from tests.helpers import engine_for, project, write

# Hand-made word vectors so the selection and nearest-word rules can be checked exactly (the
# real model is exercised by the engine test below).
AXES = {"feline": 0, "felines": 0, "kitten": 0, "invoice": 1, "budget": 1, "volcano": 2}


def embed(words: Sequence[str]) -> npt.NDArray[np.float32]:
    out = np.zeros((len(words), 4), dtype=np.float32)
    for i, word in enumerate(words):
        out[i, AXES.get(word, 3)] = 1.0 + i * 0.01
    return out


SECTIONS = [
    "The feline sleeps. A kitten plays.",
    "Felines purr; every kitten too. feline",
    "Pay the invoice before the budget closes. 2024 the",
    "An invoice, a budget, a volcano, the.",
    "volcano once.",
    *["the and of filler text" for _ in range(16)],
]


def test_vocabulary_keeps_mid_frequency_words_one_per_stem() -> None:
    vocab = ConceptVocabulary.build(SECTIONS, Analyzer(), embed, min_df=2, max_df=0.1)
    # 21 sections, ceiling 2: "filler"/"text" (16) are too common, "volcano" twice is kept,
    # "once" once is too rare, "feline"/"felines" share a stem and keep the commoner form.
    assert sorted(vocab.words) == ["budget", "feline", "invoice", "kitten", "volcano"]
    assert np.allclose(np.linalg.norm(vocab.matrix, axis=1), 1.0)


def test_nearest_skips_the_query_own_stems_and_weak_words() -> None:
    vocab = ConceptVocabulary.build(SECTIONS, Analyzer(), embed, min_df=2, max_df=0.1)
    cat = np.array([1.0, 0.0, 0.0, 0.0], dtype=np.float32)
    stems = Analyzer().terms("kitten")
    got = [w for w, _ in vocab.nearest(cat, 5, 0.5, stems)]
    assert got == ["feline"]  # kitten is the query's own word; the rest are not near
    assert vocab.nearest(cat, 0, 0.0) == []
    mixed = np.array([0.8, 0.6, 0.0, 0.0], dtype=np.float32)
    assert {w for w, _ in vocab.nearest(mixed, 2, 0.5)} == {"feline", "kitten"}


def test_expanded_words_are_optional_clauses() -> None:
    analyzer = Analyzer()
    query = parse_query('"exact phrase" cats', analyzer)
    expanded = expand_query(query, ["feline"], analyzer)
    assert expanded.clauses[: len(query.clauses)] == query.clauses
    assert [c.required for c in expanded.clauses] == [True, False, False]
    assert expand_query(query, [], analyzer) is query


@pytest.mark.embeddings
def test_engine_expands_hybrid_queries_with_the_real_model(tmp_path: Path) -> None:
    notes = tmp_path / "notes"
    write(notes / "a.md", "# Shelter\n\nThe feline adoption desk opens at noon.\n")
    write(notes / "b.md", "# Vet\n\nEvery feline gets a check-up and vaccinations.\n")
    write(notes / "c.md", "# Taxes\n\nFile the spreadsheet of receipts with the accountant.\n")
    write(notes / "d.md", "# Trip\n\nThe accountant and spreadsheet travel to the volcano.\n")
    folder = project(tmp_path, {"notes": notes})
    flags = {"search.expansion_terms": 1, "search.expansion_min_cosine": 0.0}
    with engine_for(folder, embeddings=True, **flags) as engine:
        engine.index()
        assert engine.search(SearchRequest("cat", mode="keyword")).hits == []
        vocabulary = engine.concept_vocabulary()
        assert vocabulary is not None and "feline" in vocabulary.words
        response = engine.search(SearchRequest("cat", mode="hybrid"))
        assert response.expansion == ["feline"]
        assert response.to_dict()["expansion"] == ["feline"]
        assert "keyword" in response.hits[0].lanes  # the expanded keyword lane found it
        assert response.hits[0].path in {"a.md", "b.md"}
    with engine_for(folder, embeddings=True) as engine:  # off by default
        assert engine.search(SearchRequest("cat", mode="hybrid")).expansion == []
