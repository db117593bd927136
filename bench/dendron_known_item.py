"""Build a known-item evaluation set from the Dendron documentation vault.

    .venv/bin/python bench/dendron_known_item.py OUT [--vault DENDRON_VAULT]
    noteseek eval OUT --index DIR --json

Built the way ``hugo-docs-kis`` was: a note's own frontmatter description (``desc:``) is the
query, the note is the one relevant document, and the description is removed from the indexed
copy so it cannot match itself. Notes whose description is empty, or shared with another note
(an ambiguous known item), are indexed but give no query. The output is a vault dataset for
``noteseek eval``: ``vault/`` (every note, descriptions of query notes removed),
``queries.jsonl`` and ``qrels/test.tsv`` keyed by vault-relative path. Nothing is written into
the repository; the data stays in the shared folder.
"""

from __future__ import annotations

import argparse
import json
import re
import shutil
import sys
from collections import Counter
from pathlib import Path

import yaml

REPO = Path(__file__).resolve().parent.parent
DEFAULT_VAULT = REPO.parent / "shared" / "data" / "vaults" / "dendron-site" / "vault"
_FRONTMATTER = re.compile(r"\A---\r?\n(.*?)\r?\n---\r?\n", re.S)
_TOP_KEY = re.compile(r"^[A-Za-z_][\w-]*\s*:")


def description(text: str) -> str | None:
    """The note's ``desc`` as one line of text, or None when absent or empty."""
    m = _FRONTMATTER.match(text)
    if not m:
        return None
    try:
        meta = yaml.safe_load(m.group(1))
    except yaml.YAMLError:
        return None
    if not isinstance(meta, dict):
        return None
    value = meta.get("desc")
    if not isinstance(value, str):
        return None
    value = " ".join(value.split())
    return value or None


def without_description(text: str, desc: str) -> str:
    """The note without its ``desc`` entry, nor any other frontmatter entry repeating it.

    Dendron's publishing fields (``excerpt``) often copy the description; leaving them would let
    the query match itself. Continuation lines (indented or blank) go with their key.
    """
    m = _FRONTMATTER.match(text)
    if not m:
        return text
    try:
        meta = yaml.safe_load(m.group(1))
    except yaml.YAMLError:
        meta = {}
    drop = {"desc"}
    if isinstance(meta, dict):
        drop |= {
            str(k)
            for k, v in meta.items()
            if isinstance(v, str) and " ".join(v.split()).casefold() == desc.casefold()
        }
    out: list[str] = []
    skipping = False
    for line in m.group(1).split("\n"):
        key = _TOP_KEY.match(line)
        if key:
            skipping = key.group(0).rstrip(": \t") in drop
        if not skipping:
            out.append(line)
    return "---\n" + "\n".join(out) + "\n---\n" + text[m.end() :]


def build(vault: Path, out: Path) -> tuple[int, int]:
    """Write the dataset to ``out``; returns (notes, queries)."""
    notes = sorted(p for p in vault.rglob("*.md") if not any(x.startswith(".") for x in p.parts))
    descs: dict[str, str] = {}
    for note in notes:
        text = note.read_text(encoding="utf-8", errors="replace")
        desc = description(text)
        if desc:
            descs[note.relative_to(vault).as_posix()] = desc
    counts = Counter(d.casefold() for d in descs.values())
    queries = {rel: d for rel, d in descs.items() if counts[d.casefold()] == 1}
    if out.exists():
        shutil.rmtree(out)
    target = out / "vault"
    for note in notes:
        rel = note.relative_to(vault).as_posix()
        dest = target / rel
        dest.parent.mkdir(parents=True, exist_ok=True)
        text = note.read_text(encoding="utf-8", errors="replace")
        dest.write_text(
            without_description(text, queries[rel]) if rel in queries else text, encoding="utf-8"
        )
    lines = [
        json.dumps({"_id": f"q{i}", "text": desc}, ensure_ascii=False)
        for i, desc in enumerate(queries.values())
    ]
    (out / "queries.jsonl").write_text("\n".join(lines) + "\n", encoding="utf-8")
    (out / "qrels").mkdir()
    rows = ["query-id\tcorpus-id\tscore"]
    rows += [f"q{i}\t{rel}\t1" for i, rel in enumerate(queries)]
    (out / "qrels" / "test.tsv").write_text("\n".join(rows) + "\n", encoding="utf-8")
    return len(notes), len(queries)


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("out", type=Path)
    ap.add_argument("--vault", type=Path, default=DEFAULT_VAULT)
    args = ap.parse_args()
    if not args.vault.is_dir():
        print(f"skip: {args.vault} not found (the shared data folder is absent)")
        return 0
    notes, queries = build(args.vault, args.out)
    print(f"{args.out}: {notes} notes, {queries} queries (known items)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
