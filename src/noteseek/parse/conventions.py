"""A root's style: how its notes are titled, as the application that writes them shows them.

The rule, per style (a frontmatter ``title`` always wins):

* ``docs`` (a documentation tree): a leading H1, the heading that is the note's first content
  (badges, images and HTML before it do not count), else the file name. An H1 further down is
  a section heading, never the title.
* ``notes`` (Obsidian, Foam, a plain folder of linked notes): the file name, which is what
  Obsidian shows. When the leading H1 spells the same name as the file name (``# Note
  Properties`` in ``note-properties.md``: case, spaces and punctuation aside), its spelling
  is kept;
  a leading H1 that says something else becomes an alias, so it is still searched.
* ``dendron``: the file name's last part, as Dendron titles a note without a title
  (``a.b.my-note.md`` -> ``My Note``; a name with capitals keeps them).
* ``logseq``: see :mod:`noteseek.parse.logseq` (``title::``, namespaces, journals).

``auto`` is decided per root by the indexer (:mod:`noteseek.indexing.styles`); here every
style is concrete.
"""

from __future__ import annotations

import re
from dataclasses import replace
from pathlib import PurePosixPath
from typing import Literal

from noteseek.parse.logseq import parse_logseq
from noteseek.parse.markdown import leading_heading, parse_markdown
from noteseek.parse.text import title_from_path
from noteseek.parse.versions import STYLES_VERSION
from noteseek.types import ParsedDocument

__all__ = [
    "CONCRETE_STYLES",
    "STYLES_VERSION",
    "Style",
    "apply_style",
    "dendron_title",
    "leading_heading",
    "parse_with_style",
]

Style = Literal["notes", "docs", "logseq", "dendron"]
CONCRETE_STYLES: tuple[Style, ...] = ("notes", "docs", "logseq", "dendron")

_WORDS = re.compile(r"[\W_]+")


def _same_words(a: str, b: str) -> bool:
    """Whether ``a`` and ``b`` spell the same name: case, spaces and punctuation aside
    (``Bash one-liners`` and ``bash-oneliners``)."""
    return _WORDS.sub("", a).casefold() == _WORDS.sub("", b).casefold()


def dendron_title(path: str) -> str:
    """Dendron's title for a note without one: the last part of the hierarchy, and when the
    whole name is lower case, its words capitalised (``a.b.my-note`` -> ``My Note``)."""
    stem = title_from_path(path)
    last = stem.rsplit(".", 1)[-1] or stem
    if stem.lower() != stem:
        return last
    return " ".join(word[:1].upper() + word[1:] for word in last.replace("-", " ").split())


def apply_style(doc: ParsedDocument, path: str, style: str) -> ParsedDocument:
    """``doc`` (parsed by the docs rule) titled by ``style``'s rule; aliases completed."""
    fm_title = doc.frontmatter.get("title")
    if (isinstance(fm_title, str) and fm_title.strip()) or style in ("docs", "logseq"):
        return doc
    stem = title_from_path(path)
    if PurePosixPath(path).suffix.casefold() not in (".md", ".markdown"):
        return doc
    heading = leading_heading(doc)
    if style == "dendron":
        title = dendron_title(path)
    elif heading and _same_words(heading, stem):
        title = heading
    else:
        title = stem
    aliases = list(doc.aliases)
    if heading and heading != title and heading.casefold() not in map(str.casefold, aliases):
        aliases.append(heading)
    return replace(doc, title=title, aliases=aliases)


def parse_with_style(text: str, path: str, style: str) -> ParsedDocument:
    """Parse a Markdown note of a root of ``style``."""
    if style == "logseq":
        return parse_logseq(text, path)
    return apply_style(parse_markdown(text, path), path, style)
