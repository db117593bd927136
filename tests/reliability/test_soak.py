"""The soak harness (bench/soak.py) itself: what it counts must be true, so its figures in
docs/reliability.md can be trusted. Each test runs the real thing (processes, the CLI, an
index) at the smallest size that still shows it."""

from __future__ import annotations

import random
import sys
import textwrap
from pathlib import Path

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
