"""Git history: indexing rate, query latency and known-item quality on a real repository.

    .venv/bin/python bench/git_history.py [--bundle PATH] [--index-dir DIR] [--no-embed]
        [--queries 200] [--modes keyword semantic hybrid] [--workers 0] [--json]
        [--set git.embed_diffs=false] [--seed 13] [--half a|b]

The repository is ``../shared/data/git/dendron-site.bundle`` (4,301 commits, 2020-2022),
cloned into a temporary folder and indexed as one root of kind ``git``:

- **keyword indexing rate**: ``index(keyword_only=True)`` on a fresh index, in commits/s (the
  reference system publishes about 60 commits/s; the target here is 300);
- **semantic indexing rate**: ``embed()`` of every commit chunk, in chunks/s and commits/s
  (skipped with ``--no-embed``; ``--index-dir`` keeps the index so a second run reuses it);
- **query latency**: p50 and p95 of ``search_commits(SearchRequest(query, top_k=10))`` per
  mode, over the known-item queries below, after one warm-up query;
- **known-item quality**, two sets built from the history itself (seeded sample):
  - ``subject``: a commit's own subject (conventional prefix such as ``docs:`` removed) as the
    query, for commits whose subject has at least four words and is unique in the history:
    "I remember roughly what the message said". Answered by that commit's hash.
  - ``added-page``: the ``title`` of a note a commit added (frontmatter at that commit), for
    commits that add one to three Markdown notes: "which commit added the page on X?". Most
    such commits are titled ``sync`` or ``update``: the answer is found by what it changed,
    not by its message, while every later commit that edits the note competes with it
    (Dendron rewrites ``updated:`` beside ``title:`` on each edit, so those hunks hold the
    title too). Answered by the adding commit's hash.

  Printed per set and mode: recall@1, recall@10 and MRR@10 (one relevant commit per query;
  a note added twice, deleted in between, has both adding commits relevant).
"""

from __future__ import annotations

import argparse
import hashlib
import json
import random
import re
import statistics
import subprocess
import sys
import tempfile
import time
from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from noteseek.engine import Engine, SearchRequest, open_engine
from noteseek.eval.metrics import percentile

DATA = Path(__file__).resolve().parent.parent.parent / "shared" / "data"
BUNDLE = DATA / "git" / "dendron-site.bundle"
MODES = ("keyword", "semantic", "hybrid")
TOP = 10
SEED = 13
ROOT = "site"
PREFIX = re.compile(r"^[a-z]+(\([^)]*\))?!?:\s*", re.IGNORECASE)
TITLE = re.compile(r"^title:\s*(.+?)\s*$", re.MULTILINE)


@dataclass(frozen=True)
class KnownItem:
    query_id: str
    text: str
    relevant: frozenset[str]


@dataclass
class ModeResult:
    ranks: dict[str, int | None] = field(default_factory=dict)
    latencies_ms: list[float] = field(default_factory=list)


def git(repo: Path, *args: str) -> str:
    done = subprocess.run(
        ["git", *args],
        cwd=repo,
        capture_output=True,
        check=True,
        encoding="utf-8",
        errors="replace",
    )
    return done.stdout


def in_half(query_id: str, half: str) -> bool:
    """Whether a query belongs to ``half`` (``a`` or ``b``, by a stable hash; ``all``: yes):
    two halves that never share a query, to tune on one and report on the other."""
    if half == "all":
        return True
    return (hashlib.sha256(query_id.encode()).digest()[0] % 2 == 0) == (half == "a")


def subject_set(repo: Path, size: int, rng: random.Random, half: str = "all") -> list[KnownItem]:
    """Commits found by their own subject, prefix removed (unique subjects of >= 4 words)."""
    rows = [
        line.split("\0") for line in git(repo, "log", "--all", "--format=%H%x00%s").splitlines()
    ]
    counts = Counter(subject for _, subject in rows)
    items = []
    for sha, subject in rows:
        text = PREFIX.sub("", subject).strip()
        if counts[subject] == 1 and len(text.split()) >= 4 and not subject.startswith("Merge"):
            items.append(KnownItem(f"subject-{sha[:10]}", text, frozenset({sha})))
    items = [i for i in items if in_half(i.query_id, half)]
    return sorted(rng.sample(items, min(size, len(items))), key=lambda k: k.query_id)


def added_page_set(repo: Path, size: int, rng: random.Random, half: str = "all") -> list[KnownItem]:
    """Notes found by their title, answered by the commit that added them."""
    log = git(
        repo,
        "log",
        "--all",
        "--no-merges",
        "--diff-filter=A",
        "--no-renames",
        "--name-only",
        "--format=%x01%H",
        "--",
        "*.md",
    )
    adders: dict[str, set[str]] = {}
    candidates: list[tuple[str, str]] = []
    for block in log.split("\x01")[1:]:
        lines = [line for line in block.splitlines() if line.strip()]
        sha, paths = lines[0], lines[1:]
        for path in paths:
            adders.setdefault(path, set()).add(sha)
        if 1 <= len(paths) <= 3:
            candidates.extend((sha, path) for path in paths)
    titles: dict[tuple[str, str], str] = {}
    for sha, path in candidates:
        head = git(repo, "show", f"{sha}:{path}")[:2000]
        found = TITLE.search(head.split("\n---", 1)[0]) if head.startswith("---") else None
        if found:
            titles[(sha, path)] = found.group(1).strip().strip("'\"")
    seen = Counter(titles.values())
    items = [
        KnownItem(f"added-{sha[:10]}-{path}", title, frozenset(adders[path]))
        for (sha, path), title in titles.items()
        if seen[title] == 1 and len(title) >= 3 and in_half(f"added-{sha[:10]}-{path}", half)
    ]
    return sorted(rng.sample(items, min(size, len(items))), key=lambda k: k.query_id)


def open_index(repo: Path, index_dir: Path, workers: int, settings: Sequence[str] = ()) -> Engine:
    """The bench's engine; ``settings`` are ``KEY=VALUE`` config overrides (``git.embed_diffs
    =false``), values read as JSON where they parse (numbers, booleans), else as text."""
    flags: dict[str, Any] = {
        "index.dir": str(index_dir),
        f"roots.{ROOT}.path": str(repo),
        f"roots.{ROOT}.kind": "git",
        "memory.enabled": False,
        "index.workers": workers,
    }
    for setting in settings:
        key, _, value = setting.partition("=")
        try:
            flags[key] = json.loads(value)
        except json.JSONDecodeError:
            flags[key] = value
    index_dir.mkdir(parents=True, exist_ok=True)
    return open_engine(index_dir, flags=flags, environ={})


def run_mode(engine: Engine, items: Sequence[KnownItem], mode: str) -> ModeResult:
    result = ModeResult()
    engine.search_commits(
        SearchRequest(items[0].text, mode=mode, top_k=TOP)
    )  # loads the model, warms caches
    for item in items:
        started = time.perf_counter()
        found = engine.search_commits(SearchRequest(item.text, mode=mode, top_k=TOP))
        result.latencies_ms.append((time.perf_counter() - started) * 1000)
        hashes = [c.hash for c in found.commits]
        result.ranks[item.query_id] = next(
            (i + 1 for i, h in enumerate(hashes) if h in item.relevant), None
        )
    return result


def quality(result: ModeResult) -> dict[str, float]:
    ranks = list(result.ranks.values())
    n = len(ranks) or 1
    return {
        "recall@1": sum(1 for r in ranks if r == 1) / n,
        "recall@10": sum(1 for r in ranks if r is not None) / n,
        "mrr@10": sum(1 / r for r in ranks if r is not None) / n,
    }


def latency(values: list[float]) -> dict[str, float]:
    return {
        "p50_ms": round(statistics.median(values), 2),
        "p95_ms": round(percentile(values, 95), 2),
    }


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--bundle", type=Path, default=BUNDLE)
    parser.add_argument("--index-dir", type=Path, help="keep the index here (reused if present)")
    parser.add_argument("--no-embed", action="store_true", help="keyword indexing and search only")
    parser.add_argument("--queries", type=int, default=200, help="queries per known-item set")
    parser.add_argument("--modes", nargs="+", choices=MODES, default=list(MODES))
    parser.add_argument("--workers", type=int, default=0, help="index.workers (0 = one per core)")
    parser.add_argument("--json", action="store_true")
    parser.add_argument(
        "--half",
        choices=["all", "a", "b"],
        default="all",
        help="draw queries from one half of the candidates only (tune on a, report on b)",
    )
    parser.add_argument(
        "--seed", type=int, default=SEED, help="draws the query sets (another seed: another split)"
    )
    parser.add_argument(
        "--set",
        dest="settings",
        action="append",
        default=[],
        metavar="KEY=VALUE",
        help="a config override, e.g. git.embed_diffs=false (repeatable)",
    )
    args = parser.parse_args(argv)
    if not args.bundle.exists():
        print(f"no bundle at {args.bundle}: the shared data is absent", file=sys.stderr)
        return 2
    modes = [m for m in args.modes if not (args.no_embed and m != "keyword")]
    out: dict[str, Any] = {
        "bundle": args.bundle.name,
        "settings": args.settings,
        "seed": args.seed,
        "half": args.half,
    }
    with tempfile.TemporaryDirectory(prefix="noteseek-git-bench-") as tmp:
        repo = Path(tmp) / "repo"
        subprocess.run(["git", "clone", "-q", str(args.bundle), str(repo)], check=True)
        commits = int(git(repo, "rev-list", "--all", "--count").strip())
        rng = random.Random(args.seed)
        sets = {
            "subject": subject_set(repo, args.queries, rng, args.half),
            "added-page": added_page_set(repo, args.queries, rng, args.half),
        }
        index_dir = args.index_dir or Path(tmp) / "index"
        fresh = not (index_dir / "index.db").exists()
        with open_index(repo, index_dir, args.workers, args.settings) as engine:
            started = time.perf_counter()
            report = engine.index(keyword_only=True)
            seconds = time.perf_counter() - started
            stats = engine.store.stats()
            out["index"] = {
                "commits": commits,
                "indexed": report.added,
                "fresh": fresh,
                "problems": len(report.problems),
                "keyword_seconds": round(seconds, 2),
                "commits_per_second": round(report.added / seconds, 1) if report.added else None,
                "chunks": stats["chunks"],
                "index_mb": round(stats["index_bytes"] / 2**20, 1),
            }
            if not args.no_embed:
                embedded = engine.embed()
                out["embedding"] = {
                    "chunks": embedded.embedded,
                    "seconds": round(embedded.seconds, 1),
                    "chunks_per_second": (
                        round(embedded.embedded / embedded.seconds, 1)
                        if embedded.embedded and embedded.seconds
                        else None
                    ),
                    "commits_per_second": (
                        round(commits / embedded.seconds, 2)
                        if embedded.embedded and embedded.seconds
                        else None
                    ),
                }
            out["sets"] = {}
            for name, items in sets.items():
                if not items:  # a history without such commits (no Markdown notes added)
                    out["sets"][name] = {"queries": 0}
                    continue
                per_mode: dict[str, Any] = {}
                for mode in modes:
                    result = run_mode(engine, items, mode)
                    per_mode[mode] = {**quality(result), **latency(result.latencies_ms)}
                out["sets"][name] = {"queries": len(items), "modes": per_mode}
    if args.json:
        print(json.dumps(out, indent=2))
    else:
        print_report(out)
    return 0


def print_report(out: dict[str, Any]) -> None:
    index = out["index"]
    print(
        f"{out['bundle']}: {index['commits']} commits, {index['chunks']} chunks; "
        f"keyword indexing {index['keyword_seconds']} s "
        f"({index['commits_per_second']} commits/s, {index['problems']} problems"
        f"{'' if index['fresh'] else ', index reused'})"
    )
    if "embedding" in out:
        e = out["embedding"]
        print(
            f"embedding: {e['chunks']} chunks in {e['seconds']} s "
            f"({e['chunks_per_second']} chunks/s, {e['commits_per_second']} commits/s)"
        )
    print()
    print("| set | queries | mode | R@1 | R@10 | MRR@10 | p50 ms | p95 ms |")
    print("|---|---|---|---|---|---|---|---|")
    for name, found in out["sets"].items():
        for mode, r in found["modes"].items():
            print(
                f"| {name} | {found['queries']} | {mode} | {r['recall@1']:.3f} | "
                f"{r['recall@10']:.3f} | {r['mrr@10']:.3f} | {r['p50_ms']} | {r['p95_ms']} |"
            )


if __name__ == "__main__":
    sys.exit(main())
