"""Short keyword queries: sections holding every word rank ahead by ``search.all_terms_bonus``
(a share of the lane's best score), not in a tier of their own, unless the bonus is 1 or more
(issue 34, docs/evaluation.md: the soft bonus gains the Dendron and Logseq known-item sets'
short queries and costs no set more than 0.003)."""

from __future__ import annotations

from pathlib import Path

from noteseek.engine import SearchRequest
from tests.helpers import engine_for, indexed_notes

# "circles.md" is the page about circles: its title names them, and its section says how to
# draw one without the word "create". "shapes.md" mentions both words once, in passing.
NOTES = {
    "circles.md": "# Circles\n\nA circle is drawn from its centre. Drag the handle to size the "
    "circle; hold Shift to keep it round.\n",
    "shapes.md": "# Shapes\n\nThe whiteboard has tools for lines, arrows and text. You can "
    "create circles there too, among many other things: sticky notes, frames, connectors, "
    "freehand drawing, images and embedded pages.\n",
    "notes.md": "# Notes\n\nCreate a note from the command palette. Notes can be renamed, moved "
    "and linked.\n",
    "tasks.md": "# Tasks\n\nCreate a task with a checkbox. Tasks can be scheduled.\n",
}


def ranked(folder: Path, query: str, **flags: object) -> list[tuple[str, str]]:
    with engine_for(folder, **flags) as engine:
        hits = engine.search(SearchRequest(query, mode="keyword", explain=True)).hits
    return [(h.path, h.explain["keyword"]["match"]) for h in hits]  # type: ignore[index]


def test_a_page_named_by_the_query_beats_a_passing_mention_of_every_word(tmp_path: Path) -> None:
    folder = indexed_notes(tmp_path, NOTES)
    got = ranked(folder, "create circles")
    assert got[0] == ("circles.md", "any word")
    assert ("shapes.md", "all words") in got[1:3]


def test_a_bonus_of_one_puts_every_all_words_match_first(tmp_path: Path) -> None:
    folder = indexed_notes(tmp_path, NOTES)
    got = ranked(folder, "create circles", **{"search.all_terms_bonus": 1.0})
    assert got[0] == ("shapes.md", "all words")
    assert [m for _, m in got[1:]] == ["any word"] * (len(got) - 1)


def test_between_close_matches_the_one_holding_every_word_comes_first(tmp_path: Path) -> None:
    notes = {
        "a.md": "# Weekly plan\n\nReview the plan. Review what moved. Review what slipped, "
        "then close the week.\n",
        "b.md": "# Weekly plan two\n\nReview the plan against your goals, then close the week.\n",
        "c.md": "# Goals\n\nGoals for the year.\n",
        "d.md": "# More goals\n\nGoals for the quarter.\n",
        **{
            f"f{i}.md": f"# Filler {i}\n\nNothing to see in note {i}, only words.\n"
            for i in range(6)
        },
    }
    folder = indexed_notes(tmp_path, notes)
    # By BM25 alone, the page saying "review" three times is just ahead of the one holding
    # both words; the default bonus (a tenth of the best score) turns that round.
    assert ranked(folder, "review goals", **{"search.all_terms_bonus": 0.0})[:2] == [
        ("a.md", "any word"),
        ("b.md", "all words"),
    ]
    assert ranked(folder, "review goals")[:2] == [("b.md", "all words"), ("a.md", "any word")]


def test_longer_queries_rank_by_bm25_alone(tmp_path: Path) -> None:
    folder = indexed_notes(tmp_path, NOTES)
    got = ranked(folder, "create circles on the whiteboard with handles and shift")
    assert all(m == "any word" for _, m in got)
