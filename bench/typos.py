"""Typo tolerance and exact titles: known-item search for note titles, typed right and wrong.

    .venv/bin/python bench/typos.py [--vault NAME=FOLDER ...] [--queries 100] [--seed 34]
        [--set KEY=VALUE ...] [--json]

Each vault (default: the shared foam, dendron-site and logseq-docs vaults) is indexed
keyword-only into a temporary folder. Its notes' titles as the index holds them, unique in
the vault and holding a word of at least five letters, are the known items; a fixed seed
draws ``--queries`` of them. Two query sets per vault, one relevant note per query:

- **exact**: the title as it is. Counted: the note is first (item 5 of issue 34: an exact
  title puts its note first).
- **typo**: the title with one letter-level typo in one of its words of five or more letters
  (chosen by the seed): a dropped letter, two neighbours swapped, or one letter replaced by
  a neighbour on a QWERTY keyboard (the three equally often). Counted: the note is in the
  top 5, and in the top 1.

``--set search.typo_tolerance=false`` gives the numbers without typo tolerance. The typos
are made from the titles alone, so the set is the same whatever the settings.
"""

from __future__ import annotations

import argparse
import json
import random
import re
import sys
import tempfile
import time
from collections import Counter
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from noteseek.engine import Engine, SearchRequest, open_engine

DATA = Path(__file__).resolve().parent.parent.parent / "shared" / "data" / "vaults"
VAULTS = {
    "foam": DATA / "foam",
    "dendron": DATA / "dendron-site" / "vault",
    "logseq": DATA / "logseq-docs",
}
ROOT = "notes"
_QWERTY = ["qwertyuiop", "asdfghjkl", "zxcvbnm"]
_LONG_WORD = re.compile(r"[A-Za-z]{5,}")


@dataclass(frozen=True)
class Item:
    title: str
    path: str
    typo: str
    kind: str
    """drop, swap or replace."""


def neighbours(letter: str) -> str:
    """The letters next to ``letter`` on a QWERTY keyboard (same row and the rows around)."""
    for r, row in enumerate(_QWERTY):
        c = row.find(letter.lower())
        if c < 0:
            continue
        near = {row[i] for i in (c - 1, c + 1) if 0 <= i < len(row)}
        for other in (r - 1, r + 1):
            if 0 <= other < len(_QWERTY):
                near |= {_QWERTY[other][i] for i in (c - 1, c) if 0 <= i < len(_QWERTY[other])}
        return "".join(sorted(near - {letter.lower()}))
    return "e"


def make_typo(word: str, rng: random.Random) -> tuple[str, str]:
    """``word`` with one typo inside it (never its first letter: people rarely miss that)."""
    kind = rng.choice(["drop", "swap", "replace"])
    i = rng.randrange(1, len(word) - 1)
    if kind == "drop":
        return word[:i] + word[i + 1 :], kind
    if kind == "swap" and word[i] != word[i + 1]:
        return word[:i] + word[i + 1] + word[i] + word[i + 2 :], kind
    letter = rng.choice(neighbours(word[i]))
    letter = letter.upper() if word[i].isupper() else letter
    return word[:i] + letter + word[i + 1 :], "replace"


def known_items(engine: Engine, size: int, seed: int) -> list[Item]:
    files = list(engine.store.iter_files())
    counts = Counter(f.title.casefold() for f in files)
    rng = random.Random(seed)
    eligible = sorted(
        (f.title, f.path)
        for f in files
        if counts[f.title.casefold()] == 1 and _LONG_WORD.search(f.title)
    )
    items: list[Item] = []
    for title, path in rng.sample(eligible, min(size, len(eligible))):
        words = list(_LONG_WORD.finditer(title))
        m = rng.choice(words)
        typo, kind = make_typo(m.group(0), rng)
        items.append(Item(title, path, title[: m.start()] + typo + title[m.end() :], kind))
    return items


def rank_of(engine: Engine, query: str, path: str) -> int | None:
    found = engine.search(SearchRequest(query, top_k=10, mode="keyword"))
    for hit in found.hits:
        if hit.path == path:
            return hit.rank
    return None


def run_vault(name: str, folder: Path, args: argparse.Namespace) -> dict[str, Any]:
    with tempfile.TemporaryDirectory(prefix=f"typos-{name}-") as tmp:
        flags: dict[str, Any] = {
            "index.dir": tmp,
            f"roots.{ROOT}.path": str(folder),
            "memory.enabled": False,
            "embedding.enabled": False,
        }
        for setting in args.set:
            key, _, value = setting.partition("=")
            flags[key] = value
        with open_engine(Path(tmp), flags=flags, environ={}) as engine:
            engine.index(keyword_only=True)
            items = known_items(engine, args.queries, args.seed)
            exact_first = typo_top5 = typo_top1 = 0
            by_kind: Counter[str] = Counter()
            kinds: Counter[str] = Counter()
            misses: list[str] = []
            exact_s = typo_s = 0.0
            rank_of(engine, "warm up", "")  # the first search opens the index's values
            for item in items:
                started = time.perf_counter()
                if rank_of(engine, item.title, item.path) == 1:
                    exact_first += 1
                exact_s += time.perf_counter() - started
                started = time.perf_counter()
                rank = rank_of(engine, item.typo, item.path)
                typo_s += time.perf_counter() - started
                kinds[item.kind] += 1
                if rank is not None and rank <= 5:
                    typo_top5 += 1
                    by_kind[item.kind] += 1
                else:
                    misses.append(f"{item.typo!r} (for {item.title!r}): rank {rank}")
                typo_top1 += rank == 1
    n = len(items) or 1
    return {
        "vault": name,
        "queries": len(items),
        "exact@1": round(exact_first / n, 3),
        "typo@5": round(typo_top5 / n, 3),
        "typo@1": round(typo_top1 / n, 3),
        "typo@5 by kind": {k: f"{by_kind[k]}/{kinds[k]}" for k in sorted(kinds)},
        "ms per exact query": round(exact_s * 1000 / n, 1),
        "ms per typo query": round(typo_s * 1000 / n, 1),
        "misses": misses,
    }


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--vault", action="append", default=[], help="NAME=FOLDER (repeatable)")
    ap.add_argument("--queries", type=int, default=100)
    ap.add_argument("--seed", type=int, default=34)
    ap.add_argument("--set", action="append", default=[], help="KEY=VALUE setting")
    ap.add_argument("--json", action="store_true")
    args = ap.parse_args()
    vaults = dict(v.split("=", 1) for v in args.vault) if args.vault else VAULTS
    results = [run_vault(name, Path(folder), args) for name, folder in vaults.items()]
    if args.json:
        print(json.dumps(results, indent=2))
        return 0
    print(
        "| vault | queries | exact title @1 | typo @5 | typo @1 | @5 by typo kind "
        "| ms per exact / typo query |"
    )
    print("|---|---|---|---|---|---|---|")
    for r in results:
        kinds = ", ".join(f"{k} {v}" for k, v in r["typo@5 by kind"].items())
        print(
            f"| {r['vault']} | {r['queries']} | {r['exact@1']:.3f} | {r['typo@5']:.3f} | "
            f"{r['typo@1']:.3f} | {kinds} | {r['ms per exact query']} / "
            f"{r['ms per typo query']} |"
        )
    for r in results:
        print(f"\n{r['vault']}: {len(r['misses'])} typo queries missed the top 5", file=sys.stderr)
        for miss in r["misses"][:15]:
            print(f"  {miss}", file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main())
