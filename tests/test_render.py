"""The web page's Markdown renderer: line numbers, anchors, in-app links, and nothing unsafe."""

from __future__ import annotations

from html.parser import HTMLParser

import pytest

from noteseek.parse import html as render
from noteseek.parse.html import (
    doc_href,
    render_markdown,
    render_plain,
    sanitize,
    slugify,
)

DOCS = {
    "caching strategies": "notes/notes/caching-strategies.md",
    "postgresql": "notes/notes/postgresql.md",
    "redis": "notes/notes/redis.md",
    "docker.md": "notes/notes/docker.md",
    "notes/docker.md": "notes/notes/docker.md",
    "label side": "notes/notes/label-side.md",
}


def resolve(target: str, _display: str | None, kind: str) -> str | None:
    """A stand-in for the link graph's resolver: known names, case-insensitively."""
    key = target.casefold()
    if kind == "markdown":
        key = key.removeprefix("../")
    return DOCS.get(key)


def html_of(text: str, doc_id: str = "notes/notes/here.md") -> str:
    return render_markdown(text, doc_id, resolve).html


class Elements(HTMLParser):
    """Every start tag with its attributes, in order."""

    def __init__(self) -> None:
        super().__init__(convert_charrefs=True)
        self.tags: list[tuple[str, dict[str, str | None]]] = []

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        self.tags.append((tag, dict(attrs)))

    handle_startendtag = handle_starttag


def elements(html: str) -> list[tuple[str, dict[str, str | None]]]:
    parser = Elements()
    parser.feed(html)
    return parser.tags


def first(html: str, tag: str, **attrs: str) -> dict[str, str | None]:
    for name, found in elements(html):
        if name == tag and all(found.get(k) == v for k, v in attrs.items()):
            return found
    raise AssertionError(f"no <{tag} {attrs}> in {html}")


# -- structure ---------------------------------------------------------------------------------


def test_blocks_carry_their_source_lines_counting_the_frontmatter() -> None:
    text = (
        "---\ntitle: T\ntags: [a]\n---\n"  # lines 1-4
        "# Title\n"  # 5
        "\n"
        "First paragraph\nstill first.\n"  # 7-8
        "\n"
        "- one\n- two\n"  # 10-11
        "\n"
        "```python\nx = 1\n```\n"  # 13-15
    )
    html = html_of(text)
    assert "title: T" not in html  # the frontmatter is not shown
    assert first(html, "h1")["data-line"] == "5"
    p = first(html, "p")
    assert (p["data-line"], p["data-line-end"]) == ("7", "8")
    assert first(html, "ul")["data-line"] == "10"
    assert [a["data-line"] for t, a in elements(html) if t == "li"] == ["10", "11"]
    pre = first(html, "pre")
    assert (pre["data-line"], pre["data-line-end"]) == ("13", "15")
    assert first(html, "code")["class"] == "language-python"


def test_headings_get_stable_unique_ids_and_are_listed() -> None:
    text = "# Redis\n\n## Expiry and TTL!\n\ntext\n\n## Expiry and TTL\n\n### `code` heading\n"
    rendered = render_markdown(text, "notes/x.md", resolve)
    assert [(h.id, h.level, h.text, h.line) for h in rendered.headings] == [
        ("ns-redis", 1, "Redis", 1),
        ("ns-expiry-and-ttl", 2, "Expiry and TTL!", 3),
        ("ns-expiry-and-ttl-1", 2, "Expiry and TTL", 7),
        ("ns-code-heading", 3, "code heading", 9),
    ]
    ids = [a.get("id") for t, a in elements(rendered.html) if t in ("h1", "h2", "h3")]
    assert ids == [h.id for h in rendered.headings]


def test_slugs_keep_letters_of_any_script() -> None:
    assert slugify("Stampede protection") == "stampede-protection"
    assert slugify("  缓存 策略 ") == "缓存-策略"
    assert slugify("C'est l'été -- déjà") == "cest-lété-déjà"
    assert slugify("!!!") == "section"


def test_block_ids_tasks_tables_and_footnotes() -> None:
    text = (
        "Replicas can lag. ^replication-note\n\n"
        "- [ ] open task\n- [x] done task\n\n"
        "| a | b |\n|--:|:-:|\n| 1 | 2 |\n\n"
        "Claim[^1].\n\n[^1]: Source.\n"
    )
    html = html_of(text)
    p = first(html, "p", id="ns-^replication-note")
    assert p["data-line"] == "1"
    assert "^replication-note" not in html.split("</p>")[0].split(">", 1)[1]
    assert html.count('class="ns-task-item"') == 2
    assert '<span class="ns-task" title="to do">☐</span> open task' in html
    assert '<span class="ns-task ns-task-done" title="done">☑</span> done task' in html
    assert first(html, "th", **{"class": "ns-align-right"})
    assert first(html, "td", **{"class": "ns-align-center"})
    assert "style=" not in html
    ref = first(html, "a", href="#fn1")
    assert ref is not None
    assert first(html, "li", id="ns-fn1")


# -- links -------------------------------------------------------------------------------------


def test_wikilinks_become_in_app_links_and_missing_ones_search() -> None:
    html = html_of(
        "See [[Caching strategies#Stampede protection]], [[postgresql#^replication-note]], "
        "[[Redis|the cache]], [[#Local heading]] and [[Feature flags]].\n\n![[Caching strategies]]"
    )
    assert first(html, "a", href="#/doc/notes/notes/caching-strategies.md?a=stampede-protection")
    assert first(html, "a", href="#/doc/notes/notes/postgresql.md?a=%5Ereplication-note")
    redis = first(html, "a", href="#/doc/notes/notes/redis.md")
    assert redis["class"] == "ns-link ns-wikilink"
    assert ">the cache</a>" in html
    assert first(html, "a", href="#/doc/notes/notes/here.md?a=local-heading")
    missing = first(html, "a", href="#/search?q=Feature%20flags")
    assert missing["class"] == "ns-link ns-wikilink ns-missing"
    embed = first(html, "a", href="#/doc/notes/notes/caching-strategies.md", title="Embedded note")
    assert "ns-embed" in (embed["class"] or "")


def test_dendron_label_first_links_resolve_through_the_other_side() -> None:
    seen: list[tuple[str, str | None]] = []

    def dendron(target: str, display: str | None, kind: str) -> str | None:
        seen.append((target, display))
        return resolve(target, display, kind)

    html = render_markdown("[[Label Side|the.note]]", "r/x.md", dendron).html
    # The renderer hands both sides to the resolver (which tries the other on a miss).
    assert seen == [("Label Side", "the.note")]
    assert first(html, "a", href="#/doc/notes/notes/label-side.md")


def test_markdown_links_relative_external_anchor_and_unsafe() -> None:
    html = html_of(
        "[docker](../notes/docker.md#compose) [web](https://example.org/a?b=1) "
        "[mail](mailto:me@example.org) [here](#Some%20Heading) [gone](missing/note.md) "
        "[bad](javascript:alert(1)) [data](data:text/html;base64,PHNjcmlwdD4=)"
    )
    assert first(html, "a", href="#/doc/notes/notes/docker.md?a=compose")
    web = first(html, "a", href="https://example.org/a?b=1")
    assert web["class"] == "ns-external"
    assert web["rel"] == "noopener noreferrer"
    assert first(html, "a", href="mailto:me@example.org")
    assert first(html, "a", href="#/doc/notes/notes/here.md?a=some-heading")
    gone = first(html, "a", href="#/search?q=note")
    assert "ns-missing" in (gone["class"] or "")
    # Unsafe targets stay visible as text, never as a link.
    hrefs = [a.get("href") or "" for t, a in elements(html) if t == "a"]
    assert len(hrefs) == 5
    assert not any("javascript" in h or h.startswith("data:") for h in hrefs)
    assert "[bad](javascript:alert(1))" in html


def test_images_become_links_and_no_image_is_loaded() -> None:
    html = html_of(
        "![diagram](https://example.org/d.png) ![local](img/x.png) ![[docker.md]] "
        "![note](notes/docker.md)"
    )
    assert "<img" not in html
    assert first(html, "a", href="https://example.org/d.png")["class"] == "ns-image ns-external"
    assert "ns-missing" in (first(html, "span", title="image not shown")["class"] or "")
    assert first(html, "a", href="#/doc/notes/notes/docker.md")


def test_doc_href_encodes_path_characters() -> None:
    assert doc_href("vault/notes/缓存 策略.md") == (
        "#/doc/vault/notes/%E7%BC%93%E5%AD%98%20%E7%AD%96%E7%95%A5.md"
    )
    assert doc_href("r/a?b#c.md", "Top Part") == "#/doc/r/a%3Fb%23c.md?a=top-part"


def test_plain_text_files_keep_their_lines() -> None:
    rendered = render_plain("first <b>\nsecond & third\n")
    assert rendered.headings == []
    spans = [a for t, a in elements(rendered.html) if t == "span"]
    assert [s["data-line"] for s in spans] == ["1", "2"]
    assert "first &lt;b&gt;" in rendered.html
    assert "<b>" not in rendered.html


def test_a_huge_note_is_shown_as_plain_text(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(render, "MAX_MARKDOWN_CHARS", 50)
    html = html_of("# Big\n\n" + "word " * 20)
    assert "<h1" not in html
    assert 'class="ns-plain"' in html


# -- safety ------------------------------------------------------------------------------------

ALLOWED_ATTRIBUTES = {
    "data-line", "data-line-end", "id", "class", "title", "lang", "dir", "href", "rel",
    "start", "reversed", "value", "colspan", "rowspan", "scope", "open", "datetime",
}  # fmt: skip

HOSTILE = [
    "<script>window.__pwned = 1</script>",
    '<img src=x onerror="window.__pwned=1">',
    '<a href="javascript:window.__pwned=1">click</a>',
    '<a href="JaVaScRiPt:window.__pwned=1">click</a>',
    '<a href="jav&#x09;ascript:alert(1)">tab</a>',
    '<a href=" javascript:alert(1)">space</a>',
    '<a href="vbscript:msgbox(1)">vb</a>',
    '<a href="data:text/html,<script>alert(1)</script>">data</a>',
    "<svg onload=alert(1)><circle r=1 /></svg>",
    '<iframe src="https://example.org" srcdoc="<script>alert(1)</script>"></iframe>',
    '<div style="position:fixed;inset:0" onclick="alert(1)">cover</div>',
    '<p onmouseover="alert(1)">hover</p>',
    "<style>body{display:none}</style>",
    '<form action="https://example.org"><input name=x><button>go</button></form>',
    '<meta http-equiv="refresh" content="0;url=https://example.org">',
    '<base href="https://example.org/">',
    '<link rel="stylesheet" href="https://example.org/x.css">',
    '<object data="https://example.org/x.swf"></object><embed src="x.swf">',
    "<math><mtext><table><mglyph><style><img src=x onerror=alert(1)></style></mglyph>",
    '<details open ontoggle="alert(1)"><summary>x</summary></details>',
    '<a href="#" id="q">clobber the search box</a><form id="search-form"></form>',
    '[[x" onmouseover="alert(1)|"><script>alert(1)</script>]]',
    "[click](javascript&#58;alert(1)) [click2](<javascript:alert(1)>)",
    '![x](javascript:alert(1)) ![y](https://example.org/p.png" onerror="alert(1))',
    '<noscript><p title="</noscript><img src=x onerror=alert(1)>"></noscript>',
    "<template><script>alert(1)</script></template>",
    "<video src=x onerror=alert(1)></video><audio src=x onerror=alert(1)></audio>",
    '<a href="https://ok.example" target="_top" ping="https://track.example">t</a>',
]


@pytest.mark.parametrize("payload", HOSTILE)
def test_hostile_markup_comes_out_inert(payload: str) -> None:
    html = html_of(f"# Note\n\nbefore {payload} after\n\n{payload}\n")
    lowered = html.lower()
    for forbidden in ("<script", "<iframe", "<svg", "<img", "<style", "<form", "<input", "<meta",
                      "<base", "<link", "<object", "<embed", "<math", "<video", "<audio",
                      "<template", "<video", "<audio"):  # fmt: skip
        assert forbidden not in lowered, (forbidden, html)
    for tag, attrs in elements(html):
        assert tag in render._TAGS, (tag, html)
        for name, value in attrs.items():
            assert name in ALLOWED_ATTRIBUTES, (tag, name, html)
            assert not name.startswith("on")
            assert "javascript" not in (value or "").lower(), (tag, name, html)
            if name == "href":
                assert value is not None
                assert value.startswith(("#", "https://", "http://", "mailto:")), value
            if name == "id":
                assert value is not None and value.startswith("ns-"), value


def test_raw_html_that_is_harmless_is_kept() -> None:
    html = html_of("<details><summary>More</summary>\n\nHidden <kbd>Ctrl</kbd> text\n\n</details>")
    assert "<details" in html
    assert "<summary>More</summary>" in html
    assert "<kbd>Ctrl</kbd>" in html


def test_sanitize_prefixes_ids_and_filters_classes() -> None:
    cleaned = sanitize(
        '<p id="results" class="ns-link evil language-py" data-line="x12">a</p>'
        '<h2 id="ns-kept" data-line="3">b</h2>'
    )
    assert first(cleaned, "p") == {"id": "ns-results", "class": "ns-link language-py"}
    assert first(cleaned, "h2") == {"id": "ns-kept", "data-line": "3"}
