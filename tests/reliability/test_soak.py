"""The soak harness (bench/soak.py) itself: what it counts must be true, so its figures in
docs/reliability.md can be trusted. Each test runs the real thing (processes, the CLI, an
index) at the smallest size that still shows it."""

from __future__ import annotations

import json
import random
import shutil
import subprocess
import sys
import textwrap
from pathlib import Path
from typing import Any

import psutil
import pytest

REPO = Path(__file__).resolve().parent.parent.parent
BENCH = REPO / "bench"
EXAMPLE_VAULT = REPO / "examples" / "vault"


@pytest.fixture(autouse=True)
def bench_on_path(monkeypatch: pytest.MonkeyPatch) -> None:
    """The soak's modules import each other by name, as they do when run from bench/."""
    monkeypatch.syspath_prepend(str(BENCH))


def test_a_process_that_outlives_its_command_is_found_by_its_mark_and_stopped(
    tmp_path: Path,
) -> None:
    from soak_procs import Procs

    # The command starts a child in a session of its own (so neither its process group nor
    # its parent leads to it any more) and exits at once: the way a parser process outlives
    # a killed writer.
    code = textwrap.dedent(
        """
        import subprocess, sys
        child = subprocess.Popen(
            [sys.executable, "-c", "import time; time.sleep(60)"], start_new_session=True
        )
        print(child.pid)
        """
    )
    procs = Procs({"PATH": "/usr/bin:/bin"}, tmp_path / "logs")
    done = procs.run(["-c", code], tmp_path, grace=1.0, program=[sys.executable])
    child = int(done.stdout.strip())
    assert done.code == 0
    assert [x.pid for x in done.leftovers] == [child]
    assert not psutil.pid_exists(child) or psutil.Process(child).status() == "zombie"
    assert procs.cleanup() == 0


def test_a_command_that_leaves_nothing_behind_has_no_leftovers(tmp_path: Path) -> None:
    from soak_procs import Procs

    procs = Procs({"PATH": "/usr/bin:/bin"}, tmp_path / "logs")
    done = procs.run(["-c", "print('done')"], tmp_path, grace=1.0, program=[sys.executable])
    assert (done.code, done.stdout, done.leftovers, done.traceback) == (0, "done\n", [], False)
    failed = procs.run(["-c", "1/0"], tmp_path, grace=1.0, program=[sys.executable])
    assert failed.code == 1 and failed.traceback


def test_the_consistency_check_sees_every_edit_the_index_has_not_caught_up_with(
    tmp_path: Path,
) -> None:
    from soak_corpus import ROOT, Corpus, make_project, snapshot
    from soak_procs import Procs, base_env

    corpus = make_project(tmp_path / "project", EXAMPLE_VAULT, random.Random(3), embeddings=False)
    procs = Procs(base_env(tmp_path), tmp_path / "logs")
    db = tmp_path / "project" / ".noteseek" / "index.db"
    index = ["index", "--keyword-only", "--json"]
    assert procs.run(index, tmp_path / "project").code == 0
    first = snapshot(db, ROOT)
    assert first.sound and first.files == corpus.state()
    kinds: set[str] = set()
    while len(kinds) < 4:  # one change of every kind at least
        kinds.add(corpus.random_edit())
    assert snapshot(db, ROOT).files != corpus.state()
    assert procs.run(index, tmp_path / "project").code == 0
    after = snapshot(db, ROOT)
    assert after.sound and after.files == corpus.state()
    assert isinstance(corpus, Corpus)


def test_a_damaged_full_text_table_is_not_sound(tmp_path: Path) -> None:
    from soak_corpus import ROOT, make_project, snapshot
    from soak_procs import Procs, base_env

    make_project(tmp_path / "project", EXAMPLE_VAULT, random.Random(3), embeddings=False)
    procs = Procs(base_env(tmp_path), tmp_path / "logs")
    assert procs.run(["index", "--keyword-only"], tmp_path / "project").code == 0
    db = tmp_path / "project" / ".noteseek" / "index.db"
    import sqlite3

    con = sqlite3.connect(db)
    # A chunk row whose full-text row is gone: what a half-written transaction would leave.
    con.execute("DELETE FROM chunks_fts_content WHERE id = (SELECT max(id) FROM chunks)")
    con.commit()
    con.close()
    assert not snapshot(db, ROOT).sound


def test_ties_inside_the_top_10_must_hold_the_same_results_but_ties_at_the_cut_may_differ() -> None:
    from soak import same_ranking

    a = [((5.0, 1.0), "a.md", 1), ((3.0, 1.0), "b.md", 1), ((3.0, 1.0), "c.md", 1)]
    swapped = [a[0], a[2], a[1]]
    assert same_ranking(a, swapped)  # tied, in another order
    b = [((5.0, 1.0), "a.md", 1), ((4.0, 1.0), "b.md", 1), ((1.0, 1.0), "c.md", 1)]
    other_top = [((5.0, 1.0), "x.md", 1), ((4.0, 1.0), "b.md", 1), ((1.0, 1.0), "c.md", 1)]
    assert not same_ranking(b, other_top)
    cut = [((5.0, 1.0), "a.md", 1), ((4.0, 1.0), "b.md", 1), ((1.0, 1.0), "z.md", 1)]
    assert same_ranking(b, cut)  # the last place: another result with the same score
    assert not same_ranking(b, b[:2])


def soak(tmp_path: Path, options: str, *, passes: bool = True) -> dict[str, Any]:
    """Run bench/soak.py on a copy of the example vault (too small for parser processes, so
    nothing may be left behind whatever branch this runs on); its JSON figures."""
    vault = tmp_path / "vault"
    shutil.copytree(EXAMPLE_VAULT, vault)
    argv = f"--corpus {vault} --workdir {tmp_path / 'work'} --json {options}".split()
    proc = subprocess.run(
        [sys.executable, str(BENCH / "soak.py"), *argv],
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert proc.returncode in ((0,) if passes else (0, 1)), proc.stderr[-3000:]
    results: dict[str, Any] = json.loads(proc.stdout)
    assert (results["failures"] == []) == (proc.returncode == 0)
    assert not passes or results["failures"] == []
    return results


def test_the_kills_phase_kills_checks_recovers_and_compares_with_a_fresh_index(
    tmp_path: Path,
) -> None:
    kills = soak(tmp_path, "--phase kills --kills 1 --edits 2 --queries 2 --leak-grace 1")["kills"]
    assert (kills["kills"], kills["survived"], kills["leaked_processes"]) == (1, 1, 0)
    assert set(kills["run_time_alone_s"]) == {"index", "index_force", "serve", "mcp"}
    final = kills["final"]
    assert final["same_documents"] and final["chunks"] == final["fresh_chunks"]
    assert final["same_top10"] == final["queries"] == 2


def test_the_load_phase_drives_every_door_and_finds_the_last_edit(tmp_path: Path) -> None:
    options = "--phase load --load-seconds 2 --http-clients 2 --mcp-clients 1 --leak-grace 1"
    load = soak(tmp_path, options)["load"]
    doors = load["doors"]
    assert all(doors[d]["requests"] > 0 for d in ("http search", "http read", "mcp search"))
    assert all(doors[d]["errors"] == 0 for d in doors)
    assert load["freshness_s"]["http"] is not None and load["freshness_s"]["mcp"] is not None
    assert load["peak_rss_by_command_mb"]["serve"] > 0 and load["peak_rss_by_command_mb"]["mcp"] > 0
    assert (load["leftovers"], load["serve_exit"]) == (0, 0)


def test_the_hostile_phase_tries_every_input_it_is_asked_for_and_reports_in_figures(
    tmp_path: Path,
) -> None:
    """Whether the inputs are handled is for the findings' own tests (and the soak's verdict);
    here: the phase runs to its end, tries what it was asked to, and counts consistently."""
    options = "--phase hostile --hostile-docs 8 --hostile-requests 30 --hostile-cli 0"
    hostile = soak(tmp_path, options + " --leak-grace 1", passes=False)["hostile"]
    assert hostile["documents"] == 9  # and the FIFO
    assert hostile["good_documents"] == 36  # every note of the example vault the index reads
    assert hostile["requests"] == 30 or hostile["stalls"] >= 5
    assert sum(hostile["statuses"].values()) == hostile["requests"]
    assert hostile["index_runs"] == len(hostile["index_exits"]) == 2
