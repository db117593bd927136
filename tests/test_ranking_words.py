"""Which words drive a match (issue 34): identifiers' parts rank below prose, one-letter parts
match nothing, question words are dropped from notes and commits alike, and the commit that
wrote a page outranks the merge that carried it into another branch."""

from __future__ import annotations

from pathlib import Path

import pytest

from noteseek.analysis import get_analyzer
from noteseek.engine import SearchRequest
from noteseek.indexing.manifest import SPEC_VERSION
from tests.git_repos import Repo
from tests.helpers import engine_for, indexed_notes, paths, project

NOTES = {
    # Longer than the prose note, so only the field weight can put the prose note first.
    "hooks.md": "# Hooks\n\nWe call onDidChangeActiveTextEditor when the tab switches.\n",
    "wikilinks.md": "# Wikilinks\n\nThe parser reads aliases. I changed it in May.\n",
    "keyboard.md": "# Keyboard\n\nColemak, on a split board.\n",
    "phone.md": "# Phone\n\nThe iOS app syncs the notes.\n",
}


@pytest.fixture(scope="module")
def vault(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return indexed_notes(tmp_path_factory.mktemp("words"), NOTES)


def keyword(folder: Path, query: str) -> list[str]:
    with engine_for(folder) as engine:
        return paths(engine.search(SearchRequest(query, mode="keyword")).hits)


def test_identifier_parts_are_indexed_apart_from_the_words_as_written() -> None:
    analyzer = get_analyzer("english", True)
    words, parts = analyzer.split_terms("We call onDidChangeActiveTextEditor now")
    assert words.split() == ["we", "call", "ondidchangeactivetexteditor", "now"]
    assert parts.split() == ["did", "chang", "activ", "text", "editor"]  # "on": a stop word
    assert sorted(f"{words} {parts}".split()) == sorted(
        analyzer.terms("We call onDidChangeActiveTextEditor now")
    )


def test_a_word_in_prose_ranks_above_the_same_word_inside_an_identifier(vault: Path) -> None:
    assert keyword(vault, "change")[:2] == ["wikilinks.md", "hooks.md"]


def test_one_letter_parts_of_identifiers_are_not_terms(vault: Path) -> None:
    analyzer = get_analyzer("english", True)
    assert "i" not in analyzer.terms("iOS")
    assert "x" not in analyzer.terms("getX")
    assert keyword(vault, "I") == ["wikilinks.md"]  # the pronoun, not iOS


@pytest.mark.parametrize(
    "query", ["what keyboard layout do I use", "what keyboard layout do I use?"]
)
def test_question_words_do_not_drive_matches(vault: Path, query: str) -> None:
    assert keyword(vault, query) == ["keyboard.md"]


def test_the_spec_version_says_stored_rows_changed() -> None:
    assert SPEC_VERSION >= 4


# -- commits ---------------------------------------------------------------------------------


@pytest.fixture
def history(tmp_path: Path) -> tuple[Path, dict[str, str]]:
    repo = Repo(tmp_path / "repo")
    made = {"base": repo.commit("start", {"notes/index.md": "# Index\n"})}
    repo.git("checkout", "-q", "-b", "topic")
    page = "---\ntitle: Gardening calendar\n---\n\nSow beans in May.\n"
    notes = "".join(f"Note {i}: water the beds at dawn.\n" for i in range(30))
    made["wrote"] = repo.commit("sync", {"notes/plants.md": page + notes})
    # Trimmed on the branch: the merge carries the short page, whose lines match better
    # than the long first version the commit that wrote it holds.
    repo.commit("sync", {"notes/plants.md": page})
    repo.git("checkout", "-q", "main")
    repo.commit("tidy index", {"notes/index.md": "# Index\n\nAll notes.\n"})
    repo.git("merge", "-q", "--no-ff", "topic", "-m", "Merge branch 'topic'")
    made["merge"] = repo.head()
    made["fix"] = repo.commit(
        "who changed the parser: fix onDidChangeActiveTextEditor",
        {"notes/editor.md": "# Editor\n\nonDidChangeActiveTextEditor(fn)\n"},
    )
    made["changed"] = repo.commit(
        "changed the wikilink parser to read aliases", {"notes/parser.md": "# Parser\n"}
    )
    folder = tmp_path / "project"
    folder.mkdir()
    project(folder, {"docs": repo.path / "notes"})
    with (folder / ".noteseek.toml").open("a", encoding="utf-8") as fh:
        fh.write(f'[roots.site]\npath = "{repo.path.as_posix()}"\nkind = "git"\n')
    return folder, made


def commits(folder: Path, query: str) -> list[str]:
    with engine_for(folder) as engine:
        engine.index()
        found = engine.search_commits(SearchRequest(query, mode="keyword"))
        return [c.hash for c in found.commits]


def test_the_commit_that_wrote_a_page_outranks_the_merge_that_carried_it(
    history: tuple[Path, dict[str, str]],
) -> None:
    folder, made = history
    found = commits(folder, "Gardening calendar")
    assert found[0] == made["wrote"]
    assert made["merge"] not in found[:1]


def test_a_merge_is_still_found_by_its_message(history: tuple[Path, dict[str, str]]) -> None:
    folder, made = history
    assert commits(folder, "merge branch topic")[0] == made["merge"]


def test_commit_questions_rank_prose_above_identifier_parts(
    history: tuple[Path, dict[str, str]],
) -> None:
    folder, made = history
    assert commits(folder, "who changed the wikilink parser")[0] == made["changed"]
