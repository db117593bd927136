"""noteseek keyword search and bm25s side by side: same corpus, same queries, one run.

    .venv/bin/python bench/side_by_side.py [--corpus scifact-dev --corpus hugo-docs-kis
        --corpus powershell] [--queries 600] [--work DIR] [--profile FILE]

Every speed claim in the docs is a ratio measured here, on one machine, in one run. For each
corpus both engines index the same documents (noteseek: ``Engine.index`` with embeddings off;
bm25s: title + text of each document, Lucene BM25 k1 1.5 b 0.75, English stop words,
Snowball stemming) and answer the same queries in one process, interleaved query by query
(noteseek then bm25s, then the other order), so load from other work falls on both alike.

- quality (sets with judgments: scifact-dev, hugo-docs-kis): nDCG@10 and Recall@10 with the
  metric code of ``noteseek eval`` (noteseek ranks documents from its top 100 sections).
- latency per query, p50 and p95: noteseek ``Engine.search(top_k=10)`` (snippets on, as a
  user's search), noteseek ``query_documents`` operation with ``top_k`` 100 serialised to JSON (what
  ``noteseek search --top-k 100 --json`` does after start-up), and bm25s tokenise + retrieve
  of one query at k 10 and k 100 (numpy backend; no snippets, no JSON, ids only).
- ``powershell``: the 14,145-file windows-powershell-docs archive unpacked to a temporary
  folder; latency only, the queries are the files' titles and descriptions (see
  :func:`powershell_queries`).

``--profile FILE`` writes a cProfile of noteseek's top-10 query loop (the last corpus) and
prints its top entries by cumulative and by own time.
"""

from __future__ import annotations

import argparse
import cProfile
import io
import json
import pstats
import random
import re
import sys
import tarfile
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import bm25s
import numpy as np
import Stemmer

from noteseek.engine import Engine, SearchRequest, open_engine
from noteseek.eval.datasets import Dataset
from noteseek.eval.runner import eval_engine, ranked_documents, score_ranking
from noteseek.operations import NO_LIMITS, Context, execute, parse
from noteseek.operations.runtime import settle_heap

DATA = Path(__file__).resolve().parent.parent.parent / "shared" / "data"
TGZ = DATA / "scale" / "windows-powershell-docs.tgz"
FRONTMATTER = re.compile(r"\A\ufeff?---\s*\n(.*?)\n---", re.S)


class Bm25s:
    """bm25s over (id, text) pairs, one query at a time."""

    def __init__(self, ids: list[str], texts: list[str]) -> None:
        self.ids = ids
        self.stemmer = Stemmer.Stemmer("english")
        self.retriever = bm25s.BM25(k1=1.5, b=0.75, method="lucene")
        tokens = bm25s.tokenize(texts, stopwords="en", stemmer=self.stemmer, show_progress=False)
        self.retriever.index(tokens, show_progress=False)
        self.size = len(ids)

    def search(self, text: str, k: int) -> list[str]:
        tokens = bm25s.tokenize([text], stopwords="en", stemmer=self.stemmer, show_progress=False)
        if not tokens.vocab:  # every word a stop word: bm25s has nothing to look up
            return []
        found, _ = self.retriever.retrieve(tokens, k=min(k, self.size), show_progress=False)
        return [self.ids[int(i)] for i in found[0]]


def beir_documents(path: Path) -> tuple[list[str], list[str]]:
    ids: list[str] = []
    texts: list[str] = []
    with path.open(encoding="utf-8") as fh:
        for line in fh:
            if line.strip():
                doc = json.loads(line)
                ids.append(str(doc["_id"]))
                texts.append(f"{doc.get('title', '')} {doc.get('text', '')}")
    return ids, texts


def powershell_queries(corpus: Path, n: int) -> list[str]:
    """Half titles, half descriptions of the files, each half shuffled (seed 7), no repeats.

    A file's description is its frontmatter ``description:`` when no other file shares it;
    most files of this corpus carry the same boilerplate one, so theirs is the first sentence
    of the page's SYNOPSIS section (the description its help system shows).
    """
    titles: list[str] = []
    descriptions: list[str] = []
    for page in sorted(corpus.rglob("*.md")):
        text = page.read_text(encoding="utf-8", errors="replace")
        m = FRONTMATTER.match(text)
        front = m.group(1) if m else ""
        t = re.search(r"^title:\s*(.+)$", front, re.M)
        if t:
            titles.append(t.group(1).strip().strip("'\""))
        d = re.search(r"^description:\s*(.+)$", front, re.M)
        s = re.search(r"^## SYNOPSIS\s*\n+([^\n#].*?)(?:\n\n|\n#)", text, re.S | re.M)
        synopsis = re.split(r"(?<=[.!?])\s", " ".join(s.group(1).split()))[0] if s else ""
        descriptions.append(d.group(1).strip().strip("'\"") if d else "")
        descriptions.append("\0" + synopsis)
    counts: dict[str, int] = {}
    for d in descriptions:
        counts[d] = counts.get(d, 0) + 1
    chosen: list[str] = []
    for own, synopsis in zip(descriptions[::2], descriptions[1::2], strict=True):
        pick = own if own and counts[own] == 1 else synopsis[1:]
        if len(pick.split()) >= 2:
            chosen.append(pick)
    rng = random.Random(7)
    halves = [list(dict.fromkeys(x for x in titles if len(x) >= 3)), list(dict.fromkeys(chosen))]
    for half in halves:
        rng.shuffle(half)
    out = [q for pair in zip(*halves, strict=False) for q in pair]
    return out[:n]


def percentiles(ms: list[float]) -> tuple[float, float]:
    return float(np.percentile(ms, 50)), float(np.percentile(ms, 95))


def json_search(ctx: Context) -> Callable[[str], Any]:
    def run(text: str) -> str:
        op, params = parse("query_documents", {"query": text, "top_k": 100, "mode": "keyword"})
        return json.dumps(execute(op, ctx, params), ensure_ascii=False)

    return run


def timed_pairs(
    queries: list[str], lanes: dict[str, Callable[[str], Any]]
) -> dict[str, list[float]]:
    """Each query through every lane, the order rotating per query; ms per lane."""
    names = list(lanes)
    times: dict[str, list[float]] = {name: [] for name in names}
    for q in queries[:20]:  # warm page cache, analyzer and stemmer caches
        for fn in lanes.values():
            fn(q)
    for i, q in enumerate(queries):
        order = names[i % len(names) :] + names[: i % len(names)]
        for name in order:
            started = time.perf_counter()
            lanes[name](q)
            times[name].append((time.perf_counter() - started) * 1000)
    return times


def quality(
    engine: Engine, dataset: Dataset, bm: Bm25s, queries: list[tuple[str, str]]
) -> dict[str, dict[str, float]]:
    totals = {"noteseek": [0.0, 0.0], "bm25s": [0.0, 0.0]}
    for qid, text in queries:
        judged = dataset.qrels.get(qid, {})
        hits = engine.search(SearchRequest(text, top_k=100, snippets=False, mode="keyword")).hits
        for name, ranked in (
            ("noteseek", ranked_documents(hits, dataset)),
            ("bm25s", bm.search(text, 100)),
        ):
            s = score_ranking(ranked, judged)
            totals[name][0] += s["ndcg@10"]
            totals[name][1] += s["recall@10"]
    n = max(1, len(queries))
    return {k: {"ndcg@10": v[0] / n, "recall@10": v[1] / n} for k, v in totals.items()}


def run_corpus(name: str, work: Path, limit: int, profile: Path | None) -> dict[str, Any]:
    started = time.perf_counter()
    dataset: Dataset | None = None
    if name == "powershell":
        corpus = work / "powershell" / "corpus"
        if not corpus.is_dir():
            with tarfile.open(TGZ) as tar:
                tar.extractall(corpus, filter="data")
        engine = open_engine(
            work / "powershell",
            flags={
                "index.dir": str(work / "powershell" / "index"),
                "roots.corpus.path": str(corpus),
                "embedding.enabled": False,
            },
            environ={},
        )
        files = sorted(corpus.rglob("*.md"))
        ids = [str(p.relative_to(corpus)) for p in files]
        texts = [p.read_text(encoding="utf-8", errors="replace") for p in files]
        queries = powershell_queries(corpus, limit)
        judged: list[tuple[str, str]] = []
    else:
        dataset, engine = eval_engine(DATA / name, work / name, flags={"embedding.enabled": False})
        assert dataset.corpus_file is not None
        ids, texts = beir_documents(dataset.corpus_file)
        judged = list(dataset.queries.items())[:limit]
        queries = [text for _, text in judged]
    report = engine.index()
    noteseek_index = report.seconds
    t = time.perf_counter()
    bm = Bm25s(ids, texts)
    bm_index = time.perf_counter() - t
    out: dict[str, Any] = {
        "corpus": name,
        "documents": len(ids),
        "chunks": engine.status()["chunks"],
        "queries": len(queries),
        "words per query": float(np.mean([len(q.split()) for q in queries])),
        "index s": {"noteseek": noteseek_index, "bm25s": bm_index},
    }
    if dataset is not None:
        out["quality"] = quality(engine, dataset, bm, judged)
    ctx = Context(engine, None, NO_LIMITS)
    settle_heap()  # both engines built and loaded: as a server settles its heap once started
    lanes: dict[str, Callable[[str], Any]] = {
        "noteseek top 10": lambda q: engine.search(SearchRequest(q, top_k=10, mode="keyword")),
        "bm25s top 10": lambda q: bm.search(q, 10),
        "noteseek top 100 json": json_search(ctx),
        "bm25s top 100": lambda q: bm.search(q, 100),
    }
    out["latency"] = {k: percentiles(v) for k, v in timed_pairs(queries, lanes).items()}
    if profile is not None:
        prof = cProfile.Profile()
        prof.enable()
        for q in queries:
            engine.search(SearchRequest(q, top_k=10, mode="keyword"))
        prof.disable()
        prof.dump_stats(str(profile))
        for key in ("cumulative", "tottime"):
            buf = io.StringIO()
            pstats.Stats(prof, stream=buf).sort_stats(key).print_stats(25)
            print(f"\n-- profile of {len(queries)} top-10 queries on {name}, by {key} --")
            print("\n".join(buf.getvalue().splitlines()[6:]))
    engine.close()
    out["seconds"] = time.perf_counter() - started
    return out


def print_table(rows: list[dict[str, Any]]) -> None:
    print(
        "\n| corpus | docs / chunks | queries (words) | nDCG@10 noteseek / bm25s | "
        "R@10 noteseek / bm25s | top 10 p50 / p95 ms noteseek | bm25s | ratio p50 / p95 | "
        "top 100 JSON p50 / p95 noteseek | bm25s top 100 | ratio p50 / p95 |"
    )
    print("|---|---|---|---|---|---|---|---|---|---|---|")
    for r in rows:
        q = r.get("quality")
        lat = r["latency"]
        cells = [
            r["corpus"],
            f"{r['documents']:,} / {r['chunks']:,}",
            f"{r['queries']} ({r['words per query']:.1f})",
            f"{q['noteseek']['ndcg@10']:.4f} / {q['bm25s']['ndcg@10']:.4f}" if q else "-",
            f"{q['noteseek']['recall@10']:.4f} / {q['bm25s']['recall@10']:.4f}" if q else "-",
        ]
        for ours, theirs in (
            ("noteseek top 10", "bm25s top 10"),
            ("noteseek top 100 json", "bm25s top 100"),
        ):
            a, b = lat[ours], lat[theirs]
            cells += [
                f"{a[0]:.2f} / {a[1]:.2f}",
                f"{b[0]:.2f} / {b[1]:.2f}",
                f"{a[0] / b[0]:.2f} / {a[1] / b[1]:.2f}",
            ]
        print("| " + " | ".join(cells) + " |")
    print("ratio = noteseek / bm25s (below 1: noteseek faster)")


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument(
        "--corpus",
        action="append",
        default=None,
        help="scifact-dev, hugo-docs-kis or powershell (repeatable)",
    )
    ap.add_argument("--queries", type=int, default=600)
    ap.add_argument("--work", type=Path, default=None, help="keep indexes here (reused)")
    ap.add_argument("--profile", type=Path, default=None)
    args = ap.parse_args()
    names = args.corpus or ["scifact-dev", "hugo-docs-kis", "powershell"]
    for n in names:
        folder = TGZ if n == "powershell" else DATA / n
        if not folder.exists():
            print(f"skip: {folder} is absent")
            return 0
    with tempfile.TemporaryDirectory(prefix="noteseek-sbs-") as tmp:
        work = args.work or Path(tmp)
        rows = []
        for n in names:
            row = run_corpus(n, work, args.queries, args.profile)
            rows.append(row)
            print(json.dumps(row), flush=True)
        print_table(rows)
    print(f"bm25s {bm25s.__version__}; one process, queries interleaved across engines")
    return 0


if __name__ == "__main__":
    sys.exit(main())
