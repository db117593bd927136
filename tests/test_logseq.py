"""Logseq graphs: page properties as fields, outlines as chunks, namespaces and journals."""

from __future__ import annotations

from datetime import datetime
from pathlib import Path

import pytest

from noteseek.chunking import chunk_document
from noteseek.engine import SearchRequest
from noteseek.parse.logseq import clean_prose, journal_day, page_name, parse_logseq
from tests.conftest import shared
from tests.helpers import engine_for, project, write

PAGE = """title:: Personal Knowledge Management
alias:: PKM, [[Second Brain]]
tags:: [[method]], #notes
type:: [[Concept]]
description:: How to keep notes, and why

- Top bullet about [[Zettelkasten]]
  id:: 64f0c0a0-1111-4222-8333-944455556666
	- Child one refers to ((64f0c0a0-1111-4222-8333-944455556666))
	- Child two
- Second top bullet
  collapsed:: true
"""


class TestPageProperties:
    def test_properties_are_fields(self) -> None:
        doc = parse_logseq(PAGE, "pages/pkm.md")
        assert doc.title == "Personal Knowledge Management"
        assert doc.aliases[:2] == ["PKM", "Second Brain"]
        assert doc.tags == ["method", "notes"]
        assert doc.frontmatter["type"] == "Concept"
        # A prose value with a comma is one value, not a list.
        assert doc.frontmatter["description"] == "How to keep notes, and why"

    def test_property_lines_and_block_noise_are_not_indexed_text(self) -> None:
        doc = parse_logseq(PAGE, "pages/pkm.md")
        chunks = chunk_document(doc, "r/pages/pkm.md", 900, clean_prose)
        # The properties stay in the first chunk's text (the embedding model reads them)...
        assert chunks[0].start_line == 1 and "alias:: PKM" in chunks[0].text
        prose = "\n".join(c.prose for c in chunks)
        # ...but not in the body field, nor do block properties and references.
        assert "::" not in prose and "Second Brain" not in prose
        assert "id::" not in prose and "collapsed::" not in prose
        assert "64f0c0a0" not in prose
        assert "Child one refers to" in prose
        # The source text is untouched: the chunk is the file's lines.
        assert "id:: 64f0c0a0" in chunks[0].text

    def test_property_references_are_property_links_and_aliases_are_not_links(self) -> None:
        doc = parse_logseq(PAGE, "pages/pkm.md")
        links = {(link.target, link.kind, link.display, link.line) for link in doc.links}
        assert ("Concept", "property", "type", 4) in links
        assert ("Zettelkasten", "wikilink", None, 7) in links
        assert not any(link.target == "Second Brain" for link in doc.links)

    def test_a_first_bullet_of_properties_is_the_page_properties(self) -> None:
        doc = parse_logseq("- title:: Real Name\n  alias:: RN\n- body text\n", "pages/x.md")
        assert doc.title == "Real Name" and doc.aliases[0] == "RN"
        assert "body" not in doc.frontmatter

    def test_no_properties_means_the_body_starts_at_the_top(self) -> None:
        doc = parse_logseq("- just a bullet\n", "pages/Plain Page.md")
        assert doc.title == "Plain Page" and doc.frontmatter == {}


class TestNames:
    @pytest.mark.parametrize(
        ("path", "name"),
        [
            ("pages/Whiteboard___Action Bar.md", "Whiteboard/Action Bar"),
            ("pages/A%2FB%2FC.md", "A/B/C"),
            ("pages/New to Logseq%3F.md", "New to Logseq?"),
            ("pages/plain.md", "plain"),
        ],
    )
    def test_page_names_as_logseq_shows_them(self, path: str, name: str) -> None:
        assert page_name(path) == name
        assert parse_logseq("- x\n", path).title == name

    def test_a_title_property_names_a_namespaced_page(self) -> None:
        doc = parse_logseq("title:: Templates/Docs\n\n- x\n", "pages/templates_docs.md")
        assert doc.title == "Templates/Docs"
        assert "templates_docs" in doc.aliases  # the file name is still searchable

    def test_journals_are_dated_and_titled_as_logseq_shows_them(self) -> None:
        doc = parse_logseq("- did things\n", "journals/2023_01_15.md")
        assert doc.title == "Jan 15th, 2023"
        assert doc.frontmatter["date"] == "2023-01-15"
        assert "2023-01-15" in doc.aliases
        assert parse_logseq("- x\n", "journals/2023_03_02.md").title == "Mar 2nd, 2023"
        assert parse_logseq("- x\n", "journals/2023_03_11.md").title == "Mar 11th, 2023"
        assert journal_day("pages/2023_01_15.md") is None  # a page named like a date
        assert journal_day("journals/2023_02_30.md") is None  # not a day


class TestOutline:
    def test_a_top_level_bullet_keeps_its_children(self) -> None:
        items = [
            f"- Item {i} " + "word " * 20 + f"\n\t- child {i}a\n\t- child {i}b" for i in range(8)
        ]
        doc = parse_logseq("\n".join(items) + "\n", "pages/list.md")
        chunks = chunk_document(doc, "r/pages/list.md", 400, clean_prose)
        assert len(chunks) > 1
        for chunk in chunks:
            # Every chunk starts at a top-level bullet and ends after a child of the same item.
            assert chunk.text.startswith("- Item ")
            assert chunk.text.rstrip().endswith("b")

    def test_an_item_too_long_is_cut_between_its_children(self) -> None:
        children = "\n".join(f"\t- child {i} " + "text " * 30 for i in range(6))
        doc = parse_logseq(f"- Parent item\n{children}\n", "pages/long.md")
        chunks = chunk_document(doc, "r/pages/long.md", 400, clean_prose)
        assert len(chunks) > 1 and all(len(c.text) <= 400 for c in chunks)
        assert chunks[0].text.startswith("- Parent item\n\t- child 0")
        assert all(c.text.lstrip("\t").startswith("- ") for c in chunks)
        lines = {n for c in chunks for n in range(c.start_line, c.end_line + 1)}
        assert lines == set(range(1, 8))  # every line covered

    def test_headings_start_sections_and_tab_indented_bullets_are_not_code(self) -> None:
        text = "## Usage\n\t- See [[Queries]] here\n- ## Details\n\t- more about #topic\n"
        doc = parse_logseq(text, "pages/h.md")
        assert [s.heading_path for s in doc.sections] == [("Usage",), ("Details",)]
        assert {(link.target, link.line) for link in doc.links} == {("Queries", 2)}
        assert doc.tags == ["topic"]
        assert not any(b.kind == "code" for s in doc.sections for b in s.blocks)


def test_a_logseq_graph_is_indexed_as_logseq(tmp_path: Path) -> None:
    graph = tmp_path / "graph"
    write(graph / "logseq" / "config.edn", "{}\n")
    write(graph / "pages" / "Whiteboard___Tool.md", "alias:: Pen\ntype:: [[Tool]]\n\n- draws\n")
    write(graph / "pages" / "Home.md", "- see [[Whiteboard/Tool]] and [[Pen]]\n")
    write(graph / "journals" / "2023_01_15.md", "- wrote about [[Home]]\n")
    with engine_for(project(tmp_path, {"g": graph})) as engine:
        engine.index()
        files = {f.path: f for f in engine.store.iter_files("g")}
        tool = files["pages/Whiteboard___Tool.md"]
        assert tool.title == "Whiteboard/Tool" and tool.aliases[0] == "Pen"
        assert tool.frontmatter["type"] == "Tool"
        journal = files["journals/2023_01_15.md"]
        assert journal.title == "Jan 15th, 2023"
        assert datetime.fromtimestamp(journal.modified).date().isoformat() == "2023-01-15"
        graph_ = engine.link_graph()
        targets = {e.target for e in graph_.outgoing("g/pages/Home.md")}
        assert targets == {"g/pages/Whiteboard___Tool.md"}  # by namespace and by alias
        hits = engine.search(SearchRequest("Pen", mode="keyword")).hits
        assert hits and hits[0].path == "pages/Whiteboard___Tool.md"


def test_logseq_docs_graph() -> None:
    """Logseq's own documentation (318 files): titles, aliases, fields, journals, chunks."""
    root = shared("vaults/logseq-docs")
    docs = {}
    chunks = 0
    for file in sorted(root.rglob("*.md")):
        rel = file.relative_to(root).as_posix()
        doc = parse_logseq(file.read_text(encoding="utf-8"), rel)
        docs[rel] = doc
        pieces = chunk_document(doc, rel, 900, clean_prose)
        assert all(len(c.text) <= 900 for c in pieces), rel
        chunks += len(pieces)
    assert len(docs) == 318
    assert not any("___" in d.title or "%2F" in d.title for d in docs.values())
    assert docs["pages/Whiteboard___Action Bar___Edit.md"].title == "Whiteboard/Action Bar/Edit"
    journals = [d for rel, d in docs.items() if rel.startswith("journals/")]
    assert len(journals) == 75 and all("date" in d.frontmatter for d in journals)
    typed = [d for d in docs.values() if "type" in d.frontmatter]
    assert len(typed) >= 140
    assert not any(" :: " in d.title or "::" in d.title for d in docs.values())
    # About three chunks a page, none empty: outlines are packed, not cut line by line.
    assert 900 <= chunks <= 1400
    # Every declared alias names its page (the link graph resolves names this way).
    names: dict[str, set[str]] = {}
    for rel, d in docs.items():
        for name in (d.title, *d.aliases):
            names.setdefault(name.casefold(), set()).add(rel)
    aliased = [(rel, a) for rel, d in docs.items() if rel.startswith("pages/") for a in d.aliases]
    assert len(aliased) >= 60
    assert all(rel in names[a.casefold()] for rel, a in aliased)


def test_a_staircase_outline_is_chunked_in_bounded_time() -> None:
    """Every bullet one level deeper than the last: cut by outline levels, then as text."""
    text = "\n".join("\t" * i + f"- step {i} " + "word " * 10 for i in range(3000)) + "\n"
    doc = parse_logseq(text, "pages/stairs.md")
    chunks = chunk_document(doc, "r/pages/stairs.md", 900, clean_prose)
    assert all(len(c.text) <= 900 for c in chunks)
    covered = {n for c in chunks for n in range(c.start_line, c.end_line + 1)}
    assert covered == set(range(1, 3001))
