"""The prompt hook on agent memory: what it injects, and how long a cold hook process takes.

    .venv/bin/python bench/hook_recall.py [--set ../shared/data/memory/locomo-dev] [--latency 40]

Each conversation of the set (LoCoMo logs: ``queries.jsonl``, ``evidence.tsv``, see
``noteseek.eval.evidence``) becomes a project whose memory folder is that conversation's logs.

- **Recall** (in process): every question goes through ``memory_hooks.recalled``, exactly what
  ``noteseek hook prompt`` shows (at most ``hooks.prompt_results`` results within
  ``hooks.prompt_chars``, above the content-word floor). A question counts as found at rank r
  when the r-th shown result's *shown* text reaches an answering line (text cut to its share of
  the budget counts only the lines it still holds). Printed: any@1 and any@3, the share of
  questions given nothing, characters injected, per LoCoMo category.
- **Latency**: ``--latency N`` questions are asked through ``noteseek hook prompt`` as an agent
  runs it, one fresh process each, after one ``hook session-start``; wall time per process,
  p50 and p95: cold (the hook opens the index), then with ``noteseek serve`` running for the
  project (the hook asks it; ``noteseek/servers.py``), unless ``--no-server``.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from door_parity import _project  # the same project per conversation (bench/ on the path)
from noteseek.engine import open_engine
from noteseek.eval.evidence import EvidenceSet, load_evidence_set
from noteseek.operations.memory_hooks import recalled
from serving import served

DATA = Path(__file__).resolve().parent.parent.parent / "shared" / "data"
DEFAULT_SET = DATA / "memory" / "locomo-dev"


def shown_lines(start: int, full: str, shown: str) -> int:
    """The last line the shown text reaches (the shown text is the flattened start of it)."""
    words = len(shown.removesuffix("...").split())
    kept = 0
    for number, line in enumerate(full.split("\n")):
        kept += len(line.split())
        if kept >= words:
            return start + number
    return start + full.count("\n")


def recall(
    data: EvidenceSet, folders: dict[str, Path], flags: dict[str, str] | None = None
) -> dict[str, object]:
    found1 = found3 = empty = 0
    chars: list[int] = []
    by_category: dict[int, list[int]] = {}
    by_conversation: dict[str, list[int]] = {}
    for conversation, folder in folders.items():
        with open_engine(folder, None, flags or {}, environ={}) as engine:
            engine.index()
            for query in data.queries_of(conversation):
                shown = recalled(engine, query.text)
                evidence = data.evidence.get(query.query_id, ())
                rank = next(
                    (
                        i
                        for i, (hit, text) in enumerate(shown, 1)
                        if any(
                            e.file == hit.path
                            and hit.start_line
                            <= e.line
                            <= shown_lines(hit.start_line, hit.text or "", text)
                            for e in evidence
                        )
                    ),
                    None,
                )
                found1 += rank == 1
                found3 += rank is not None
                empty += not shown
                chars.append(sum(len(t) for _, t in shown))
                by_category.setdefault(query.category, []).append(int(rank is not None))
                by_conversation.setdefault(conversation, []).append(int(rank is not None))
    n = len(chars)
    return {
        "questions": n,
        "any@1": round(found1 / n, 3),
        "any@3": round(found3 / n, 3),
        "nothing_shown": round(empty / n, 3),
        "chars_mean": round(statistics.mean(chars), 1),
        "any@3_by_category": {
            str(c): round(sum(v) / len(v), 3) for c, v in sorted(by_category.items())
        },
        "any@3_by_conversation": {
            c: round(sum(v) / len(v), 3) for c, v in sorted(by_conversation.items())
        },
    }


def latency(
    data: EvidenceSet, folders: dict[str, Path], count: int, *, server: bool
) -> dict[str, object]:
    conversation, folder = next(iter(folders.items()))
    env = {k: v for k, v in os.environ.items() if not k.startswith("NOTESEEK_")}
    env["XDG_DATA_HOME"] = str(folder / "data")  # where a server says it runs
    command = [sys.executable, "-m", "noteseek.interfaces.cli", "hook"]

    def run(event: str, payload: dict[str, str]) -> float:
        started = time.perf_counter()
        subprocess.run(
            [*command, event, "--strict"],
            input=json.dumps(payload),
            env=env,
            capture_output=True,
            text=True,
            check=True,
        )
        return (time.perf_counter() - started) * 1000

    base = {"session_id": "bench", "cwd": str(folder), "transcript_path": ""}
    run("session-start", {**base, "hook_event_name": "SessionStart"})
    prompts = [
        {**base, "hook_event_name": "UserPromptSubmit", "prompt": q.text}
        for q in data.queries_of(conversation)[:count]
    ]
    out: dict[str, object] = {"cold": timed([run("prompt", p) for p in prompts])}
    if server:
        with served(folder, env, folder / "serve.log", timeout=120):
            out["through_serve"] = timed([run("prompt", p) for p in prompts])
    return out


def timed(times: list[float]) -> dict[str, float]:
    ordered = sorted(times)
    return {
        "prompts": len(times),
        "p50_ms": round(statistics.median(times), 1),
        "p95_ms": round(ordered[max(0, round(0.95 * len(ordered)) - 1)], 1),
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--set", type=Path, default=DEFAULT_SET)
    parser.add_argument("--latency", type=int, default=40, help="prompts timed (0: none)")
    parser.add_argument(
        "--setting",
        action="append",
        default=[],
        metavar="KEY=VALUE",
        help="a setting for the recall figures (e.g. hooks.prompt_results=5)",
    )
    parser.add_argument(
        "--no-server", action="store_true", help="time cold hooks only (no noteseek serve)"
    )
    args = parser.parse_args()
    if not (args.set / "queries.jsonl").exists():
        sys.exit(f"no evidence set at {args.set} (../shared/data is not here)")
    data = load_evidence_set(args.set)
    with tempfile.TemporaryDirectory() as tmp:
        folders = {c: _project(Path(tmp), data.folder_of(c), False) for c in data.conversations}
        flags = dict(item.split("=", 1) for item in args.setting)
        out: dict[str, object] = {"recall": recall(data, folders, flags)}
        if args.latency:
            out["latency"] = latency(data, folders, args.latency, server=not args.no_server)
    print(json.dumps(out, indent=2))


if __name__ == "__main__":
    main()
