"""Chunk economy: small sections merged with their neighbours, boilerplate embedded once."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from noteseek.chunking import chunk_document
from noteseek.embed.base import Vectors
from noteseek.embed.onnx import MODELS, OnnxEmbedder
from noteseek.engine import SearchRequest
from noteseek.indexing.boilerplate import SharedVectors
from noteseek.indexing.embedding import embed_pending
from noteseek.parse import parse_markdown
from noteseek.types import Chunk
from tests.helpers import engine_for, project, write
from tests.test_chunking import check_invariants, documents

CMDLET = """# Get-Thing

## SYNOPSIS
Gets a thing.

## SYNTAX

```
Get-Thing [-Name] <String>
```

## DESCRIPTION
The **Get-Thing** cmdlet gets a thing from the zanzibar store.

## PARAMETERS

### -Name
Specifies the name of the thing to get from the store, as a string of letters.

### -Force
Forces the command to run without asking for user confirmation, even when quux is set.

## NOTES

## RELATED LINKS
"""


def merged(text: str, below: int = 300, max_chars: int = 900) -> list[Chunk]:
    return chunk_document(parse_markdown(text, "n.md"), "r/n.md", max_chars, None, below)


def test_small_sibling_sections_merge_under_their_parent_and_keep_their_lines() -> None:
    lines = CMDLET.split("\n")
    plain = chunk_document(parse_markdown(CMDLET, "n.md"), "r/n.md")
    chunks = merged(CMDLET)
    assert len(plain) == 7
    assert len(chunks) < len(plain)
    first = chunks[0]
    assert first.heading_path == ("Get-Thing",)
    assert first.subheadings[:3] == ("SYNOPSIS", "SYNTAX", "DESCRIPTION")
    # One contiguous range of the file: the text is exactly its lines.
    assert first.text == "\n".join(lines[first.start_line - 1 : first.end_line])
    assert lines.index("## SYNOPSIS") + 1 >= first.start_line
    assert lines.index("## DESCRIPTION") + 2 <= first.end_line
    assert "zanzibar" in first.prose and "Get-Thing [-Name]" in first.code
    # Every line of the file is still in exactly the chunks the plain chunker put it in.
    for number, line in enumerate(lines, 1):
        if line.strip():
            assert any(c.start_line <= number <= c.end_line for c in chunks), number
    # The page is short enough to be one chunk: every heading below the title is kept.
    assert first.subheadings == (
        "SYNOPSIS",
        "SYNTAX",
        "DESCRIPTION",
        "PARAMETERS",
        "-Name",
        "-Force",
        "NOTES",
        "RELATED LINKS",
    )
    assert (first.start_line, first.end_line) == (1, lines.index("## RELATED LINKS") + 1)


def test_sections_under_different_parents_do_not_merge() -> None:
    text = "# T\n\n## A\n\n### A1\nshort a1\n\n## B\n\n### B1\nshort b1\n"
    chunks = merged(text)
    # A1 and B1 are cousins: each stays with its own parent.
    assert [(c.heading_path, c.start_line, c.end_line) for c in chunks] == [
        (("T", "A", "A1"), 1, 6),
        (("T", "B", "B1"), 8, 11),
    ]


def test_a_section_whose_heading_types_its_links_stays_apart(tmp_path: Path) -> None:
    """ "See also" types the links under it as related: merged into a sibling's chunk, the
    links would take the parent's heading and lose their type."""
    from noteseek.graph.links import types_links

    text = "# T\n\n## Usage\nshort\n\n## See also\n[[other]]\n\n## Notes\nshort too\n"
    paths = [
        c.heading_path
        for c in chunk_document(
            parse_markdown(text, "t.md"), "n/t.md", 900, None, 300, keep_apart=types_links
        )
    ]
    assert ("T", "See also") in paths and len(paths) == 3
    notes = tmp_path / "notes"
    write(notes / "t.md", text)
    write(notes / "other.md", "# Other\n\nText.\n")
    with engine_for(project(tmp_path, {"n": notes})) as engine:
        engine.index()
        edges = {(e["doc_id"], e["type"]) for e in engine.links("n/t.md")["outgoing"]}
    assert ("n/other.md", "related") in edges


def test_two_sections_that_are_not_small_stay_apart() -> None:
    body = "word " * 80
    text = f"# T\n\n## A\n{body}\n\n## B\n{body}\n"
    assert [c.heading_path for c in merged(text, below=300)] == [("T", "A"), ("T", "B")]
    [joined] = merged(text, below=500)
    assert (joined.heading_path, joined.subheadings) == (("T",), ("A", "B"))


def test_a_merged_chunk_never_exceeds_the_limit() -> None:
    text = "# T\n\n" + "\n\n".join(f"## S{i}\n{'x' * 60}" for i in range(40)) + "\n"
    chunks = merged(text, below=300, max_chars=400)
    assert all(len(c.text) <= 400 for c in chunks)
    assert len(chunks) < 40
    assert len({c.chunk_id for c in chunks}) == len(chunks)


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(documents, st.integers(min_value=1, max_value=400), st.integers(min_value=1, max_value=400))
def test_merged_chunks_keep_every_invariant(text: str, max_chars: int, below: int) -> None:
    doc = parse_markdown(text, "gen.md")
    check_invariants(doc, chunk_document(doc, "gen", max_chars, None, below), max_chars)


def test_a_hit_in_a_merged_chunk_points_at_its_lines(tmp_path: Path) -> None:
    notes = tmp_path / "notes"
    write(notes / "Get-Thing.md", CMDLET)
    engine = engine_for(project(tmp_path, {"notes": notes}), **{"chunking.merge_small": True})
    try:
        engine.index()
        lines = CMDLET.split("\n")
        [hit] = engine.search(SearchRequest("zanzibar", mode="keyword")).hits[:1]
        number = next(i for i, line in enumerate(lines, 1) if "zanzibar" in line)
        assert hit.start_line <= number <= hit.end_line
        assert hit.heading_path == ("Get-Thing",)
        assert "**zanzibar**" in hit.snippet
        # A sub-heading inside the merged chunk is still searchable as a heading.
        force = engine.search(SearchRequest("force", mode="keyword", explain=True)).hits[0]
        assert force.start_line <= lines.index("### -Force") + 1 <= force.end_line
        assert "**Forces** the command" in force.snippet
    finally:
        engine.close()


def test_merging_is_a_setting(tmp_path: Path) -> None:
    notes = tmp_path / "notes"
    write(notes / "Get-Thing.md", CMDLET)
    folder = project(tmp_path, {"notes": notes})
    counts: list[int] = []
    for merge in (False, True):
        engine = engine_for(folder, **{"chunking.merge_small": merge})
        try:
            engine.index()
            counts.append(engine.store.vector_progress("none")[1])
            hits = engine.search(SearchRequest("gets a thing", mode="keyword")).hits
            assert hits and hits[0].path == "Get-Thing.md"
        finally:
            engine.close()
    assert counts[0] > counts[1]


# ----------------------------------------------------------------------------------------------
# Boilerplate


class Counting:
    """The bundled model, counting the texts it is asked to embed."""

    def __init__(self) -> None:
        self.model = OnnxEmbedder(MODELS["bge-small-en"], threads=1)
        self.texts: list[str] = []

    @property
    def model_id(self) -> str:
        return self.model.model_id

    @property
    def dimension(self) -> int:
        return self.model.dimension

    def embed_documents(self, texts: Sequence[str]) -> Vectors:
        self.texts.extend(texts)
        return self.model.embed_documents(texts)

    def embed_query(self, text: str) -> Vectors:
        return self.model.embed_query(text)

    def close(self) -> None:
        self.model.close()


COMMON = (
    "## CommonParameters\n"
    "This cmdlet supports the common parameters: -Debug, -ErrorAction and -Verbose.\n"
)


@pytest.mark.slow  # loads the ONNX embedding model
def test_identical_chunk_text_is_embedded_once(tmp_path: Path) -> None:
    notes = tmp_path / "notes"
    for name in ("Get-Apple", "Get-Pear", "Get-Plum"):
        write(notes / f"{name}.md", f"# {name}\n\nGets the {name[4:]} fruit.\n\n{COMMON}")
    engine = engine_for(project(tmp_path, {"notes": notes}), **{"chunking.merge_small": False})
    counting = Counting()
    try:
        engine.index(keyword_only=True)
        report = embed_pending(engine.store, counting)  # type: ignore[attr-defined]
    finally:
        engine.close()
    common = [t for t in counting.texts if "common parameters" in t]
    # Three files, three chunk rows and cache keys, one model call for the shared text.
    assert len(common) == 1
    assert report.shared == 2
    assert report.embedded == 6
    assert len(counting.texts) == 4


@pytest.mark.slow  # loads the ONNX embedding model
def test_shared_vectors_are_the_first_copy_s_and_bounded() -> None:
    counting = Counting()
    shared = SharedVectors(counting, recent=2)
    a = shared.embed(["same  text", "same text", "other"], ["A > x\n\nsame text", "B", "C"])
    assert len(counting.texts) == 2
    assert np.array_equal(a[0], a[1]) and not np.array_equal(a[0], a[2])
    shared.embed(["third"], ["third"])
    shared.embed(["fourth"], ["fourth"])  # "same text" is now the oldest and forgotten
    shared.embed(["same text"], ["same text"])
    assert len(counting.texts) == 5
    assert shared.reused == 1


def test_memory_roots_are_never_merged() -> None:
    from noteseek.analysis import get_analyzer
    from noteseek.indexing.prepare import PrepareSettings, RootRules, prepare_file
    from noteseek.parse import default_registry
    from noteseek.sources.base import FoundFile

    data = CMDLET.encode()
    chunk_counts = []
    for root in ("docs", "mem"):
        found = FoundFile(root, "Get-Thing.md", "", 1, len(data))
        settings = PrepareSettings(
            "english", True, 900, 1_000_000, merge_below=300, rules={"mem": RootRules(300, 0)}
        )
        outcome = prepare_file(
            found,
            None,
            settings,
            get_analyzer("english", True),
            default_registry(),
            lambda _found, _limit: data,
        )
        assert outcome.prepared is not None
        chunk_counts.append(len(outcome.prepared.chunks))
    assert chunk_counts[0] == 1
    assert chunk_counts[1] > 1
