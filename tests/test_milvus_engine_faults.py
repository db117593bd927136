"""Faults over the network: Milvus's C++ engine (``tests/milvus_engine.py``) killed, restarted
and shared by writer processes, as a Milvus Server would be.

* The engine killed in the middle of ``noteseek index``: one line to the user (no traceback,
  none of pymilvus's own log lines); restarted, the next run resumes and the index equals a
  fresh one of the same files.
* Two writer processes, each with its own root, into one index at once (each root's lease),
  while a reader searches: both roots whole, the statistics equal a fresh index's.
* A reader while the engine is down: ``unavailable`` (exit 3 from the CLI, 503 from HTTP),
  never a traceback; once the engine is back, the same server answers again.
"""

from __future__ import annotations

import os
import random
import subprocess
import sys
import threading
import time
from collections import Counter
from pathlib import Path
from typing import Any

import pytest

from noteseek.analysis import get_analyzer
from noteseek.config import Settings
from noteseek.search.keyword import weights_of
from noteseek.search.query import parse_query
from noteseek.store.milvus import MilvusConfig, MilvusStore
from noteseek.types import Filters
from tests import milvus_engine as engines
from tests.helpers import project, run_cli, write
from tests.test_serve import serve_env, serving

pytestmark = pytest.mark.skipif(not engines.available(), reason=engines.MISSING)

SETTINGS = Settings()
ANALYZER = get_analyzer(SETTINGS.analysis.language, SETTINGS.analysis.stopwords)
WEIGHTS = weights_of(SETTINGS.search)
WORDS = ["harbor", "quartz", "ledger", "token", "lease", "writer", "commit", "ranking"]
WORDS += ["vector", "chunk", "alpha", "omega"]


def corpus(folder: Path, files: int, seed: int) -> Path:
    rng = random.Random(seed)
    for i in range(files):
        parts = [
            f"## Part {k}\n\n" + " ".join(rng.choice(WORDS) for _ in range(40)) + f" note{i}"
            for k in range(3)
        ]
        write(folder / f"d{i // 40}" / f"n{i:03}.md", f"# Note {i}\n\n" + "\n\n".join(parts))
    return folder


def cli_env(uri: str, collection: str) -> dict[str, str]:
    return {
        "NOTESEEK_MILVUS__URI": uri,
        "NOTESEEK_MILVUS__COLLECTION": collection,
        "NOTESEEK_EMBEDDING__ENABLED": "false",
        "NOTESEEK_SEARCH__RECENCY": "off",
        "NOTESEEK_MILVUS__TIMEOUT": "3",  # a dead engine is noticed in seconds
    }


def spawn(args: list[str], cwd: Path, env: dict[str, str]) -> subprocess.Popen[str]:
    return subprocess.Popen(
        [sys.executable, "-m", "noteseek.interfaces.cli", *args],
        cwd=cwd,
        env={**os.environ, **env},
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )


def rows(uri: str, collection: str) -> int:
    """Rows in ``collection`` now (0 when it does not exist yet)."""
    client = engines.direct_client(uri, timeout=5)
    try:
        if not client.has_collection(collection):
            return 0
        found = client.query(collection, filter="", output_fields=["count(*)"])
        return int(found[0]["count(*)"])
    finally:
        client.close()


def said(stderr: str) -> list[str]:
    """What a command told the user on stderr, progress lines left out."""
    return [line for line in stderr.splitlines() if line and not line.startswith("indexing:")]


def snapshot(uri: str, prefix: str) -> dict[str, Any]:
    """What an index holds, comparable between two prefixes: files and their chunks' texts,
    the keyword statistics, every term's frequencies, and keyword answers with scores."""
    store = MilvusStore(MilvusConfig(uri=uri, prefix=prefix), readonly=True)
    try:
        files = {
            (f.root, f.path): [c.text for c in store.file_chunks(f.file_id)]
            for f in store.iter_files()
        }
        terms: Counter[str] = Counter()
        for row in store._scan("terms", "", ["term", "cdf", "ddf"]):
            terms[f"{row['term']}/c"] += int(row["cdf"])
            terms[f"{row['term']}/d"] += int(row["ddf"])
        answers = {}
        for query in ("harbor quartz", "ledger", "note7", "omega alpha token"):
            # every match, so no cut between tied scores depends on the ids writers drew
            found = store.keyword_search(
                parse_query(query, ANALYZER), "any", Filters(), 100_000, WEIGHTS
            )
            chunks = {c.rowid: c for c in store.chunk_rows([r for r, _ in found])}
            answers[query] = sorted(
                (chunks[r].path, chunks[r].ordinal, round(s, 9)) for r, s in found
            )
        return {
            "files": files,
            "stats": store._stats(),
            "terms": {t: n for t, n in terms.items() if n},
            "answers": answers,
        }
    finally:
        store.close()


def test_the_engine_killed_mid_index_is_one_line_and_the_next_run_resumes(tmp_path: Path) -> None:
    folder = tmp_path / "project"
    folder.mkdir()
    project(folder, {"notes": corpus(tmp_path / "notes", 160, seed=3)})
    with engines.running(tmp_path / "engine") as engine:
        env = cli_env(engine.uri, "crashed")
        run = spawn(["index"], folder, env)
        deadline = time.monotonic() + 60
        while rows(engine.uri, "crashed_files") == 0:  # some files are committed ...
            assert run.poll() is None and time.monotonic() < deadline, run.communicate()
            time.sleep(0.05)
        engine.kill()  # ... and the engine dies under the run
        out, err = run.communicate(timeout=120)
        assert run.returncode == 3, (out, err)
        [line] = said(err)  # one line, no traceback, nothing of pymilvus's logging
        assert line.startswith("error: the Milvus index at milvus.uri = http://127.0.0.1:")
        assert "check milvus.uri" in line and "Traceback" not in err

        engine.start()  # the same data folder and port
        run_cli(["index"], folder, env)
        run_cli(["index"], folder, cli_env(engine.uri, "fresh"))
        crashed, fresh = snapshot(engine.uri, "crashed"), snapshot(engine.uri, "fresh")
        assert len(crashed["files"]) == 160
        assert crashed == fresh


def test_two_writer_processes_share_the_engine_while_a_reader_searches(tmp_path: Path) -> None:
    roots = {name: corpus(tmp_path / name, 80, seed=i) for i, name in enumerate(("east", "west"))}
    with engines.running(tmp_path / "engine") as engine:
        env = cli_env(engine.uri, "shared")
        folders = {}
        for name, notes in roots.items():
            folders[name] = tmp_path / f"project-{name}"
            folders[name].mkdir()
            project(folders[name], {name: notes})
        run_cli(["status"], folders["east"], env)  # the collections exist before anyone reads
        reader = MilvusStore(MilvusConfig(uri=engine.uri, prefix="shared"), readonly=True)
        stop, seen, errors = threading.Event(), [0], list[str]()

        def search() -> None:
            query = parse_query("harbor", ANALYZER)
            while not stop.is_set():
                try:
                    hits = reader.keyword_search(query, "any", Filters(), 1000, WEIGHTS)
                except Exception as exc:  # reported below
                    errors.append(f"{type(exc).__name__}: {exc}")
                    return
                seen[0] = max(seen[0], len(hits))

        looking = threading.Thread(target=search)
        looking.start()
        writers = [spawn(["index", "--json"], folders[n], env) for n in roots]
        results = [w.communicate(timeout=300) for w in writers]
        stop.set()
        looking.join(30)
        reader.close()
        for writer, (_out, err) in zip(writers, results, strict=True):
            assert writer.returncode == 0, err
            assert "Traceback" not in err
        assert not errors, errors
        assert seen[0] > 0  # the reader found what the writers wrote while they wrote

        both = tmp_path / "both"
        both.mkdir()
        project(both, roots)
        run_cli(["index"], both, cli_env(engine.uri, "fresh"))
        shared, fresh = snapshot(engine.uri, "shared"), snapshot(engine.uri, "fresh")
        assert len(shared["files"]) == 160
        assert shared == fresh


def test_a_reader_while_the_engine_is_down_is_told_unavailable(tmp_path: Path) -> None:
    notes = corpus(tmp_path / "notes", 20, seed=5)
    folder = tmp_path / "project"
    folder.mkdir()
    project(folder, {"notes": notes})
    with engines.running(tmp_path / "engine") as engine:
        env = cli_env(engine.uri, "down")
        run_cli(["index"], folder, env)
        settings = env
        with (
            serving(folder, env=serve_env(tmp_path / "home", **settings)) as server,
            server.client() as client,
        ):
            assert client.post("/query_documents", json={"query": "harbor"}).status_code == 200
            engine.kill()
            down = client.post("/query_documents", json={"query": "harbor"}, timeout=60)
            assert down.status_code == 503, down.text
            assert "milvus.uri" in down.json()["error"] and "Traceback" not in down.text
            cli = run_cli(["search", "harbor"], folder, settings, code=3)
            [line] = said(cli.stderr)
            assert line.startswith("error: the Milvus index at milvus.uri") and not cli.stdout
            assert "Traceback" not in cli.stderr

            engine.start()
            deadline = time.monotonic() + 60
            while True:
                back = client.post("/query_documents", json={"query": "harbor"}, timeout=60)
                if back.status_code == 200:
                    break
                assert time.monotonic() < deadline, back.text
                time.sleep(0.5)
            assert back.json()["results"]
        assert "Traceback" not in server.log
