"""Which style a root's notes are written in, for ``roots.NAME.style = "auto"``.

The style decides how notes are titled and read (:mod:`noteseek.parse.conventions`). ``auto``
looks, in this order, for:

1. an application's own files in the root or one of the two folders above it:
   ``logseq/config.edn`` (logseq), ``dendron.yml`` or ``dendron.code-workspace`` (dendron),
   ``.obsidian/`` (notes), ``.foam/`` or a ``.vscode/`` settings file naming Foam (docs: Foam
   titles a note by its first H1, not by its file name);
2. a Logseq graph's layout: ``pages/`` and ``journals/`` side by side in the root;
3. a Dendron vault's ``root.md`` with ``id: root`` in its frontmatter;
4. wikilinks: when at least a fifth of a sample of the root's Markdown files (up to 200, spread
   over the root) hold a ``[[wikilink]]`` outside code, the root is a note vault (notes);
   otherwise it is a documentation tree (docs).

The style found is recorded with the index (``root_styles``); when it changes, the root's files
are parsed again.
"""

from __future__ import annotations

import json
import os
import re
from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING

from noteseek.store.base import Meta

if TYPE_CHECKING:  # the parsers load with indexing, not with `noteseek status`
    from noteseek.parse.conventions import Style

__all__ = [
    "ROOT_STYLES_KEY",
    "SAMPLE_FILES",
    "WIKILINK_SHARE",
    "detect_style",
    "forget_style",
    "resolve_style",
    "stored_styles",
]

ROOT_STYLES_KEY = "root_styles"
"""Meta key: the style each root's files were parsed with (``{name: style}``, JSON)."""

SAMPLE_FILES = 200
"""Most Markdown files read to judge a root by its wikilinks."""
WIKILINK_SHARE = 0.2
"""Share of sampled files with a wikilink from which a root is a note vault."""
_SAMPLE_BYTES = 65_536
_PARENTS = 2

_CODE = re.compile(r"^ {0,3}(`{3,}|~{3,})[^\n]*\n.*?^ {0,3}\1", re.M | re.S)
_INLINE_CODE = re.compile(r"`[^`\n]*`")
_WIKILINK = re.compile(r"\[\[[^\[\]\n]+\]\]")
_MARKDOWN = (".md", ".markdown")


def stored_styles(store: Meta) -> dict[str, str]:
    """Root name -> the style its files were last parsed with (``roots.NAME.style``)."""
    try:
        value = json.loads(store.meta(ROOT_STYLES_KEY) or "{}")
    except ValueError:
        return {}
    return {str(k): str(v) for k, v in value.items()} if isinstance(value, dict) else {}


def forget_style(store: Meta, name: str) -> None:
    """Drop the recorded style of root ``name`` (removed from the index): a root added later
    under that name is judged afresh."""
    styles = stored_styles(store)
    if styles.pop(name, None) is not None:
        store.set_meta(ROOT_STYLES_KEY, json.dumps(styles, sort_keys=True))


def resolve_style(configured: str, folder: Path, files: Sequence[str | Path] = ()) -> Style:
    """The root's style: ``configured`` unless it is ``auto``, else :func:`detect_style`."""
    if configured in ("notes", "docs", "logseq", "dendron"):
        return configured  # type: ignore[return-value]
    return detect_style(folder, files)


def detect_style(folder: Path, files: Sequence[str | Path] = ()) -> Style:
    """The style of the notes in ``folder`` (see the module docstring); ``files`` are the
    root's documents (their paths) when the caller has them (else a sample is walked)."""
    folder = Path(folder)
    for place in [folder, *list(folder.parents)[:_PARENTS]]:
        marker = _app_marker(place)
        if marker is not None:
            return marker
    if (folder / "pages").is_dir() and (folder / "journals").is_dir():
        return "logseq"
    if _head(folder / "root.md", 512).find("id: root") >= 0:
        return "dendron"
    # Paths as given (strings): a Path per file of a 14k-file root was 5% of a re-index.
    markdown = [f for f in files if str(f).casefold().endswith(_MARKDOWN)] or _walk_sample(folder)
    if not markdown:
        return "docs"
    step = max(1, len(markdown) // SAMPLE_FILES)
    sample = [Path(f) for f in markdown[::step][:SAMPLE_FILES]]
    linked = sum(1 for f in sample if _has_wikilink(_head(f, _SAMPLE_BYTES)))
    return "notes" if linked >= WIKILINK_SHARE * len(sample) else "docs"


def _app_marker(place: Path) -> Style | None:
    try:
        if (place / "logseq" / "config.edn").is_file():
            return "logseq"
        if (place / "dendron.yml").is_file() or (place / "dendron.code-workspace").is_file():
            return "dendron"
        if (place / ".obsidian").is_dir():
            return "notes"
        if (place / ".foam").is_dir():
            return "docs"
        for name in ("settings.json", "extensions.json"):
            if "foam" in _head(place / ".vscode" / name, _SAMPLE_BYTES).casefold():
                return "docs"
    except OSError:
        return None
    return None


def _head(path: Path, limit: int) -> str:
    """The first ``limit`` bytes of a regular file as text ("" when it cannot be read)."""
    try:
        if not path.is_file():
            return ""
        with path.open("rb") as fh:
            return fh.read(limit).decode("utf-8", errors="replace")
    except OSError:
        return ""


def _has_wikilink(text: str) -> bool:
    if "[[" not in text:
        return False
    return _WIKILINK.search(_INLINE_CODE.sub("", _CODE.sub("", text))) is not None


def _walk_sample(folder: Path) -> list[Path]:
    """Up to ``4 * SAMPLE_FILES`` Markdown files under ``folder``, hidden folders skipped."""
    found: list[Path] = []
    for top, dirs, names in os.walk(folder):
        dirs[:] = sorted(d for d in dirs if not d.startswith("."))
        found.extend(Path(top, n) for n in sorted(names) if n.casefold().endswith(_MARKDOWN))
        if len(found) >= 4 * SAMPLE_FILES:
            break
    return found
