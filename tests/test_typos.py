"""Typo tolerance: a word no note holds is searched with the index's own spellings near it.

``procrastinaton`` finds the note on procrastination and says what it searched besides; a
word that matches is never changed; short words, numbers and hashes are left alone; the
alternatives come from the index (a word the notes never use is never proposed).
"""

from __future__ import annotations

import json
import random
from pathlib import Path

import pytest

from noteseek.analysis import get_analyzer
from noteseek.engine import SearchRequest
from noteseek.search.spelling import (
    Alternative,
    Spelling,
    allowed_edits,
    correctable,
    deletions,
    one_edit,
    osa_distance,
)
from noteseek.search.typos import Correction, did_you_mean
from tests.helpers import engine_for, indexed_notes, paths, run_cli

NOTES = {
    "procrastination.md": "# Procrastination\n\nPutting things off until tomorrow.\n",
    "kubernetes.md": "# Kubernetes\n\nPods, deployments and services.\n",
    "testing-conventions.md": "# Testing conventions\n\nName tests after the behaviour.\n",
    "form.md": "# Form\n\nA form posts its fields to the server.\n",
    "settings.md": "# Settings\n\n`enablePrettyRefs` shows references as blocks.\n",
    "release.md": "# Release 2.1\n\nCommit 4f2a9c1 shipped it.\n",
    "dogs.md": "# Dogs\n\nThe dogs sleep all day.\n",
}


@pytest.fixture(scope="module")
def vault(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return indexed_notes(tmp_path_factory.mktemp("typos"), NOTES)


def search(folder: Path, query: str, **flags: object) -> object:
    with engine_for(folder, **flags) as engine:
        return engine.search(SearchRequest(query, mode="keyword"))


# -- the algorithm ---------------------------------------------------------------------------


def test_osa_distance_counts_a_swap_of_neighbours_as_one_edit() -> None:
    assert osa_distance("teh", "the", 2) == 1
    assert osa_distance("kitten", "sitting", 5) == 3
    assert osa_distance("abc", "abc", 1) == 0
    assert osa_distance("abcdef", "a", 2) == 3  # past the bound: bound + 1


def test_one_edit_holds_every_kind_of_edit() -> None:
    found = set(one_edit("procrastinaton"))
    assert "procrastination" in found  # insertion
    assert "procrastinato" in found  # deletion
    assert "porcrastinaton" in found  # transposition
    assert "procrastinator" in found  # substitution
    assert all(osa_distance(w, "procrastinaton", 1) == 1 for w in found)


def test_deletions_reach_two_letters_shorter() -> None:
    assert deletions("abc", 2) == {"abc", "ab", "ac", "bc", "a", "b", "c"}


@pytest.mark.parametrize(
    ("word", "edits"),
    [("cat", 0), ("form", 1), ("layout", 1), ("kubernets", 2), ("procrastinaton", 2)],
)
def test_edits_allowed_grow_with_the_word(word: str, edits: int) -> None:
    assert allowed_edits(word) == edits


@pytest.mark.parametrize("word", ["cat", "v2.1", "4f2a9c1", "getUserById", "parse_json", "R2D2"])
def test_short_words_numbers_hashes_and_identifiers_are_not_corrected(word: str) -> None:
    assert not correctable(word)


def test_alternatives_are_index_terms_most_common_first() -> None:
    analyzer = get_analyzer("english", True)
    spelling = Spelling({"form": 40, "farm": 12, "fork": 1, "from": 90}, analyzer)
    found = spelling.alternatives("foorm")
    assert [a.term for a in found] == ["form"]  # one edit; "from" is two away
    found = spelling.alternatives("forx")  # form, fork: fork is under a tenth of form
    assert [a.term for a in found] == ["form"]


def test_two_edits_only_for_long_words() -> None:
    analyzer = get_analyzer("english", True)
    spelling = Spelling({"kubernet": 10, "deploy": 5}, analyzer)
    assert [a.term for a in spelling.alternatives("kubrenetse")] == ["kubernet"]
    assert spelling.alternatives("dpeloi") == []  # six letters: one edit only


def test_random_one_letter_typos_of_vocabulary_words_are_found() -> None:
    analyzer = get_analyzer("english", True)
    words = ["procrastination", "kubernetes", "conventions", "deployment", "behaviour"]
    spelling = Spelling({t: 3 for w in words for t in analyzer.terms(w)}, analyzer)
    rng = random.Random(7)
    for word in words:
        for _ in range(10):
            i = rng.randrange(1, len(word) - 1)
            typo = word[:i] + word[i + 1 :]
            if analyzer.terms(typo) == analyzer.terms(word):
                continue  # the stemmer maps both to one term: nothing to correct
            assert analyzer.terms(word)[0] in {a.term for a in spelling.alternatives(typo)}


def test_did_you_mean_replaces_whole_words_only() -> None:
    c = Correction("procrastinaton", 0, (Alternative("procrastination", "procrastin", 1, 2),))
    assert did_you_mean("on procrastinaton, again", [c]) == "on procrastination, again"
    assert did_you_mean("anything", []) == ""


# -- search ------------------------------------------------------------------------------------


def test_a_word_that_matches_nothing_finds_the_note_and_says_what_was_searched(
    vault: Path,
) -> None:
    response = search(vault, "procrastinaton")
    assert paths(response.hits)[:1] == ["procrastination.md"]  # type: ignore[attr-defined]
    data = response.to_dict()  # type: ignore[attr-defined]
    assert data["corrections"] == [
        {
            "word": "procrastinaton",
            "documents": 0,
            "also_searched": ["procrastination"],
            "terms": ["procrastin"],
            "edits": 1,
        }
    ]
    assert data["did_you_mean"] == "procrastination"


def test_the_spelling_shown_is_the_notes_own(vault: Path) -> None:
    response = search(vault, "kubernetis pods")
    data = response.to_dict()  # type: ignore[attr-defined]
    assert data["corrections"][0]["also_searched"] == ["kubernetes"]
    assert data["did_you_mean"] == "kubernetes pods"


def test_hyphenated_and_identifier_words_are_corrected_inside(vault: Path) -> None:
    assert paths(search(vault, "testing-coventions").hits)[:1] == [  # type: ignore[attr-defined]
        "testing-conventions.md"
    ]
    assert paths(search(vault, "enablePrtetyRefs").hits)[:1] == [  # type: ignore[attr-defined]
        "settings.md"
    ]


def test_a_word_that_matches_is_never_corrected(vault: Path) -> None:
    response = search(vault, "form")  # "from", "fork"... are one edit away
    assert "corrections" not in response.to_dict()  # type: ignore[attr-defined]
    assert paths(response.hits) == ["form.md"]  # type: ignore[attr-defined]


def test_a_hash_that_matches_nothing_is_left_alone(vault: Path) -> None:
    response = search(vault, "4f2a9c2")
    assert response.hits == []  # type: ignore[attr-defined]
    assert "corrections" not in response.to_dict()  # type: ignore[attr-defined]


def test_typo_tolerance_can_be_turned_off(vault: Path) -> None:
    response = search(vault, "procrastinaton", **{"search.typo_tolerance": False})
    assert response.hits == []  # type: ignore[attr-defined]


def test_cli_says_did_you_mean_and_json_carries_the_corrections(vault: Path) -> None:
    proc = run_cli(["search", "procrastinaton", "-m", "keyword"], vault)
    assert "Did you mean: procrastination" in proc.stderr
    assert "also searched: procrastination" in proc.stderr
    proc = run_cli(["search", "procrastinaton", "-m", "keyword", "--json"], vault)
    data = json.loads(proc.stdout)
    assert data["did_you_mean"] == "procrastination"
    assert data["corrections"][0]["also_searched"] == ["procrastination"]


def test_function_words_are_never_corrected(vault: Path) -> None:
    # "does" matches nothing here and "dogs" is one letter away: a question word is no typo.
    response = search(vault, "how does kubernetes scale")
    assert "corrections" not in response.to_dict()  # type: ignore[attr-defined]
    assert paths(response.hits)[:1] == ["kubernetes.md"]  # type: ignore[attr-defined]


def test_a_question_gets_only_one_letter_slips_corrected(vault: Path) -> None:
    two_slips = "kbernetis"  # a letter dropped, one changed
    assert search(vault, two_slips).to_dict()["corrections"]  # type: ignore[attr-defined]
    # In a question whose other words match ("pods"), a word two edits from any term is as
    # likely a word the notes do not use: left as it is.
    question = f"why do the {two_slips} pods restart"
    assert "corrections" not in search(vault, question).to_dict()  # type: ignore[attr-defined]
    # One letter off is a slip, question or not.
    slipped = search(vault, "why do the kubernetis pods restart").to_dict()  # type: ignore[attr-defined]
    assert slipped["corrections"][0]["also_searched"] == ["kubernetes"]
