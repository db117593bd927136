"""What a person or an agent reads: plain-text snippets and MCP text, expansion that never
repeats a section, and results past the answer's text budget that keep their snippet.

Snippets through the real engine; MCP through the official SDK client over stdio.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from noteseek.analysis import get_analyzer
from noteseek.engine import SearchRequest
from noteseek.parse import plain
from noteseek.parse.plain import display_text, plain_text
from noteseek.search.snippet import make_snippet, matched_spans
from tests.conftest import SHARED_DATA
from tests.helpers import engine_for, project, write
from tests.mcp_client import call, eventually, mcp_project, run, session


async def ready(client: Any) -> None:
    async def indexed() -> bool:
        status = await call(client, "index_status")
        return bool(status["status"] == "ready" and status["documents"] > 0)

    await eventually(indexed, timeout=30)


NOTE = """---
tags: [cache]
---
# Caching guide

## Eviction **policy**

type:: [[Feature]]
alias:: evictions

- The [[Ops/Runbooks/Redis Setup|Redis runbook]] explains *eviction* under `maxmemory`.
- See [[Ops/Runbooks/Memcached]] and the [official docs](https://example.invalid/evict).
  - [ ] check <kbd>LRU</kbd> eviction ((64b0e1d2-1234-4abc-9def-1234567890ab))

```bash
redis-cli config set maxmemory-policy allkeys-lru   # eviction here too
```
"""


@pytest.mark.parametrize(
    ("markdown", "plain"),
    [
        ("## Heading ##", "Heading"),
        ("[[Folder/Note|Alias]] and [[Folder/Note]]", "Alias and Note"),
        ("[[Note#Part]] [[#Local]] ![[img.png]]", "Note > Part Local img.png"),
        (
            "[text](http://x.invalid) ![alt](a.png) <https://x.invalid>",
            "text alt https://x.invalid",
        ),
        ("**bold** __strong__ *it* _em_ ~~gone~~ ==mark==", "bold strong it em gone mark"),
        ("snake_case_name and 2*3*4", "snake_case_name and 2*3*4"),
        ("- item\n  * nested\n1. first\n- [x] done", "item\n  nested\nfirst\ndone"),
        ("> quoted <b>html</b> <!-- hidden -->", "quoted html "),
        ("title:: Page\n- tags:: a, b\ntext", "text"),
        ("see ((64b0e1d2-1234-4abc-9def-1234567890ab)) here", "see  here"),
        ("```py\nx = [[a]]  # **kept**\n```\nafter", "x = [[a]]  # **kept**\nafter"),
        ("`[[not a link]]` and `a*b*c`", "[[not a link]] and a*b*c"),
        ("| a | b |\n|---|:-:|\n| 1 | 2 |", "a b\n1 2"),
        ("Title\n=====\n---\n- ## Logseq heading", "Title\nLogseq heading"),
        ("a < b > c", "a < b > c"),
        ("snake\\_case and \\*not emphasis\\*", "snake_case and *not emphasis*"),
        ("#+BEGIN_QUOTE\nquoted\n#+END_QUOTE", "quoted"),
    ],
)
def test_plain_text(markdown: str, plain: str) -> None:
    assert plain_text(markdown) == plain


TRICKY_LINES = [
    "plain prose with **bold** and `code`",
    "Title:: a property",
    "_private:: value",
    "9. ninth",
    "2026 was a year",
    "  # indented heading",
    "    #### four spaces deep",
    "  > quoted",
    "  - bullet",
    "+ plus bullet",
    "*** ",
    "=== ",
    "___",
    ":--|--:",
    "| cell | cell |",
    "name: value",
    "Emoji 🙂 line",
    "日本語の文",
    "²superscript",
    "٣ Arabic-Indic digit",
    "\t\ttabbed prose",
    "\u3000全角スペース",
    "#+BEGIN_NOTE",
    "- #+END_NOTE",
    "  ",
    "",
    "-",
    "word",
]


def _lines_of_shared_vaults(limit: int = 20_000) -> list[str]:
    root = SHARED_DATA / "vaults"
    lines: list[str] = []
    for path in sorted(root.rglob("*.md")) if root.is_dir() else []:
        lines.extend(path.read_text(encoding="utf-8", errors="replace").split("\n"))
        if len(lines) >= limit:
            break
    return lines


@pytest.mark.parametrize("properties", [False, True])
def test_the_prose_fast_path_equals_every_line_rule(properties: bool) -> None:
    """Lines that start like prose skip the line-level rules: the result must be what those
    rules give (on tricky lines, the note above and, when present, the shared vaults)."""
    lines = TRICKY_LINES + NOTE.split("\n") + _lines_of_shared_vaults()
    for line in lines:
        assert plain._plain_line(line, properties) == plain._line_constructs(line, properties), line


def test_a_section_of_properties_only_shows_them(tmp_path: Path) -> None:
    page = (
        "type:: [[Feature]]\ndescription:: Queries are written with [Datalog](https://x.invalid).\n"
    )
    assert plain_text(page) == ""
    assert plain_text(page, properties=True).strip() == (
        "type: Feature\ndescription: Queries are written with Datalog."
    )
    notes = tmp_path / "notes"
    write(notes / "Advanced Queries.md", page + "\n- Some text about the query engine.\n")
    engine = engine_for(project(tmp_path, {"notes": notes}))
    engine.index()
    hits = engine.search(SearchRequest("datalog", mode="keyword")).hits
    assert hits and "**Datalog**" in hits[0].snippet and "::" not in hits[0].snippet


def test_display_text_of_wikilinks() -> None:
    assert display_text("Ops/Runbooks/Redis Setup|Redis runbook") == "Redis runbook"
    assert display_text("Ops/Runbooks/Redis Setup.md") == "Redis Setup"
    assert display_text("Folder/Note|") == "Note"
    assert display_text("Note#^block-id") == "Note > block-id"


def test_snippets_are_plain_text_with_highlights_on_it(tmp_path: Path) -> None:
    notes = tmp_path / "notes"
    write(notes / "guide.md", NOTE)
    engine = engine_for(project(tmp_path, {"notes": notes}))
    engine.index()
    hits = engine.search(SearchRequest("eviction runbook", mode="keyword", top_k=5)).hits
    assert hits
    snippets = " ".join(h.snippet for h in hits)
    for raw in ("[[", "]]", "##", "```", "type::", "alias::", "((", "<kbd>", "](http", "- [ ]"):
        assert raw not in snippets, (raw, snippets)
    assert "**Redis runbook**" not in snippets  # highlights are words, not link texts
    assert "**runbook**" in snippets and "**eviction**" in snippets
    assert "Memcached" in snippets and "Ops/Runbooks" not in snippets
    # The highlighted words are the plain text's own words.
    plain = plain_text(NOTE)
    for word in ("runbook", "eviction"):
        assert word in plain


LINKS = """# Reading list

Less space, and [can be less computation](https://twitter.com/karpathy/status/1) than
a [dense retriever](https://example.org/papers/colbert-late-interaction.pdf), says the thread.
"""


@pytest.mark.parametrize(
    ("query", "shown", "hidden"),
    [
        ("computation retriever", ["**computation**", "**retriever**"], ["https://", "]("]),
        ("colbert", ["retriever (https://example.org/papers/**colbert**-late"], ["]("]),
        ("karpathy", ["(https://twitter.com/**karpathy**/status/1)"], ["example.org"]),
    ],
)
def test_a_snippet_shows_a_link_address_only_where_the_query_matched_it(
    query: str, shown: list[str], hidden: list[str]
) -> None:
    snippet, matched = make_snippet(LINKS, *_terms(query), get_analyzer(), width=120)
    assert matched, snippet
    for text in shown:
        assert text in snippet, snippet
    for text in hidden:
        assert text not in snippet, snippet


def test_a_kept_snippet_is_the_one_made_for_the_same_text_and_terms() -> None:
    """Snippets are kept for the next search that shows the section (servers answer popular
    queries again and again): the same text and terms give the same snippet, other terms or
    another text their own, and a caller changing its list of matched terms changes no other."""
    first, matched = make_snippet(LINKS, *_terms("computation retriever"), get_analyzer())
    matched.append("changed by the caller")
    again, matched_again = make_snippet(LINKS, *_terms("computation retriever"), get_analyzer())
    assert (again, matched_again) == (first, sorted(_terms("computation retriever")[0]))
    other, _ = make_snippet(LINKS, *_terms("colbert"), get_analyzer())
    assert "**colbert**" in other and "**computation**" not in other
    edited = LINKS.replace("computation", "calculation")
    changed, changed_matched = make_snippet(
        edited, *_terms("computation retriever"), get_analyzer()
    )
    assert "**computation**" not in changed and changed_matched == ["retriev"]


def _terms(query: str) -> tuple[set[str], list[str]]:
    return {token.term for token in get_analyzer().tokens(query)}, []


def _long_section_vault(tmp_path: Path) -> Path:
    """One note whose one section is split into several chunks that all match the query,
    and ten notes with a large section each (to spend an answer's text budget)."""
    notes = tmp_path / "notes"
    paragraphs = [
        f"Paragraph {i} about the zebra migration and [[Herds/Plains|the plains]], "
        + "with enough words to fill a chunk of the section. " * 8
        for i in range(6)
    ]
    write(notes / "zebra.md", "# Zebra\n\n## Migration\n\n" + "\n\n".join(paragraphs) + "\n")
    for n in range(10):
        body = f"Zebra stripes note {n}. " + "Filler words about something else entirely. " * 40
        write(notes / f"stripes-{n}.md", f"# Stripes {n}\n\n" + "\n\n".join([body] * 5) + "\n")
    return notes


def test_mcp_expansion_never_repeats_a_section_nor_returns_empty_results(
    tmp_path: Path,
) -> None:
    notes = _long_section_vault(tmp_path)
    folder = mcp_project(tmp_path, notes, extra="[search]\nmax_per_document = 0\n")

    async def main() -> None:
        async with session(folder) as client:
            await ready(client)
            result = await client.call_tool(
                "query_documents",
                {"query": "zebra migration plains", "top_n": 6, "expand_chars": 8_000},
            )
            assert not result.is_error, result.content[0].text
            out = result.structured_content
            zebra = [r for r in out["results"] if r["path"] == "zebra.md"]
            assert len(zebra) >= 3, out  # several chunks of the one section
            grown = [r for r in zebra if r["content"]]
            assert len(grown) == 1 and "Paragraph 5" in grown[0]["content"], zebra
            for r in zebra:
                if r is not grown[0]:
                    assert r["expanded_in"] == grown[0]["rank"] and r["content"] == ""
                    assert r["snippet"]
            text = result.content[0].text
            # The section once in the text; the others say where it is, with their snippet.
            assert len(text) < len(grown[0]["content"]) + 400 * len(out["results"])
            assert f"in the text of result [{grown[0]['rank']}]" in text
            assert "[[" not in text and "##" not in text  # plain text for the agent

            # Past the 40,000-character budget a result still has its snippet.
            result = await client.call_tool(
                "query_documents",
                {"query": "zebra stripes", "top_n": 100, "expand_chars": 8_000},
            )
            out = result.structured_content
            empty = [r for r in out["results"] if not r["content"] and not r.get("expanded_in")]
            assert empty, [len(r["content"]) for r in out["results"]]
            assert sum(len(r["content"]) for r in out["results"]) <= 40_000
            for r in empty:
                assert r["truncated"] and r["snippet"]
                assert r["snippet"] in result.content[0].text
            assert result.content[0].text.count("budget is spent") == len(empty)

    run(main)


def test_grouped_results_and_compressed_plain_text(tmp_path: Path) -> None:
    notes = _long_section_vault(tmp_path)
    write(notes / "guide.md", NOTE)
    engine = engine_for(project(tmp_path, {"notes": notes}))
    engine.index()
    hits = engine.search(SearchRequest("zebra migration plains", mode="keyword", top_k=5)).hits
    docs = [h.doc_id for h in hits]
    assert len(docs) == len(set(docs))  # one result per document by default
    first = hits[0]
    assert first.path == "zebra.md" and len(first.also) == 3
    lines = [(a["start_line"], a["chunk_id"]) for a in first.also]
    assert len(set(lines)) == 3 and all(
        a["heading_path"] == ["Zebra", "Migration"] for a in first.also
    )
    assert engine.get(first.also[0]["chunk_id"]).path == "zebra.md"
    ungrouped = engine_for(
        project(tmp_path, {"notes": notes}), **{"search.max_per_document": 0}
    ).search(SearchRequest("zebra migration plains", mode="keyword", top_k=5))
    assert [h.path for h in ungrouped.hits].count("zebra.md") >= 4  # what grouping fixes
    compressed = engine.search(
        SearchRequest("eviction runbook", mode="keyword", compressed=True)
    ).hits
    assert compressed and all(h.text for h in compressed)
    for hit in compressed:
        assert "[[" not in (hit.text or "") and "type::" not in (hit.text or "")


def test_expansions_never_overlap_and_continue_a_held_section(tmp_path: Path) -> None:
    notes = tmp_path / "notes"
    paragraphs = [
        f"Entry {i}: the okapi herd moved again. " + "More words. " * 30 for i in range(20)
    ]
    write(notes / "log.md", "# Log\n\n" + "\n\n".join(paragraphs) + "\n")
    engine = engine_for(project(tmp_path, {"notes": notes}), **{"search.max_per_document": 0})
    engine.index()
    hits = engine.search(
        SearchRequest("okapi herd", mode="keyword", top_k=12, expand_chars=2000)
    ).hits
    assert len(hits) >= 8
    given = [(h.start_line, h.end_line) for h in hits if h.text]
    for i, (a_start, a_end) in enumerate(given):
        for b_start, b_end in given[i + 1 :]:
            assert a_end < b_start or b_end < a_start, given  # no line given twice
    continued = [h for h in hits if h.expanded_in is not None and h.text]
    assert continued  # a hit inside an earlier result's text gets what lies next to it
    for hit in continued:
        assert hit.expanded_in < hit.rank and len(hit.text or "") <= 2000
    assert all(h.text or h.expanded_in for h in hits)


def _long_and_short_notes(tmp_path: Path) -> Any:
    """Three notes matching "zephyr" in 30 sections each, ten short notes matching once."""
    notes = tmp_path / "notes"
    for n in range(3):
        sections = "".join(f"## Part {i}\n\nzephyr zephyr zephyr gale {i}\n\n" for i in range(30))
        write(notes / f"long{n}.md", f"# Long {n}\n\n{sections}")
    filler = " ".join(f"word{i}" for i in range(60))
    for n in range(10):
        write(notes / f"short{n}.md", f"# Short {n}\n\nA zephyr once. {filler}\n")
    # Thirty small sections each (merging them would make a few chunks per note).
    flags = {"search.candidates": 50, "chunking.merge_small": False}
    engine = engine_for(project(tmp_path, {"notes": notes}), **flags)
    engine.index()
    return engine


def test_grouped_results_still_fill_top_k_when_long_documents_hold_the_candidates(
    tmp_path: Path,
) -> None:
    """Three long notes match in 30 sections each, ahead of ten short notes: the lanes'
    first 50 sections hold only the long notes, so grouping alone would leave 3 results. The
    lanes fetch more until ten documents are found."""
    engine = _long_and_short_notes(tmp_path)
    hits = engine.search(SearchRequest("zephyr", top_k=10, mode="keyword")).hits
    paths = [h.path for h in hits]
    assert len(paths) == 10 and len(set(paths)) == 10, paths
    assert set(paths[:3]) == {"long0.md", "long1.md", "long2.md"}
    assert sum(p.startswith("short") for p in paths) == 7


def test_grouping_reads_no_whole_row_of_a_document_already_complete(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Once a document has its result and its "also" sections, its further sections are
    dropped by file id: their whole rows (text and all) are never read."""
    engine = _long_and_short_notes(tmp_path)
    expected = engine.search(SearchRequest("zephyr", top_k=10, mode="keyword"))
    store = engine.store
    read: list[int] = []
    real = store.chunk_rows

    def counting(rowids: Any) -> Any:
        read.extend(rowids)
        return real(rowids)

    monkeypatch.setattr(store, "chunk_rows", counting)
    response = engine.search(SearchRequest("zephyr", top_k=10, mode="keyword"))
    assert [h.chunk_id for h in response.hits] == [h.chunk_id for h in expected.hits]
    assert [h.also for h in response.hits] == [h.also for h in expected.hits]
    assert response.hits[0].also  # the long notes list further sections
    long_rows = [row.rowid for row in real(list(set(read))) if row.path.startswith("long")]
    # Each long note: its result and three more sections, not its 30 sections.
    assert len(long_rows) <= 3 * (1 + 3), len(long_rows)
    assert response.lanes["keyword"] >= 90


def test_a_widened_pass_asks_for_what_the_documents_found_predict() -> None:
    from noteseek.search.pipeline import WIDEN_MAX, wider

    assert wider(100, 50, 100, held=400) == 400  # 200 predicted, 400 already fetched: free
    assert wider(400, 68, 100, held=400) == 800  # 588 predicted, 736 with the margin: doubled
    assert wider(400, 40, 100, held=400) == 1250  # 1,000 predicted and a quarter more
    assert wider(400, 20, 100, held=400) == WIDEN_MAX  # 2,500 asked: capped
    assert wider(100, 20, 100, held=400) == 625  # 500 predicted, more than fetched
    assert wider(100, 0, 100) == WIDEN_MAX  # nothing found yet: as far as allowed
    assert wider(1500, 90, 100, held=2000) == 2000


def test_widened_search_builds_snippets_only_for_the_results_it_returns(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The same corpus widens once (first pass: 3 documents). The thrown-away pass builds no
    snippets: ten results, ten snippets (before: one per result of each pass)."""
    from noteseek.search import pipeline

    engine = _long_and_short_notes(tmp_path)
    snippets: list[str] = []
    real_snippet = pipeline.make_snippet

    def counting_snippet(text: str, *args: Any, **kwargs: Any) -> Any:
        snippets.append(text)
        return real_snippet(text, *args, **kwargs)

    monkeypatch.setattr(pipeline, "make_snippet", counting_snippet)
    response = engine.search(SearchRequest("zephyr", top_k=10, mode="keyword"))
    paths = [h.path for h in response.hits]
    assert len(set(paths)) == 10 and sum(p.startswith("short") for p in paths) == 7
    assert response.lanes["keyword"] > 50  # the lanes were widened
    assert len(snippets) == 10


def test_a_widened_search_asks_the_keyword_index_once_per_query_shape(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """FTS5 scores every match whatever the LIMIT, so the widened pass reuses the first pass's
    fetch (four times the candidates) instead of querying the index again; same results."""
    engine = _long_and_short_notes(tmp_path)
    before = [
        h.chunk_id for h in engine.search(SearchRequest("zephyr", top_k=10, mode="keyword")).hits
    ]
    store = engine.store
    calls: list[tuple[str, int]] = []
    for name in ("keyword_search", "document_scores"):
        real = getattr(store, name)

        def counting(*args: Any, _real: Any = real, _name: str = name) -> Any:
            calls.append((_name, args[-2]))
            return _real(*args)

        monkeypatch.setattr(store, name, counting)
    response = engine.search(SearchRequest("zephyr", top_k=10, mode="keyword"))
    assert response.lanes["keyword"] > 50  # widened: the second pass wanted 200
    assert [h.chunk_id for h in response.hits] == before
    assert calls == [("keyword_search", 200), ("document_scores", 200)], calls


def _spans_word_by_word(text: str, terms: set[str], prefixes: list[str]) -> list[Any]:
    """matched_spans as it was first written: every word analysed where it stands."""
    analyzer = get_analyzer()
    spans: list[Any] = []
    last: tuple[int, int] | None = None
    for tok in analyzer.tokens(text):
        if not (tok.term in terms or any(tok.term.startswith(p) for p in prefixes)):
            continue
        if last is not None and tok.start < last[1]:
            if tok.end > last[1]:
                spans[-1] = (spans[-1][0], tok.end, spans[-1][2])
                last = (last[0], tok.end)
            continue
        spans.append((tok.start, tok.end, tok.term))
        last = (tok.start, tok.end)
    return spans


def test_highlights_are_found_as_word_by_word_analysis_finds_them() -> None:
    analyzer = get_analyzer()
    texts = [
        plain_text(p.read_text(encoding="utf-8"))
        for p in sorted((Path(__file__).parent.parent / "examples" / "vault").rglob("*.md"))
    ]
    texts += [
        "getUserById calls get_user_by_id; HTTPServer serves Cafés and cafe-au-lait.",
        "日本語のテキスト with mixed Latin words and 検索 results",
        "Über straße, naïve résumé; x_y __init__ a.b.c",
    ]
    checked = 0
    for text in texts:
        words = [t.term for t in analyzer.tokens(text)]
        for terms, prefixes in [
            (set(words[::3]), []),
            (set(words[1::4]), [w[:3] for w in words[2::7] if len(w) > 3]),
            ({"get", "user", "cafe", "server", "検索", "日本"}, ["strass"]),
        ]:
            assert matched_spans(text, terms, prefixes, analyzer) == _spans_word_by_word(
                text, terms, prefixes
            )
            checked += 1
    assert checked >= 15


def _best_window_by_scanning(spans: list[Any], width: int, length: int) -> tuple[int, int]:
    """snippet._best_window as it was first written: every window counted anew."""
    best_key, best_i = (-1, -1), 0
    for i, (a, _, _) in enumerate(spans):
        distinct: set[str] = set()
        count = 0
        for _, end, term in spans[i:]:
            if end - a > width:
                break
            distinct.add(term)
            count += 1
        if (len(distinct), count) > best_key:
            best_key, best_i = (len(distinct), count), i
    first = spans[best_i][0]
    start = max(0, first - min(width // 4, first))
    return start, min(length, start + width)


def test_the_best_snippet_window_is_the_one_counting_every_window_finds() -> None:
    import random

    from noteseek.search.snippet import _best_window

    rng = random.Random(7)
    for _ in range(2000):
        spans, at = [], rng.randrange(0, 50)
        for _ in range(rng.randrange(1, 40)):
            size = rng.choice([2, 5, 9, 300])  # a word longer than the window too
            spans.append((at, at + size, rng.choice("abcde")))
            at += size + rng.randrange(1, 120)
        width = rng.choice([40, 220])
        assert _best_window(spans, width, at) == _best_window_by_scanning(spans, width, at)
