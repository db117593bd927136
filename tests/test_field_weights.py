"""The default field weights (``search.weights``): a page titled by the query's words comes
before a page that holds them only in a heading (issue 34, docs/evaluation.md: title 40 and
headings 1 gain on the known-item sets)."""

from __future__ import annotations

from pathlib import Path

from noteseek.config.search import ColumnWeights
from noteseek.engine import SearchRequest
from tests.helpers import engine_for, indexed_notes

NOTES = {
    "render-hooks.md": "# Render hooks\n\nOverride how Markdown is rendered to HTML for links, "
    "images and headings.\n\nCreate a template in the layouts folder for each element you want "
    "to change.\n",
    "templates.md": "# Templates\n\nTemplates turn content into pages.\n\n## Render hooks\n\n"
    "A render hook is a template. Hooks for links and images live in the layouts folder.\n\n"
    "## Partials\n\nPartials are small templates reused across pages.\n",
    "images.md": "# Images\n\nImages can be processed and resized. Use the layouts folder for "
    "image hooks.\n",
}


def test_the_defaults_weigh_the_title_above_headings() -> None:
    w = ColumnWeights()
    assert (w.title, w.aliases, w.headings, w.tags, w.body, w.code) == (40, 10, 1, 3, 1, 0.5)


def test_a_page_titled_by_the_query_comes_before_one_with_it_as_a_heading(tmp_path: Path) -> None:
    folder = indexed_notes(tmp_path, NOTES)
    with engine_for(folder) as engine:
        hits = engine.search(SearchRequest("render hooks templates layouts", mode="keyword")).hits
    assert [h.path for h in hits[:2]] == ["render-hooks.md", "templates.md"]
