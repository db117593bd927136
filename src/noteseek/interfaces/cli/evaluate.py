"""``noteseek eval``: ranking quality on BEIR-format data (``noteseek.eval``)."""

from __future__ import annotations

import contextlib
import json
import tempfile
from pathlib import Path
from typing import Annotated, Any

import typer
from rich.markup import escape
from rich.table import Table

from noteseek.config import ConfigError
from noteseek.interfaces.cli.common import EXIT_INTERRUPTED, EXIT_USAGE, app, err, fail, out
from noteseek.interfaces.cli.indexing import progress_bar


@app.command("eval")
def eval_command(
    dataset: Annotated[
        Path,
        typer.Argument(
            help="BEIR folder (corpus.jsonl, queries.jsonl, qrels/) or a folder with vault/, "
            "queries.jsonl and qrels/ keyed by vault-relative path."
        ),
    ],
    split: Annotated[
        str | None, typer.Option(help="qrels split (default: test, dev, train).")
    ] = None,
    mode: Annotated[
        list[str] | None,
        typer.Option(
            "--mode",
            "-m",
            help="Mode to run (repeatable; default: keyword, semantic, hybrid). hypothesis runs "
            "each query through search_with_hypothesis, as if it were a hypothetical answer.",
        ),
    ] = None,
    index: Annotated[
        Path | None,
        typer.Option(
            "--index", help="Folder for the index, kept and reused (default: a temporary one)."
        ),
    ] = None,
    setting: Annotated[
        list[str] | None,
        typer.Option("--set", help="Override a setting: section.key=value (repeatable)."),
    ] = None,
    limit: Annotated[int | None, typer.Option(min=1, help="Run only the first N queries.")] = None,
    as_json: Annotated[bool, typer.Option("--json", help="Print the results as JSON.")] = False,
    save: Annotated[
        Path | None, typer.Option(help="Write the results with per-query scores to FILE.")
    ] = None,
    compare: Annotated[
        Path | None,
        typer.Option(help="A file from --save: paired differences with permutation p-values."),
    ] = None,
    coverage: Annotated[
        float | None,
        typer.Option(
            min=0.0,
            max=1.0,
            help="Search a copy of the index whose vectors cover only this share of the chunks "
            "(a seeded random subset), as while embedding is in progress.",
        ),
    ] = None,
) -> None:
    """Measure ranking quality: nDCG@10, Recall@10/100, MRR@10 and latency per mode."""
    from noteseek.eval.runner import compare_runs, run_eval
    from noteseek.search.request import MODES

    modes = mode or ["keyword", "semantic", "hybrid"]
    known = (*MODES, "hypothesis")
    bad = [m for m in modes if m not in known]
    if bad:
        raise fail(f"unknown mode {bad[0]!r}; choose from {', '.join(known)}", EXIT_USAGE)
    flags = _parse_settings(setting or [])
    old = None
    if compare is not None:
        try:
            old = json.loads(compare.read_text(encoding="utf-8"))
        except (OSError, ValueError) as exc:
            raise fail(f"cannot read {compare}: {exc}", EXIT_USAGE) from None
    if not dataset.is_dir():
        raise fail(f"{dataset} is not a folder", EXIT_USAGE)
    with contextlib.ExitStack() as stack:
        folder = index
        if folder is None:
            folder = Path(stack.enter_context(tempfile.TemporaryDirectory(prefix="noteseek-eval-")))
        progress = stack.enter_context(progress_bar(as_json, "indexing", "files"))
        embed_progress = stack.enter_context(progress_bar(as_json, "embedding", "chunks"))
        try:
            run = run_eval(
                dataset,
                folder,
                split=split,
                modes=modes,
                flags=flags,
                limit=limit,
                progress=progress,
                embed_progress=embed_progress,
                coverage=coverage,
            )
        except (FileNotFoundError, ConfigError, ValueError, RuntimeError) as exc:
            raise fail(str(exc), EXIT_USAGE) from None
        except KeyboardInterrupt:
            err.print("interrupted")
            raise typer.Exit(EXIT_INTERRUPTED) from None
    data = run.to_dict()
    full = run.to_dict(per_query=True)
    if save is not None:
        save.write_text(json.dumps(full, indent=1) + "\n", encoding="utf-8")
    if old is not None:
        try:
            data["compare"] = compare_runs(full, old)
        except ValueError as exc:
            raise fail(str(exc), EXIT_USAGE) from None
    if as_json:
        out.print_json(json.dumps(data))
        return
    out.print(f"[bold]{escape(run.dataset)}[/] split {run.split}, {data['queries']} queries")
    table = Table("mode", "nDCG@10", "Recall@10", "Recall@100", "MRR@10", "p50 ms", "p95 ms")
    for name, m in data["modes"].items():
        table.add_row(
            name,
            f"{m['ndcg@10']:.4f}",
            f"{m['recall@10']:.4f}",
            f"{m['recall@100']:.4f}",
            f"{m['mrr@10']:.4f}",
            f"{m['p50_ms']:.1f}",
            f"{m['p95_ms']:.1f}",
        )
    out.print(table)
    if "compare" in data:
        table = Table("mode", "metric", "old", "new", "diff", "p", box=None)
        for name, c in data["compare"].items():
            for metric, v in c["metrics"].items():
                table.add_row(
                    name,
                    metric,
                    f"{v['old']:.4f}",
                    f"{v['new']:.4f}",
                    f"{v['diff']:+.4f}",
                    f"{v['p_value']:.4f}",
                )
        out.print(table)


def _parse_settings(items: list[str]) -> dict[str, Any]:
    """``section.key=value`` pairs; values are read as JSON when they parse, else as text."""
    flags: dict[str, Any] = {}
    for item in items:
        key, sep, value = item.partition("=")
        if not sep or "." not in key:
            raise fail(f"--set expects section.key=value, got {item!r}", EXIT_USAGE)
        try:
            flags[key.strip()] = json.loads(value)
        except ValueError:
            flags[key.strip()] = value
    return flags
