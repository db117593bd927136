"""Markdown to safe HTML for the web page.

A note is rendered by markdown-it (CommonMark, tables, strikethrough, footnotes, task lists; the
frontmatter is dropped), with the indexer's own wikilink rule, so ``[[Note|label]]`` and
``![[Note]]`` are read exactly as they were when the link graph was built. Then:

* every block element carries ``data-line`` and ``data-line-end`` (1-based source lines,
  frontmatter included, as a search result's ``start_line``/``end_line`` count them), so the page
  can find and highlight a result's section;
* headings get stable ids (``ns-`` + a slug of their text, ``-1``, ``-2`` ... when repeated) and
  an Obsidian block id (``... ^name`` at the end of a paragraph) becomes the id ``ns-^name``;
* wikilinks, embeds and relative Markdown links become in-app links (``#/doc/<doc id>``, with
  ``?a=<anchor>`` for a heading or block), resolved by the caller (the link graph's resolver); a
  link to a note that does not exist is marked ``ns-missing`` and searches for its name instead;
* images become links (the page makes no requests beyond its own server).

Finally the HTML goes through nh3 (ammonia) with an allow-list: no scripts, styles, event
handlers, frames, forms, SVG or images survive, ``href`` keeps only ``http``, ``https``,
``mailto`` and in-page ``#`` targets, and ids from raw HTML in the note get the ``ns-`` prefix so
they cannot clash with the page's own ids.
"""

from __future__ import annotations

import re
from collections import Counter
from collections.abc import Callable, MutableMapping, Sequence
from dataclasses import dataclass
from typing import Any
from urllib.parse import quote, unquote

import nh3
from markdown_it import MarkdownIt
from markdown_it.common.utils import escapeHtml
from markdown_it.rules_core import StateCore
from markdown_it.token import Token
from mdit_py_plugins.footnote import footnote_plugin

# The indexer's own dialect, so the page reads links and frontmatter the way the index did.
from noteseek.parse.dialect import noteseek_dialect

__all__ = [
    "ID_PREFIX",
    "Heading",
    "LinkResolver",
    "Rendered",
    "doc_href",
    "render_markdown",
    "render_plain",
    "sanitize",
    "slugify",
]

ID_PREFIX = "ns-"
"""Every id in rendered notes starts with this; the page's own ids never do."""

MAX_MARKDOWN_CHARS = 2_000_000
"""Larger documents are shown as plain text: markdown-it's inline pass can take seconds there."""

LinkResolver = Callable[[str, str | None, str], str | None]
"""``(target, display, kind) -> doc_id`` or None when nothing matches.

``kind`` is ``wikilink``, ``embed`` or ``markdown`` (a relative path), as in the link graph.
"""

_SCHEME_RE = re.compile(r"^[A-Za-z][A-Za-z0-9+.-]*:")
_SAFE_HREF_RE = re.compile(r"^(?:https?|mailto):", re.I)
_BLOCK_ID_RE = re.compile(r"(?:^|\s)\^([A-Za-z0-9-]{1,64})\s*$")
_TASK_RE = re.compile(r"^\[([ xX])\](?:\s+|$)")
_SLUG_DROP_RE = re.compile(r"[^\w\s-]")
_SLUG_SPACE_RE = re.compile(r"[\s-]+")
_CLASS_RE = re.compile(r"^(?:ns-[a-z0-9-]+|language-[\w+#.-]{1,40}|footnote[a-z-]*)$")
_DIGITS_RE = re.compile(r"^\d{1,9}$")
_ALIGN = {"text-align:left": "left", "text-align:right": "right", "text-align:center": "center"}


@dataclass(frozen=True, slots=True)
class Heading:
    id: str
    level: int
    text: str
    line: int


@dataclass(frozen=True, slots=True)
class Rendered:
    html: str
    headings: list[Heading]


def slugify(text: str) -> str:
    """A heading's anchor: lower-case words joined by ``-`` (as app.js anchorId does)."""
    words = _SLUG_DROP_RE.sub("", text.lower())
    slug = _SLUG_SPACE_RE.sub("-", words).strip("-")
    return slug or "section"


def anchor_id(anchor: str) -> str:
    """The id suffix a link's ``#anchor`` points at: a block id kept as is, else a slug."""
    anchor = anchor.strip()
    if anchor.startswith("^"):
        return "^" + anchor[1:].strip()
    return slugify(anchor)


def doc_href(doc_id: str, anchor: str | None = None) -> str:
    """The page's address of a document (and of a heading or block in it)."""
    href = "#/doc/" + quote(doc_id, safe="/")
    if anchor:
        href += "?a=" + quote(anchor_id(anchor), safe="")
    return href


def search_href(text: str) -> str:
    return "#/search?q=" + quote(text, safe="")


# -- markdown-it -------------------------------------------------------------------------------


def _build() -> MarkdownIt:
    md = (
        MarkdownIt("commonmark", {"html": True})
        .enable(["table", "strikethrough"])
        .use(noteseek_dialect)
        .use(footnote_plugin)
    )
    md.core.ruler.push("noteseek_annotate", _annotate)
    md.add_render_rule("wikilink", _render_wikilink)
    md.add_render_rule("image", _render_image)
    md.add_render_rule("fence", _render_code)
    md.add_render_rule("code_block", _render_code)
    md.add_render_rule("ns_task", _render_task)
    md.add_render_rule("front_matter", lambda *_args: "")
    return md


def _annotate(state: StateCore) -> None:
    """Line numbers, heading ids, block ids, task items, table alignment and link targets."""
    env = state.env
    tokens = state.tokens
    used: Counter[str] = Counter()
    headings: list[Heading] = env.setdefault("headings", [])
    for i, token in enumerate(tokens):
        if token.map and token.nesting >= 0 and token.type not in ("inline", "front_matter"):
            token.attrSet("data-line", str(token.map[0] + 1))
            token.attrSet("data-line-end", str(token.map[1]))
        if token.type in ("th_open", "td_open"):
            style = token.attrGet("style")
            if isinstance(style, str) and style in _ALIGN:
                token.attrs.pop("style", None)
                token.attrJoin("class", "ns-align-" + _ALIGN[style])
        if token.type != "inline" or token.children is None:
            continue
        opener = tokens[i - 1] if i > 0 else None
        if opener is not None and opener.type == "heading_open":
            text = _plain_text(token.children).strip()
            slug = slugify(text)
            used[slug] += 1
            if used[slug] > 1:
                slug = f"{slug}-{used[slug] - 1}"
            opener.attrSet("id", ID_PREFIX + slug)
            line = opener.map[0] + 1 if opener.map else 0
            headings.append(Heading(ID_PREFIX + slug, int(opener.tag[1]), text, line))
        elif opener is not None and opener.type == "paragraph_open":
            _block_id(token, _owner(tokens, i - 1))
            _task_item(token, tokens, i - 1)
        _rewrite_links(token.children, env)


def _owner(tokens: Sequence[Token], paragraph: int) -> Token:
    """The token whose tag carries a paragraph's attributes (a tight list's item for its text)."""
    if (
        tokens[paragraph].hidden
        and paragraph > 0
        and tokens[paragraph - 1].type == "list_item_open"
    ):
        return tokens[paragraph - 1]
    return tokens[paragraph]


def _block_id(inline: Token, owner: Token) -> None:
    children = inline.children or []
    if not children or children[-1].type != "text":
        return
    last = children[-1]
    m = _BLOCK_ID_RE.search(last.content)
    if m is None:
        return
    last.content = last.content[: m.start()].rstrip()
    owner.attrSet("id", f"{ID_PREFIX}^{m.group(1)}")


def _task_item(inline: Token, tokens: Sequence[Token], paragraph: int) -> None:
    item = paragraph - 1
    if item < 0 or tokens[item].type != "list_item_open":
        return
    children = inline.children or []
    if not children or children[0].type != "text":
        return
    m = _TASK_RE.match(children[0].content)
    if m is None:
        return
    children[0].content = children[0].content[m.end() :]
    task = Token("ns_task", "", 0)
    task.meta = {"done": m.group(1) != " "}
    children.insert(0, task)
    tokens[item].attrJoin("class", "ns-task-item")


def _plain_text(children: Sequence[Token]) -> str:
    parts: list[str] = []
    for child in children:
        if child.type in ("text", "code_inline"):
            parts.append(child.content)
        elif child.type == "softbreak":
            parts.append(" ")
        elif child.type == "wikilink":
            parts.append(_wikilink_label(child.meta))
        elif child.type == "image":
            parts.append(child.content)
    return "".join(parts)


def _rewrite_links(children: list[Token], env: MutableMapping[str, Any]) -> None:
    for child in children:
        if child.type != "link_open":
            continue
        href = str(child.attrGet("href") or "")
        cls, target = _link_target(href, env)
        if target is None:
            child.attrs.pop("href", None)
        else:
            child.attrSet("href", target)
        child.attrJoin("class", cls)


def _link_target(href: str, env: MutableMapping[str, Any]) -> tuple[str, str | None]:
    """(class, href) of a Markdown link: external kept, a note in-app, the rest unlinked."""
    if _SAFE_HREF_RE.match(href):
        return "ns-external", href
    if href.startswith("#"):
        return "ns-link", doc_href(env["doc_id"], unquote(href[1:]) or None)
    if not href or href.startswith("//") or _SCHEME_RE.match(href):
        return "ns-unsafe", None
    path, _, anchor = href.partition("#")
    target = unquote(path.partition("?")[0])
    doc = env["resolve"](target, None, "markdown") if target else None
    if doc is None:
        name = target.rsplit("/", 1)[-1]
        return "ns-link ns-missing", search_href(name.removesuffix(".md"))
    return "ns-link", doc_href(doc, unquote(anchor) or None)


def _wikilink_label(meta: dict[str, Any]) -> str:
    if meta.get("display"):
        return str(meta["display"])
    target, anchor = meta.get("target") or "", meta.get("anchor")
    if anchor:
        return f"{target} > {anchor.lstrip('^')}" if target else anchor.lstrip("^")
    return str(target)


def _render_wikilink(
    _self: Any, tokens: Sequence[Token], idx: int, _options: Any, env: dict[str, Any]
) -> str:
    meta = tokens[idx].meta
    target = meta["target"]
    kind = "embed" if meta["embed"] else "wikilink"
    label = escapeHtml(_wikilink_label(meta))
    if not target:  # [[#Heading]]: this note
        doc: str | None = env["doc_id"]
    else:
        doc = env["resolve"](target, meta.get("display"), kind)
    classes = "ns-link ns-wikilink" + (" ns-embed" if meta["embed"] else "")
    if doc is None:
        title = escapeHtml(f"No note named “{target}” yet: search for it")
        return (
            f'<a class="{classes} ns-missing" href="{escapeHtml(search_href(target))}" '
            f'title="{title}">{label}</a>'
        )
    href = escapeHtml(doc_href(doc, meta.get("anchor")))
    if meta["embed"]:
        return f'<a class="{classes}" href="{href}" title="Embedded note">{label}</a>'
    return f'<a class="{classes}" href="{href}">{label}</a>'


def _render_image(
    _self: Any, tokens: Sequence[Token], idx: int, _options: Any, env: dict[str, Any]
) -> str:
    token = tokens[idx]
    src = str(token.attrGet("src") or "")
    alt = escapeHtml(_plain_text(token.children or []) or src.rsplit("/", 1)[-1] or "image")
    if _SAFE_HREF_RE.match(src) and not src.lower().startswith("mailto:"):
        return f'<a class="ns-image ns-external" href="{escapeHtml(src)}">{alt}</a>'
    if src and not _SCHEME_RE.match(src) and not src.startswith(("#", "//")):
        target = unquote(src.partition("#")[0].partition("?")[0])
        doc = env["resolve"](target, None, "embed")
        if doc is not None:
            return f'<a class="ns-link ns-embed" href="{escapeHtml(doc_href(doc))}">{alt}</a>'
    return f'<span class="ns-image ns-missing" title="image not shown">{alt}</span>'


def _render_code(
    _self: Any, tokens: Sequence[Token], idx: int, _options: Any, _env: dict[str, Any]
) -> str:
    token = tokens[idx]
    lines = ""
    if token.map:
        lines = f' data-line="{token.map[0] + 1}" data-line-end="{token.map[1]}"'
    lang = token.info.strip().split(maxsplit=1)[0] if token.info.strip() else ""
    cls = f' class="language-{escapeHtml(lang)}"' if lang else ""
    return f"<pre{lines}><code{cls}>{escapeHtml(token.content)}</code></pre>\n"


def _render_task(
    _self: Any, tokens: Sequence[Token], idx: int, _options: Any, _env: dict[str, Any]
) -> str:
    if tokens[idx].meta.get("done"):
        return '<span class="ns-task ns-task-done" title="done">☑</span> '
    return '<span class="ns-task" title="to do">☐</span> '


_MD = _build()


# -- sanitizing -------------------------------------------------------------------------------

_TAGS = {
    "a", "abbr", "b", "blockquote", "br", "caption", "cite", "code", "dd", "del", "details",
    "dfn", "div", "dl", "dt", "em", "figcaption", "figure", "h1", "h2", "h3", "h4", "h5", "h6",
    "hr", "i", "ins", "kbd", "li", "mark", "ol", "p", "pre", "q", "s", "samp", "section",
    "small", "span", "strong", "sub", "summary", "sup", "table", "tbody", "td", "tfoot", "th",
    "thead", "time", "tr", "u", "ul", "var", "wbr",
}  # fmt: skip
_ATTRIBUTES = {
    "*": {"data-line", "data-line-end", "id", "class", "title", "lang", "dir"},
    "a": {"href"},
    "ol": {"start", "reversed"},
    "li": {"value"},
    "td": {"colspan", "rowspan"},
    "th": {"colspan", "rowspan", "scope"},
    "details": {"open"},
    "time": {"datetime"},
}
# Removed with everything inside them (the rest of the unknown tags keep their text).
_DROP_WITH_CONTENT = {
    "script", "style", "template", "svg", "math", "iframe", "object", "embed", "noscript",
    "textarea", "select", "title", "xmp", "noembed", "noframes", "plaintext",
}  # fmt: skip


def _filter_attribute(_tag: str, name: str, value: str) -> str | None:
    if name == "href":
        return value if value.startswith("#") or _SAFE_HREF_RE.match(value.strip()) else None
    if name == "class":
        kept = [c for c in value.split() if _CLASS_RE.match(c)]
        return " ".join(kept) or None
    if name in ("data-line", "data-line-end"):
        return value if _DIGITS_RE.match(value) else None
    return value


_CLEANER = nh3.Cleaner(
    tags=_TAGS,
    clean_content_tags=_DROP_WITH_CONTENT,
    attributes=_ATTRIBUTES,
    attribute_filter=_filter_attribute,
    url_schemes={"http", "https", "mailto"},
    link_rel="noopener noreferrer",
    strip_comments=True,
    id_prefix=ID_PREFIX,
)


def sanitize(html: str) -> str:
    """Only the allow-listed tags and attributes of ``html``: inert whatever the input."""
    return _CLEANER.clean(html)


# -- entry points ------------------------------------------------------------------------------


def render_markdown(text: str, doc_id: str, resolve: LinkResolver) -> Rendered:
    """A Markdown note as sanitized HTML, with its headings (see the module docstring)."""
    if len(text) > MAX_MARKDOWN_CHARS:
        return render_plain(text)
    env: dict[str, Any] = {"doc_id": doc_id, "resolve": resolve}
    html = _MD.render(text, env)
    return Rendered(sanitize(html), list(env.get("headings", [])))


def render_plain(text: str) -> Rendered:
    """A text file as preformatted lines, each carrying its line number."""
    lines = text.split("\n")
    if lines and lines[-1] == "":
        lines.pop()
    body = "\n".join(
        f'<span data-line="{n}" data-line-end="{n}">{escapeHtml(line)}</span>'
        for n, line in enumerate(lines, start=1)
    )
    return Rendered(sanitize(f'<pre class="ns-plain">{body}</pre>'), [])
