"""The memory lane end to end through the operations table (as every door runs it): the memory
folder as a root of its own, writes that reach the index at once, memory search kept apart from
document search, memory filters, recency, typed memory links and ghost nodes, backlinks, flush
(offline, and against a real HTTP server speaking the OpenAI chat API), and bad input."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from noteseek.config import load_settings
from noteseek.engine import Engine
from noteseek.operations import NO_LIMITS, Context, OperationError, execute, parse
from noteseek.operations.memory import created_range
from noteseek.operations.memory_params import ListMemories
from tests.helpers import engine_for, project, write
from tests.test_summarize import FakeChat, chat, fake_server  # noqa: F401 (fixtures)


def run(engine: Engine, operation: str, /, **arguments: Any) -> dict[str, Any]:
    op, params = parse(operation, arguments)
    return execute(op, Context(engine, None, NO_LIMITS), params)


def refused(engine: Engine, operation: str, /, **arguments: Any) -> OperationError:
    with pytest.raises(OperationError) as caught:
        run(engine, operation, **arguments)
    return caught.value


@pytest.fixture
def folder(tmp_path: Path) -> Path:
    docs = tmp_path / "docs"
    write(docs / "auth.md", "# Auth\n\nThe auth module issues login tokens and checks them.\n")
    write(docs / "billing.md", "# Billing\n\nInvoices are sent monthly; tokens are not used.\n")
    return project(tmp_path, {"docs": docs})


@pytest.fixture
def engine(folder: Path) -> Iterator[Engine]:
    with engine_for(folder) as opened:
        opened.index()
        yield opened


def paths(result: dict[str, Any]) -> list[str]:
    return [f"{r['root']}/{r['path']}" for r in result["results"]]


def test_the_memory_folder_is_a_root_of_its_own_beside_the_project(
    engine: Engine, folder: Path
) -> None:
    assert engine.memory_root() == "memory"
    assert engine.kinds() == {"docs": "files", "memory": "memory"}
    assert Path(engine.roots()["memory"].path) == folder / ".memories"
    assert not (folder / ".memories").exists()  # created by the first write, not before
    written = run(engine, "create_memory", name="auth-decisions", content="Rotate JWT keys.")
    assert written["created"] and written["indexed"].startswith("indexed")
    text = (folder / ".memories" / "auth-decisions.md").read_text(encoding="utf-8")
    assert text.startswith("---\n") and "type: fact" in text and "Rotate JWT keys." in text


def test_a_write_is_searchable_at_once_and_document_search_leaves_memories_out(
    engine: Engine,
) -> None:
    run(engine, "create_memory", name="tokens", content="Login tokens expire after 15 minutes.")
    run(engine, "append_memory", content="Discussed token expiry with Ana.", title="sync")
    docs = run(engine, "query_documents", query="tokens", mode="keyword")
    assert {p.split("/")[0] for p in paths(docs)} == {"docs"}
    memories = run(engine, "search_memories", query="tokens", mode="keyword")
    assert paths(memories)[0] == "memory/tokens.md"
    assert {p.split("/")[0] for p in paths(memories)} == {"memory"}
    both = run(engine, "query_documents", query="tokens", mode="keyword", source="all")
    assert {p.split("/")[0] for p in paths(both)} == {"docs", "memory"}
    today = time.strftime("%Y-%m-%d")
    daily = run(engine, "search_memories", query="Ana expiry", mode="keyword")
    assert paths(daily) == [f"memory/memory/{today}.md"]


def test_memory_filters_read_files_as_the_folder_does(engine: Engine) -> None:
    run(
        engine, "create_memory", name="plan-a", content="Ship the alpha.", type="plan", tags=["p/x"]
    )
    run(engine, "create_memory", name="fact-a", content="The alpha uses Postgres.", tags=["p"])
    run(engine, "append_memory", content="The alpha demo went well.")
    run(engine, "update_memory", name="fact-a", status="archived")

    def found(**filters: Any) -> set[str]:
        result = run(engine, "search_memories", query="alpha", mode="keyword", **filters)
        return {r["path"].removesuffix(".md") for r in result["results"]}

    today = f"memory/{time.strftime('%Y-%m-%d')}"
    assert found() == {"plan-a", today}  # archived memories are left out by default
    assert found(status="all") == {"plan-a", "fact-a", today}
    assert found(status="archived") == {"fact-a"}
    assert found(type="journal") == {today}  # a daily log is a journal without saying so
    assert found(type="plan") == {"plan-a"}
    assert found(tags=["p"], status="all") == {"plan-a", "fact-a"}  # p matches p/x
    assert found(days=1) == {"plan-a", today}
    assert found(before="2000-01-01") == set()
    listed = run(engine, "list_memories", status="all")
    assert {m["name"] for m in listed["memories"]} == {"plan-a", "fact-a", today}
    assert listed["count"] == 3 and not listed["problems"]


def test_recency_shows_in_explain(engine: Engine, folder: Path) -> None:
    write(folder / ".memories" / "old.md", "# Old\n\nThe cache holds sessions.\n", mtime=1e9)
    engine.index(["memory"])  # a memory a person wrote by hand, long ago
    run(engine, "create_memory", name="new", content="The cache holds sessions for users.")
    result = run(engine, "search_memories", query="cache sessions", mode="keyword", explain=True)
    boosted = {r["path"]: r["explain"]["fusion"].get("recency_factor") for r in result["results"]}
    assert boosted == {"new.md": 1.2, "old.md": None}


def test_memory_links_are_typed_with_context_and_show_as_backlinks(engine: Engine) -> None:
    run(
        engine,
        "create_memory",
        name="auth-refactor",
        content="We will refactor [[auth]] to split token checks out.",
        type="plan",
    )
    run(engine, "create_memory", name="auth-note", content="[[auth]] is owned by Ana.")
    run(
        engine,
        "create_memory",
        name="ghost",
        content="Planning to write it.",
        links=["src/auth.py"],
    )
    backlinks = run(engine, "get_links", path="docs/auth.md")["backlinks"]
    typed = {b["doc_id"]: (b["type"], b["memory"]) for b in backlinks}
    assert typed == {
        "memory/auth-refactor.md": ("refactors", True),
        "memory/auth-note.md": ("mentions", True),
    }
    context = {b["doc_id"]: b["context"] for b in backlinks}
    assert context["memory/auth-note.md"] == "[[auth]] is owned by Ana."

    linked = run(engine, "search_linked_memories", query="token checks", target_document="auth")
    assert linked["target"] == "docs/auth.md" and not linked["ghost"]
    assert {r["path"] for r in linked["results"]} <= {"auth-refactor.md", "auth-note.md"}
    assert linked["results"][0]["path"] == "auth-refactor.md"
    ghost = run(engine, "search_linked_memories", query="write", target_document="src/auth.py")
    assert ghost["ghost"] and ghost["target"] == "?src/auth.py"
    assert [link["memory"] for link in ghost["links"]] == ["memory/ghost.md"]
    assert ghost["links"][0]["context"] == "Related: [[src/auth.py]]"
    # A ghost keeps its folders: a memory about lib/auth.py is not one about src/auth.py...
    run(engine, "create_memory", name="lib-ghost", content="Rotate tokens.", links=["lib/auth.py"])
    src = run(
        engine, "search_linked_memories", query="rotate tokens", target_document="src/auth.py"
    )
    assert src["results"] == [] and [x["memory"] for x in src["links"]] == ["memory/ghost.md"]
    lib = run(
        engine, "search_linked_memories", query="rotate tokens", target_document="lib/auth.py"
    )
    assert [r["path"] for r in lib["results"]] == ["lib-ghost.md"]
    # ...and a bare name still finds every file of that name.
    bare = run(engine, "search_linked_memories", query="x", target_document="auth.py")
    assert {x["memory"] for x in bare["links"]} == {"memory/ghost.md", "memory/lib-ghost.md"}
    nothing = run(engine, "search_linked_memories", query="x", target_document="billing.md")
    assert nothing["results"] == [] and "no memory links" in nothing["warnings"][0]


def test_the_words_around_a_link_rank_the_linked_memories(engine: Engine) -> None:
    """Two memories link billing.py and both say "retry"; the one whose link sits in the
    words of the question comes first, though the other says "retry" more often, away from
    its link (and ranks first in a plain memory search)."""
    run(
        engine,
        "create_memory",
        name="a-elsewhere",
        content="Retry, retry, retry the flaky upload job three times; retry on timeouts.\n\n"
        "Unrelated: see [[src/billing.py]] for the tax tables.",
    )
    run(
        engine,
        "create_memory",
        name="b-at-link",
        content="Failed invoices retry through [[src/billing.py]] after a day.",
    )
    plain = run(engine, "search_memories", query="retry", mode="keyword")
    assert [r["path"] for r in plain["results"]] == ["a-elsewhere.md", "b-at-link.md"]
    linked = run(
        engine,
        "search_linked_memories",
        query="retry",
        target_document="src/billing.py",
        mode="keyword",
    )
    assert [r["path"] for r in linked["results"]] == ["b-at-link.md", "a-elsewhere.md"]
    assert [r["rank"] for r in linked["results"]] == [1, 2]
    assert linked["results"][0]["score"] == 1.0 >= linked["results"][1]["score"]


def test_writes_are_refused_precisely_and_lose_nothing(engine: Engine, folder: Path) -> None:
    assert refused(engine, "create_memory", name="../out", content="x").kind == "invalid"
    assert refused(engine, "create_memory", name=".hidden", content="x").kind == "invalid"
    huge = refused(engine, "create_memory", name="big", content="x" * 70_000)
    assert huge.kind == "invalid" and "64000 characters" in str(huge)
    run(engine, "create_memory", name="one", content="First text.")
    assert refused(engine, "create_memory", name="one", content="Other.").kind == "conflict"
    same = run(engine, "create_memory", name="two", content="First text.")
    assert not same["created"] and same["duplicate_of"] == "one"
    assert refused(engine, "read_memory", name="nothing").kind == "not_found"
    hand = folder / ".memories" / "hand.md"
    hand.write_text("---\ntype: [unclosed\n---\nA person wrote this.\n", encoding="utf-8")
    before = hand.read_bytes()
    assert refused(engine, "update_memory", name="hand", status="archived").kind == "invalid"
    assert hand.read_bytes() == before
    listed = run(engine, "list_memories")
    assert [p["name"] for p in listed["problems"]] == ["hand"]
    assert not list((folder / ".memories").glob(".*tmp*"))
    assert (folder / "outside").exists() is False


def test_the_folder_bounds_what_one_write_carries(folder: Path) -> None:
    with engine_for(folder, **{"memory.max_bytes": 2048}) as engine:
        error = refused(engine, "append_memory", content="y" * 3000)
        assert error.kind == "invalid" and "2048" in str(error).replace(",", "")
        assert not (folder / ".memories" / "memory").exists()


def test_delete_and_restore_move_through_the_trash(engine: Engine, folder: Path) -> None:
    run(engine, "create_memory", name="temp", content="A passing thought about queues.")
    run(engine, "delete_memory", name="temp")
    assert (folder / ".memories" / ".trash" / "temp.md").exists()
    assert run(engine, "search_memories", query="queues", mode="keyword")["results"] == []
    assert run(engine, "memory_stats")["trash"] == 1
    run(engine, "restore_memory", name="temp")
    assert paths(run(engine, "search_memories", query="queues", mode="keyword")) == [
        "memory/temp.md"
    ]


def test_flush_offline_appends_a_summary_with_sources_and_archives(
    tmp_path: Path, folder: Path
) -> None:
    with engine_for(folder, embeddings=True) as engine:
        engine.index()
        for i, text in enumerate(
            [
                "The staging database moved to Postgres 16 last week.",
                "Ana owns the billing service and reviews its changes.",
                "The staging database now runs Postgres 16.",
                "Deploys happen on Tuesdays after the standup.",
            ]
        ):
            run(engine, "create_memory", name=f"m{i}", content=text, type="observation")
        dry = run(engine, "flush_memories", dry_run=True, max_chars=400)
        assert dry["dry_run"] and dry["written_to"] is None and dry["method"] == "extractive"
        assert "Sources: [[" in dry["summary"] and len(dry["sources"]) >= 2
        assert engine.memory_folder().stats().daily_logs == 0  # nothing written
        done = run(engine, "flush_memories", archive=True, max_chars=400)
        today = time.strftime("%Y-%m-%d")
        assert done["written_to"] == f"memory/{today}"
        log = (folder / ".memories" / "memory" / f"{today}.md").read_text(encoding="utf-8")
        assert "Memory summary" in log and "Postgres 16" in log
        assert sorted(done["archived"]) == ["m0", "m1", "m2", "m3"]
        # The summary is searchable; what it summarised is archived, not deleted.
        found = run(engine, "search_memories", query="Postgres staging", mode="keyword")
        assert [r["path"] for r in found["results"]] == [f"memory/{today}.md"]
        assert run(engine, "list_memories", status="archived")["count"] == 4


def test_flush_through_an_openai_compatible_endpoint_never_shows_the_key(
    folder: Path,
    chat: FakeChat,  # noqa: F811 (the fixture imported above)
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """Against a real HTTP server on loopback speaking the OpenAI chat API: a fake written for
    the tests (no LLM can run here), see tests/fake_openai_chat.py."""
    secret = "sk-test-" + "9" * 24
    monkeypatch.setenv("NOTESEEK_FLUSH_API_KEY", secret)
    reply = "- The staging database runs Postgres 16.\n- Ana owns billing."
    chat.reply(reply)
    settings = f'\n[flush]\nbase_url = "{chat.base_url}"\nmodel = "tiny"\n'
    (folder / ".noteseek.toml").write_text(
        (folder / ".noteseek.toml").read_text(encoding="utf-8") + settings, encoding="utf-8"
    )
    with engine_for(folder) as engine:
        engine.index()
        run(engine, "create_memory", name="db", content="Staging moved to Postgres 16.")
        run(engine, "create_memory", name="owner", content="Ana owns the billing service.")
        done = run(engine, "flush_memories")
    assert done["method"] == "llm:tiny" and done["summary"].startswith(reply)
    sent = chat.requests()
    headers = {k.lower(): v for k, v in sent[-1]["headers"].items()}
    assert headers["authorization"] == f"Bearer {secret}"
    prompt = json.dumps(sent[-1]["body"]["messages"])
    assert "Postgres 16" in prompt and "billing" in prompt
    shown = subprocess.run(
        [sys.executable, "-m", "noteseek.interfaces.cli", "config", "show"],
        cwd=folder,
        capture_output=True,
        text=True,
        env={**os.environ, "NOTESEEK_FLUSH_API_KEY": secret},
        check=True,
    )
    assert secret not in shown.stdout + shown.stderr
    assert secret not in json.dumps(done)
    for path in folder.rglob("*"):
        if path.is_file():
            assert secret.encode() not in path.read_bytes(), path


def test_a_dead_endpoint_is_unavailable_not_a_crash(folder: Path) -> None:
    (folder / ".noteseek.toml").write_text(
        (folder / ".noteseek.toml").read_text(encoding="utf-8")
        + '\n[flush]\nbase_url = "http://127.0.0.1:9/v1"\nmodel = "m"\ntimeout = 2\n',
        encoding="utf-8",
    )
    with engine_for(folder) as engine:
        engine.index()
        run(engine, "create_memory", name="a", content="Something worth keeping.")
        error = refused(engine, "flush_memories")
    assert error.kind == "unavailable" and "127.0.0.1:9" in str(error)


def test_created_range_takes_the_later_of_after_and_days() -> None:
    p = ListMemories(after="2000-01-01", days=2)
    after, before = created_range(p)
    assert after is not None and before is None
    assert time.time() - after.timestamp() == pytest.approx(2 * 86400, abs=5)


def test_an_explicit_memory_root_is_read_in_place(tmp_path: Path) -> None:
    # An existing OpenClaw / memsearch layout, no migration: MEMORY.md and daily logs.
    claw = tmp_path / "workspace"
    write(claw / "MEMORY.md", "# Memory\n\n- The user prefers tabs over spaces.\n")
    write(claw / "memory" / "2026-01-05.md", "# 2026-01-05\n\n## 09:00\n\nSet up the repo.\n")
    folder = project(
        tmp_path,
        {},
        f'[roots.claw]\npath = "{claw.as_posix()}"\nkind = "memory"\n[memory]\nroot = "claw"\n',
    )
    assert load_settings(folder).settings.memory.root == "claw"
    with engine_for(folder) as engine:
        engine.index()
        assert engine.memory_roots() == ["claw"]
        found = run(engine, "search_memories", query="tabs", mode="keyword")
        assert paths(found) == ["claw/MEMORY.md"]
        journal = run(engine, "search_memories", query="repo", mode="keyword", type="journal")
        assert paths(journal) == ["claw/memory/2026-01-05.md"]
        written = run(engine, "append_memory", content="Reviewed the parser.")
        assert written["root"] == "claw"
