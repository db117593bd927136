"""A memory write is never acknowledged and then left unindexed, whichever process holds the
writer role: the write waits in the index folder's journal, and the answer says who indexes it.

The one-shot writer here is the real ``one_shot_writer`` (what ``noteseek index`` runs) in a
child process that holds the role until the test lets it finish, so a write lands while an
index run is in progress; the agent is the real MCP server over stdio.
"""

from __future__ import annotations

import subprocess
import sys
import time
from pathlib import Path

import anyio

from noteseek.engine import SearchRequest
from tests.helpers import engine_for, project, write
from tests.mcp_client import call, eventually, session

HOLDER = """
import sys, time
from pathlib import Path
from noteseek.engine import open_engine
from noteseek.engine.handoff import one_shot_writer

folder, release = Path(sys.argv[1]), Path(sys.argv[2])
engine = open_engine(folder, environ={})
with one_shot_writer(engine, "index"):
    engine.index()
    print("holding", flush=True)
    while not release.exists():
        time.sleep(0.05)
print("done", flush=True)
"""


def _project(tmp_path: Path) -> Path:
    notes = tmp_path / "notes"
    write(notes / "a.md", "# A\n\nA note about nothing in particular.\n")
    return project(tmp_path, {"notes": notes}, "[embedding]\nenabled = false\n")


def test_a_memory_written_while_noteseek_index_runs_is_indexed_when_it_finishes(
    tmp_path: Path,
) -> None:
    folder = _project(tmp_path)
    release = tmp_path / "release"
    holder = subprocess.Popen(
        [sys.executable, "-c", HOLDER, str(folder), str(release)],
        stdout=subprocess.PIPE,
        text=True,
    )
    try:
        assert holder.stdout is not None and holder.stdout.readline().strip() == "holding"

        async def main() -> None:
            async with session(folder) as client:
                made = await call(
                    client,
                    "create_memory",
                    {"name": "okapi", "content": "The okapi lives in the Ituri rainforest."},
                )
                assert made["created"]
                assert made["indexed"].startswith("noteseek index (pid "), made
                assert "indexes this write before it finishes" in made["indexed"]
                release.touch()  # the index run finishes: it indexes the waiting write

                async def found() -> bool:
                    out = await call(
                        client, "search_memories", {"query": "okapi ituri", "mode": "keyword"}
                    )
                    return "okapi.md" in [r["path"] for r in out["results"]]

                await eventually(found, timeout=30, step=0.1)

        anyio.run(main)
        assert holder.wait(30) == 0
    finally:
        if holder.poll() is None:
            holder.kill()
            holder.wait()


def test_a_write_recorded_while_a_one_shot_writer_finishes_is_indexed_by_it(
    tmp_path: Path,
) -> None:
    """Another process's write lands in the journal after the run's last look: the writer
    takes it before it gives the role up."""
    from noteseek.engine.handoff import one_shot_writer
    from noteseek.indexing import pending

    folder = _project(tmp_path)
    with engine_for(folder) as engine:
        memory = engine.memory_folder()
        with one_shot_writer(engine, "index"):
            engine.index()
            # As another process would: the file, then its journal record.
            memory.create("walrus", "The walrus sleeps on the ice floe.")
            pending.record(engine.index_dir, engine.memory_root(), ["walrus.md"])
        assert not pending.waiting(engine.index_dir)
        hits = engine.search(SearchRequest("walrus ice floe", mode="keyword", source="memory")).hits
        assert [h.path for h in hits] == ["walrus.md"]


def test_a_write_with_nobody_writing_is_indexed_by_its_own_process(tmp_path: Path) -> None:
    folder = _project(tmp_path)
    with engine_for(folder) as engine:
        engine.index()
        written = engine.memories.create("tapir", "The tapir's snout is a short trunk.")
        assert written.indexed == "indexed"
        started = time.monotonic()
        hits = engine.search(SearchRequest("tapir snout", mode="keyword", source="memory")).hits
        assert [h.path for h in hits] == ["tapir.md"] and time.monotonic() - started < 5


def test_a_search_of_every_scope_grows_memories_as_their_kind_says(tmp_path: Path) -> None:
    """``source="all"`` mixes kinds: memories grow to ``memory.expand_chars`` as in a memory
    search, documents stay their own section."""
    notes = tmp_path / "notes"
    doc = "# Otters\n\nSea otters hold hands while they sleep.\n\n## Diet\n\nUrchins and crabs.\n"
    write(notes / "otters.md", doc)
    folder = project(tmp_path, {"notes": notes}, "[embedding]\nenabled = false\n")
    turns = "\n\n".join(f"**Ann:** turn {i} about the weather." for i in range(12))
    log = f"# 2024-03-01\n\n{turns}\n\n**Ann:** we saw sea otters sleeping.\n"
    write(folder / ".memories" / "memory" / "2024-03-01.md", log)
    with engine_for(folder) as engine:
        engine.index()
        memory = engine.search(
            SearchRequest("sea otters sleeping", mode="keyword", source="memory")
        ).hits
        mixed = engine.search(
            SearchRequest("sea otters sleeping", mode="keyword", source="all")
        ).hits
        documents = engine.search(SearchRequest("sea otters sleeping", mode="keyword")).hits
    grown = {(h.doc_id, h.start_line, h.end_line) for h in memory}
    memory_in_mixed = {(h.doc_id, h.start_line, h.end_line) for h in mixed if h.root == "memory"}
    assert memory_in_mixed and memory_in_mixed <= grown
    assert any(end - start >= 4 for _, start, end in grown)
    document = next(h for h in mixed if h.root == "notes")
    alone = next(h for h in documents if h.root == "notes")
    assert (document.start_line, document.end_line) == (alone.start_line, alone.end_line)
