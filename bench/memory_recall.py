"""Memory retrieval: evidence recall on LoCoMo conversations kept as daily logs.

    .venv/bin/python bench/memory_recall.py [--chunk-chars 300 900 ...] [--kind files]
        [--chunk-key chunking.max_chars] [--expand 900] [--set search.document_weight=0 ...]
        [--recency 7:1.2 ...] [--modes keyword semantic hybrid] [--index-root DIR] [--json]

Each conversation of ``../shared/data/memory/locomo-dev`` (``conv-26/memory/YYYY-MM-DD.md``
...) is indexed on its own, as its own root of kind ``--kind`` (``files`` today; ``memory``
once that kind exists), and each of its questions is searched in keyword, semantic and hybrid
(the default pipeline) mode. A question is found at k when one of the top k results covers a
line that answers it (``noteseek.eval.evidence``). Printed per chunk size: recall@5 and @10 per
mode, overall, per conversation and per LoCoMo category (1 multi-hop, 2 temporal, 3
open-domain, 4 single-hop), recall within a budget of result characters and the characters the
top 10 hold (bigger chunks cover more lines per result, but cost more to read: compare sizes at
equal reading cost), chunk count and mean chunk length, index time (keyword rows and embedding
apart, on a fresh index) and query p50 per mode. Several ``--chunk-chars`` add a summary table.

``--chunk-key`` is the setting ``--chunk-chars`` sets (``chunking.max_chars``; a memory root
may read its own). ``--expand N`` searches with ``expand_chars=N`` (each result grows to its
neighbouring chunks within N characters, ``search/expand.py``): small chunks to match, bigger
windows to read. ``--recency DAYS:FACTOR`` re-ranks each hybrid result list as a recency boost
would if the questions were asked the day after the conversation's last log (dates from the
file names); the result lists are fetched deeper for it. Recency of the running pipeline is
off: the files' times say when they were copied, not when they were written.
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
import tempfile
import time
from collections.abc import Sequence
from dataclasses import dataclass, field
from datetime import date
from pathlib import Path, PurePosixPath
from typing import Any

from noteseek.engine import Engine, SearchRequest, open_engine
from noteseek.eval.evidence import (
    EvidenceSet,
    MemoryQuery,
    Retrieved,
    found_ranks,
    load_evidence_set,
    recall_report,
)
from noteseek.eval.metrics import percentile
from noteseek.search import recency
from noteseek.types import Hit

DATA = Path(__file__).resolve().parent.parent.parent / "shared" / "data"
DEFAULT_SET = DATA / "memory" / "locomo-dev"
MODES = ("keyword", "semantic", "hybrid")
KS = (5, 10)
BUDGETS = (1000, 2000, 4000)
"""Result characters an agent reads (about 250, 500 and 1,000 tokens)."""
FETCH = 10
RECENCY_FETCH = 50


@dataclass
class IndexStats:
    files: int = 0
    chunks: int = 0
    chunk_chars: list[int] = field(default_factory=list)
    keyword_seconds: float = 0.0
    embedding_seconds: float = 0.0
    fresh: bool = True
    """False when ``--index-root`` already held this index (times are then of a no-op)."""


@dataclass
class ModeRun:
    results: dict[str, list[Retrieved]] = field(default_factory=dict)
    latencies_ms: list[float] = field(default_factory=list)


def parse_value(text: str) -> Any:
    """A ``--set`` value: JSON when it parses (numbers, booleans, lists), else the string."""
    try:
        return json.loads(text)
    except ValueError:
        return text


def open_conversation(
    evidence_set: EvidenceSet,
    conversation: str,
    index_dir: Path,
    kind: str,
    extra: dict[str, Any],
) -> Engine:
    """An engine whose only root is ``conversation``'s folder, its index in ``index_dir``."""
    flags: dict[str, Any] = {
        "index.dir": str(index_dir),
        f"roots.{conversation}.path": str(evidence_set.folder_of(conversation)),
        f"roots.{conversation}.kind": kind,
        "search.recency": "off",
        **extra,
    }
    index_dir.mkdir(parents=True, exist_ok=True)
    return open_engine(index_dir, flags=flags, environ={})


def build_index(engine: Engine) -> IndexStats:
    """Keyword rows, then vectors, timed apart; what the index holds."""
    stats = IndexStats()
    started = time.perf_counter()
    report = engine.index(keyword_only=True)
    stats.keyword_seconds = time.perf_counter() - started
    stats.fresh = report.added > 0
    started = time.perf_counter()
    embedded = engine.embed()
    stats.embedding_seconds = time.perf_counter() - started
    if embedded.notice:
        print(f"note: {embedded.notice}", file=sys.stderr)
    for file in engine.store.iter_files():
        stats.files += 1
        for row in engine.store.file_chunks(file.file_id):
            stats.chunks += 1
            stats.chunk_chars.append(len(row.text))
    return stats


def retrieved(engine: Engine, hits: Sequence[Hit]) -> list[Retrieved]:
    """The hits as line ranges, each with the length of the text an agent would read."""
    out = []
    for hit in hits:
        if hit.text is not None:  # expanded
            chars = len(hit.text)
        else:
            row = engine.store.chunk_by_id(hit.chunk_id)
            chars = len(row.text) if row is not None else 0
        out.append(Retrieved(hit.path, hit.start_line, hit.end_line, chars))
    return out


def run_mode(
    engine: Engine, queries: Sequence[MemoryQuery], mode: str, expand_chars: int
) -> ModeRun:
    """Each question's top results in ``mode``, and how long each search took."""
    run = ModeRun()

    def request(text: str) -> SearchRequest:
        return SearchRequest(
            text,
            top_k=FETCH,
            mode=mode,
            snippets=False,
            expand_chars=expand_chars,
            source=source_of(engine),
        )

    engine.search(request(queries[0].text))  # loads the model
    hits_of: dict[str, list[Hit]] = {}
    for query in queries:
        started = time.perf_counter()
        hits = engine.search(request(query.text)).hits
        run.latencies_ms.append((time.perf_counter() - started) * 1000)
        hits_of[query.query_id] = hits
    run.results = {qid: retrieved(engine, hits) for qid, hits in hits_of.items()}
    return run


def source_of(engine: Engine) -> str:
    """``memory`` when the conversations are memory roots (the memory defaults apply: recency,
    no whole-file keyword weight), else ``docs``."""
    kinds = engine.kinds()
    return (
        "memory"
        if any(k == "memory" and n.startswith("conv-") for n, k in kinds.items())
        else "docs"
    )


def log_date(path: str) -> date | None:
    try:
        return date.fromisoformat(PurePosixPath(path).stem)
    except ValueError:
        return None


def with_recency(
    engine: Engine,
    queries: Sequence[MemoryQuery],
    tiers: list[tuple[float, float]],
    expand_chars: int,
) -> ModeRun:
    """Hybrid results re-ranked by a recency boost as of the day after the last log."""
    dates = [d for f in engine.store.iter_files() if (d := log_date(f.path)) is not None]
    now = (max(dates).toordinal() + 1) * recency.DAY
    run = ModeRun()
    for query in queries:
        hits = engine.search(
            SearchRequest(
                query.text,
                top_k=RECENCY_FETCH,
                mode="hybrid",
                snippets=False,
                expand_chars=expand_chars,
                source=source_of(engine),
            )
        ).hits

        def boosted(hit: Hit) -> float:
            day = log_date(hit.path)
            if day is None:
                return hit.score
            return hit.score * recency.factor(day.toordinal() * recency.DAY, now, tiers)

        ranked = sorted(hits, key=boosted, reverse=True)[:FETCH]
        run.results[query.query_id] = retrieved(engine, ranked)
    return run


def setting(settings: Any, key: str) -> Any:
    """The value of a dotted setting (``chunking.max_chars``)."""
    for part in key.split("."):
        settings = settings[part] if isinstance(settings, dict) else getattr(settings, part)
    return settings


def measure(
    evidence_set: EvidenceSet,
    index_root: Path,
    args: argparse.Namespace,
    chunk_chars: int | None,
) -> dict[str, Any]:
    """Index every conversation with these settings, search its questions, score the runs."""
    extra = dict(parse_setting(s) for s in args.set)
    flags = {**extra, **({args.chunk_key: chunk_chars} if chunk_chars else {})}
    tiers = [parse_tier(t) for t in args.recency]
    modes = list(args.modes) + (["hybrid+recency"] if tiers else [])
    runs: dict[str, ModeRun] = {mode: ModeRun() for mode in modes}
    index: dict[str, IndexStats] = {}
    for conversation in evidence_set.conversations:
        label = f"{conversation}-{args.kind}-{args.chunk_key}-{chunk_chars or 'default'}"
        engine = open_conversation(evidence_set, conversation, index_root / label, args.kind, flags)
        if args.expand is None:
            args.expand = engine.settings.memory.expand_chars if args.kind == "memory" else 0
        try:
            index[conversation] = build_index(engine)
            queries = evidence_set.queries_of(conversation)
            for mode in args.modes:
                part = run_mode(engine, queries, mode, args.expand)
                runs[mode].results.update(part.results)
                runs[mode].latencies_ms.extend(part.latencies_ms)
            if tiers:
                recent = with_recency(engine, queries, tiers, args.expand)
                runs["hybrid+recency"].results.update(recent.results)
            settings = engine.settings
        finally:
            engine.close()
    reports = {
        mode: recall_report(run.results, evidence_set, KS, BUDGETS) for mode, run in runs.items()
    }
    per_conversation = {
        mode: {
            conversation: recall_report(
                {
                    q.query_id: run.results[q.query_id]
                    for q in evidence_set.queries_of(conversation)
                },
                evidence_set,
                KS,
            ).recall[10]
            for conversation in evidence_set.conversations
        }
        for mode, run in runs.items()
    }
    chars = [c for s in index.values() for c in s.chunk_chars]
    return {
        "chunk_chars": setting(settings, args.chunk_key),
        "expand_chars": args.expand,
        "kind": args.kind,
        "model": settings.embedding.model if settings.embedding.enabled else None,
        "settings": extra,
        "recency_tiers": tiers,
        "index": {
            conversation: {
                "files": s.files,
                "chunks": s.chunks,
                "mean_chunk_chars": round(statistics.mean(s.chunk_chars or [0])),
                "keyword_seconds": round(s.keyword_seconds, 2),
                "embedding_seconds": round(s.embedding_seconds, 2),
                "fresh": s.fresh,
            }
            for conversation, s in index.items()
        },
        "chunks": len(chars),
        "mean_chunk_chars": round(statistics.mean(chars or [0])),
        "modes": {
            mode: {
                **reports[mode].to_dict(),
                "recall@10_per_conversation": {
                    c: round(v, 4) for c, v in per_conversation[mode].items()
                },
                "p50_ms": (
                    round(percentile(runs[mode].latencies_ms, 50), 2)
                    if runs[mode].latencies_ms
                    else "-"
                ),
                "ranks": found_ranks(runs[mode].results, evidence_set),
            }
            for mode in modes
        },
    }


def parse_setting(text: str) -> tuple[str, Any]:
    key, sep, value = text.partition("=")
    if not sep:
        raise SystemExit(f"--set wants KEY=VALUE, got {text!r}")
    return key, parse_value(value)


def parse_tier(text: str) -> tuple[float, float]:
    days, sep, factor = text.partition(":")
    if not sep:
        raise SystemExit(f"--recency wants DAYS:FACTOR, got {text!r}")
    return float(days), float(factor)


def print_table(result: dict[str, Any]) -> None:
    index = result["index"]
    print(
        f"\n## chunk chars {result['chunk_chars']}, expand {result['expand_chars']} "
        f"(kind {result['kind']}, model {result['model']}"
        + (f", {result['settings']}" if result["settings"] else "")
        + ")\n"
    )
    print("| conversation | files | chunks | mean chunk chars | keyword index s | embedding s |")
    print("|---|---|---|---|---|---|")
    for conversation, s in index.items():
        reused = "" if s["fresh"] else " (reused)"
        print(
            f"| {conversation} | {s['files']} | {s['chunks']} | {s['mean_chunk_chars']} | "
            f"{s['keyword_seconds']}{reused} | {s['embedding_seconds']}{reused} |"
        )
    first = next(iter(result["modes"].values()))
    categories = list(first["per_category"])
    cat_heads = " | ".join(f"@10 c{c} ({first['per_category'][c]['queries']})" for c in categories)
    budget_heads = " | ".join(
        f"in {b.removesuffix('_chars')} chars" for b in first["budget_recall"]
    )
    conversations = list(first["recall@10_per_conversation"])
    print(
        f"\n| mode | R@5 | R@10 | R@10 {' / '.join(conversations)} | {cat_heads} | "
        f"{budget_heads} | p50 ms |"
    )
    print("|---|---|---|---|" + "---|" * (len(categories) + len(first["budget_recall"])) + "---|")
    for mode, m in result["modes"].items():
        by_conversation = " / ".join(f"{v:.3f}" for v in m["recall@10_per_conversation"].values())
        cats = " | ".join(f"{m['per_category'][c]['@10']:.3f}" for c in categories)
        budgets = " | ".join(f"{v:.3f}" for v in m["budget_recall"].values())
        print(
            f"| {mode} | {m['recall']['@5']:.3f} | {m['recall']['@10']:.3f} | "
            f"{by_conversation} | {cats} | {budgets} | {m['p50_ms']} |",
            flush=True,
        )


def print_summary(results: Sequence[dict[str, Any]]) -> None:
    """One row per run and mode: the table to compare settings by."""
    first = results[0]["modes"][next(iter(results[0]["modes"]))]
    budgets = [b.removesuffix("_chars") for b in first["budget_recall"]]
    print("\n## summary\n")
    print(
        "| chunk chars | expand | chunks | mean chars | mode | R@5 | R@10 | "
        + " | ".join(f"in {b} chars" for b in budgets)
        + " | chars read @10 | p50 ms |"
    )
    print("|---|---|---|---|---|---|---|" + "---|" * len(budgets) + "---|---|")
    for r in results:
        for mode, m in r["modes"].items():
            cells = " | ".join(f"{v:.3f}" for v in m["budget_recall"].values())
            print(
                f"| {r['chunk_chars']} | {r['expand_chars']} | "
                f"{r['chunks']} | {r['mean_chunk_chars']} | {mode} | {m['recall']['@5']:.3f} | "
                f"{m['recall']['@10']:.3f} | {cells} | {m['mean_chars']['@10']} | {m['p50_ms']} |"
            )


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawTextHelpFormatter)
    ap.add_argument("--data", type=Path, default=DEFAULT_SET, help="the benchmark folder")
    ap.add_argument(
        "--chunk-chars",
        type=int,
        nargs="+",
        default=[0],
        help="--chunk-key's value, one run per value (default: the settings' default)",
    )
    ap.add_argument("--chunk-key", default="chunking.max_chars", help="what --chunk-chars sets")
    ap.add_argument("--kind", default="files", help="the conversation roots' kind")
    ap.add_argument(
        "--expand",
        type=int,
        default=None,
        help="expand_chars of every search (default: memory.expand_chars for --kind memory, "
        "else 0)",
    )
    ap.add_argument("--modes", nargs="+", default=list(MODES), choices=MODES)
    ap.add_argument(
        "--set", action="append", default=[], metavar="KEY=VALUE", help="any other setting"
    )
    ap.add_argument(
        "--recency", action="append", default=[], metavar="DAYS:FACTOR", help="a recency tier"
    )
    ap.add_argument("--index-root", type=Path, default=None, help="index folders (default: temp)")
    ap.add_argument("--json", action="store_true", help="print JSON instead of tables")
    args = ap.parse_args()
    if not (args.data / "queries.jsonl").is_file():
        print(f"skip: {args.data} is absent (the shared data folder, ../shared/data)")
        return 0
    evidence_set = load_evidence_set(args.data)
    with tempfile.TemporaryDirectory(prefix="noteseek-memory-") as tmp:
        root = args.index_root or Path(tmp)
        results = []
        for chunk_chars in args.chunk_chars:
            result = measure(evidence_set, root, args, chunk_chars or None)
            results.append(result)
            if not args.json:
                print_table(result)
    if args.json:
        print(json.dumps(results, indent=2))
    elif len(results) > 1:
        print_summary(results)
    return 0


if __name__ == "__main__":
    sys.exit(main())
