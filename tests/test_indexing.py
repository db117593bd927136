"""Incremental indexing: skip, touch, edit, delete, rename, roots, excludes, rebuilds."""

from __future__ import annotations

import os
import shutil
import time
from pathlib import Path

import pytest

from noteseek.engine import Filter, SearchRequest
from noteseek.indexing import indexer as indexer_module
from noteseek.indexing import outcomes as outcomes_module
from noteseek.indexing import pool as pool_module
from tests.helpers import engine_for, paths, project, write


def test_example_vault_indexes_and_skips_hidden_and_gitignored(tmp_path: Path, vault: Path) -> None:
    with engine_for(project(tmp_path, {"vault": vault})) as engine:
        report = engine.index()
        assert report.added == 36
        assert report.scanned == 36
        # .obsidian/ is hidden and drafts/ is in the vault's .gitignore
        assert not engine.search(SearchRequest("quokkaworkspace")).hits
        assert not engine.search(SearchRequest("zanzibarquux")).hits
        reasons = {p["path"]: p["reason"] for p in report.problems}
        assert "no body text" in reasons["notes/kafka.md"]
        assert engine.search(SearchRequest("Apache Kafka")).hits[0].path == "notes/kafka.md"


def test_second_run_reads_nothing(
    tmp_path: Path, vault: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    with engine_for(project(tmp_path, {"vault": vault})) as engine:
        engine.index()

        def boom(*args: object, **kwargs: object) -> None:
            raise AssertionError("an unchanged file was read")

        monkeypatch.setattr(outcomes_module, "prepare_file", boom)
        report = engine.index()
        assert report.unchanged == 36
        assert report.added == report.updated == report.removed == 0


def test_touched_file_with_same_content_updates_metadata_only(tmp_path: Path, vault: Path) -> None:
    with engine_for(project(tmp_path, {"vault": vault})) as engine:
        engine.index()
        before = engine.search(SearchRequest("redis ttl")).hits[0].chunk_id
        note = vault / "notes" / "redis.md"
        os.utime(note, (time.time() + 10, time.time() + 10))
        report = engine.index()
        assert report.touched == 1
        assert report.updated == 0
        assert engine.search(SearchRequest("redis ttl")).hits[0].chunk_id == before


def test_edit_replaces_the_file_chunks(tmp_path: Path, vault: Path) -> None:
    with engine_for(project(tmp_path, {"vault": vault})) as engine:
        engine.index()
        note = vault / "notes" / "go.md"
        note.write_text("# Go\n\nGoroutines and the xylophonic scheduler.\n", encoding="utf-8")
        report = engine.index()
        assert report.updated == 1
        assert paths(engine.search(SearchRequest("xylophonic")).hits) == ["notes/go.md"]
        assert all(h.path != "notes/go.md" for h in engine.search(SearchRequest("gofmt")).hits)


def test_editing_one_section_keeps_other_chunk_ids(tmp_path: Path) -> None:
    notes = tmp_path / "notes"
    body = "# T\n\n## One\n\nalpha text here\n\n## Two\n\nbeta text here\n\n## Three\n\ngamma\n"
    write(notes / "a.md", body)
    # One chunk per section: small sections are not merged here (merging is tested apart).
    flags = {"search.max_per_document": 0, "chunking.merge_small": False}
    with engine_for(project(tmp_path, {"n": notes}), **flags) as engine:
        engine.index()
        ids = {
            h.heading_path[-1]: h.chunk_id for h in engine.search(SearchRequest("text gamma")).hits
        }
        write(
            notes / "a.md", body.replace("alpha text here", "alpha text here, longer now\n\nmore")
        )
        engine.index()
        after = {
            h.heading_path[-1]: h.chunk_id for h in engine.search(SearchRequest("text gamma")).hits
        }
        assert after["Two"] == ids["Two"]
        assert after["Three"] == ids["Three"]


def test_deleted_file_is_removed(tmp_path: Path, vault: Path) -> None:
    with engine_for(project(tmp_path, {"vault": vault})) as engine:
        engine.index()
        (vault / "notes" / "rust.md").unlink()
        report = engine.index()
        assert report.removed == 1
        assert all(
            h.path != "notes/rust.md" for h in engine.search(SearchRequest("rust borrow")).hits
        )


def test_rename_is_recognised_by_content_hash(tmp_path: Path, vault: Path) -> None:
    with engine_for(project(tmp_path, {"vault": vault})) as engine:
        engine.index()
        old = engine.store.find_files("notes/docker.md")[0]
        shutil.move(vault / "notes" / "docker.md", vault / "notes" / "containers.md")
        report = engine.index()
        assert (report.renamed, report.added, report.removed) == (1, 0, 0)
        new = engine.store.find_files("notes/containers.md")[0]
        assert new.file_id == old.file_id
        assert not engine.store.find_files("notes/docker.md")


def test_same_relative_path_in_two_roots_keeps_both(tmp_path: Path) -> None:
    write(tmp_path / "a" / "x.md", "# X\n\nshared name, first root: lighthouse\n")
    write(tmp_path / "b" / "x.md", "# X\n\nshared name, second root: lighthouse\n")
    with engine_for(project(tmp_path, {"a": tmp_path / "a", "b": tmp_path / "b"})) as engine:
        engine.index()
        hits = engine.search(SearchRequest("lighthouse")).hits
        assert sorted(h.doc_id for h in hits) == ["a/x.md", "b/x.md"]
        assert [
            h.doc_id
            for h in engine.search(SearchRequest("lighthouse", filter=Filter(roots=["b"]))).hits
        ] == ["b/x.md"]
        # Indexing one root leaves the other alone.
        (tmp_path / "a" / "x.md").unlink()
        engine.index(["a"])
        assert [h.doc_id for h in engine.search(SearchRequest("lighthouse")).hits] == ["b/x.md"]


def test_exclude_added_later_removes_files(tmp_path: Path, vault: Path) -> None:
    folder = project(tmp_path, {"vault": vault})
    with engine_for(folder) as engine:
        engine.index()
        assert engine.search(SearchRequest("kenji")).hits
    cfg = folder / ".noteseek.toml"
    cfg.write_text(cfg.read_text() + 'exclude = ["people/"]\n', encoding="utf-8")
    with engine_for(folder) as engine:
        report = engine.index()
        assert report.removed == 2
        assert not any(
            h.path.startswith("people/") for h in engine.search(SearchRequest("kenji")).hits
        )


def test_changed_analyzer_setting_rebuilds_and_says_why(tmp_path: Path, vault: Path) -> None:
    folder = project(tmp_path, {"vault": vault})
    with engine_for(folder) as engine:
        engine.index()
    with engine_for(folder, **{"analysis.stopwords": False}) as engine:
        report = engine.index()
        assert report.rebuilt_because and "analyzer.stopwords" in report.rebuilt_because
        assert report.added == 36


def test_interrupted_run_leaves_a_consistent_index_and_resumes(tmp_path: Path) -> None:
    notes = tmp_path / "notes"
    for i in range(40):
        write(notes / f"n{i:02}.md", f"# Note {i}\n\nsharedword body {i}\n")
    with engine_for(project(tmp_path, {"n": notes})) as engine:
        monkey_batch = indexer_module.BATCH_FILES
        indexer_module.BATCH_FILES = 5
        try:

            def stop_after(done: int, total: int, path: str) -> None:
                if done == 23:
                    raise KeyboardInterrupt

            with pytest.raises(KeyboardInterrupt):
                engine.index(progress=stop_after)
        finally:
            indexer_module.BATCH_FILES = monkey_batch
        stored = engine.store.stats()
        # Whole batches only: each indexed file has all its chunks.
        assert stored["files"] % 5 == 0 and 0 < stored["files"] < 40
        assert stored["chunks"] == stored["files"]
        report = engine.index()
        assert report.added == 40 - stored["files"]
        assert engine.store.stats()["files"] == 40


def test_an_unavailable_root_keeps_its_indexed_files(tmp_path: Path, vault: Path) -> None:
    with engine_for(project(tmp_path, {"vault": vault})) as engine:
        engine.index()
        moved = tmp_path / "unmounted"
        vault.rename(moved)
        report = engine.index()
        assert report.removed == 0
        assert any("root is not readable" in p["reason"] for p in report.problems)
        assert engine.search(SearchRequest("redis ttl")).hits


def test_parser_processes_start_clean_from_a_process_with_threads(tmp_path: Path) -> None:
    """Enough files for the process pool, indexed while other threads run (as in a live index):
    the pool's processes are spawned, not forked from this threaded process."""
    import threading

    notes = tmp_path / "notes"
    count = outcomes_module.PARALLEL_MIN_FILES + 10
    for i in range(count):
        write(notes / f"n{i}.md", f"# Note {i}\n\nThe walrus number {i}.\n")
    stop = threading.Event()
    busy = threading.Thread(target=stop.wait, daemon=True)
    busy.start()
    assert pool_module.START_METHOD == "spawn"
    with engine_for(project(tmp_path, {"notes": notes}), **{"index.workers": 2}) as engine:
        report = engine.index()
        assert report.added == count
        assert len(engine.search(SearchRequest("walrus", top_k=1000, mode="keyword")).hits) == count
    stop.set()
