"""Per-request budgets and parameter validation: no request stalls the others or gets a 500.

Each case is a repro from the adversarial trial (issue 18): it ran for seconds to minutes, or
ended in a traceback or an HTTP 500, before the fix. They run through the operations table
and through real doors: the CLI in a subprocess and HTTP to a `noteseek serve` on 127.0.0.1.
"""

from __future__ import annotations

import json
import random
import threading
import time
from collections.abc import Iterator
from pathlib import Path
from string import ascii_lowercase
from typing import Any

import pytest

from noteseek.engine import Engine, Filter, SearchRequest
from noteseek.operations import NO_LIMITS, Context, OperationError, execute, parse
from tests.helpers import engine_for, project, run_cli, write
from tests.test_serve import ServeProcess, serving_example_vault

LONG_NAME = "a" * 300
"""A file name longer than any the system can hold (255 bytes)."""


def run(engine: Engine, operation: str, /, **arguments: Any) -> dict[str, Any]:
    op, params = parse(operation, arguments)
    return execute(op, Context(engine, None, NO_LIMITS), params)


def refused(engine: Engine, operation: str, /, **arguments: Any) -> str:
    """The message of an invalid-parameter error (any other outcome fails the test)."""
    with pytest.raises(OperationError) as caught:
        run(engine, operation, **arguments)
    assert caught.value.kind == "invalid", caught.value
    return str(caught.value)


@pytest.fixture(scope="module")
def server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[ServeProcess]:
    with serving_example_vault(tmp_path_factory.mktemp("budgets")) as running:
        yield running
    assert "Traceback" not in running.log


@pytest.fixture
def engine(tmp_path: Path, vault: Path) -> Iterator[Engine]:
    with engine_for(project(tmp_path, {"vault": vault})) as opened:
        opened.index()
        yield opened


# -- bad parameters: a precise invalid-parameter error on every door -----------------------------

BAD_SEARCHES: list[tuple[dict[str, Any], str]] = [
    ({"paths": ["[z-a]"]}, "the range z-a is reversed"),
    ({"paths": ["!"]}, "negates nothing"),
    ({"paths": ["\\"]}, "ends with a backslash"),
    ({"excluded_files": ["notes/[draft"]}, "never closes"),
    ({"where": ["\x00=1"]}, "control character U+0000"),
    ({"after": "9" * 400 + "d"}, "more than 10,000 years"),
    ({"before": "1" * 5000 + "y"}, "more than 10,000 years"),
    ({"tags": [f"t{i}" for i in range(1000)]}, "at most 64"),
    ({"where": [f"k{i}=v" for i in range(1000)]}, "at most 64"),
]


@pytest.mark.parametrize(("filters", "reason"), BAD_SEARCHES)
def test_bad_filters_are_invalid_through_the_operations_table(
    engine: Engine, filters: dict[str, Any], reason: str
) -> None:
    assert reason in refused(engine, "query_documents", query="redis", **filters)


def test_every_date_a_user_can_write_is_accepted(engine: Engine) -> None:
    found = run(engine, "query_documents", query="redis", after="0001-01-01", mode="keyword")
    assert found["results"]
    assert not run(engine, "query_documents", query="redis", after="9999-12-31")["results"]
    assert run(engine, "list_memories", after="0001-01-01", before="9999-12-31")["memories"] == []


def test_bad_parameters_get_a_400_and_keep_alive_survives(server: ServeProcess) -> None:
    with server.client() as client:
        for filters, reason in BAD_SEARCHES:
            response = client.post("/query_documents", json={"query": "redis", **filters})
            assert response.status_code == 400, (filters, response.text)
            assert reason in response.json()["error"]
            # The same keep-alive connection serves the next request.
            assert client.get("/health").json() == {"status": "ok"}
        for path in ("a" * 4096, f"notes/{LONG_NAME}.md"):
            for route in ("/documents/", "/links/", "/graph/"):
                response = client.get(route + path)
                assert response.status_code == 400, (route, response.text)
                assert "at most" in response.json()["error"]
        for paths in (["a" * 4096], [f"/tmp/{LONG_NAME}"], ["a\x00b"]):
            response = client.post("/reindex", json={"paths": paths})
            assert response.status_code == 400, response.text
        ok = client.post("/query_documents", json={"query": "redis", "after": "0001-01-01"})
        assert ok.status_code == 200 and ok.json()["results"]
    assert "Traceback" not in server.log


def test_bad_parameters_on_the_command_line_exit_2(tmp_path: Path, vault: Path) -> None:
    folder = project(tmp_path, {"vault": vault})
    run_cli(["index"], folder)
    for args, reason in [
        (["search", "redis", "--path", "[z-a]"], "the range z-a is reversed"),
        (["search", "redis", "--after", "9" * 400 + "d"], "more than 10,000 years"),
        (["get", "a" * 4096], "at most 4,095"),
        (["links", f"notes/{LONG_NAME}.md"], "at most 255"),
        (["index", f"{tmp_path}/{LONG_NAME}"], "at most 255"),
        (["index", "~nobody-here-at-all/notes"], "neither a configured root"),
    ]:
        failed = run_cli(args, folder, code=2)
        assert reason in failed.stderr and "Traceback" not in failed.stderr, args
    assert "redis" in run_cli(["search", "redis", "--after", "0001-01-01"], folder).stdout


# -- query terms: repeats count once, distinct ones are bounded ------------------------------------


@pytest.fixture(scope="module")
def sections(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Engine]:
    """1,500 sections that all hold one word: the worst case for repeating it."""
    base = tmp_path_factory.mktemp("sections")
    for i in range(100):
        parts = "\n\n".join(f"## Part {j}\n\nhugo builds the site {i} {j}" for j in range(15))
        write(base / "n" / f"n{i}.md", f"# Note {i}\n\n{parts}\n")
    # Every section of a note in the results (no grouping by document): the most to rank.
    with engine_for(project(base, {"n": base / "n"}), **{"search.max_per_document": 0}) as opened:
        opened.index()
        opened.search(SearchRequest("warm up", mode="keyword"))
        yield opened


@pytest.mark.parametrize(
    "query",
    [
        " ".join(["hugo"] * 800),  # 7.0 s before
        " ".join(["h*"] * 1300),  # 44 s before
        " ".join(f"w{i}*" for i in range(600)),  # 600 distinct prefixes
    ],
)
def test_a_long_query_costs_at_most_its_distinct_terms(sections: Engine, query: str) -> None:
    started = time.perf_counter()
    response = sections.search(SearchRequest(query, mode="keyword"))
    assert time.perf_counter() - started < 1.0
    distinct = len(set(query.split()))
    assert bool(response.warnings) == (distinct > 64), response.warnings
    if query.startswith(("hugo", "h*")):
        assert len(response.hits) == 10


# -- the time limit: a search past search.time_limit stops and frees the store ---------------------

TWO_LETTER_PREFIXES = " ".join(f"{a}{b}*" for a in ascii_lowercase for b in ascii_lowercase)
"""676 prefixes: each expands to many terms; 1.5 to 2 s on the index below without a limit."""


@pytest.fixture(scope="module")
def wordy(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """2,250 sections of 120 words drawn from 20,000 made-up ones."""
    base = tmp_path_factory.mktemp("wordy")
    rng = random.Random(18)
    vocabulary = [
        "".join(rng.choice(ascii_lowercase) for _ in range(rng.randint(4, 9)))
        for _ in range(20_000)
    ]
    for i in range(150):
        parts = "\n\n".join(
            f"## Part {j}\n\n" + " ".join(rng.choice(vocabulary) for _ in range(120))
            for j in range(15)
        )
        write(base / "n" / f"n{i}.md", f"# Note {i}\n\n{parts}\n")
    folder = project(base, {"n": base / "n"})
    with engine_for(folder) as opened:
        opened.index()
    return folder


def test_a_search_past_its_time_limit_stops_and_frees_the_store(wordy: Path) -> None:
    flags = {"search.max_query_terms": 1000, "search.time_limit": 0.3}
    with engine_for(wordy, **flags) as engine:
        run(engine, "query_documents", query="note part", mode="keyword")
        outcome: dict[str, Any] = {}

        def heavy() -> None:
            started = time.perf_counter()
            try:
                run(engine, "query_documents", query=TWO_LETTER_PREFIXES, mode="keyword")
            except OperationError as exc:
                outcome["error"] = exc
            outcome["seconds"] = time.perf_counter() - started

        worker = threading.Thread(target=heavy)
        worker.start()
        time.sleep(0.2)
        # Another search of the same process waits for the store at most the heavy one's limit.
        started = time.perf_counter()
        light = run(engine, "query_documents", query="note part", mode="keyword")
        light_seconds = time.perf_counter() - started
        worker.join()
    error = outcome.get("error")
    assert isinstance(error, OperationError) and error.kind == "unavailable", outcome
    assert "search.time_limit" in str(error)
    assert outcome["seconds"] < 1.0  # stopped inside its FTS statement, not after it
    assert light["results"] and light_seconds < 0.5


def test_a_search_past_its_time_limit_is_a_503_and_exit_3(tmp_path: Path, vault: Path) -> None:
    tiny = {"NOTESEEK_SEARCH__TIME_LIMIT": "0.000001"}
    with serving_example_vault(tmp_path / "serve", **tiny) as server, server.client() as client:
        response = client.post("/query_documents", json={"query": "redis ttl"})
        assert response.status_code == 503, response.text
        assert "search.time_limit" in response.json()["error"]
        assert client.get("/health").json() == {"status": "ok"}
        assert client.get("/status").status_code == 200
    assert "Traceback" not in server.log
    folder = project(tmp_path, {"vault": vault})
    run_cli(["index"], folder)
    failed = run_cli(["search", "redis"], folder, env=tiny, code=3)
    assert "search.time_limit" in failed.stderr and "Traceback" not in failed.stderr


# -- links: a note of 100,000 wikilinks costs what its first 2,000 cost ----------------------------


def test_a_note_of_100k_wikilinks_does_not_slow_every_search(tmp_path: Path, vault: Path) -> None:
    rng = random.Random(4)
    lines = ["# Everything", ""] + [f"[[n{rng.randrange(100_000)}]] " for _ in range(100_000)]
    write(vault / "everything.md", "\n".join(lines))  # 1.2 MB; every CLI search took 21-58 s
    folder = project(tmp_path, {"vault": vault})
    with engine_for(folder) as engine:
        engine.index()
    # A fresh engine builds the link graph (and its communities) as a new CLI process does.
    with engine_for(folder) as engine:
        started = time.perf_counter()
        assert engine.search(SearchRequest("redis ttl", mode="keyword")).hits
        assert time.perf_counter() - started < 3.0
        links = engine.links("everything.md")
        assert len(links["outgoing"]) == 2000  # search.max_links_per_document
    with engine_for(folder, **{"search.max_links_per_document": 0}) as engine:
        started = time.perf_counter()
        assert len(engine.links("everything.md")["outgoing"]) == 100_000
        assert time.perf_counter() - started < 10.0  # all of them: linear, no longer quadratic


# -- bytes that are not UTF-8 ----------------------------------------------------------------------


@pytest.mark.embeddings
def test_a_query_of_bytes_that_are_not_utf8_is_searched(tmp_path: Path) -> None:
    notes = tmp_path / "notes"
    write(notes / "felines.md", "# Felines\n\nMy kitten sleeps on the sofa and purrs.\n")
    write(notes / "redis.md", "# Redis\n\nEXPIRE sets a time to live on a key.\n")
    folder = project(tmp_path, {"n": notes})
    with engine_for(folder, embeddings=True) as engine:
        engine.index()
        # What Python makes of the bytes b"caf\xe9 kitten" on the command line.
        for mode in ("hybrid", "semantic", "keyword"):  # the tokenizer raised a TypeError
            assert (
                engine.search(SearchRequest("caf\udce9 kitten", mode=mode)).hits[0].path
                == "felines.md"
            )
        assert (
            engine.search(SearchRequest("redis", filter=Filter(tags=["\udcff"]))).hits == []
        )  # SQLite could not bind it
        # Over JSON doors the lone surrogate is refused, precisely, in any text parameter.
        for arguments in ({"query": "\udcff"}, {"query": "x", "tags": ["ok", "\udcff"]}):
            assert "lone surrogate" in refused(engine, "query_documents", **arguments)
    # The command line reads such bytes as U+FFFD, says so, and searches.
    found = run_cli(["search", "caf\udce9 kitten", "--json"], folder)  # argv: b"caf\xe9 kitten"
    assert "not UTF-8" in found.stderr and "Traceback" not in found.stderr
    assert json.loads(found.stdout)["results"][0]["path"] == "felines.md"


# -- the command line prints user text as written, and a bounded list of problems ----------------


def test_the_cli_prints_user_text_as_written_and_bounds_the_problems(tmp_path: Path) -> None:
    notes = tmp_path / "notes"
    title = "root:x:0:0 :smile: [bold]b[/]"  # an emoji code and markup, as text
    write(notes / "passwd.md", f"# {title}\n\nroot:x:0:0:root:/root:/bin/bash [[:thumbs_up: x]]\n")
    for i in range(30):
        write(notes / f"empty:x:{i}.md", "")  # 30 problems, each a path with ':x:'
    folder = project(tmp_path, {"n": notes})
    run_cli(["index"], folder)
    outputs = {
        "search": run_cli(["search", "root", "--full"], folder).stdout,
        "get": run_cli(["get", "passwd.md"], folder).stderr,
        "links": run_cli(["links", "passwd.md"], folder).stdout,
    }
    status = run_cli(["status"], folder).stdout
    for command, text in {**outputs, "status": status}.items():
        assert "\u274c" not in text and "\U0001f604" not in text, (command, text)  # ❌ 😄
    assert title in outputs["search"] and "root:x:0:0:root:/root:/bin/bash" in outputs["search"]
    assert title in outputs["get"]
    assert ":thumbs_up: x (no such note yet)" in outputs["links"]
    # 30 problems: 20 listed, and how to see the rest.
    assert "30 files skipped, 0 indexed with a warning" in status
    assert status.count("empty file") == 20
    assert "... and 10 more (noteseek status --problems 0 lists all" in status
    assert "n/empty:x:0.md: empty file" in status
    every = run_cli(["status", "--problems", "0"], folder).stdout
    assert every.count("empty file") == 30 and "more" not in every
    listed = json.loads(run_cli(["status", "--json"], folder).stdout)
    assert len(listed["failures"]) == 30
