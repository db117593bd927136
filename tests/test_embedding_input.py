"""What the embedding model reads of a chunk (``embedding.reads``): no addresses, code by rule."""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from noteseek.indexing.embedding import READS_META_KEY, embed_pending, model_input
from noteseek.parse.plain import PROSE_WORDS, reading_text
from tests.helpers import engine_for, project, write
from tests.test_chunk_economy import Counting

PROSE = " ".join(["The cmdlet gets the replication partners of a domain controller."] * 6)
assert len(PROSE.split()) >= PROSE_WORDS

METADATA = (
    "```yaml\nType: SwitchParameter\nParameter Sets: (All)\nAliases:\n\n"
    "Required: False\nPosition: Named\nDefault value: None\n```\n"
)


def test_link_and_image_addresses_are_not_read_and_the_rest_is_as_written() -> None:
    text = (
        "### -AsJob\n\nRuns the **cmdlet** as a job; see [Receive-Job]"
        "(https://go.microsoft.com/fwlink/?LinkID=113372), ![a diagram](img/jobs.png), "
        "[the guide][guide], [[Jobs|job notes]] and <https://example.org/x>.\n"
        "| Name | Value |\n| --- | --- |\n"
    )
    read = reading_text(text)
    assert "go.microsoft.com" not in read and "jobs.png" not in read and "[guide]" not in read
    assert read == (
        "### -AsJob\n\nRuns the **cmdlet** as a job; see Receive-Job, a diagram, the guide, "
        "[[Jobs|job notes]] and https://example.org/x.\n| Name | Value |\n| --- | --- |\n"
    )


def test_code_is_not_read_when_the_chunk_has_prose_of_its_own() -> None:
    read = reading_text(f"{PROSE}\n\n{METADATA}After the block.")
    assert "Parameter Sets" not in read and "SwitchParameter" not in read and "```" not in read
    assert read.split() == [*PROSE.split(), "After", "the", "block."]


def test_code_is_read_when_the_chunk_is_mostly_code() -> None:
    text = "Example 1: restart the spooler\n\n```powershell\nRestart-Service -Name Spooler\n```\n"
    assert reading_text(text) == text
    words = " ".join(["word"] * (PROSE_WORDS - 1))
    assert "Spooler" in reading_text(f"{words}\n```\nRestart-Service -Name Spooler\n```")
    assert "Spooler" not in reading_text(f"{words} more\n```\nRestart-Service -Name Spooler\n```")


def test_a_tilde_fence_and_an_unclosed_fence_count_as_code() -> None:
    assert "secret_call()" not in reading_text(f"{PROSE}\n~~~\nsecret_call()\n~~~\n")
    assert "secret_call()" not in reading_text(f"{PROSE}\n```\nsecret_call()\n")
    assert "secret_call()" not in reading_text(f"{PROSE}\n````\n```\nsecret_call()\n````\n")
    assert "secret_call()" in reading_text("Short intro.\n```\nsecret_call()\n")


def test_plain_prose_is_read_as_it_is() -> None:
    text = "Seasonal influenza vaccination reduces hospital admissions in older adults."
    assert reading_text(text) == text
    assert model_input("markdown", "T", "t.md", ("A",), "**x** [y](z)") == "T > A\n\n**x** [y](z)"
    assert model_input("prose", "T", "t.md", ("A",), "**x** [y](z)") == "T > A\n\n**x** y"


def _notes(tmp: Path) -> Path:
    notes = tmp / "notes"
    write(
        notes / "Get-ADReplicationPartner.md",
        f"# Get-ADReplicationPartner\n\n## DESCRIPTION\n\n{PROSE}\n\n"
        "See [about_Jobs](https://go.microsoft.com/fwlink/?LinkID=113251).\n\n"
        f"### -AsJob\n\n{PROSE}\n\n{METADATA}",
    )
    write(notes / "Example.md", "# Example\n\n```powershell\nGet-Process -Name pwsh\n```\n")
    return notes


@contextmanager
def _keyword_indexed(tmp: Path) -> Iterator[tuple[Any, Counting]]:
    """An engine over :func:`_notes`, indexed keyword-only, and the counting model."""
    engine = engine_for(project(tmp, {"notes": _notes(tmp)}))
    try:
        engine.index(keyword_only=True)
        yield engine, Counting()
    finally:
        engine.close()


@pytest.mark.slow  # loads the ONNX embedding model
def test_the_model_reads_prose_and_each_vector_is_of_what_it_read(tmp_path: Path) -> None:
    with _keyword_indexed(tmp_path) as (engine, counting):
        report = embed_pending(engine.store, counting)
        rows = engine.store.chunk_rows([r for _, r in engine.store.pending_embeddings("none")])
        stored = engine.store.meta(READS_META_KEY)
    assert stored == "prose" and report.notice is None
    read = "\n".join(counting.texts)
    assert "go.microsoft.com" not in read and "Parameter Sets" not in read
    assert "Get-Process -Name pwsh" in read  # the example is all that chunk says
    # A chunk's vector is the model's vector of what it read, context line first.
    row = next(r for r in rows if "-AsJob" in r.heading_path)
    wanted = model_input("prose", row.title, row.path, row.heading_path, row.text)
    assert wanted in counting.texts
    assert wanted.startswith("Get-ADReplicationPartner > DESCRIPTION > -AsJob\n\n### -AsJob\n")


@pytest.mark.slow  # loads the ONNX embedding model
def test_changing_what_the_model_reads_embeds_every_chunk_again(tmp_path: Path) -> None:
    with _keyword_indexed(tmp_path) as (engine, counting):
        first = embed_pending(engine.store, counting, reads="markdown")
        assert first.notice is None and first.embedded > 0
        assert any("go.microsoft.com" in t for t in counting.texts)
        counting.texts.clear()
        same = embed_pending(engine.store, counting, reads="markdown")
        assert same.embedded == 0 and same.notice is None
        switched = embed_pending(engine.store, counting, reads="prose")
        again = embed_pending(engine.store, counting, reads="prose")
        vectors = engine.store.vector_models()
    assert switched.notice is not None and "from markdown to prose" in switched.notice
    assert switched.embedded == first.embedded and again.embedded == 0
    assert not any("go.microsoft.com" in t for t in counting.texts)
    assert vectors == {counting.model_id: first.embedded}


@pytest.mark.slow  # loads the ONNX embedding model
def test_the_setting_reaches_the_index_run(tmp_path: Path) -> None:
    """``noteseek index`` embeds what ``embedding.reads`` says: a stored vector is the bundled
    model's vector of that reading of its chunk, not of the other reading."""
    notes = _notes(tmp_path)
    model = Counting().model
    for reads in ("prose", "markdown"):
        folder = tmp_path / reads
        folder.mkdir()
        engine = engine_for(
            project(folder, {"notes": notes}), embeddings=True, **{"embedding.reads": reads}
        )
        try:
            engine.index()
            store = engine.store  # type: ignore[attr-defined]
            assert store.meta(READS_META_KEY) == reads
            stored = store.all_chunk_vectors(model.model_id)
            rows = {r.rowid: r for r in store.chunk_rows([rowid for rowid, _, _ in stored])}
        finally:
            engine.close()
        asjob = next(
            (rowid, blob) for rowid, _, blob in stored if "-AsJob" in rows[rowid].heading_path
        )
        row = rows[asjob[0]]
        other = "markdown" if reads == "prose" else "prose"
        own, theirs = model.embed_documents(
            [
                model_input(r, row.title, row.path, row.heading_path, row.text)
                for r in (reads, other)
            ]
        )
        vector = np.frombuffer(asjob[1], dtype=np.float32)
        # Not bit for bit: the int8 model quantises a batch's activations together, so a text's
        # vector moves a little with the texts embedded beside it (cosine >= 0.99).
        assert float(vector @ own) > 0.99
        assert float(vector @ own) > float(vector @ theirs) + 0.005
