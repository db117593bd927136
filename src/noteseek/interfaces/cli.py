"""The ``noteseek`` command: a thin layer over :class:`noteseek.Engine`.

Exit codes: 0 success (files skipped for bad input are reported, not failures); 1 nothing found
(search without results, get of an unknown id/path/line); 2 usage or configuration error (bad
option, bad query, bad filter, invalid config); 3 no index or nothing to index yet; 130
interrupted (Ctrl-C; the index stays consistent and the next run resumes).
"""

from __future__ import annotations

import contextlib
import json
import sys
import tempfile
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Any

import typer
from rich.console import Console
from rich.markup import escape
from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeRemainingColumn
from rich.table import Table

from noteseek.config import PROJECT_FILE, ConfigError, init_template

if TYPE_CHECKING:  # imported where used, so `noteseek mcp` starts without them
    from noteseek.engine import Engine
    from noteseek.indexing.indexer import IndexReport

EXIT_OK, EXIT_NOT_FOUND, EXIT_USAGE, EXIT_NO_INDEX, EXIT_INTERRUPTED = 0, 1, 2, 3, 130

app = typer.Typer(
    name="noteseek",
    help="Local-first search over Markdown notes, docs and agent memory.",
    no_args_is_help=True,
    add_completion=False,
    rich_markup_mode="rich",
    pretty_exceptions_enable=False,
)
config_app = typer.Typer(help="Inspect the resolved configuration.", no_args_is_help=True)
app.add_typer(config_app, name="config")

out = Console(highlight=False, soft_wrap=True)
err = Console(stderr=True, highlight=False, soft_wrap=True)  # paths in errors stay whole


class State:
    config_file: Path | None = None
    flags: dict[str, Any] = {}  # noqa: RUF012 - one CLI invocation per process


@app.callback()
def _main(
    config: Annotated[
        Path | None, typer.Option("--config", "-c", help="Project config file to use.")
    ] = None,
    index_dir: Annotated[
        Path | None, typer.Option("--index-dir", help="Index folder (overrides index.dir).")
    ] = None,
) -> None:
    State.config_file = config
    State.flags = {"index.dir": str(index_dir)} if index_dir else {}


def _fail(message: str, code: int) -> typer.Exit:
    err.print(f"[bold red]error:[/] {escape(message)}")
    return typer.Exit(code)


@contextmanager
def _engine(roots: list[str] | None = None) -> Iterator[Engine]:
    from noteseek.engine import Ambiguous, NotFound, open_engine

    try:
        engine = open_engine(Path.cwd(), State.config_file, State.flags, roots=roots or [])
    except ConfigError as exc:
        raise _fail(str(exc), EXIT_USAGE) from None
    try:
        yield engine
    except ConfigError as exc:
        raise _fail(str(exc), EXIT_USAGE) from None
    except ValueError as exc:  # bad query syntax, filters or arguments: a precise message
        raise _fail(str(exc), EXIT_USAGE) from None
    except (NotFound, Ambiguous) as exc:
        raise _fail(str(exc.args[0] if exc.args else exc), EXIT_NOT_FOUND) from None
    except KeyboardInterrupt:
        err.print("interrupted: the index is consistent; run the command again to finish")
        raise typer.Exit(EXIT_INTERRUPTED) from None
    finally:
        for notice in engine.notices:
            err.print(f"[yellow]note:[/] {escape(notice)}")
        engine.close()


# -- init ------------------------------------------------------------------------------------


@app.command()
def init(
    path: Annotated[str, typer.Option(help="Folder of notes for the first root.")] = ".",
    force: Annotated[bool, typer.Option(help="Overwrite an existing file.")] = False,
) -> None:
    """Write a commented .noteseek.toml in the current folder."""
    target = Path.cwd() / PROJECT_FILE
    if target.exists() and not force:
        raise _fail(f"{target} exists (use --force to overwrite)", EXIT_USAGE)
    target.write_text(init_template(path), encoding="utf-8")
    out.print(f"wrote {target}\nnext: noteseek index")


# -- index -----------------------------------------------------------------------------------


@app.command()
def index(
    roots: Annotated[
        list[str] | None, typer.Argument(help="Root names or folders (default: all roots).")
    ] = None,
    force: Annotated[bool, typer.Option(help="Re-read every file, even unchanged ones.")] = False,
    keyword_only: Annotated[
        bool,
        typer.Option("--keyword-only", help="Skip embeddings (keyword search only) this run."),
    ] = False,
    as_json: Annotated[bool, typer.Option("--json", help="Print the summary as JSON.")] = False,
) -> None:
    """Index roots incrementally, then embed new chunks (keyword search works meanwhile)."""
    with (
        _engine(roots) as engine,
        _progress(as_json, "indexing", "files") as progress,
        _progress(as_json, "embedding", "chunks") as embed_progress,
    ):
        report = engine.index(
            roots or None,
            force=force,
            progress=progress,
            keyword_only=keyword_only,
            embed_progress=embed_progress,
        )
    _print_report(report, as_json, engine)


@app.command()
def rebuild(
    keyword_only: Annotated[
        bool, typer.Option("--keyword-only", help="Skip embeddings (keyword search only).")
    ] = False,
    as_json: Annotated[bool, typer.Option("--json", help="Print the summary as JSON.")] = False,
) -> None:
    """Drop the index and build it again from the files (cached vectors are reused)."""
    with _engine() as engine:
        if not engine.roots():
            raise _fail("nothing to rebuild: no roots configured or indexed", EXIT_NO_INDEX)
        with (
            _progress(as_json, "indexing", "files") as progress,
            _progress(as_json, "embedding", "chunks") as embed_progress,
        ):
            report = engine.rebuild(
                progress=progress, keyword_only=keyword_only, embed_progress=embed_progress
            )
    _print_report(report, as_json, engine)


@contextmanager
def _progress(quiet: bool, label: str = "indexing", unit: str = "files") -> Iterator[Any]:
    """A progress bar on a terminal, plain log lines every few seconds otherwise."""
    if quiet:
        yield None
        return
    if err.is_terminal:
        bar = Progress(
            TextColumn(f"[bold]{label}"),
            BarColumn(),
            MofNCompleteColumn(),
            TimeRemainingColumn(),
            TextColumn("{task.fields[path]}", style="dim"),
            console=err,
            transient=True,
        )
        with bar:
            task = bar.add_task("index", total=None, path="")

            def update(done: int, total: int, path: str) -> None:
                bar.update(task, completed=done, total=total or None, path=path[-50:])

            yield update
        return
    last = [0.0]

    def log(done: int, total: int, path: str) -> None:
        now = time.monotonic()
        if done == total or now - last[0] >= 2.0:
            last[0] = now
            err.print(f"{label}: {done}/{total} {unit}")

    yield log


def _print_report(report: IndexReport, as_json: bool, engine: Engine) -> None:
    data = report.to_dict()
    data["index_dir"] = str(engine.index_dir)
    if as_json:
        out.print_json(json.dumps(data, ensure_ascii=False))
        return
    if report.rebuilt_because:
        err.print(f"[yellow]rebuilt the index:[/] {escape(report.rebuilt_because)}")
    parts = [
        f"{report.added} added",
        f"{report.updated} updated",
        f"{report.renamed} renamed",
        f"{report.removed} removed",
        f"{report.unchanged} unchanged",
        f"{report.skipped} skipped",
    ]
    if report.touched:
        parts.insert(3, f"{report.touched} touched (same content)")
    out.print(
        f"[bold]{report.scanned}[/] files in {', '.join(report.roots)}: "
        f"{', '.join(parts)} in {report.seconds:.2f}s"
    )
    problems = report.problems
    for p in problems[:20]:
        style = "red" if p["severity"] == "skipped" else "yellow"
        out.print(
            f"  [{style}]{p['severity']}[/] {escape(p['root'])}/{escape(p['path'])}: "
            f"{escape(p['reason'])}"
        )
    if len(problems) > 20:
        out.print(f"  ... and {len(problems) - 20} more (noteseek status --json lists all)")
    emb = report.embedding
    if emb:
        if emb.get("error"):
            out.print(f"[red]embedding failed:[/] {escape(emb['error'])} (keyword search works)")
        elif emb["embedded"]:
            rate = emb.get("texts_per_second") or 0
            out.print(
                f"embedded {emb['embedded']} chunks with {escape(emb['model'])} in "
                f"{emb['seconds']:.1f}s ({rate:.1f}/s)"
                + ("  [yellow]interrupted: the next run resumes[/]" if emb["interrupted"] else "")
            )


# -- search ----------------------------------------------------------------------------------


@app.command()
def search(
    query: Annotated[
        str | None, typer.Argument(help='Words, "phrases", -excluded, prefix*')
    ] = None,
    top_k: Annotated[int | None, typer.Option("--top-k", "-k", min=1, max=1000)] = None,
    path: Annotated[
        list[str] | None, typer.Option("--path", help="Path glob (repeatable).")
    ] = None,
    tag: Annotated[
        list[str] | None, typer.Option("--tag", help="Tag, incl. nested (repeatable).")
    ] = None,
    root: Annotated[
        list[str] | None, typer.Option("--root", help="Root name (repeatable).")
    ] = None,
    after: Annotated[
        str | None, typer.Option(help="Modified on/after: 2026-01-31, 7d, today.")
    ] = None,
    before: Annotated[str | None, typer.Option(help="Modified before this date.")] = None,
    where: Annotated[
        list[str] | None, typer.Option("--where", help="Frontmatter key=value or key!=value.")
    ] = None,
    mode: Annotated[
        str | None,
        typer.Option("--mode", "-m", help="hybrid (default), keyword or semantic."),
    ] = None,
    explain: Annotated[
        bool, typer.Option(help="Show each lane's rank and score, terms and fields.")
    ] = False,
    full: Annotated[bool, typer.Option(help="Include each section's full text.")] = False,
    expand: Annotated[
        int,
        typer.Option(
            min=0,
            max=100_000,
            help="Grow each result to its whole section, then its neighbours, within this "
            "many characters (implies --full).",
        ),
    ] = 0,
    as_json: Annotated[bool, typer.Option("--json", help="Print results as JSON.")] = False,
    queries: Annotated[
        Path | None,
        typer.Option(help='JSONL file of {"_id", "text"} queries; prints one JSON line each.'),
    ] = None,
) -> None:
    """Search the index; results are sections ranked best first."""
    if (query is None) == (queries is None):
        raise _fail("give a query, or --queries FILE (not both)", EXIT_USAGE)
    opts: dict[str, Any] = dict(
        top_k=top_k,
        paths=path or (),
        tags=tag or (),
        roots=root or (),
        after=after,
        before=before,
        where=where or (),
        mode=mode,
        explain=explain,
        with_text=full or bool(expand),
        expand_chars=expand,
    )
    with _engine() as engine:
        if not engine.index_exists:
            raise _fail(
                "no index yet: run `noteseek index <folder>` (or `noteseek init`)", EXIT_NO_INDEX
            )
        if queries is not None:
            _batch(engine, queries, opts)
            return
        assert query is not None
        response = engine.search(query, **opts)
    if as_json:
        out.print_json(json.dumps(response.to_dict(), ensure_ascii=False))
    else:
        _print_hits(response.hits, explain, full or bool(expand))
        for warning in response.warnings:
            err.print(f"[yellow]note:[/] {escape(warning)}")
        if explain and response.expansion:
            words = escape(", ".join(response.expansion))
            err.print(f"[dim]keyword query expanded with: {words}[/]")
        err.print(
            f"[dim]{len(response.hits)} results in {response.took_ms:.1f} ms "
            f"({response.mode}: {', '.join(response.lanes) or 'no lanes'})[/]"
        )
    if not response.hits:
        raise typer.Exit(EXIT_NOT_FOUND)


def _batch(engine: Engine, path: Path, opts: dict[str, Any]) -> None:
    try:
        lines = path.read_text(encoding="utf-8").splitlines()
    except OSError as exc:
        raise _fail(f"cannot read {path}: {exc.strerror}", EXIT_USAGE) from None
    for number, line in enumerate(lines, start=1):
        if not line.strip():
            continue
        try:
            item = json.loads(line)
            qid, text = str(item["_id"]), str(item["text"])
        except (ValueError, KeyError, TypeError):
            raise _fail(
                f'{path}:{number}: expected a JSON object with "_id" and "text"', EXIT_USAGE
            ) from None
        response = engine.search(text, **opts)
        record = {
            "query_id": qid,
            "mode": response.mode,
            "took_ms": round(response.took_ms, 2),
            "results": [h.to_dict() for h in response.hits],
            "warnings": response.warnings,
        }
        sys.stdout.write(json.dumps(record, ensure_ascii=False) + "\n")
    sys.stdout.flush()


def _rich_snippet(snippet: str) -> str:
    """Turn the ``**`` highlight markers into rich markup (the rest escaped)."""
    parts = snippet.split("**")
    return "".join(
        f"[bold yellow]{escape(p)}[/]" if i % 2 else escape(p) for i, p in enumerate(parts)
    )


def _print_hits(hits: list[Any], explain: bool, full: bool) -> None:
    for hit in hits:
        lines = (
            f"{hit.start_line}-{hit.end_line}"
            if hit.end_line != hit.start_line
            else str(hit.start_line)
        )
        heading = f"  [cyan]{escape(hit.heading)}[/]" if hit.heading_path else ""
        out.print(
            f"[bold]{hit.rank:>2}. {escape(hit.title)}[/]  [green]{escape(hit.root)}/"
            f"{escape(hit.path)}:{lines}[/]{heading}  [dim]{hit.score:.3f}  {hit.chunk_id}[/]"
        )
        out.print(f"    {_rich_snippet(hit.snippet)}")
        if full and hit.text:
            out.print(escape(hit.text))
        if explain and hit.explain:
            _print_explain(hit.explain)


def _print_explain(info: dict[str, Any]) -> None:
    kw = info.get("keyword")
    if kw is not None:
        if kw.get("rank") is None:
            out.print("    [dim]keyword: -  (not a keyword candidate)[/]")
        else:
            fields = ", ".join(f"{k} {v:.2f}" for k, v in kw["fields"].items() if v)
            out.print(
                f"    [dim]keyword: #{kw['rank']}  bm25 {kw['bm25']:.3f} ({kw['match']}); terms: "
                f"{', '.join(kw['matched_terms']) or '-'}; fields: {fields or '-'}[/]"
            )
    sem = info.get("semantic")
    if sem is not None:
        if sem.get("rank") is None:
            out.print("    [dim]semantic: -  (not a semantic candidate)[/]")
        else:
            out.print(f"    [dim]semantic: #{sem['rank']}  cosine {sem['cosine']:.3f}[/]")
    fusion = info.get("fusion")
    if fusion:
        parts = " + ".join(f"{lane} {v:.4f}" for lane, v in fusion["contributions"].items())
        boost = fusion.get("recency_factor")
        recent = f" x {boost:g} (recently changed)" if boost else ""
        out.print(
            f"    [dim]fused: {parts}{recent} = {fusion['fused']:.4f} -> score "
            f"{fusion['score']:.3f} (rrf k={fusion['k']:g})[/]"
        )
    rerank = info.get("rerank")
    if rerank:
        out.print(
            f"    [dim]re-ranked: cross-encoder logit {rerank['logit']:.3f}, "
            f"#{rerank['rank_before']} before[/]"
        )


# -- eval --------------------------------------------------------------------------------------


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
) -> None:
    """Measure ranking quality: nDCG@10, Recall@10/100, MRR@10 and latency per mode."""
    from noteseek.eval.runner import compare_runs, run_eval
    from noteseek.search.pipeline import MODES

    modes = mode or ["keyword", "semantic", "hybrid"]
    known = (*MODES, "hypothesis")
    bad = [m for m in modes if m not in known]
    if bad:
        raise _fail(f"unknown mode {bad[0]!r}; choose from {', '.join(known)}", EXIT_USAGE)
    flags = _parse_settings(setting or [])
    old = None
    if compare is not None:
        try:
            old = json.loads(compare.read_text(encoding="utf-8"))
        except (OSError, ValueError) as exc:
            raise _fail(f"cannot read {compare}: {exc}", EXIT_USAGE) from None
    if not dataset.is_dir():
        raise _fail(f"{dataset} is not a folder", EXIT_USAGE)
    with contextlib.ExitStack() as stack:
        folder = index
        if folder is None:
            folder = Path(stack.enter_context(tempfile.TemporaryDirectory(prefix="noteseek-eval-")))
        progress = stack.enter_context(_progress(as_json, "indexing", "files"))
        embed_progress = stack.enter_context(_progress(as_json, "embedding", "chunks"))
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
            )
        except (FileNotFoundError, ConfigError, ValueError, RuntimeError) as exc:
            raise _fail(str(exc), EXIT_USAGE) from None
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
            raise _fail(str(exc), EXIT_USAGE) from None
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
            raise _fail(f"--set expects section.key=value, got {item!r}", EXIT_USAGE)
        try:
            flags[key.strip()] = json.loads(value)
        except ValueError:
            flags[key.strip()] = value
    return flags


# -- get, status, config -----------------------------------------------------------------------


@app.command()
def get(
    ref: Annotated[str, typer.Argument(help="Chunk id, path, or path:line.")],
    as_json: Annotated[bool, typer.Option("--json", help="Print as JSON.")] = False,
) -> None:
    """Print a chunk, the section holding a line, or a whole document."""
    with _engine() as engine:
        if not engine.index_exists:
            raise _fail("no index yet: run `noteseek index <folder>`", EXIT_NO_INDEX)
        result = engine.get(ref)
    if as_json:
        out.print_json(json.dumps(result.to_dict(), ensure_ascii=False))
        return
    heading = " > ".join(result.heading_path)
    err.print(
        f"[bold]{escape(result.title)}[/]  [green]{escape(result.doc_id)}:"
        f"{result.start_line}-{result.end_line}[/]"
        + (f"  [cyan]{escape(heading)}[/]" if heading else "")
        + ("  [yellow](file changed since indexing)[/]" if result.stale else "")
    )
    sys.stdout.write(result.text + ("\n" if not result.text.endswith("\n") else ""))


@app.command()
def links(
    ref: Annotated[str, typer.Argument(help="A document's path or doc id.")],
    as_json: Annotated[bool, typer.Option("--json", help="Print as JSON.")] = False,
) -> None:
    """A document's outgoing links (typed, resolved or not) and its backlinks."""
    with _engine() as engine:
        if not engine.index_exists:
            raise _fail("no index yet: run `noteseek index <folder>`", EXIT_NO_INDEX)
        result = engine.links(ref)
    if as_json:
        out.print_json(json.dumps(result, ensure_ascii=False))
        return
    out.print(f"[bold]{escape(result['doc_id'])}[/]")
    for label, items in (("links to", result["outgoing"]), ("linked from", result["backlinks"])):
        out.print(f"{label} ({len(items)}):")
        for item in items:
            name = item["doc_id"] or f"{item['placeholder']} [yellow](no such note yet)[/]"
            anchor = f"#{item['anchor']}" if item["anchor"] else ""
            out.print(
                f"  {escape(name) if item['doc_id'] else name}{escape(anchor)}  "
                f"[dim]{item['type']}, line {item['line']}[/]"
            )


@app.command()
def status(
    as_json: Annotated[bool, typer.Option("--json", help="Print as JSON.")] = False,
) -> None:
    """Roots, counts, problems with reasons, index size and the last run."""
    with _engine() as engine:
        data = engine.status()
    if as_json:
        out.print_json(json.dumps(data, ensure_ascii=False, default=str))
        return
    out.print(
        f"[bold]index[/] {escape(data['index_dir'])} ([dim]{escape(data['index_dir_reason'])}[/])"
    )
    if not data["exists"]:
        out.print("no index yet: run `noteseek index`")
        return
    table = Table("root", "path", "files", "chunks", box=None)
    for r in data["roots"]:
        table.add_row(escape(r["name"]), escape(r["path"]), str(r["files"]), str(r["chunks"]))
    out.print(table)
    out.print(
        f"{data['files']} files, {data['chunks']} chunks, {data['links']} links, "
        f"{data['index_bytes'] / 1e6:.1f} MB"
    )
    emb = data.get("embedding")
    if emb:
        if not emb["enabled"]:
            out.print("embeddings off (keyword search only)")
        else:
            pct = 100.0 * emb["embedded"] / emb["total"] if emb["total"] else 100.0
            out.print(
                f"embeddings: {emb['embedded']}/{emb['total']} chunks ({pct:.0f}%) with "
                f"{escape(emb['model'])}"
                + (f", {emb['pending']} pending: run noteseek index" if emb["pending"] else "")
            )
    run = data.get("last_run")
    if run:
        when = time.strftime("%Y-%m-%d %H:%M:%S", time.localtime(run["finished"]))
        out.print(
            f"last run {when}: {run['added']} added, {run['updated']} updated, "
            f"{run['removed']} removed, {run['skipped']} skipped in {run['seconds']}s"
        )
    problems = data["problems"]
    if problems:
        out.print(f"[bold]{len(problems)} problems[/]")
        for p in problems:
            style = "red" if p["severity"] == "skipped" else "yellow"
            out.print(
                f"  [{style}]{p['severity']}[/] {escape(p['root'])}/{escape(p['path'])}: "
                f"{escape(p['reason'])}"
            )


@config_app.command("show")
def config_show(
    as_json: Annotated[bool, typer.Option("--json", help="Print as JSON.")] = False,
) -> None:
    """Every resolved setting and the layer it came from (default, user, project, env, flag)."""
    with _engine() as engine:
        cfg = engine.config
        rows = cfg.flat()[:-1]
        files = {
            "user": str(cfg.user_file),
            "project": str(cfg.project_file) if cfg.project_file else None,
        }
    if as_json:
        payload = {
            "files": files,
            "index_dir": str(engine.index_dir),
            "index_dir_reason": engine.config.index_dir_reason,
            "values": [{"key": k, "value": v, "layer": layer} for k, v, layer in rows],
        }
        out.print_json(json.dumps(payload, ensure_ascii=False))
        return
    out.print(f"user file:    {escape(str(files['user']))}")
    out.print(f"project file: {escape(str(files['project'] or '(none found)'))}")
    out.print(
        f"index dir:    {escape(str(engine.index_dir))} ({escape(engine.config.index_dir_reason)})"
    )
    table = Table("key", "value", "layer", box=None)
    for key, value, layer in rows:
        table.add_row(escape(key), escape(json.dumps(value, ensure_ascii=False)), layer)
    out.print(table)


# -- live index: mcp and watch ----------------------------------------------------------------


def _load_live_config() -> Any:
    """The configuration for a long-running command (the index is opened by the service).

    Raises ConfigError with the problem.
    """
    from noteseek.engine import open_engine

    engine = open_engine(Path.cwd(), State.config_file, State.flags)
    config = engine.config
    engine.close()
    return config


def _live_config() -> Any:
    try:
        return _load_live_config()
    except ConfigError as exc:
        raise _fail(str(exc), EXIT_USAGE) from None


def _log_to_stderr(level: int) -> None:
    import logging

    logging.basicConfig(
        stream=sys.stderr, level=level, format="%(asctime)s %(levelname)s %(name)s: %(message)s"
    )
    # watchfiles logs every batch at INFO; noteseek logs what it did with it instead.
    logging.getLogger("watchfiles").setLevel(logging.WARNING)


WatchOption = Annotated[
    bool, typer.Option(help="Watch the roots and keep the index fresh (as the writer).")
]
LiveConfigOption = Annotated[
    Path | None,
    typer.Option("--config", "-c", help="Project config file (default: found from here)."),
]


@app.command("mcp")
def mcp_command(
    watch: WatchOption = True,
    config: LiveConfigOption = None,
) -> None:
    """Serve noteseek's tools to AI agents over MCP on stdin/stdout."""
    import logging

    if config is not None:
        State.config_file = config

    from noteseek.interfaces.mcp import run_stdio

    def load() -> Any:
        try:
            return _load_live_config()
        except ConfigError as exc:
            raise ConfigError(f"configuration: {exc}") from None

    _log_to_stderr(logging.INFO)
    run_stdio(load, watch=watch)


@app.command("serve")
def serve_command(
    host: Annotated[
        str | None,
        typer.Option(help="Address to listen on (default serve.host, 127.0.0.1)."),
    ] = None,
    port: Annotated[
        int | None,
        typer.Option(min=0, max=65535, help="Port (default serve.port, 8765; 0 = a free one)."),
    ] = None,
    token: Annotated[
        str | None,
        typer.Option(
            help="API token clients send as 'Authorization: Bearer <token>'; required off "
            "loopback. Prefer NOTESEEK_SERVE__TOKEN: options show in process lists."
        ),
    ] = None,
    watch: WatchOption = True,
    config: LiveConfigOption = None,
) -> None:
    """Serve the HTTP API, MCP over streamable HTTP (/mcp) and the web page."""
    import logging

    if config is not None:
        State.config_file = config
    for key, value in (("serve.host", host), ("serve.port", port), ("serve.token", token)):
        if value is not None:
            State.flags[key] = value
    loaded = _live_config()

    from noteseek.interfaces.serve import ServeRefused, run_server

    _log_to_stderr(logging.INFO)
    try:
        run_server(loaded, watch=watch)
    except ServeRefused as exc:
        raise _fail(str(exc), EXIT_USAGE) from None


@app.command("watch")
def watch_command() -> None:
    """Keep the index fresh in the foreground: reconcile, then index changes as they happen."""
    import logging
    import signal

    from noteseek.engine.live import IndexService

    _log_to_stderr(logging.INFO)
    service = IndexService(_live_config())

    def on_term(_signum: int, _frame: Any) -> None:
        raise KeyboardInterrupt

    signal.signal(signal.SIGTERM, on_term)
    role = service.start()
    if role == "reader":
        err.print(
            "another process is the writer of this index and keeps it fresh; "
            "waiting to take over when it exits (Ctrl-C to stop)"
        )
    try:
        while True:
            time.sleep(3600)
    except KeyboardInterrupt:
        err.print("stopping: finishing the current batch")
    finally:
        service.stop()


def main() -> None:
    try:
        app()
    except KeyboardInterrupt:
        err.print("interrupted")
        sys.exit(EXIT_INTERRUPTED)


if __name__ == "__main__":
    main()
