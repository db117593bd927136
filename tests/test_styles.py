"""A root's style decides its titles: detection per root, the rule per style, re-parsing."""

from __future__ import annotations

from pathlib import Path

import pytest

from noteseek.config import ConfigError
from noteseek.engine import SearchRequest
from noteseek.indexing.styles import detect_style
from noteseek.parse.conventions import dendron_title, parse_with_style
from noteseek.parse.markdown import leading_heading, parse_markdown
from tests.conftest import shared
from tests.helpers import engine_for, project, write

ZETTEL = "Some text about injections.\n\n# Locations\n\n- [[Web]]\n"


class TestTitleRules:
    def test_notes_take_the_file_name_not_a_later_heading(self) -> None:
        doc = parse_with_style(ZETTEL, "Security/SQL Injection.md", "notes")
        assert doc.title == "SQL Injection"
        assert "Locations" not in doc.aliases  # a section heading is not a name

    def test_docs_take_a_leading_h1_and_never_a_later_one(self) -> None:
        assert parse_with_style("# Install\n\nText\n", "install.md", "docs").title == "Install"
        assert parse_with_style(ZETTEL, "sql.md", "docs").title == "sql"

    def test_notes_keep_the_h1_spelling_of_their_own_file_name(self) -> None:
        doc = parse_with_style("# Note Properties\n\nText\n", "note-properties.md", "notes")
        assert doc.title == "Note Properties"

    def test_notes_keep_a_different_leading_h1_as_an_alias(self) -> None:
        doc = parse_with_style("# Project ideas\n\nText\n", "202110151351.md", "notes")
        assert doc.title == "202110151351"
        assert doc.aliases == ["Project ideas"]

    @pytest.mark.parametrize("style", ["notes", "docs", "dendron"])
    def test_a_frontmatter_title_always_wins(self, style: str) -> None:
        text = "---\ntitle: From YAML\n---\n# Heading\n"
        assert parse_with_style(text, "a.b.md", style).title == "From YAML"

    @pytest.mark.parametrize(
        ("path", "title"),
        [
            ("dendron.topic.my-note.md", "My Note"),
            ("root.md", "Root"),
            ("pkg.API-Reference.md", "API-Reference"),
        ],
    )
    def test_dendron_titles_as_dendron_does(self, path: str, title: str) -> None:
        assert dendron_title(path) == title
        assert parse_with_style("Body\n", path, "dendron").title == title

    def test_leading_heading_skips_badges_and_html(self) -> None:
        doc = parse_markdown("<!-- x -->\n\n![b](b.svg)\n\n# Tool\n", "README.md")
        assert leading_heading(doc) == "Tool"
        assert leading_heading(parse_markdown("Text\n\n# Later\n", "a.md")) == ""


class TestDetection:
    @pytest.mark.parametrize(
        ("marker", "style"),
        [
            (".obsidian/app.json", "notes"),
            ("logseq/config.edn", "logseq"),
            ("dendron.yml", "dendron"),
            (".vscode/settings.json", "docs"),  # Foam titles by the first H1
        ],
    )
    def test_application_files(self, tmp_path: Path, marker: str, style: str) -> None:
        write(tmp_path / marker, '{"foam.edit.linkReferenceDefinitions": "off"}\n')
        write(tmp_path / "a.md", "# A\n")
        assert detect_style(tmp_path) == style

    def test_a_marker_above_the_root_counts(self, tmp_path: Path) -> None:
        write(tmp_path / ".obsidian" / "app.json", "{}")
        write(tmp_path / "sub" / "a.md", "# A\n")
        assert detect_style(tmp_path / "sub") == "notes"

    def test_logseq_layout_without_config(self, tmp_path: Path) -> None:
        write(tmp_path / "pages" / "a.md", "- x\n")
        write(tmp_path / "journals" / "2023_01_01.md", "- y\n")
        assert detect_style(tmp_path) == "logseq"

    def test_wikilinks_make_a_note_vault_but_not_inside_code(self, tmp_path: Path) -> None:
        for i in range(10):
            write(tmp_path / "notes" / f"n{i}.md", f"See [[n{i + 1}]].\n" if i < 3 else "Text\n")
            write(tmp_path / "docs" / f"d{i}.md", "```toml\n[[menu.main]]\n```\n`[[x]]`\n")
        assert detect_style(tmp_path / "notes") == "notes"
        assert detect_style(tmp_path / "docs") == "docs"
        assert detect_style(tmp_path / "empty-folder-that-does-not-exist") == "docs"

    def test_shared_vaults(self) -> None:
        assert detect_style(shared("vaults/logseq-docs")) == "logseq"
        assert detect_style(shared("vaults/dendron-site/vault")) == "dendron"
        assert detect_style(shared("vaults/foam")) == "notes"
        assert detect_style(shared("hugo-docs-kis/vault")) == "docs"


def test_no_title_is_a_later_heading_on_the_shared_vaults() -> None:
    """The issue's count: notes whose title is a heading that is not their first content."""
    for folder in ("vaults/foam", "vaults/dendron-site/vault", "vaults/logseq-docs"):
        root = shared(folder)
        style = detect_style(root)
        later = []
        for file in sorted(root.rglob("*.md")):
            rel = file.relative_to(root).as_posix()
            doc = parse_with_style(file.read_text(encoding="utf-8"), rel, style)
            if doc.frontmatter.get("title") == doc.title:
                continue
            headings = {s.heading_path[-1] for s in doc.sections if s.level and s.heading_path}
            if doc.title in headings and leading_heading(doc) != doc.title:
                later.append(rel)
        assert later == [], (folder, later[:5])


def test_the_style_setting_and_a_change_of_style(tmp_path: Path) -> None:
    vault = tmp_path / "vault"
    write(vault / "SQL Injection.md", ZETTEL)
    write(vault / "guide.md", "# The Guide\n\nText\n")
    with engine_for(project(tmp_path, {"v": vault})) as engine:
        engine.index()  # no marker, few wikilinks... one of two files: a note vault
        titles = {f.path: f.title for f in engine.store.iter_files("v")}
        assert titles == {"SQL Injection.md": "SQL Injection", "guide.md": "guide"}
        assert {r["name"]: r["style"] for r in engine.status()["roots"]}["v"] == "notes"
    # The root says it is documentation: the next run parses its files again, unchanged.
    project(tmp_path, {"v": vault}, extra="")
    toml = tmp_path / ".noteseek.toml"
    toml.write_text(toml.read_text() + 'style = "docs"\n', encoding="utf-8")
    with engine_for(tmp_path) as engine:
        report = engine.index()
        assert report.added + report.updated == 2
        titles = {f.path: f.title for f in engine.store.iter_files("v")}
        assert titles == {"SQL Injection.md": "SQL Injection", "guide.md": "The Guide"}
        assert {r["name"]: r["style"] for r in engine.status()["roots"]}["v"] == "docs"
        assert engine.search(SearchRequest("the guide", mode="keyword")).hits[0].path == "guide.md"


def test_a_bad_style_is_a_clear_config_error(tmp_path: Path) -> None:
    write(tmp_path / "v" / "a.md", "x\n")
    project(tmp_path, {"v": tmp_path / "v"})
    toml = tmp_path / ".noteseek.toml"
    toml.write_text(toml.read_text() + 'style = "wiki"\n', encoding="utf-8")
    with pytest.raises(ConfigError, match="style"):
        engine_for(tmp_path)


def test_a_zettelkasten_note_is_found_and_shown_by_its_name(tmp_path: Path) -> None:
    """The issue's case: a note whose first H1 is a section ("Locations") further down."""
    vault = tmp_path / "zk"
    write(vault / ".obsidian" / "app.json", "{}")
    write(
        vault / "Security" / "SQL Injection.md",
        "Input that ends up inside a query.\n\n# Locations\n\n- [[Web]]\n\n# Concepts\n\n"
        "- [[Input validation]]\n",
    )
    for i, name in enumerate(["Web", "Input validation", "OWASP", "Databases"]):
        write(
            vault / f"{name}.md",
            f"# {name}\n\nNotes on {name}: SQL injection, SQL injection again, and more SQL "
            f"injection in example {i}.\n",
        )
    with engine_for(project(tmp_path, {"zk": vault})) as engine:
        engine.index()
        hits = engine.search(SearchRequest("SQL injection", mode="keyword")).hits
        assert hits[0].path == "Security/SQL Injection.md"
        assert hits[0].title == "SQL Injection"
        titles = {f.path: f.title for f in engine.store.iter_files("zk")}
        assert "Locations" not in titles.values()


def test_the_same_name_spelled_otherwise_keeps_the_headings_spelling() -> None:
    doc = parse_with_style("# Bash one-liners\n\nText\n", "snippets/bash-oneliners.md", "notes")
    assert doc.title == "Bash one-liners" and doc.aliases == []
