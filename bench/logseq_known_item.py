"""Build a known-item evaluation set from Logseq's documentation graph.

    .venv/bin/python bench/logseq_known_item.py OUT [--graph LOGSEQ_DOCS]
    noteseek eval OUT --index DIR --json

Two kinds of query, each with one relevant page:

* ``desc-*``: a page's own ``description::`` property (as hugo-docs-kis uses a page's
  description), removed from the indexed copy so it cannot match itself;
* ``alias-*``: a page's ``alias::`` value ("I remember the page by another name"), left in
  place: the page must be found by the alias it declares.

Descriptions or aliases shared by several pages give no query. The output is a vault dataset
for ``noteseek eval``: ``vault/`` (the graph, with ``pages/`` and ``journals/``),
``queries.jsonl`` and ``qrels/test.tsv`` keyed by vault-relative path.
"""

from __future__ import annotations

import argparse
import json
import re
import shutil
import sys
from collections import Counter
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
DEFAULT_GRAPH = REPO.parent / "shared" / "data" / "vaults" / "logseq-docs"
_PROPERTY = re.compile(r"^(?:- )?([A-Za-z][\w-]*):: ?(.*)$")


def page_properties(text: str) -> list[tuple[int, str, str]]:
    """(line index, key, value) of the page's leading property lines."""
    out: list[tuple[int, str, str]] = []
    for index, line in enumerate(text.split("\n")):
        match = _PROPERTY.match(line.strip())
        if not match:
            break
        out.append((index, match.group(1).lower(), match.group(2).strip()))
    return out


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("out", type=Path)
    ap.add_argument("--graph", type=Path, default=DEFAULT_GRAPH)
    args = ap.parse_args()
    if not args.graph.is_dir():
        print(f"no Logseq graph at {args.graph}", file=sys.stderr)
        return 1
    vault = args.out / "vault"
    if vault.exists():
        shutil.rmtree(vault)
    shutil.copytree(args.graph, vault, ignore=shutil.ignore_patterns(".*"))
    pages = sorted(p for p in vault.rglob("*.md") if p.parts[len(vault.parts)] == "pages")
    descs: dict[str, str] = {}
    aliases: dict[str, str] = {}
    for page in pages:
        rel = page.relative_to(vault).as_posix()
        for _, key, value in page_properties(page.read_text(encoding="utf-8")):
            if key == "description" and value:
                descs[rel] = " ".join(value.split())
            elif key == "alias":
                for alias in re.split(r",\s*", value):
                    alias = alias.strip().strip("[]#").strip()
                    if alias:
                        aliases[f"{rel}\x00{alias}"] = alias
    desc_count = Counter(d.casefold() for d in descs.values())
    alias_count = Counter(a.casefold() for a in aliases.values())
    queries: list[tuple[str, str, str]] = []
    for n, (rel, desc) in enumerate(sorted(descs.items())):
        if desc_count[desc.casefold()] == 1:
            queries.append((f"desc-{n}", desc, rel))
            page = vault / rel
            lines = page.read_text(encoding="utf-8").split("\n")
            drop = {i for i, key, _ in page_properties("\n".join(lines)) if key == "description"}
            page.write_text("\n".join(x for i, x in enumerate(lines) if i not in drop), "utf-8")
    for n, (key, alias) in enumerate(sorted(aliases.items())):
        if alias_count[alias.casefold()] == 1:
            queries.append((f"alias-{n}", alias, key.split("\x00")[0]))
    (args.out / "qrels").mkdir(parents=True, exist_ok=True)
    with (args.out / "queries.jsonl").open("w", encoding="utf-8") as fh:
        for qid, text, _ in queries:
            fh.write(json.dumps({"_id": qid, "text": text}) + "\n")
    with (args.out / "qrels" / "test.tsv").open("w", encoding="utf-8") as fh:
        fh.write("query-id\tcorpus-id\tscore\n")
        for qid, _, rel in queries:
            fh.write(f"{qid}\t{rel}\t1\n")
    kinds = Counter(q[0].split("-")[0] for q in queries)
    print(f"{len(pages)} pages, {len(queries)} queries ({dict(kinds)}) -> {args.out}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
