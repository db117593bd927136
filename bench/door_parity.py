"""Door parity on agent memory: evidence recall through the search door and the memory door.

    .venv/bin/python bench/door_parity.py [--data ../shared/data/memory/locomo-dev]
        [--modes keyword hybrid] [--json]

Each conversation of a LoCoMo-style set (``conv-26/memory/YYYY-MM-DD.md`` ...,
``queries.jsonl``, ``evidence.tsv``: see ``noteseek.eval.evidence``) becomes the memory folder
of a fresh project, indexed with ``noteseek index``. Its questions are then asked through two
doors, each at top 10:

* ``noteseek search --queries F --json --source memory`` (a subprocess, as a user runs it);
* the memory door: the ``search_memories`` operation, which ``noteseek memory search``, MCP
  and HTTP run (called in this process through the operations table, one call per question).

Printed per door and mode: any@5, any@10 (a question counts when a result covers a line that
answers it) and the mean lines per result. The two doors should agree exactly. Run it with
``PYTHONPATH=<an older checkout>/src`` for the paired "before" (both the CLI subprocess and the
in-process door then run that code).
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path
from typing import Any

from noteseek.engine import open_engine
from noteseek.eval.evidence import EvidenceSet, Retrieved, load_evidence_set, recall_report
from noteseek.operations import Context
from noteseek.operations.context import NO_LIMITS
from noteseek.operations.runtime import execute
from noteseek.operations.table import OPERATIONS

DATA = Path(__file__).resolve().parent.parent.parent / "shared" / "data"
DEFAULT_SET = DATA / "memory" / "locomo-dev"
TOP = 10


def _project(base: Path, conversation: Path, embeddings: bool) -> Path:
    folder = base / conversation.name
    memory = folder / "memory-folder"
    shutil.copytree(conversation, memory)
    settings = [
        "[memory]",
        f'path = "{memory.as_posix()}"',
        "[embedding]",
        f"enabled = {'true' if embeddings else 'false'}",
        # The logs' file times say when they were copied, not written: recency would rank
        # by the order of the copy.
        "[search]",
        'recency = "off"',
    ]
    (folder / ".noteseek.toml").write_text("\n".join(settings) + "\n", encoding="utf-8")
    return folder


def _env(home: Path) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("NOTESEEK_")}
    env.update(HOME=str(home), XDG_CONFIG_HOME=str(home / "c"), XDG_DATA_HOME=str(home / "d"))
    return env


def _cli(folder: Path, env: dict[str, str], *args: str) -> str:
    proc = subprocess.run(
        [sys.executable, "-m", "noteseek.interfaces.cli", *args],
        cwd=folder,
        env=env,
        capture_output=True,
        text=True,
        check=False,
    )
    if proc.returncode not in (0, 1):  # 1: some query found nothing
        raise SystemExit(f"noteseek {' '.join(args)} failed:\n{proc.stderr}")
    return proc.stdout


def _retrieved(results: list[dict[str, Any]]) -> list[Retrieved]:
    return [
        Retrieved(r["path"], r["start_line"], r["end_line"], len(r.get("content") or ""))
        for r in results
    ]


def run(data: Path, modes: list[str]) -> dict[str, Any]:
    evidence = load_evidence_set(data)
    out: dict[str, Any] = {}
    with tempfile.TemporaryDirectory() as tmp:
        base = Path(tmp)
        env = _env(base / "home")
        embeddings = any(m != "keyword" for m in modes)
        runs: dict[str, dict[str, list[Retrieved]]] = {}
        for conversation in evidence.conversations:
            folder = _project(base, evidence.folder_of(conversation), embeddings)
            _cli(folder, env, "index")
            queries = folder / "queries.jsonl"
            asked = evidence.queries_of(conversation)
            queries.write_text(
                "".join(json.dumps({"_id": q.query_id, "text": q.text}) + "\n" for q in asked),
                encoding="utf-8",
            )
            for mode in modes:
                search = runs.setdefault(f"search --source memory / {mode}", {})
                lines = _cli(
                    folder,
                    env,
                    *("search", "--queries", str(queries), "--json", "--source", "memory"),
                    *("--mode", mode, "--top-k", str(TOP)),
                ).splitlines()
                for line in lines:
                    record = json.loads(line)
                    search[record["query_id"]] = _retrieved(record["results"])
            door = _memory_door(folder, env, asked, modes)
            for mode, results in door.items():
                runs.setdefault(f"memory door / {mode}", {}).update(results)
        for name, results in runs.items():
            out[name] = _scored(results, evidence)
    return out


def _memory_door(
    folder: Path, env: dict[str, str], asked: list[Any], modes: list[str]
) -> dict[str, dict[str, list[Retrieved]]]:
    saved = dict(os.environ)
    os.environ.clear()
    os.environ.update(env)
    try:
        engine = open_engine(folder)
        ctx = Context(engine, None, NO_LIMITS)
        op = OPERATIONS["search_memories"]
        found: dict[str, dict[str, list[Retrieved]]] = {}
        for mode in modes:
            for q in asked:
                params = op.params.model_validate({"query": q.text, "mode": mode, "top_n": TOP})
                answer = execute(op, ctx, params)
                found.setdefault(mode, {})[q.query_id] = _retrieved(answer["results"])
        engine.close()
        return found
    finally:
        os.environ.clear()
        os.environ.update(saved)


def _scored(results: dict[str, list[Retrieved]], evidence: EvidenceSet) -> dict[str, Any]:
    report = recall_report(results, evidence, ks=(5, 10))
    lines = [r.end_line - r.start_line + 1 for rs in results.values() for r in rs]
    return {
        "queries": report.queries,
        "any@5": round(report.recall[5], 3),
        "any@10": round(report.recall[10], 3),
        "lines_per_result": round(statistics.fmean(lines), 1) if lines else 0.0,
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--data", type=Path, default=DEFAULT_SET)
    parser.add_argument("--modes", nargs="+", default=["keyword"])
    parser.add_argument("--json", action="store_true")
    args = parser.parse_args()
    if not args.data.exists():
        raise SystemExit(f"{args.data} is missing: the evidence set lives in ../shared/data")
    out = run(args.data, args.modes)
    if args.json:
        print(json.dumps(out, indent=2))
        return
    print(f"{'door / mode':<40} {'queries':>7} {'any@5':>6} {'any@10':>6} {'lines':>6}")
    for name, row in out.items():
        print(
            f"{name:<40} {row['queries']:>7} {row['any@5']:>6.3f} {row['any@10']:>6.3f} "
            f"{row['lines_per_result']:>6.1f}"
        )


if __name__ == "__main__":
    main()
