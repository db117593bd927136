"""Targeted updates of changed paths (watcher batches): the rules and outcome of a full run."""

from __future__ import annotations

import os
import shutil
from pathlib import Path
from typing import Any

import pytest

from noteseek.config import ConfigError
from noteseek.engine import Engine, SearchRequest
from noteseek.indexing import outcomes as outcomes_module
from noteseek.sources import folder as files_module
from noteseek.sources.walk import ScanRules, scan_paths, scan_root
from tests.helpers import engine_for, paths, project, write


@pytest.fixture
def notes(tmp_path: Path) -> Path:
    folder = tmp_path / "notes"
    write(folder / "a.md", "# Alpha\n\nThe aardvark digs at dawn.\n")
    write(folder / "b.md", "# Beta\n\nThe badger sleeps all day.\n")
    write(folder / "sub" / "c.md", "# Gamma\n\nThe capybara swims.\n")
    write(folder / "sub" / "d.md", "# Delta\n\nThe dingo runs.\n")
    return folder


def indexed(tmp_path: Path, notes: Path, extra: str = "", **flags: Any) -> Engine:
    """An engine over ``notes`` (root ``n``) with a first full run done."""
    engine = engine_for(project(tmp_path, {"n": notes}, extra), **flags)
    engine.index()
    return engine


def counts(report: Any) -> dict[str, int]:
    keys = ("scanned", "added", "updated", "renamed", "touched", "removed", "unchanged")
    return {k: getattr(report, k) for k in keys if getattr(report, k)}


def no_full_scan(monkeypatch: pytest.MonkeyPatch) -> None:
    def boom(*args: object, **kwargs: object) -> None:
        raise AssertionError("a full scan ran")

    monkeypatch.setattr(files_module, "scan_root", boom)


def snapshot(engine: Engine) -> dict[str, Any]:
    """What the index holds, without ids and timestamps (which differ between indexes)."""
    store = engine.store
    files = {}
    for f in store.iter_files():
        chunks = [(c.chunk_id, c.embed_key, c.text) for c in store.file_chunks(f.file_id)]
        files[(f.root, f.path)] = (f.content_hash, f.mtime_ns, f.size, f.title, f.tags, chunks)
    problems = sorted((p.root, p.path, p.severity, p.reason) for p in store.problems())
    return {"files": files, "problems": problems}


def test_a_modified_file_is_reindexed_and_searchable(
    tmp_path: Path, notes: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    with indexed(tmp_path, notes) as engine:
        write(notes / "a.md", "# Alpha\n\nThe armadillo rolls at dawn.\n")
        no_full_scan(monkeypatch)
        report = engine.update_paths("n", ["a.md"])
        assert counts(report) == {"scanned": 1, "updated": 1}
        assert paths(engine.search(SearchRequest("armadillo")).hits) == ["a.md"]
        assert not engine.search(SearchRequest("aardvark")).hits
        last = engine.store.last_run()
        assert last is not None and last["updated"] == 1 and last["roots"] == ["n"]


def test_a_new_file_is_added(tmp_path: Path, notes: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    with indexed(tmp_path, notes) as engine:
        write(notes / "sub" / "deeper" / "e.md", "# Epsilon\n\nThe echidna forages.\n")
        no_full_scan(monkeypatch)
        report = engine.update_paths("n", ["sub/deeper/e.md"])
        assert counts(report) == {"scanned": 1, "added": 1}
        assert paths(engine.search(SearchRequest("echidna")).hits) == ["sub/deeper/e.md"]


def test_a_deleted_file_is_removed(
    tmp_path: Path, notes: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    with indexed(tmp_path, notes) as engine:
        (notes / "b.md").unlink()
        no_full_scan(monkeypatch)
        report = engine.update_paths("n", ["b.md"])
        assert counts(report) == {"removed": 1}
        assert not engine.search(SearchRequest("badger")).hits
        assert not engine.store.find_files("b.md")


def test_a_deleted_folder_takes_its_indexed_files_with_it(
    tmp_path: Path, notes: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    with indexed(tmp_path, notes) as engine:
        shutil.rmtree(notes / "sub")
        no_full_scan(monkeypatch)
        report = engine.update_paths("n", ["sub"])
        assert counts(report) == {"removed": 2}
        assert not engine.search(SearchRequest("capybara dingo")).hits
        assert engine.search(SearchRequest("badger")).hits


def test_a_rename_in_one_batch_keeps_the_file_and_its_embed_keys(
    tmp_path: Path, notes: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    with indexed(tmp_path, notes) as engine:
        old = engine.store.find_files("sub/c.md")[0]
        keys = [c.embed_key for c in engine.store.file_chunks(old.file_id)]
        assert keys and all(keys)
        os.rename(notes / "sub" / "c.md", notes / "capybara.md")
        no_full_scan(monkeypatch)
        report = engine.update_paths("n", ["sub/c.md", "capybara.md"])
        assert counts(report) == {"scanned": 1, "renamed": 1}
        new = engine.store.find_files("capybara.md")[0]
        assert new.file_id == old.file_id
        assert [c.embed_key for c in engine.store.file_chunks(new.file_id)] == keys
        assert not engine.store.find_files("sub/c.md")
        assert paths(engine.search(SearchRequest("capybara")).hits) == ["capybara.md"]


@pytest.mark.parametrize("temp", [".a.md.tmp", "a.md.tmp", "sub/.#a.md", ".sync/a.md"])
def test_an_atomic_save_indexes_the_new_content_and_never_the_temp_file(
    tmp_path: Path, notes: Path, temp: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    with indexed(tmp_path, notes) as engine:
        no_full_scan(monkeypatch)
        # The editor writes the temporary file first: a batch may see it while it exists.
        write(notes / temp, "# Alpha\n\nThe anteater wakes at dawn.\n")
        report = engine.update_paths("n", [temp])
        assert counts(report) == {}
        assert not engine.search(SearchRequest("anteater")).hits
        os.replace(notes / temp, notes / "a.md")
        report = engine.update_paths("n", [temp, "a.md"])
        assert counts(report) == {"scanned": 1, "updated": 1}
        assert paths(engine.search(SearchRequest("anteater")).hits) == ["a.md"]
        assert not engine.store.find_files(temp)
        assert {f.path for f in engine.store.iter_files()} == {
            "a.md",
            "b.md",
            "sub/c.md",
            "sub/d.md",
        }


def test_excluded_gitignored_and_hidden_paths_are_not_indexed(
    tmp_path: Path, notes: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    write(notes / ".gitignore", "private*.md\nscratch/\n")
    write(notes / "sub" / ".gitignore", "!private-ok.md\n")
    with indexed(tmp_path, notes, 'exclude = ["archive/", "*.draft.md"]\n') as engine:
        no_full_scan(monkeypatch)
        rejected = [
            "archive/old.md",
            "archive/deep/older.md",
            "x.draft.md",
            "private.md",
            "scratch/s.md",
            "scratch/deep/s.md",
            ".hidden.md",
            ".obsidian/workspace.md",
            "sub/private.md",
            "notes.pdf",
        ]
        for rel in rejected:
            write(notes / rel, "# Nope\n\nThe zebra must not be indexed.\n")
        # A deeper .gitignore may re-include what a higher one ignores.
        write(notes / "sub" / "private-ok.md", "# Fine\n\nThe yak may be indexed.\n")
        report = engine.update_paths("n", [*rejected, "sub/private-ok.md"])
        assert counts(report) == {"scanned": 1, "added": 1}
        assert not engine.search(SearchRequest("zebra")).hits
        assert paths(engine.search(SearchRequest("yak")).hits) == ["sub/private-ok.md"]


def test_a_gitignore_change_runs_a_full_scan_that_drops_ignored_files(
    tmp_path: Path, notes: Path
) -> None:
    with indexed(tmp_path, notes) as engine:
        assert engine.search(SearchRequest("capybara")).hits
        write(notes / ".gitignore", "sub/\n")
        report = engine.update_paths("n", [".gitignore"])
        assert counts(report) == {"scanned": 2, "unchanged": 2, "removed": 2}
        assert not engine.search(SearchRequest("capybara")).hits
        (notes / ".gitignore").unlink()
        report = engine.update_paths("n", [".gitignore"])
        assert counts(report) == {"scanned": 4, "unchanged": 2, "added": 2}
        assert engine.search(SearchRequest("capybara")).hits


def test_a_hidden_file_indexed_before_is_dropped_when_its_path_comes_by(
    tmp_path: Path, notes: Path
) -> None:
    write(notes / ".hidden.md", "# Hidden\n\nThe hedgehog hides.\n")
    folder = project(tmp_path, {"n": notes})
    with engine_for(folder, **{"index.include_hidden": True}) as engine:
        engine.index()
        assert engine.search(SearchRequest("hedgehog")).hits
    with engine_for(folder) as engine:
        report = engine.update_paths("n", [".hidden.md"])
        assert counts(report) == {"removed": 1}
        assert not engine.search(SearchRequest("hedgehog")).hits


def test_a_folder_runs_a_full_scan_unless_a_walk_would_not_enter_it(
    tmp_path: Path, notes: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    with indexed(tmp_path, notes) as engine:
        write(notes / "new" / "f.md", "# F\n\nThe fennec listens.\n")
        write(notes / "new" / "g" / "h.md", "# H\n\nThe heron waits.\n")
        report = engine.update_paths("n", ["new"])
        assert counts(report) == {"scanned": 6, "unchanged": 4, "added": 2}
        assert paths(engine.search(SearchRequest("heron")).hits) == ["new/g/h.md"]
        # Busy hidden folders (.git) must not cost a full scan per batch.
        write(notes / ".git" / "HEAD", "ref: refs/heads/main\n")
        no_full_scan(monkeypatch)
        report = engine.update_paths("n", [".git", ".git/HEAD", ".git/objects"])
        assert counts(report) == {}


def test_rels_outside_the_root_absolute_or_empty_are_ignored(
    tmp_path: Path, notes: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    write(tmp_path / "outside.md", "# Out\n\nThe ocelot is outside.\n")
    with indexed(tmp_path, notes) as engine:
        write(notes / "e.md", "# E\n\nThe eland is inside.\n")
        no_full_scan(monkeypatch)
        rels = [
            "../outside.md",
            "sub/../../outside.md",
            "sub/../e.md",
            str(notes / "e.md"),
            "/e.md",
            "",
        ]
        report = engine.update_paths("n", rels)
        assert counts(report) == {}
        assert not engine.search(SearchRequest("ocelot")).hits
        assert not engine.search(SearchRequest("eland")).hits
        assert paths(engine.search(SearchRequest("aardvark")).hits) == ["a.md"]


def test_an_unchanged_path_is_counted_unchanged_and_not_read(
    tmp_path: Path, notes: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    with indexed(tmp_path, notes) as engine:

        def boom(*args: object, **kwargs: object) -> None:
            raise AssertionError("an unchanged file was read")

        monkeypatch.setattr(outcomes_module, "prepare_file", boom)
        no_full_scan(monkeypatch)
        report = engine.update_paths("n", ["a.md", "sub/c.md", "a.md"])
        assert counts(report) == {"scanned": 2, "unchanged": 2}


def test_a_bad_file_is_a_problem_and_does_not_stop_the_batch(
    tmp_path: Path, notes: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    with indexed(tmp_path, notes) as engine:
        no_full_scan(monkeypatch)
        (notes / "bin.md").write_bytes(b"\x89PNG\r\n\x1a\n\x00\x00" + bytes(range(256)))
        os.symlink(notes / "missing.md", notes / "dangling.md")
        write(notes / "good.md", "# Good\n\nThe gazelle is fine.\n")
        report = engine.update_paths("n", ["bin.md", "dangling.md", "good.md"])
        assert report.added == 1
        reasons = {p["path"]: p["reason"] for p in report.problems}
        assert "binary" in reasons["bin.md"]
        assert reasons["dangling.md"] == "broken symbolic link"
        assert paths(engine.search(SearchRequest("gazelle")).hits) == ["good.md"]
        status = {p["path"] for p in engine.status()["problems"]}
        assert {"bin.md", "dangling.md"} <= status
        # Fixed or gone: the problems go too.
        write(notes / "bin.md", "# Fixed\n\nThe bison is text now.\n")
        (notes / "dangling.md").unlink()
        report = engine.update_paths("n", ["bin.md", "dangling.md"])
        assert report.added == 1
        assert not report.problems
        status = {p["path"] for p in engine.status()["problems"]}
        assert not status & {"bin.md", "dangling.md"}


def test_a_batch_leaves_the_index_a_full_run_would(tmp_path: Path, notes: Path) -> None:
    write(notes / "skip.md", "")
    with indexed(tmp_path, notes, 'exclude = ["*.tmp.md"]\n') as engine:
        write(notes / "a.md", "# Alpha\n\nThe aardwolf changed it.\n")
        write(notes / "new" / "n.md", "# New\n\nThe newt arrives.\n")
        (notes / "b.md").unlink()
        os.rename(notes / "sub" / "c.md", notes / "sub" / "c2.md")
        write(notes / "sub" / "d.tmp.md", "# Delta\n\nThe dhole replaced the dingo.\n")
        os.replace(notes / "sub" / "d.tmp.md", notes / "sub" / "d.md")
        (notes / "bin.md").write_bytes(b"\x00\x01\x02binary")
        batch = [
            "a.md",
            "new/n.md",
            "b.md",
            "sub/c.md",
            "sub/c2.md",
            "sub/d.tmp.md",
            "sub/d.md",
            "bin.md",
            "skip.md",
        ]
        report = engine.update_paths("n", batch)
        assert counts(report) == {
            "scanned": 6,
            "added": 1,
            "updated": 2,
            "renamed": 1,
            "removed": 1,
            "unchanged": 1,
        }
        after_batch = snapshot(engine)
        again = engine.index()
        assert counts(again) == {"scanned": 6, "unchanged": 6}
        assert snapshot(engine) == after_batch
    # A fresh index of the same files holds the same.
    (tmp_path / "fresh").mkdir()
    with engine_for(project(tmp_path / "fresh", {"n": notes}, 'exclude = ["*.tmp.md"]\n')) as fresh:
        fresh.index()
        assert snapshot(fresh) == after_batch


def test_unknown_root_names_the_known_ones(tmp_path: Path, notes: Path) -> None:
    with (
        indexed(tmp_path, notes) as engine,
        pytest.raises(ConfigError, match=r"'nope'.*\(memory, n\)"),
    ):
        engine.update_paths("nope", ["a.md"])


def test_a_root_not_indexed_yet_gets_a_full_run(tmp_path: Path, notes: Path) -> None:
    with engine_for(project(tmp_path, {"n": notes})) as engine:
        report = engine.update_paths("n", ["a.md"])
        assert counts(report) == {"scanned": 4, "added": 4}


def test_changed_index_settings_rebuild_everything(tmp_path: Path, notes: Path) -> None:
    folder = project(tmp_path, {"n": notes})
    with engine_for(folder) as engine:
        engine.index()
    with engine_for(folder, **{"analysis.stopwords": False}) as engine:
        report = engine.update_paths("n", ["a.md"])
        assert report.rebuilt_because and "analyzer.stopwords" in report.rebuilt_because
        assert counts(report) == {"scanned": 4, "added": 4}


@pytest.mark.parametrize("follow", [True, False])
@pytest.mark.parametrize("hidden", [True, False])
def test_scan_paths_admits_exactly_what_scan_root_finds(
    tmp_path: Path, vault: Path, follow: bool, hidden: bool
) -> None:
    """Every path of a tricky tree, judged one by one, gives the walk's files and problems."""
    write(vault / "notes" / ".gitignore", "*.md\n!keep-*.md\n")
    write(vault / "notes" / "keep-me.md", "# Keep\n\nkept\n")
    write(vault / "notes" / "deep" / "x.md", "# X\n\nignored by notes/.gitignore\n")
    write(vault / "archive" / "old.md", "# Old\n\nexcluded folder\n")
    write(vault / "plain.txt", "text file\n")
    write(vault / "image.png", "not included\n")
    write(vault / "index" / "skip.md", "# Skip\n\nin skip_dirs\n")
    os.symlink(vault / "notes" / "redis.md", vault / "linked.md")
    os.symlink(vault / "people", vault / "folks")
    os.symlink(vault / "gone.md", vault / "dangling.md")
    os.symlink(vault, vault / "projects" / "loop")
    rules = ScanRules(
        include=["*.md", "*.txt"],
        exclude=["archive/"],
        include_hidden=hidden,
        follow_symlinks=follow,
        skip_dirs=frozenset({os.path.realpath(vault / "index")}),
    )
    walked = scan_root("v", vault, rules)
    rels = []
    for folder, dirs, files in os.walk(vault):
        base = Path(folder).relative_to(vault).as_posix()
        for f in [*files, *(d for d in dirs if os.path.islink(os.path.join(folder, d)))]:
            if f != ".gitignore":
                rels.append(f if base == "." else f"{base}/{f}")
    rels += [f.path for f in walked.files]
    rels += ["projects/loop/plain.txt", "nothing/here.md"]
    rels = sorted(set(rels))
    judged = scan_paths("v", vault, rules, rels)
    # Under which name a file or folder reached through a followed link is found (or whether
    # it is a duplicate, or a loop) depends on the whole tree: only a walk can judge those.
    assert judged.needs_full_scan == follow
    linked = {"linked.md", "folks", "projects/loop", "projects/loop/plain.txt"}
    if follow:
        for rel in sorted(linked):
            assert scan_paths("v", vault, rules, [rel]).needs_full_scan, rel
        rels = [r for r in rels if r not in linked]
        judged = scan_paths("v", vault, rules, rels)
        assert not judged.needs_full_scan
    assert judged.files == [f for f in walked.files if f.path not in linked]
    assert sorted(judged.problems) == sorted(p for p in walked.problems if p[0] not in linked)
    assert set(judged.gone) == set(rels) - {f.path for f in judged.files} - {
        p for p, _ in judged.problems
    }
