"""A chunk boundary never falls inside a Markdown link, a wikilink, inline code, an HTML tag, a
bare URL or a list item's first line: a chunk that starts in the middle of
``[text](https://...)`` reads as a raw URL and its words match nothing."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from noteseek.chunking import chunk_document
from noteseek.parse.markdown import parse_markdown
from tests.conftest import shared

LINK = re.compile(
    r"!?\[[^\]\n]*\]\([^)\n]*\)|\[\[[^\]\n]*\]\]|(`+)[^\n]*?(?<!`)\1(?!`)|https?://[^\s)\]]+"
)


def cut_inside(text: str, chunks_text: list[str], max_chars: int) -> list[str]:
    """The chunks whose start falls strictly inside a link, code span or URL of ``text`` that
    fits in a chunk (a longer one has to be cut somewhere)."""
    spans = [m.span() for m in LINK.finditer(text) if m.end() - m.start() <= max_chars]
    bad = []
    pos = 0
    for chunk in chunks_text:
        if len(chunk) < 20:
            continue  # too short to be found again by its start
        at = text.find(chunk[:40], pos)
        if at < 0:
            continue
        pos = at
        if any(a < at < b for a, b in spans):
            bad.append(chunk[:60])
    return bad


def chunks_of(text: str, max_chars: int = 300) -> list[str]:
    return [c.text for c in chunk_document(parse_markdown(text, "n.md"), "r/n.md", max_chars)]


def test_a_paragraph_of_links_is_cut_between_links() -> None:
    links = " ".join(
        f"[Less space, and can be less computation number {i}. Read it]"
        f"(https://example.org/a/very/long/path/{i}?q=1)"
        for i in range(40)
    )
    text = f"# Bookmarks\n\n{links}\n"
    chunks = chunks_of(text)
    assert len(chunks) > 5 and not cut_inside(text, chunks, 300)
    assert all(c.startswith("[Less space") or c.startswith("# Bookmarks") for c in chunks)


def test_code_spans_urls_wikilinks_and_list_items_stay_whole() -> None:
    code = " ".join(
        f"use `run --flag {i} --other value` or [[Note {i}. Part two]]" for i in range(30)
    )
    urls = " ".join(f"see https://example.org/{'x' * 30}/{i}. Then more." for i in range(30))
    items = "\n".join(f"- Item {i}. It says a lot. " + "word " * 30 for i in range(20))
    text = f"# Mixed\n\n{code}\n\n{urls}\n\n{items}\n"
    chunks = chunks_of(text, 250)
    assert not cut_inside(text, chunks, 250)
    first_lines = [line for line in text.split("\n") if line.startswith("- Item")]
    for chunk in chunks:
        for line in first_lines:  # a list item's first line is never split across chunks
            head = line[:30]
            assert head not in chunk or line.strip() in chunk or chunk.startswith(head)


def test_a_link_longer_than_a_chunk_is_still_cut() -> None:
    text = "# Long\n\n[" + "word " * 200 + "](https://example.org)\n"
    chunks = chunks_of(text, 300)
    assert len(chunks) >= 3 and all(len(c) <= 300 for c in chunks)


@pytest.mark.parametrize(
    "vault", ["vaults/dendron-site", "vaults/foam", "vaults/logseq-docs", "hugo-docs-kis/vault"]
)
def test_no_chunk_of_a_shared_vault_starts_inside_a_link(vault: str) -> None:
    folder = shared(vault)
    bad: list[str] = []
    for path in sorted(Path(folder).rglob("*.md")):
        text = path.read_text(encoding="utf-8", errors="replace")
        doc = parse_markdown(text, path.name)
        for size in (300, 900):  # memory-sized chunks, and the documents' default
            chunks = [c.text for c in chunk_document(doc, "r/" + path.name, size)]
            bad += [f"{path.name} ({size}): {c}" for c in cut_inside(doc.text, chunks, size)]
    assert not bad, bad[:5]
