"""Count notes whose title is a later heading (a section heading, not the note's first content).

    .venv/bin/python bench/titles.py FOLDER [FOLDER ...]

Parses every ``*.md`` under each folder the way ``noteseek index`` does (the root's style
detected as indexing detects it) and prints, per folder: notes, titles from frontmatter, from
a heading, from the file name, and the notes whose title is the text of a heading that is not
the first content of the note (the zettelkasten's "Locations" titles).
"""

from __future__ import annotations

import argparse
import sys
from collections import Counter
from pathlib import Path

from noteseek.parse import parse_markdown

try:  # the root's style (issue 19); absent before it
    from noteseek.indexing.styles import detect_style
    from noteseek.parse.conventions import parse_with_style
except ImportError:  # pragma: no cover - the "before" run
    detect_style = None  # type: ignore[assignment]
    parse_with_style = None  # type: ignore[assignment]


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("folders", nargs="+", type=Path)
    args = ap.parse_args()
    for folder in args.folders:
        files = sorted(p for p in folder.rglob("*.md") if not _hidden(p, folder))
        style = detect_style(folder) if detect_style else "(first H1)"
        counts: Counter[str] = Counter()
        later: list[tuple[str, str]] = []
        for file in files:
            rel = file.relative_to(folder).as_posix()
            text = file.read_text(encoding="utf-8", errors="replace")
            if parse_with_style is not None:
                doc = parse_with_style(text, rel, style)
            else:
                doc = parse_markdown(text, rel)
            counts["notes"] += 1
            fm = doc.frontmatter.get("title")
            headings = _headings(doc)
            if isinstance(fm, str) and fm.strip() == doc.title:
                counts["frontmatter"] += 1
            elif doc.title in {h for h, _ in headings}:
                counts["heading"] += 1
                if not any(h == doc.title and first for h, first in headings):
                    counts["later heading"] += 1
                    later.append((rel, doc.title))
            else:
                counts["file name or other"] += 1
        print(
            f"{folder}: style {style}; notes {counts['notes']}, frontmatter "
            f"{counts['frontmatter']}, heading {counts['heading']}, file name or other "
            f"{counts['file name or other']}, LATER HEADING {counts['later heading']}"
        )
        for rel, title in later[:5]:
            print(f"    {rel}: {title!r}")
    return 0


def _headings(doc: object) -> list[tuple[str, bool]]:
    """(heading text, whether it is the note's first content) for every heading (HTML
    blocks, such as an ``<!-- omit in toc -->`` comment, are not content)."""
    sections = getattr(doc, "sections", [])
    blocks = [b for s in sections for b in s.blocks if b.kind != "html"]
    if not blocks:
        return []
    first = min(b.start_line for b in blocks)
    return [
        (s.heading_path[-1], s.start_line == first)
        for s in sections
        if s.level > 0 and s.heading_path
    ]


def _hidden(path: Path, root: Path) -> bool:
    return any(part.startswith(".") for part in path.relative_to(root).parts)


if __name__ == "__main__":
    sys.exit(main())
