"""Parsing memory is bounded in proportion to the note: a 4.8 MB list or table, just under the
default 5 MB file-size limit, used to peak at 0.5-2.4 GB while markdown-it held a token for
every item and cell. Each case indexes one such file in a fresh process (so the peak RSS is its
own), through the real indexer, and checks the peak growth while the file was prepared (read,
parsed, chunked and analyzed), the chunks, and a search for one line of it.
"""

from __future__ import annotations

import json
import subprocess
import sys
import textwrap
from collections.abc import Callable
from itertools import pairwise
from pathlib import Path

import pytest

import noteseek.parse.markdown as markdown_module
import noteseek.parse.windows as windows_module
from noteseek.parse import parse_markdown
from noteseek.parse.dialect import MAX_TABLE_COLUMNS
from noteseek.types import ParsedDocument

SIZE = 4_800_000
PREPARE_GROWTH_PER_BYTE = 40
"""The stated bound: preparing either file grows the peak RSS by at most 40 x its size
(measured: 26 x and 28 x; before, 143 x and 106 x). Most of it is the analyzer's word and stem
caches, cold in a fresh process and bounded on their own; the document itself takes 7-9 x."""

CHILD = textwrap.dedent(
    """
    import json, resource, sys, time
    from pathlib import Path

    import noteseek.indexing.outcomes as indexer
    from noteseek.engine import SearchRequest, open_engine

    base_dir, big_name, needle = Path(sys.argv[1]), sys.argv[2], sys.argv[3]

    def engine(name):
        return open_engine(base_dir / name, flags={"embedding.enabled": False}, environ={})

    def peak():
        return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024  # KiB on Linux

    # A small run first loads every module and the store, so what follows is the big file's.
    engine("warm").index()
    prepared = {}
    real_prepare = indexer.prepare_file

    def measured(*args, **kwargs):
        outcome = real_prepare(*args, **kwargs)
        prepared["peak"] = peak()  # the write comes after: this is the preparing's peak
        return outcome

    indexer.prepare_file = measured
    base = peak()
    started = time.process_time()
    big = engine("big")
    report = big.index()
    seconds = time.process_time() - started
    hits = big.search(SearchRequest(needle, mode="keyword")).hits
    print(json.dumps({
        "growth": prepared["peak"] - base,
        "index_growth": peak() - base,
        "cpu_seconds": round(seconds, 1),
        "chunks_written": report.chunks_written,
        "skipped": report.skipped,
        "problems": report.problems,
        "hits": [[h.path, h.start_line, h.end_line] for h in hits[:3]],
    }))
    """
)


def _project(folder: Path, files: dict[str, str]) -> None:
    (folder / "v").mkdir(parents=True)
    for name, text in files.items():
        (folder / "v" / name).write_text(text, encoding="utf-8")
    root = (folder / "v").as_posix()
    (folder / ".noteseek.toml").write_text(f'[roots.v]\npath = "{root}"\n', encoding="utf-8")


def _sized(lines: list[str], make: Callable[[int], str], size: int = SIZE) -> str:
    """``lines`` followed by ``make(i)`` lines until the text is ``size`` characters long."""
    total = sum(len(line) + 1 for line in lines)
    i = 0
    while total < size:
        line = make(i)
        lines.append(line)
        total += len(line) + 1
        i += 1
    return "\n".join(lines)[:size]


def long_list() -> str:
    """The finding's list: ``- item N`` lines (about 350,000 items)."""
    return _sized(["# A long list", ""], lambda i: f"- item {i}")


def long_table() -> str:
    """A table of eight columns (about 54,000 rows)."""
    header = ["| " + " | ".join(f"h{j}" for j in range(8)) + " |", "|" + "---|" * 8]
    row = lambda i: "| " + " | ".join(f"r{i}c{j}" for j in range(8)) + " |"  # noqa: E731
    return _sized(["# A long table", "", *header], row)


def _index_in_child(tmp_path: Path, name: str, text: str, needle: str) -> dict[str, object]:
    _project(tmp_path / "warm", {"small.md": "# Small\n\n- one\n- two\n\n| a | b |\n|---|---|\n"})
    _project(tmp_path / "big", {name: text})
    proc = subprocess.run(
        [sys.executable, "-c", CHILD, str(tmp_path), name, needle],
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert proc.returncode == 0, proc.stderr[-3000:]
    result: dict[str, object] = json.loads(proc.stdout.strip().splitlines()[-1])
    return result


def _line_of(text: str, needle: str) -> int:
    return text[: text.index(needle)].count("\n") + 1


@pytest.mark.parametrize(
    ("name", "build", "needle", "line_text"),
    [
        pytest.param("list.md", long_list, "item 123456", "- item 123456", id="list"),
        pytest.param("table.md", long_table, "r23456c3", "| r23456c0 |", id="table"),
    ],
)
def test_a_4_8_mb_note_is_prepared_within_the_stated_memory_and_stays_searchable(
    tmp_path: Path, name: str, build: Callable[[], str], needle: str, line_text: str
) -> None:
    text = build()
    result = _index_in_child(tmp_path, name, text, needle)

    growth = result["growth"]
    assert isinstance(growth, int)
    assert growth <= PREPARE_GROWTH_PER_BYTE * SIZE, (
        f"preparing a {SIZE:,}-byte {name} grew the peak RSS by {growth / 1e6:.0f} MB "
        f"({growth / SIZE:.1f} x its size; the bound is {PREPARE_GROWTH_PER_BYTE} x); {result}"
    )
    # Indexed whole, in chunks of at most 900 characters: one chunk per ~900 characters.
    assert result["skipped"] == 0 and result["problems"] == []
    chunks = result["chunks_written"]
    assert isinstance(chunks, int) and SIZE // 900 <= chunks <= 2 * SIZE // 900
    # The line is found, in a chunk that holds it.
    line = _line_of(text, line_text)
    hits = result["hits"]
    assert isinstance(hits, list) and hits, f"no hit for {needle!r}"
    path, start, end = hits[0]
    assert path == name and start <= line <= end, (hits[0], line)


# ----------------------------------------------------------------------------------------------
# The windows (noteseek.parse.windows) parse exactly as one pass over the whole note would.


def _outline(doc: ParsedDocument) -> object:
    return (
        doc.title,
        doc.frontmatter,
        doc.body_start_line,
        [
            (
                s.heading_path,
                s.start_line,
                s.end_line,
                [(b.kind, b.start_line, b.end_line, b.text) for b in s.blocks],
            )
            for s in doc.sections
        ],
        doc.links,
        doc.tags,
        doc.warnings,
    )


def _parse_in_windows(text: str, lines: int, monkeypatch: pytest.MonkeyPatch) -> ParsedDocument:
    monkeypatch.setattr(windows_module, "WINDOW_LINES", lines)
    monkeypatch.setattr(markdown_module, "WINDOW_LINES", lines)
    return parse_markdown(text, "note.md")


TRICKY = """\
---
title: Windows
tags: [one]
aliases:
  - two
---
# Heading one

Intro with [a link][ref] and [[Wiki]] and #tag.

- item one
- item two [[Inside]]
  continued lazily
- item three

  loose paragraph in three
1. ordered
2. second

> quote line
> - quoted item
>
> second quote paragraph #quoted

| a | b |
|---|---|
| 1 | [[Cell]] |
| 2 | two |
| 3 | three |

```python
# not a heading
code = 1

more = 2
```

Setext
======

<div>
html block
</div>

    indented code

[ref]: notes/target.md
last paragraph
"""


@pytest.mark.parametrize("lines", [1, 2, 3, 5, 8])
def test_a_note_parsed_in_small_windows_is_parsed_as_in_one_pass(
    lines: int, monkeypatch: pytest.MonkeyPatch
) -> None:
    whole = parse_markdown(TRICKY, "note.md")
    assert [link.target for link in whole.links][:3] == ["notes/target.md", "Wiki", "Inside"]
    assert _outline(_parse_in_windows(TRICKY, lines, monkeypatch)) == _outline(whole)


def test_the_example_vault_parses_in_windows_as_in_one_pass(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    notes = sorted((Path(__file__).parents[2] / "examples").rglob("*.md"))
    assert notes
    for note in notes:
        text = note.read_text(encoding="utf-8")
        whole = _parse_in_windows(text, 10**9, monkeypatch)
        for lines in (2, 7):
            doc = _parse_in_windows(text, lines, monkeypatch)
            if any("parsed in parts" in w for w in doc.warnings):
                continue  # an item longer than 8 windows of 2 lines, cut inexactly on purpose
            assert _outline(doc) == _outline(whole), (note, lines)


def test_one_list_item_holding_a_huge_list_is_cut_inexactly_but_kept_whole() -> None:
    text = "- top\n" + "".join(f"  - nested {i} [[n{i}]]\n" for i in range(40_000))
    doc = parse_markdown(text, "note.md")
    assert any("parsed in parts" in w for w in doc.warnings)
    blocks = [b for s in doc.sections for b in s.blocks]
    # Every line is in a block, and every link is found.
    assert blocks[0].start_line == 1 and blocks[-1].end_line == 40_001
    assert all(a.end_line < b.start_line for a, b in pairwise(blocks))
    assert len(doc.links) == 40_000 and doc.links[-1].line == 40_001


def test_a_table_wider_than_the_column_limit_is_read_as_text() -> None:
    cells = MAX_TABLE_COLUMNS + 1
    row = "|" + "|".join("x" for _ in range(cells)) + "|"
    text = row + "\n|" + "---|" * cells + "\n" + row + "\n"
    doc = parse_markdown(text, "note.md")
    assert [b.kind for s in doc.sections for b in s.blocks] == ["paragraph"]
    narrow = "| a | b |\n|---|---|\n| 1 | 2 |\n"
    assert [b.kind for s in parse_markdown(narrow, "n.md").sections for b in s.blocks] == ["table"]
