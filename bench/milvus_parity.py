"""Keyword ranking parity of the Milvus backend with the embedded SQLite index.

    .venv/bin/python bench/milvus_parity.py [--dataset scifact-dev] [--queries 100]
                                            [--uri PATH_OR_URL] [--work DIR]

Indexes the dataset keyword-only into SQLite and into Milvus (Milvus Lite in the work folder
unless --uri names another; a server's collections are prefixed ``parity_DATASET``), runs the
first --queries queries (0 = all) in keyword mode on both, and prints nDCG@10 of each, their
difference, the mean share of SQLite's top-10 documents that Milvus also returns, the worst
query's share, the index times and the seconds per query.
"""

from __future__ import annotations

import argparse
import json
import sys
import tempfile
import time
from pathlib import Path

from noteseek.eval.parity import keyword_parity

DATA = Path(__file__).resolve().parent.parent.parent / "shared" / "data"


def prefix_of(dataset: str) -> str:
    return "".join(c if c.isalnum() else "_" for c in dataset)


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--dataset", default="scifact-dev")
    ap.add_argument("--queries", type=int, default=100)
    ap.add_argument("--uri", default="")
    ap.add_argument("--work", default="")
    args = ap.parse_args()
    work = Path(args.work or tempfile.mkdtemp(prefix="milvus-parity-"))
    uri = args.uri or str(work / "milvus.db")
    backends = {
        "sqlite": {},
        # A collection prefix per dataset, so runs of several sets share one server.
        "milvus": {"milvus.uri": uri, "milvus.collection": "parity_" + prefix_of(args.dataset)},
    }
    started = time.perf_counter()
    parity = keyword_parity(DATA / args.dataset, work, backends, args.queries or 10**9)
    out = parity.to_dict()
    out["seconds"] = round(time.perf_counter() - started, 1)
    json.dump(out, sys.stdout, indent=2)
    print()
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
