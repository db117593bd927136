"""The soak's hostile-input phase: documents and requests made to break things (seeded).

Documents: ``--hostile-docs`` files written beside a sample of good notes, drawn from random
bytes, NUL bytes, deep nesting (block quotes, lists, brackets, emphasis, HTML), huge lines,
many wikilinks, long lists and tables (up to ``--hostile-max-bytes`` each), bad encodings
(Latin-1, UTF-16, invalid UTF-8), bad frontmatter (unclosed, alias bombs, deep nesting, odd
types and dates) and bad file names (not UTF-8, control characters, 255 bytes), plus a FIFO,
links that leave the root (a file and a folder holding a secret word), and folders linked to
each other (a walk that does not notice would find the same notes many times over).

Checks: ``noteseek index`` and ``status`` finish in time without a traceback; every good note
is indexed; no hostile file is silently missing (each is indexed or reported as a problem);
nothing outside the root is indexed or returned; no note is indexed twice. Then
``--hostile-requests`` fuzzed HTTP requests against ``noteseek serve`` on that index (bad
types, huge and repetitive queries, bad globs, filters and dates, long and escaping paths),
all over one keep-alive connection: every answer must be 2xx or 4xx and come within
``--stall-seconds``, the connection must survive every error, and the server must log no
traceback. A few hostile ``noteseek search`` command lines as well.
"""

from __future__ import annotations

import argparse
import json
import os
import random
import re
import sqlite3
import string
import time
from collections import Counter
from pathlib import Path
from typing import Any
from urllib.parse import quote

import httpx

from soak_corpus import ROOT, make_project
from soak_procs import TRACEBACK, Procs, log, stop

GOOD_NOTES = 100
SECRET = "soaksecretoutsidewordq"
WORDS = [
    "alpha",
    "beta",
    "gamma",
    "delta",
    "page",
    "site",
    "template",
    "content",
    "render",
    "build",
]


def hostile_document(rng: random.Random, kind: str, limit: int) -> bytes:
    """One hostile document's bytes, at most about ``limit`` bytes long."""
    text = " ".join(rng.choice(WORDS) for _ in range(40))
    n = rng.randint(1, max(1, limit // 8))
    if kind == "random_bytes":
        return rng.randbytes(rng.randint(1, min(limit, 65536)))
    if kind == "nul_bytes":
        return "\x00".join(text.split()).encode()
    if kind == "deep_quote":
        return b"> " * min(n, limit // 2) + b"deep\n"
    if kind == "deep_list":
        depth = int((limit / 2) ** 0.5)
        return "\n".join("  " * i + f"- item {i}" for i in range(depth)).encode()
    if kind == "deep_brackets":
        opener, closer = rng.choice([("[", "]"), ("(", ")"), ("*", "*"), ("<div>", "</div>")])
        k = min(n, limit // (2 * len(opener)))
        return (opener * k + "x" + closer * k).encode()
    if kind == "huge_line":
        return (" ".join(rng.choice(WORDS) for _ in range(limit // 6)))[:limit].encode()
    if kind == "wikilinks":
        return "".join(f"[[note{i}]] " for i in range(limit // 12)).encode()
    if kind == "long_list":
        return "".join(f"- item {i} {rng.choice(WORDS)}\n" for i in range(limit // 16)).encode()
    if kind == "long_table":
        rows = "".join(f"| {i} | {rng.choice(WORDS)} | x |\n" for i in range(limit // 20))
        return ("| a | b | c |\n|---|---|---|\n" + rows).encode()
    if kind == "latin1":
        return f"# Café crème\n\nNaïve façade {text} Œ ß æ\n".encode("latin-1", "replace")
    if kind == "utf16":
        return f"# UTF-16 note\n\n{text}\n".encode(rng.choice(["utf-16", "utf-16-le", "utf-16-be"]))
    if kind == "bad_utf8":
        bad = [b"\xc3\x28", b"\xed\xa0\x80", b"\xc0\xaf", b"\xff\xfe", b"\xf8\x88\x80\x80\x80"]
        parts = [w.encode() for w in text.split()]
        return b" ".join(p + rng.choice(bad) if rng.random() < 0.3 else p for p in parts)
    if kind == "frontmatter":
        return (rng.choice(BAD_FRONTMATTER) + f"\n# Title\n\n{text}\n").encode()
    if kind == "line_ends":
        return rng.choice([b"\r", b"\r\n", b"\n\r", b"\x0b", b"\x0c", b"\x85"]).join(
            [b"# Line ends", b"", text.encode(), b"end"]
        )
    if kind == "empty":
        return rng.choice([b"", b"\xef\xbb\xbf", b"---\n---\n", b"\n" * 1000, b"#" * 300])
    raise ValueError(kind)


BAD_FRONTMATTER = [
    "---\ntitle: unclosed\n",
    "---\na: &a [x, x, x, x, x, x, x, x, x]\nb: &b [*a, *a, *a, *a, *a, *a, *a, *a, *a]\n"
    "c: &c [*b, *b, *b, *b, *b, *b, *b, *b, *b]\nd: &d [*c, *c, *c, *c, *c, *c, *c, *c, *c]\n"
    "e: &e [*d, *d, *d, *d, *d, *d, *d, *d, *d]\nf: [*e, *e, *e, *e, *e, *e, *e, *e, *e]\n---",
    "---\ntags: " + "[" * 5000 + "]" * 5000 + "\n---",
    "---\n!!python/object/apply:os.system ['echo pwned']\n---",
    "---\n- a list\n- not a mapping\n---",
    "---\njust a scalar\n---",
    "---\ntitle:\n\t- tab indented\n---",
    "---\ntitle: a\ntitle: b\n---",
    "---\n" + "k" * 100_000 + ": v\n---",
    "---\ndate: 0001-01-01\nupdated: 99999-12-31\nlastmod: 2024-13-45\n---",
    "---\ntitle: [1, 2, {a: b}]\ntags: {nested: {deep: true}}\naliases: 42\n---",
    "---\ntitle: \x00\x01\x02\n---",
    "---\n: : :\n{{{\n---",
    "+++\ntitle = 'toml frontmatter'\n+++",
]
KINDS = {
    "random_bytes": 10,
    "nul_bytes": 4,
    "deep_quote": 5,
    "deep_list": 4,
    "deep_brackets": 6,
    "huge_line": 3,
    "wikilinks": 2,
    "long_list": 2,
    "long_table": 2,
    "latin1": 6,
    "utf16": 6,
    "bad_utf8": 8,
    "frontmatter": 20,
    "line_ends": 6,
    "empty": 6,
}


def hostile_name(rng: random.Random, n: int) -> bytes:
    """A file name: mostly plain, sometimes one that trips over encodings or limits."""
    roll = rng.random()
    if roll < 0.7:
        return f"h{n}.md".encode()
    return rng.choice(
        [
            b"bad_\xff%d.md" % n,
            b"latin_\xe9t\xe9_%d.md" % n,
            f"new\nline{n}.md".encode(),
            f"tab\tand\x1bescape{n}.md".encode(),
            (f"{n}-" + "long" * 70)[:250].encode() + b".md",
            f"ｆｕｌｌ　ｗｉｄｔｈ{n}.md".encode(),
            f"emoji 🎉 {n}.md".encode(),
            f"-dash{n}.md".encode(),
            f"back\\slash{n}.md".encode(),
            f" spaced {n} .md".encode(),
            f"[[brackets]]{n}.md".encode(),
            f"colon:x:{n}.md".encode(),
        ]
    )


def write_hostile(folder: Path, rng: random.Random, count: int, limit: int) -> list[bytes]:
    """``count`` hostile files under ``folder``; their paths relative to it (bytes)."""
    folder.mkdir(parents=True, exist_ok=True)
    names = []
    kinds, weights = list(KINDS), list(KINDS.values())
    for n in range(count):
        name = hostile_name(rng, n)
        data = hostile_document(rng, rng.choices(kinds, weights)[0], limit)
        with open(os.fsencode(folder) + b"/" + name, "wb") as f:
            f.write(data)
        names.append(name)
    os.mkfifo(folder / "fifo.md")
    return names


def write_links(vault: Path, outside: Path, rng: random.Random) -> int:
    """Links out of the root and folders linked to each other; how many notes they hold."""
    outside.mkdir()
    (outside / "secret.md").write_text(f"# Secret\n\n{SECRET} outside the root\n")
    (vault / "links").mkdir()
    (vault / "links" / "secret-link.md").symlink_to(outside / "secret.md")
    (vault / "links" / "outside-folder").symlink_to(outside, target_is_directory=True)
    (vault / "links" / "parent-loop").symlink_to("..", target_is_directory=True)
    # Five folders, each linking to every other: 5 notes, and a great many paths to them.
    mesh = [vault / "links" / f"mesh{i}" for i in range(5)]
    for i, folder in enumerate(mesh):
        folder.mkdir()
        (folder / f"m{i}.md").write_text(f"# Mesh {i}\n\n{rng.choice(WORDS)}\n")
    for i, folder in enumerate(mesh):
        for j, other in enumerate(mesh):
            if i != j:
                (folder / f"to{j}").symlink_to(f"../{other.name}", target_is_directory=True)
    return len(mesh)


def indexed_paths(db: Path) -> tuple[set[str], set[str]]:
    """(indexed paths, paths with a problem) of the root, read-only."""
    con = sqlite3.connect(f"file:{db}?mode=ro", uri=True)
    try:
        root = "SELECT id FROM roots WHERE name = ?"
        files = {
            p for (p,) in con.execute(f"SELECT path FROM files WHERE root_id = ({root})", (ROOT,))
        }
        problems = {
            p
            for (p,) in con.execute(f"SELECT path FROM problems WHERE root_id = ({root})", (ROOT,))
        }
    finally:
        con.close()
    return files, problems


def as_indexed(name: bytes) -> set[str]:
    """The forms a file name can take in the index (a name that is not UTF-8 has none that
    is exact: undecodable bytes escaped as Python does, written ``\\xNN`` as noteseek reports
    such a name, or replaced)."""
    return {
        os.fsdecode(name),
        name.decode("utf-8", "backslashreplace"),
        name.decode("utf-8", "replace"),
    }


FIELDS = [
    "top_n", "mode", "paths", "where", "after", "before", "excluded_files", "tags", "root",
    "expand_chars", "min_score", "explain", "source", "unknown_field",
]  # fmt: skip


def fuzz_requests(rng: random.Random, count: int, paths: list[str]) -> list[tuple[str, str, Any]]:
    """(method, url, JSON body or None) requests, seeded."""
    junk = [
        None, -1, 0, 10**12, 1.5, "x", "", [], {}, True, "\x00", "\ud800", "🎉" * 1000,
        "a" * 100_000, ["[z-a]"], {"$gt": 1},
    ]  # fmt: skip
    globs = [
        "[z-a]",
        "!",
        "\\",
        "*a*a*a*a*a*a*a*a*ab",
        "**/" * 200,
        "[",
        "{a,b}",
        "/" * 4096,
        "\x00",
    ]
    wheres = ["\x00=1", "=", "a=b=c", "!=x", "k" * 5000 + "=v", "title=" + "%" * 1000, "a!==b"]
    dates = ["9" * 400 + "d", "0001-01-01", "9999-99-99", "1e400d", "-5d", "today!", "\x00", ""]
    out: list[tuple[str, str, Any]] = []
    for _ in range(count):
        roll = rng.random()
        if roll < 0.55:
            body: Any = {"query": rng.choice(hostile_queries(rng))}
            for key in rng.sample(FIELDS, rng.randint(0, 3)):
                body[key] = {
                    "paths": [rng.choice(globs)],
                    "excluded_files": [rng.choice(globs)],
                    "where": [rng.choice(wheres)],
                    "after": rng.choice(dates),
                    "before": rng.choice(dates),
                }.get(key, rng.choice(junk))
            if rng.random() < 0.1:
                body = rng.choice(junk)  # not an object at all
            route = rng.choice(["/query_documents"] * 4 + ["/query_documents_compressed",
                               "/search_with_hypothesis", "/query_documents_stream"])  # fmt: skip
            if route == "/search_with_hypothesis" and isinstance(body, dict):
                body["hypothesis"] = body.pop("query", "")
            out.append(("POST", route, body))
            continue
        path = rng.choice(
            [rng.choice(paths), "../" * 20 + "etc/passwd", "a" * 4096, "%2e%2e/%2e%2e/etc",
             "links/secret-link.md", "links/outside-folder/secret.md", "\x00", "bad_%FF.md",
             rng.choice(paths) + "/../../..", "~root", "C:\\Windows", quote("🎉") * 200]
        )  # fmt: skip
        route = rng.choice(["documents", "sections", "links", "graph", "chunks", "render"])
        query = rng.choice(["", "?line=-1", "?line=99999999999999999999", "?line=abc",
                            "?depth=100", "?from_line=0&max_lines=-5", "?line=1"])  # fmt: skip
        target = path if route != "chunks" else rng.choice(["x" * 5000, "../x", "%00", "0" * 16])
        out.append(("GET", f"/{route}/{quote(target, safe='/%')}{query}", None))
    return out


def describe(body: Any) -> str:
    """A request body in a line: every field, long values cut short."""
    if not isinstance(body, dict):
        return repr(body)[:60]
    return "{" + ", ".join(f"{k}: {v!r:.60}" for k, v in body.items()) + "}"


def hostile_queries(rng: random.Random) -> list[str]:
    word = rng.choice(WORDS)
    return [
        " ".join([word] * 800),
        " ".join(rng.choice(WORDS) for _ in range(500)),
        "".join(rng.choice(string.punctuation) for _ in range(300)),
        '"' * 501,
        "-" * 300 + word,
        "*" * 200,
        word + "*" * 50,
        "\x00" + word,
        "(" * 1000 + word,
        "NEAR(" + word + " " + word + ", 0)",
        word + " OR " * 300 + word,
        '"' + " ".join([word] * 300) + '"',
        "".join(chr(rng.randint(0x20, 0x2FFFF)) for _ in range(200)),
    ]


def hostile_phase(args: argparse.Namespace, work: Path, procs: Procs) -> dict[str, Any]:
    rng = random.Random(args.seed + 2)
    folder = work / "hostile"
    corpus = make_project(folder, args.corpus, rng, embeddings=False)
    keep = set(rng.sample(corpus.files(), min(GOOD_NOTES, len(corpus.files()))))
    for path in corpus.files():
        if path not in keep:
            (corpus.root / path).unlink()
    names = write_hostile(corpus.root / "hostile", rng, args.hostile_docs, args.hostile_max_bytes)
    mesh_notes = write_links(corpus.root, folder / "outside", rng)
    db = folder / ".noteseek" / "index.db"
    tracebacks, stalls, exits = 0, 0, []
    runs = []
    for _ in range(2):  # the second run must find nothing new and fail no differently
        done = procs.run(
            ["index", "--keyword-only", "--json"], folder, timeout=args.hostile_timeout
        )
        runs.append(done)
        tracebacks += done.traceback
        stalls += done.code == -1
        exits.append(done.code)
        log(f"hostile: index exit {done.code} in {done.seconds:.1f} s, peak RSS "
            f"{done.peak_rss / 1e6:.0f} MB")  # fmt: skip
    status = procs.run(["status", "--json"], folder)
    tracebacks += status.traceback
    indexed, problems = indexed_paths(db) if db.exists() else (set(), set())
    good_missing = len(keep - indexed)
    hostile_paths = [b"hostile/" + n for n in names]
    silent = [n for n in hostile_paths if not (as_indexed(n) & (indexed | problems))]
    mesh_docs = sum(1 for p in indexed if p.startswith("links/mesh"))
    outside = [p for p in indexed if p.startswith("links/secret") or "outside-folder" in p]
    # A command line gets the time of a stalled request plus the CLI's start-up.
    cli = hostile_cli(procs, folder, rng, args.hostile_cli, args.stall_seconds * 3)
    tracebacks += cli["tracebacks"]
    stalls += cli["stalls"]
    http = hostile_http(args, procs, folder, rng, sorted(indexed))
    tracebacks += http["tracebacks"]
    stalls += http["stalls"]
    leftovers = [x for r in [*runs, status] for x in r.leftovers]
    leftovers += cli["leftovers"] + http["leftovers"]
    return {
        "documents": len(names) + 1,
        "good_documents": len(keep),
        "index_runs": len(runs),
        "index_exits": exits,
        "index_s": [round(r.seconds, 1) for r in runs],
        "index_peak_rss_mb": [round(r.peak_rss / 1e6) for r in runs],
        "max_bytes": args.hostile_max_bytes,
        "good_missing": good_missing,
        "silently_missing": len(silent),
        "silently_missing_names": [repr(n) for n in silent[:10]],
        "reported_problems": len(problems),
        "outside_root_indexed": len(outside),
        "duplicate_mesh_documents": max(0, mesh_docs - mesh_notes),
        "cli_inputs": cli["inputs"],
        "cli_failures": cli["failures"],
        "requests": http["requests"],
        "requests_planned": args.hostile_requests,
        "statuses": http["statuses"],
        "server_errors": http["server_errors"],
        "connection_errors": http["connection_errors"],
        "request_failures": http["failures"],
        "outside_root_served": http["outside_served"],
        "outside_root_served_by": http["outside_served_by"],
        "slowest_request_s": http["slowest_s"],
        "slowest_requests": http["slowest"],
        "stall_s": args.stall_seconds,
        "stalls": stalls,
        "tracebacks": tracebacks,
        "leftovers": len(leftovers),
        "leftover_commands": sorted({x.cmdline[:100] for x in leftovers}),
    }


def hostile_cli(
    procs: Procs, folder: Path, rng: random.Random, count: int, timeout: float
) -> dict[str, Any]:
    """A few hostile ``noteseek search`` command lines: an answer or a message within
    ``timeout`` seconds, never a traceback."""
    lines = [
        ["search", os.fsdecode(b"caf\xe9 \xff")],
        ["search", "--path", "[z-a]", "page"],
        ["search", "--path", "!", "page"],
        ["search", "--where", "\x01=1", "page"],
        ["search", "--after", "9" * 400 + "d", "page"],
        ["search", "--before", "0001-01-01", "page"],
        ["search", "--mode", "keyword", " ".join(["page"] * 800)],
        ["search", "--path", "*a*a*a*a*a*a*a*a*ab", "page"],
        ["get", "a" * 4096],
        ["get", "links/secret-link.md"],
        ["links", "../../etc/passwd"],
        ["search", "--json", "root:x:0:0"],
    ]
    rng.shuffle(lines)
    tracebacks = stalls = 0
    leftovers = []
    failures = []
    for line in lines[:count]:
        done = procs.run(line, folder, timeout=timeout)
        tracebacks += done.traceback
        stalls += done.code == -1
        leftovers += done.leftovers
        if done.traceback or done.code == -1:
            why = "traceback" if done.traceback else f"no answer within {timeout:.0f} s"
            failures.append(f"{why}: noteseek {' '.join(map(repr, line))[:100]}")
            log(f"hostile: {failures[-1]}")
    return {
        "inputs": min(count, len(lines)),
        "tracebacks": tracebacks,
        "stalls": stalls,
        "failures": failures,
        "leftovers": leftovers,
    }


def hostile_http(
    args: argparse.Namespace, procs: Procs, folder: Path, rng: random.Random, paths: list[str]
) -> dict[str, Any]:
    """Fuzzed requests against ``serve``, one at a time over one keep-alive connection."""
    server = procs.start("serve", ["serve", "--port", "0"], folder)
    statuses: Counter[str] = Counter()
    slow: list[tuple[float, str]] = []
    connection_errors = stalls = 0
    outside: list[str] = []  # the requests whose answer held the word from outside the root
    failures: list[str] = []
    try:
        deadline = time.monotonic() + 120
        while not (m := re.search(r"listening on (http://\S+?) ", server.stderr())):
            if time.monotonic() > deadline or server.proc.poll() is not None:
                raise SystemExit(f"hostile: serve did not start\n{server.stderr()[-2000:]}")
            time.sleep(0.05)
        limits = httpx.Limits(max_connections=1, max_keepalive_connections=1)
        timeout = httpx.Timeout(args.stall_seconds * 3)
        with httpx.Client(base_url=m.group(1), timeout=timeout, limits=limits) as client:
            while client.get("/status").json().get("status") != "ready":
                time.sleep(0.5)
            for method, url, body in fuzz_requests(rng, args.hostile_requests, paths or ["x.md"]):
                started = time.perf_counter()
                try:
                    if method == "GET":
                        answer = client.get(url)
                    else:
                        content = json.dumps(body).encode("utf-8", "surrogatepass")
                        answer = client.post(
                            url, content=content, headers={"content-type": "application/json"}
                        )
                    statuses[str(answer.status_code)] += 1
                    if answer.is_success and SECRET in answer.text:
                        outside.append(f"{method} {url[:100]}")
                    failed = f"{answer.status_code}" if answer.status_code >= 500 else None
                except httpx.TimeoutException:
                    statuses["timeout"] += 1
                    failed = "timeout"
                except httpx.HTTPError as exc:
                    statuses["connection error"] += 1
                    connection_errors += 1
                    failed = type(exc).__name__
                took = time.perf_counter() - started
                if failed and len(failures) < 10:
                    failures.append(f"{failed}: {method} {url[:100]!r} {describe(body)}")
                stalls += took > args.stall_seconds
                slow.append((took, f"{method} {url[:80]!r} {describe(body)}"))
                if stalls >= args.max_stalls:
                    log(f"hostile: {stalls} stalled requests, the fuzz stops here")
                    break
            try:
                answer = client.post("/query_documents", json={"query": SECRET, "mode": "keyword"})
                found = answer.json().get("results", []) if answer.is_success else []
                if any(SECRET in r.get("content", "") for r in found):
                    outside.append(f"POST /query_documents {SECRET!r}")
            except httpx.HTTPError as exc:  # a stalled server: already counted
                log(f"hostile: the search for the outside word failed: {type(exc).__name__}")
    finally:
        exit_code = stop(server)
    leftovers = procs.wait_gone(server.tag, args.leak_grace, group=server.proc.pid)
    slow.sort(reverse=True)
    log_text = server.stderr()
    return {
        "requests": sum(statuses.values()),
        "statuses": dict(sorted(statuses.items())),
        "server_errors": sum(v for k, v in statuses.items() if k.startswith("5")),
        "connection_errors": connection_errors,
        "failures": failures,
        "outside_served": len(outside),
        "outside_served_by": outside[:10],
        "slowest_s": round(slow[0][0], 2) if slow else 0.0,
        "slowest": [f"{t:.1f} s {what}" for t, what in slow[:5]],
        "stalls": stalls,
        "tracebacks": log_text.count(TRACEBACK),
        "log_bytes": len(log_text),
        "serve_exit": exit_code,
        "leftovers": leftovers,
    }
