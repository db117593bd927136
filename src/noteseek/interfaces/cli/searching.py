"""``noteseek search``: the search operations from the command line.

A plain query runs ``query_documents``; ``--compressed`` runs ``query_documents_compressed``
and ``--hypothesis`` treats the text as a hypothetical answer (``search_with_hypothesis``).
Options are validated by the operation, so the bounds and messages are those of every door.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Annotated, Any

import typer
from rich.markup import escape

from noteseek.interfaces.cli.common import (
    EXIT_NOT_FOUND,
    EXIT_USAGE,
    app,
    call,
    err,
    fail,
    opened,
    out,
)
from noteseek.operations import Context
from noteseek.operations.runtime import settle_heap
from noteseek.operations.search import index_line, scope_operation

QuietOpt = Annotated[
    bool,
    typer.Option("--quiet", "-q", help="No header line naming the index that answered."),
]


@app.command()
def search(
    query: Annotated[
        str | None, typer.Argument(help='Words, "phrases", -excluded, prefix*')
    ] = None,
    top_k: Annotated[
        int | None, typer.Option("--top-k", "-k", help="Results, 1-1000 (default search.top_k).")
    ] = None,
    path: Annotated[
        list[str] | None, typer.Option("--path", help="Path glob (repeatable).")
    ] = None,
    exclude: Annotated[
        list[str] | None,
        typer.Option("--exclude", help="Leave out this file or glob (repeatable)."),
    ] = None,
    tag: Annotated[
        list[str] | None, typer.Option("--tag", help="Tag, incl. nested (repeatable).")
    ] = None,
    root: Annotated[
        list[str] | None, typer.Option("--root", help="Root name (repeatable).")
    ] = None,
    after: Annotated[
        str | None,
        typer.Option(help="Modified on/after: 2026-01-31, 7d, today, or Unix time (@1767139200)."),
    ] = None,
    before: Annotated[str | None, typer.Option(help="Modified before this date.")] = None,
    where: Annotated[
        list[str] | None, typer.Option("--where", help="Frontmatter key=value or key!=value.")
    ] = None,
    mode: Annotated[
        str | None,
        typer.Option("--mode", "-m", help="hybrid (default), keyword or semantic."),
    ] = None,
    source: Annotated[
        str | None,
        typer.Option(
            "--source",
            help="docs (default): notes and docs; memory: agent memories; commits: git "
            "history, one result per commit; all.",
        ),
    ] = None,
    min_score: Annotated[
        float | None, typer.Option("--min-score", help="Drop results scoring below this (0-1).")
    ] = None,
    hypothesis: Annotated[
        bool,
        typer.Option(
            "--hypothesis",
            help="The text is a hypothetical answer: search by its meaning, as the note would "
            "say it (HyDE), fused with its keyword matches.",
        ),
    ] = False,
    compressed: Annotated[
        bool,
        typer.Option(
            "--compressed",
            help="Drop near-duplicate sections and results below --min-score (default 0.3).",
        ),
    ] = False,
    similarity_threshold: Annotated[
        float | None,
        typer.Option(help="With --compressed: overlap that makes a section a duplicate (0.85)."),
    ] = None,
    explain: Annotated[
        bool, typer.Option("--explain", help="Show each lane's rank and score, terms and fields.")
    ] = False,
    full: Annotated[bool, typer.Option("--full", help="Include each section's full text.")] = False,
    expand: Annotated[
        int | None,
        typer.Option(
            help="Grow each result to its whole section, then its neighbours, within this "
            "many characters (implies --full).",
        ),
    ] = None,
    author: Annotated[
        list[str] | None,
        typer.Option("--author", help="--source commits: author name or email part (repeatable)."),
    ] = None,
    changed: Annotated[
        list[str] | None,
        typer.Option(
            "--file", help="--source commits: glob over the files a commit changed (repeatable)."
        ),
    ] = None,
    diff: Annotated[
        bool, typer.Option("--diff", help="--source commits: show the hunk that matched.")
    ] = False,
    as_json: Annotated[bool, typer.Option("--json", help="Print results as JSON.")] = False,
    quiet: QuietOpt = False,
    queries: Annotated[
        Path | None,
        typer.Option(help='JSONL file of {"_id", "text"} queries; prints one JSON line each.'),
    ] = None,
) -> None:
    """Search the index; results are sections ranked best first."""
    if (query is None) == (queries is None):
        raise fail("give a query, or --queries FILE (not both)", EXIT_USAGE)
    if hypothesis and compressed:
        raise fail("--hypothesis and --compressed do not combine; give one", EXIT_USAGE)
    # A scope whose kind answers with its own unit (a commit) has an operation of its own; an
    # unknown scope is refused by the operation's parameters.
    try:
        unit = scope_operation(source) if source else None
    except ValueError:
        unit = None
    if unit is not None:
        refused = {
            "--path": path,
            "--exclude": exclude,
            "--tag": tag,
            "--where": where,
            "--hypothesis": hypothesis,
            "--compressed": compressed,
            "--expand": expand,
        }
        given = [flag for flag, value in refused.items() if value]
        if given:
            raise fail(
                f"{', '.join(given)} do not apply to commits; use --file for changed files",
                EXIT_USAGE,
            )
        commit_args: dict[str, Any] = {
            "top_k": top_k,
            "repository": root,
            "after": after,
            "before": before,
            "author": author,
            "file_pattern": changed,
            "min_score": min_score,
            "mode": mode,
            "include_diff": diff or None,
            "explain": explain or None,
        }
        _search_commits(unit, query, queries, commit_args, as_json, quiet)
        return
    if author or changed or diff:
        raise fail("--author, --file and --diff need --source commits", EXIT_USAGE)
    name = (
        "search_with_hypothesis"
        if hypothesis
        else "query_documents_compressed"
        if compressed
        else "query_documents"
    )
    args: dict[str, Any] = {
        "top_k": top_k,
        "paths": path,
        "excluded_files": exclude,
        "tags": tag,
        "root": root,
        "after": after,
        "before": before,
        "where": where,
        "min_score": min_score,
        "explain": explain or None,
        "source": source,
    }
    if not hypothesis:
        args["mode"] = mode
    elif mode is not None:
        raise fail("--hypothesis chooses its own mode; leave out --mode", EXIT_USAGE)
    if compressed:
        args["similarity_threshold"] = similarity_threshold
    elif similarity_threshold is not None:
        raise fail("--similarity-threshold needs --compressed", EXIT_USAGE)
    else:
        args["expand_chars"] = expand
    text_field = "hypothesis" if hypothesis else "query"
    with opened(need_index=True) as ctx:
        if queries is not None:
            _batch(ctx, name, text_field, queries, args)
            return
        response = call(ctx, name, {**args, text_field: query})
    hits = response["results"]
    if as_json:
        out.print_json(json.dumps(response, ensure_ascii=False))
    else:
        print_index(response, quiet)
        print_spelling(response)
        print_hits(hits, explain, full or bool(expand))
        for warning in response["warnings"]:
            err.print(f"[yellow]note:[/] {escape(warning)}")
        if "compression" in response:
            c = response["compression"]
            err.print(
                f"[dim]compressed: {c['dropped_low_score']} below the minimum score, "
                f"{c['dropped_duplicates']} near-duplicates, {c['tokens_saved']} tokens saved[/]"
            )
        if explain and response.get("expansion"):
            words = escape(", ".join(response["expansion"]))
            err.print(f"[dim]keyword query expanded with: {words}[/]")
        err.print(
            f"[dim]{len(hits)} results in {response['took_ms']:.1f} ms "
            f"({response['mode']}: {', '.join(response['lanes']) or 'no lanes'})[/]"
        )
    if not hits:
        raise typer.Exit(EXIT_NOT_FOUND)


def _search_commits(
    operation: str,
    query: str | None,
    queries: Path | None,
    args: dict[str, Any],
    as_json: bool,
    quiet: bool,
) -> None:
    with opened(need_index=True) as ctx:
        if queries is not None:
            _batch(ctx, operation, "query", queries, args)
            return
        response = call(ctx, operation, {**args, "query": query})
    commits = response["commits"]
    if as_json:
        out.print_json(json.dumps(response, ensure_ascii=False))
    else:
        print_index(response, quiet)
        print_spelling(response)
        print_commits(commits, bool(args.get("explain")))
        for warning in response["warnings"]:
            err.print(f"[yellow]note:[/] {escape(warning)}")
        err.print(
            f"[dim]{len(commits)} commits in {response['took_ms']:.1f} ms "
            f"({response['mode']}: {', '.join(response['lanes']) or 'no lanes'})[/]"
        )
    if not commits:
        raise typer.Exit(EXIT_NOT_FOUND)


def print_index(response: dict[str, Any], quiet: bool) -> None:
    """Which index answered (on stderr, like the notes: stdout stays the results), since the
    index used last may belong to another vault than the one meant."""
    if not quiet:
        err.print(f"[dim]{escape(index_line(response['index']))}[/]")


def print_spelling(response: dict[str, Any]) -> None:
    """ "Did you mean" and the spellings searched besides words that matched nothing."""
    corrections = response.get("corrections")
    if not corrections:
        return
    for c in corrections:
        also = ", ".join(c["also_searched"])
        err.print(f"[yellow]{escape(c['word'])}[/] matches nothing; also searched: {escape(also)}")
    err.print(f"[bold]Did you mean:[/] {escape(response['did_you_mean'])}")


def print_commits(commits: list[dict[str, Any]], explain: bool) -> None:
    """One commit per result: short hash, date, author and subject, then what matched."""
    for c in commits:
        out.print(
            f"[bold]{c['rank']:>2}. [yellow]{c['short_hash']}[/] {escape(c['date'][:10])} "
            f"{escape(c['subject'])}[/]  [dim]{escape(c['author'])} · {escape(c['root'])} · "
            f"{escape(_files_summary(c))} · "
            f"{c['score']:.3f}[/]"
        )
        if c.get("file"):
            out.print(f"    [green]{escape(c['file'])}[/]")
        out.print(f"    {_rich_snippet(c['snippet'])}")
        if c.get("hunk"):
            for line in c["hunk"].split("\n"):
                style = "green" if line.startswith("+") else "red" if line.startswith("-") else ""
                out.print(f"    [{style}]{escape(line)}[/]" if style else f"    {escape(line)}")
        if explain and c.get("explain"):
            _print_explain(c["explain"])


def _files_summary(c: dict[str, Any]) -> str:
    """``3 files +10 -2``, or ``1,000 of 100,000 files shown +1,000 -0`` when the commit's
    file list was cut."""
    listed = len(c["files"])
    total = max(int(c.get("files_changed") or 0), listed)
    counts = f"+{c['insertions']:,} -{c['deletions']:,}"
    if total > listed:
        return f"{listed:,} of {total:,} files shown {counts}"
    return f"{total:,} file{'' if total == 1 else 's'} {counts}"


def _batch(ctx: Context, name: str, text_field: str, path: Path, args: dict[str, Any]) -> None:
    try:
        lines = path.read_text(encoding="utf-8").splitlines()
    except OSError as exc:
        raise fail(f"cannot read {path}: {exc.strerror}", EXIT_USAGE) from None
    settle_heap()  # a batch searches as a server does
    for number, line in enumerate(lines, start=1):
        if not line.strip():
            continue
        try:
            item = json.loads(line)
            qid, text = str(item["_id"]), str(item["text"])
        except (ValueError, KeyError, TypeError):
            raise fail(
                f'{path}:{number}: expected a JSON object with "_id" and "text"', EXIT_USAGE
            ) from None
        response = call(ctx, name, {**args, text_field: text})
        record = {
            "query_id": qid,
            "index": response["index"],
            "mode": response["mode"],
            "took_ms": response["took_ms"],
            "results": response["results"] if "results" in response else response["commits"],
            "warnings": response["warnings"],
        }
        sys.stdout.write(json.dumps(record, ensure_ascii=False) + "\n")
    sys.stdout.flush()


def _rich_snippet(snippet: str) -> str:
    """Turn the ``**`` highlight markers into rich markup (the rest escaped)."""
    parts = snippet.split("**")
    return "".join(
        f"[bold yellow]{escape(p)}[/]" if i % 2 else escape(p) for i, p in enumerate(parts)
    )


def print_hits(hits: list[dict[str, Any]], explain: bool, full: bool) -> None:
    for hit in hits:
        start, end = hit["start_line"], hit["end_line"]
        lines = f"{start}-{end}" if end != start else str(start)
        heading = " > ".join(hit["heading_path"])
        shown = f"  [cyan]{escape(heading)}[/]" if heading else ""
        out.print(
            f"[bold]{hit['rank']:>2}. {escape(hit['title'])}[/]  [green]{escape(hit['root'])}/"
            f"{escape(hit['path'])}:{lines}[/]{shown}  [dim]{hit['score']:.3f}  "
            f"{hit['chunk_id']}[/]"
        )
        change = hit.get("last_change")
        if change:
            out.print(
                f"    [dim]changed {escape(change['date'][:10])} by {escape(change['author'])} "
                f"({change['short_hash']}: {escape(change['subject'])})[/]"
            )
        out.print(f"    {_rich_snippet(hit['snippet'])}")
        if hit.get("also"):
            also = "; ".join(
                f"{' > '.join(a['heading_path'])}:{a['start_line']}"
                if a["heading_path"]
                else f"line {a['start_line']}"
                for a in hit["also"]
            )
            out.print(f"    [dim]also in this document: {escape(also)}[/]")
        if full and hit.get("content"):
            out.print(escape(hit["content"]))
        if explain and hit.get("explain"):
            _print_explain(hit["explain"])


def _print_explain(info: dict[str, Any]) -> None:
    kw = info.get("keyword")
    if kw is not None:
        if kw.get("rank") is None:
            out.print("    [dim]keyword: -  (not a keyword candidate)[/]")
        else:
            fields = ", ".join(f"{k} {v:.2f}" for k, v in kw["fields"].items() if v)
            out.print(
                f"    [dim]keyword: #{kw['rank']}  bm25 {kw['bm25']:.3f} ({kw['match']}); terms: "
                f"{escape(', '.join(kw['matched_terms'])) or '-'}; fields: {fields or '-'}[/]"
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
