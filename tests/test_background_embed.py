"""``noteseek index --background``: the files are indexed in the foreground, their embedding
runs in a process of its own, and ``status`` says who is embedding what is pending."""

from __future__ import annotations

import json
import os
import re
import time
from pathlib import Path

import pytest

from tests.helpers import engine_for, project, run_cli, write, writer_elsewhere

NOTES = {
    "redis.md": "# Redis\n\nEXPIRE sets a key's time to live; the key vanishes after it.\n",
    "kafka.md": "# Kafka\n\nA topic is split into partitions, each an ordered log.\n",
    "compost.md": "# Compost\n\nTurn the heap every few weeks so it breathes.\n",
}


def vault(tmp: Path) -> Path:
    for name, text in NOTES.items():
        write(tmp / "notes" / name, text)
    return project(tmp, {"notes": tmp / "notes"})


def gone(pid: int, timeout: float) -> bool:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        try:
            os.kill(pid, 0)
        except ProcessLookupError:
            return True
        time.sleep(0.1)
    return False


@pytest.mark.embeddings
def test_index_in_the_background_embeds_in_a_process_of_its_own(tmp_path: Path) -> None:
    folder = vault(tmp_path)
    done = run_cli(["index", "--background"], folder)
    said = done.stdout
    found = re.search(r"embedding (\d+) chunks in the background \(pid (\d+), about 1 min\)", said)
    assert found, said
    pending, pid = int(found.group(1)), int(found.group(2))
    assert pending > 0 and "keyword search works now" in said
    # Keyword search answers at once, before the embedding is done.
    hits = json.loads(run_cli(["search", "expire", "--mode", "keyword", "--json"], folder).stdout)
    assert hits["results"][0]["path"].endswith("redis.md")
    assert gone(pid, 120), "the background embedding did not finish"
    status = json.loads(run_cli(["status", "--json"], folder).stdout)["embedding"]
    assert status["pending"] == 0 and status["embedded"] == status["total"] > 0
    assert not status["keyword_only"]  # the run did not make the index keyword-only
    asked = ["search", "when does a key disappear", "--mode", "semantic", "--json"]
    semantic = json.loads(run_cli(asked, folder).stdout)
    assert semantic["results"][0]["path"].endswith("redis.md")
    log = Path(json.loads(run_cli(["status", "--json"], folder).stdout)["index_dir"]) / "embed.log"
    assert log.is_file()


def test_status_names_the_writer_embedding_what_is_pending(tmp_path: Path) -> None:
    folder = vault(tmp_path)
    # The files indexed with embeddings on, their embedding left for later (this run only,
    # as --background's first pass does): no model is loaded here.
    with engine_for(folder, embeddings=True) as engine:
        engine.index(keyword_only=True)
        index_dir = engine.index_dir
        assert not engine.keyword_only()
    enabled = {"NOTESEEK_EMBEDDING__ENABLED": "true"}
    alone = run_cli(["status"], folder, enabled).stdout
    assert "pending: run noteseek index" in alone
    with writer_elsewhere(index_dir, "index") as other:
        shown = run_cli(["status"], folder, enabled).stdout
        status = json.loads(run_cli(["status", "--json"], folder, enabled).stdout)["embedding"]
    assert status["pending"] == status["total"] > 0
    assert status["writer"] == {"pid": other.pid, "command": "index"}
    assert f"pending: being embedded by noteseek index (pid {other.pid})" in shown
