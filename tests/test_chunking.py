"""Heading-aware chunking, rule by rule, plus invariants checked on generated documents."""

from __future__ import annotations

import hashlib

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from noteseek.chunking import DEFAULT_MAX_CHARS, chunk_document
from noteseek.parse import parse_markdown, parse_text
from noteseek.types import Chunk, ParsedDocument


def chunks_of(
    text: str, max_chars: int = DEFAULT_MAX_CHARS, doc_id: str = "root/n.md"
) -> list[Chunk]:
    return chunk_document(parse_markdown(text, "n.md"), doc_id, max_chars)


def sentence(i: int, words: int = 12) -> str:
    return " ".join(f"word{i}x{j}" for j in range(words)) + "."


# ----------------------------------------------------------------------------------------------
# Small documents


def test_default_size_is_sized_for_a_256_token_model() -> None:
    assert DEFAULT_MAX_CHARS == 900


def test_a_one_line_note_is_one_chunk() -> None:
    [chunk] = chunks_of("Just one line.")
    assert (chunk.start_line, chunk.end_line, chunk.ordinal) == (1, 1, 0)
    assert chunk.heading_path == ()
    assert chunk.text == chunk.prose == "Just one line."
    assert chunk.code == ""
    assert chunk.content_hash == hashlib.blake2b(b"Just one line.", digest_size=16).hexdigest()
    assert len(chunk.chunk_id) == 16
    int(chunk.chunk_id, 16)


@pytest.mark.parametrize("text", ["", "\n\n  \n", "---\ntitle: Only metadata\ntags: [a]\n---\n"])
def test_empty_and_frontmatter_only_documents_have_no_chunks(text: str) -> None:
    assert chunks_of(text) == []


def test_frontmatter_is_not_part_of_any_chunk() -> None:
    [chunk] = chunks_of("---\ntitle: T\n---\nBody text\n")
    assert (chunk.start_line, chunk.text) == (4, "Body text")


def test_each_small_section_is_one_chunk_with_its_heading_line() -> None:
    chunks = chunks_of("Intro line\n\n# A\n\nText of A.\n\n## A1\nText of A1.\n")
    assert [(c.heading_path, c.start_line, c.end_line) for c in chunks] == [
        ((), 1, 1),
        (("A",), 3, 5),
        (("A", "A1"), 7, 8),
    ]
    assert chunks[1].text == "# A\n\nText of A."
    assert chunks[1].prose == "Text of A."
    assert [c.ordinal for c in chunks] == [0, 1, 2]


def test_a_heading_with_only_a_subheading_under_it_joins_the_next_chunk() -> None:
    chunks = chunks_of("# Top\n## Middle\n### Leaf\nleaf text\n")
    assert len(chunks) == 1
    [chunk] = chunks
    assert chunk.heading_path == ("Top", "Middle", "Leaf")
    assert (chunk.start_line, chunk.end_line) == (1, 4)
    assert chunk.prose == "leaf text"


def test_an_empty_heading_before_a_sibling_or_at_the_end_is_its_own_chunk() -> None:
    chunks = chunks_of("## Empty\n## Full\ntext\n## Last\n")
    assert [(c.heading_path, c.text) for c in chunks] == [
        (("Empty",), "## Empty"),
        (("Full",), "## Full\ntext"),
        (("Last",), "## Last"),
    ]
    assert chunks[0].prose == ""


def test_text_documents_are_chunked_the_same_way() -> None:
    doc = parse_text("para one\n\npara two\n", "a.txt")
    [chunk] = chunk_document(doc, "r/a.txt")
    assert (chunk.heading_path, chunk.start_line, chunk.end_line) == ((), 1, 3)
    assert chunk.prose == "para one\n\npara two"


# ----------------------------------------------------------------------------------------------
# Splitting long sections


def test_a_long_section_is_split_at_block_boundaries() -> None:
    paragraphs = [" ".join([sentence(i)] * 3) for i in range(8)]
    assert all(280 < len(p) < 320 for p in paragraphs)
    text = "# Long\n\n" + "\n\n".join(paragraphs) + "\n"
    chunks = chunks_of(text, max_chars=900)
    assert len(chunks) >= 3
    assert chunks[0].text.startswith("# Long\n\nword0x0")
    for chunk in chunks:
        assert len(chunk.text) <= 900
        assert chunk.heading_path == ("Long",)
        # Whole paragraphs only: every chunk starts and ends at a paragraph edge.
        body = chunk.text.removeprefix("# Long\n\n")
        assert body.split("\n\n") == [p for p in paragraphs if p in body]
    assert "\n\n".join(c.prose for c in chunks) == "\n\n".join(paragraphs)


def test_consecutive_small_blocks_are_packed_together() -> None:
    text = "# S\n\n" + "\n\n".join(f"Para {i}." for i in range(30)) + "\n"
    chunks = chunks_of(text, max_chars=100)
    assert all(len(c.text) <= 100 for c in chunks)
    assert all(c.text.count("Para") >= 5 for c in chunks[:-1])


def test_a_paragraph_longer_than_the_limit_is_split_at_sentences() -> None:
    sentences = [sentence(i) for i in range(12)]  # ~130 chars each
    chunks = chunks_of("# P\n\n" + " ".join(sentences) + "\n", max_chars=300)
    assert len(chunks) > 4
    for chunk in chunks:
        assert len(chunk.text) <= 300
        assert chunk.prose.startswith("word")
        assert chunk.prose.endswith(".")
    assert chunks[0].text.startswith("# P\n\nword0x0")
    assert " ".join(c.prose for c in chunks) == " ".join(sentences)
    assert all(c.start_line == c.end_line == 3 for c in chunks[1:])


def test_a_sentence_longer_than_the_limit_is_split_at_lines_then_words() -> None:
    lines = [" ".join(f"w{i}{j}" for j in range(20)) for i in range(4)]  # no sentence ends
    chunks = chunks_of("\n".join(lines) + "\n", max_chars=90)
    assert all(len(c.text) <= 90 for c in chunks)
    assert " ".join(c.text.replace("\n", " ") for c in chunks).split() == " ".join(lines).split()
    assert [c.start_line for c in chunks] == sorted(c.start_line for c in chunks)


def test_a_word_longer_than_the_limit_is_cut_hard() -> None:
    chunks = chunks_of("x" * 250, max_chars=100)
    assert [len(c.text) for c in chunks] == [100, 100, 50]
    assert all((c.start_line, c.end_line) == (1, 1) for c in chunks)


def test_a_code_block_that_fits_is_never_split_and_may_stand_alone() -> None:
    prose = " ".join(sentence(i) for i in range(4))  # ~520 chars
    code = "```python\n" + "\n".join(f"value_{i} = compute({i})" for i in range(25)) + "\n```"
    assert len(code) < 900
    chunks = chunks_of(f"# C\n\n{prose}\n\n{code}\n", max_chars=900)
    assert [c.text for c in chunks] == [f"# C\n\n{prose}", code]
    assert chunks[1].prose == ""
    assert chunks[1].code == "\n".join(f"value_{i} = compute({i})" for i in range(25))


def test_a_code_block_longer_than_the_limit_is_split_at_lines() -> None:
    code_lines = [f"value_{i} = compute({i})  # comment" for i in range(40)]
    text = "# C\n\n```python\n" + "\n".join(code_lines) + "\n```\n"
    chunks = chunks_of(text, max_chars=200)
    assert len(chunks) > 5
    for chunk in chunks:
        assert len(chunk.text) <= 200
        assert all(
            line in code_lines or line in ("# C", "", "```python", "```")
            for line in chunk.text.split("\n")
        )
        assert "```" not in chunk.code
    assert "\n".join(c.code for c in chunks) == "\n".join(code_lines)
    assert chunks[0].text.startswith("# C\n\n```python\nvalue_0")


def test_every_chunk_respects_the_limit_on_real_looking_notes() -> None:
    body = "\n\n".join(
        [
            "# Guide",
            " ".join(sentence(i) for i in range(10)),
            "- " + "\n- ".join(sentence(i, 8) for i in range(15)),
            "| a | b |\n|---|---|\n" + "\n".join(f"| {i} | {sentence(i, 6)} |" for i in range(20)),
            "## Details",
            "> " + " ".join(sentence(i) for i in range(8)),
        ]
    )
    for max_chars in (120, 300, 900):
        assert all(len(c.text) <= max_chars for c in chunks_of(body, max_chars))


# ----------------------------------------------------------------------------------------------
# Chunk fields


def test_prose_drops_headings_and_code_and_code_drops_fences() -> None:
    text = (
        "# Setup\n\n"
        "Install it first.\n\n"
        "```bash\npip install noteseek\n```\n\n"
        "Then run:\n\n"
        "    noteseek index\n"
        "      --verbose\n"
    )
    [chunk] = chunks_of(text)
    assert chunk.text == text.rstrip("\n")
    assert chunk.prose == "Install it first.\n\nThen run:"
    assert chunk.code == "pip install noteseek\nnoteseek index\n  --verbose"


def test_an_unclosed_fence_keeps_its_last_line_as_code() -> None:
    [chunk] = chunks_of("```\nprint(1)\nprint(2)\n")
    assert chunk.code == "print(1)\nprint(2)"


def test_text_is_the_exact_source_lines() -> None:
    text = "# H\n\npara   with  spacing  \n\n\n- list\n\n  - nested\n"
    [chunk] = chunks_of(text)
    assert chunk.text == "# H\n\npara   with  spacing  \n\n\n- list\n\n  - nested"
    assert (chunk.start_line, chunk.end_line) == (1, 8)


def test_content_hash_is_blake2b_of_the_text() -> None:
    for chunk in chunks_of("# A\nalpha\n# B\nbéta ünïcode\n"):
        expected = hashlib.blake2b(chunk.text.encode("utf-8"), digest_size=16).hexdigest()
        assert chunk.content_hash == expected


def test_chunk_ids_depend_on_heading_path_and_position_not_on_content_or_lines() -> None:
    def note(a_text: str, b_lead: str) -> str:
        return f"# A\n\n{a_text}\n\n# B\n\n{b_lead}\n\n{sentence(9)}\n\n{sentence(10)}\n"

    one = chunks_of(note(sentence(1), sentence(2)), max_chars=150)
    two = chunks_of(note("changed", "also changed"), max_chars=150)
    assert [c.heading_path for c in one] == [("A",), ("B",), ("B",), ("B",)]
    assert [c.heading_path for c in two] == [("A",), ("B",), ("B",)]
    # Same heading path and same position within it -> same id, whatever the text says.
    assert [c.chunk_id for c in two] == [c.chunk_id for c in one[:3]]
    assert len({c.chunk_id for c in one}) == 4


def test_chunk_ids_are_unique_even_when_heading_paths_look_alike() -> None:
    text = "Preamble\n\n#\n\nempty heading\n\n# A > B\n\nx\n\n# A\n\n## B\n\ny\n"
    chunks = chunks_of(text)
    assert [c.heading_path for c in chunks] == [(), ("",), ("A > B",), ("A", "B")]
    assert len({c.chunk_id for c in chunks}) == 4


def test_chunk_ids_depend_on_the_document() -> None:
    first = chunks_of("text", doc_id="a/n.md")[0].chunk_id
    assert first != chunks_of("text", doc_id="b/n.md")[0].chunk_id


def test_editing_one_section_keeps_the_ids_of_the_other_sections() -> None:
    def note(middle: str) -> str:
        return (
            "Preamble.\n\n# First\n\n" + sentence(1) + "\n\n"
            "# Second\n\n" + middle + "\n\n"
            "# Third\n\n" + sentence(3) + "\n\n## Third child\n\n" + sentence(4) + "\n"
        )

    before = chunks_of(note(sentence(2)), max_chars=200)
    after = chunks_of(note("\n\n".join(sentence(i) for i in range(20, 26))), max_chars=200)
    assert len(after) > len(before)  # the edit added chunks (and shifted ordinals/lines)

    def stable(chunks: list[Chunk]) -> dict[str, tuple[tuple[str, ...], str]]:
        return {
            c.chunk_id: (c.heading_path, c.content_hash)
            for c in chunks
            if c.heading_path != ("Second",)
        }

    assert stable(before) == stable(after)
    assert len(stable(before)) == 4


def test_max_chars_must_be_positive() -> None:
    with pytest.raises(ValueError):
        chunks_of("text", max_chars=0)


# ----------------------------------------------------------------------------------------------
# Properties


DOC_PIECES = [
    "# Heading\n",
    "## Sub heading\n",
    "### Deep\n",
    "#",
    "```python\n",
    "```\n",
    "~~~\n",
    "    indented code\n",
    "- item one\n",
    "1. numbered\n",
    "> quoted text\n",
    "| a | b |\n|---|---|\n| 1 | 2 |\n",
    "<div>\nhtml\n</div>\n",
    "---\n",
    "---\ntitle: x\n---\n",
    "[ref]: target.md\n",
    "A short sentence. ",
    "Another one here! ",
    "Does it end? ",
    "word ",
    "longwordwithoutanybreaks" * 3,
    "[[link]] ",
    "#tag ",
    "\n",
    "\n\n",
    "\r\n",
    "\t",
    "  ",
    "\x0c",
    "\u00a0",
    "é",
]

documents = st.lists(st.one_of(st.sampled_from(DOC_PIECES), st.text(max_size=15)), max_size=60).map(
    "".join
)


def check_invariants(doc: ParsedDocument, chunks: list[Chunk], max_chars: int) -> None:
    lines = doc.text.split("\n")
    previous_end = 0
    for ordinal, chunk in enumerate(chunks):
        assert chunk.ordinal == ordinal
        assert 1 <= chunk.start_line <= chunk.end_line <= doc.line_count
        assert chunk.start_line >= previous_end  # ordered, never overlapping by more than a line
        previous_end = chunk.end_line
        assert 0 < len(chunk.text) <= max_chars
        assert chunk.text.strip(" \t\n")
        source = "\n".join(lines[chunk.start_line - 1 : chunk.end_line])
        assert chunk.text in source
        assert chunk.text.count("\n") == chunk.end_line - chunk.start_line
        assert (
            chunk.content_hash
            == hashlib.blake2b(
                chunk.text.encode("utf-8", "surrogatepass"), digest_size=16
            ).hexdigest()
        )
    assert len({c.chunk_id for c in chunks}) == len(chunks)
    for number in range(doc.body_start_line, doc.line_count + 1):
        if lines[number - 1].strip(" \t"):
            assert any(c.start_line <= number <= c.end_line for c in chunks), number


@settings(max_examples=200, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(documents, st.integers(min_value=1, max_value=400))
def test_chunks_cover_every_body_line_in_order_and_within_the_limit(
    text: str, max_chars: int
) -> None:
    doc = parse_markdown(text, "gen.md")
    check_invariants(doc, chunk_document(doc, "gen", max_chars), max_chars)


@settings(max_examples=60, deadline=None)
@given(st.text(), st.integers(min_value=1, max_value=200))
def test_text_documents_keep_the_same_invariants(text: str, max_chars: int) -> None:
    doc = parse_text(text, "gen.txt")
    check_invariants(doc, chunk_document(doc, "gen", max_chars), max_chars)
