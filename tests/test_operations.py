"""The operations table: one declaration per operation, reachable from every door it names.

The doors themselves are tested over their real transports (test_cli, test_mcp, test_http);
this checks what the table promises: every MCP tool and every HTTP route comes from it, every
kind of error has one answer per door, and a one-shot index refuses beside a live writer.
"""

from __future__ import annotations

import os
import shutil
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from noteseek.config import ServeSettings
from noteseek.interfaces.cli.common import EXIT_CODE
from noteseek.interfaces.http import create_app
from noteseek.interfaces.http.routes import ERROR_STATUS
from noteseek.interfaces.mcp import build_server
from noteseek.operations import (
    ERROR_KINDS,
    OPERATIONS,
    OperationError,
    Runtime,
    http_operations,
    mcp_operations,
    parse,
)
from tests.conftest import EXAMPLE_VAULT
from tests.helpers import project, run_cli


def test_every_error_kind_has_one_answer_per_door() -> None:
    assert set(ERROR_STATUS) == set(ERROR_KINDS) == set(EXIT_CODE)
    assert ERROR_STATUS["invalid"] == 400 and ERROR_STATUS["unavailable"] == 503
    assert EXIT_CODE["invalid"] == 2 and EXIT_CODE["conflict"] == 4


def test_http_routes_are_generated_from_the_table() -> None:
    app = create_app(Runtime(lambda: None), ServeSettings())  # type: ignore[arg-type,return-value]
    spec = app.openapi()
    routes = {
        (method.upper(), path) for path, methods in spec["paths"].items() for method in methods
    }
    for op in http_operations().values():
        assert op.http is not None
        path = op.http.path.replace(":path}", "}")
        assert (op.http.method, path) in routes, op.name
        entry = spec["paths"][path][op.http.method.lower()]
        assert entry["operationId"] == op.name
        assert str(op.http.status_code) in entry["responses"]
    # Every operation that makes sense over the network is there (index, rebuild and migrate
    # are local).
    assert set(http_operations()) == set(OPERATIONS) - {
        "index",
        "rebuild",
        "migrate",
        "check_index",
    }


def test_mcp_tools_are_generated_from_the_table() -> None:
    server = build_server(Runtime(lambda: None))  # type: ignore[arg-type,return-value]
    assert server is not None
    # A note rendered as HTML is for the page's readers, not for agents (get_document); what
    # a prompt hook injects is for hooks (agents search_memories).
    local = {"index", "rebuild", "migrate", "check_index"}
    hooks_and_page = {"render_document", "recall_memories"}
    assert set(mcp_operations()) == set(OPERATIONS) - local - hooks_and_page
    for op in mcp_operations().values():
        assert len(op.text) > 40, op.name


@pytest.mark.parametrize(
    ("name", "arguments", "expected"),
    [
        ("query_documents", {"query": "x", "limit": 3}, {"top_k": 3}),
        ("query_documents", {"query": "x"}, {"top_k": None, "mode": None}),
        ("get_neighbourhood", {"path": "a.md"}, {"depth": 1}),
    ],
)
def test_aliases_and_setting_defaults(name: str, arguments: dict, expected: dict) -> None:
    _op, params = parse(name, arguments)
    assert {k: getattr(params, k) for k in expected} == expected


@pytest.mark.parametrize(
    ("name", "arguments", "message"),
    [
        ("get_document", {"path": "notes/../../etc/passwd"}, "'..' is not allowed"),
        ("get_links", {"path": "a\x00b"}, "give a document's path"),
        ("get_section", {"path": "a.md", "line": 0}, "line"),
        ("query_documents", {"query": "x", "top_n": 1001}, "less than or equal to 1000"),
        ("query_documents", {"query": "x", "min_score": True}, "not true or false"),
        # Text that spells a value is still text: a typed door sends typed values.
        ("query_documents", {"query": "x", "top_n": "5"}, "expected an integer, not text"),
        ("query_documents", {"query": "x", "min_score": "0.5"}, "expected a number, not text"),
        ("reindex", {"force": "true"}, "valid boolean"),
        ("search_git_history", {"query": "x", "include_diff": 1}, "valid boolean"),
        ("search_git_history", {"query": "x", "author": 3}, "author"),
        ("nope", {}, "unknown tool 'nope'"),
        # Paths the system cannot look up ("File name too long" was an OSError, HTTP 500).
        ("get_document", {"path": "a" * 4096}, "a path holds at most 4,095"),
        ("get_links", {"path": "notes/" + "é" * 128}, "a file or folder name holds at most 255"),
        ("reindex", {"paths": ["/x/" + "a" * 256]}, "a file or folder name holds at most 255"),
        ("index", {"roots": ["a" * 4096]}, "a path holds at most 4,095"),
        ("reindex", {"paths": ["a\x00"]}, "NUL"),
        # The schema names one type for these: null is refused as the schema says (leaving
        # the parameter out gives the setting's default).
        ("query_documents", {"query": "x", "top_n": None}, "leave the parameter out"),
        ("query_documents", {"query": "x", "mode": None}, "leave the parameter out"),
        ("flush_memories", {"tags": None}, "leave the parameter out"),
        ("search_memories", {"query": "x", "expand_chars": None}, "leave the parameter out"),
    ],
)
def test_bad_arguments_are_invalid_with_a_precise_message(
    name: str, arguments: dict, message: str
) -> None:
    with pytest.raises(OperationError) as caught:
        parse(name, arguments)
    assert caught.value.kind == "invalid"
    assert message in str(caught.value)


def test_index_refuses_beside_a_live_writer_and_runs_after_it(tmp_path: Path) -> None:
    vault = tmp_path / "vault"
    shutil.copytree(EXAMPLE_VAULT, vault)
    folder = project(tmp_path, {"vault": vault})
    env = {"NOTESEEK_EMBEDDING__ENABLED": "false", "HOME": str(tmp_path / "home")}
    watcher = subprocess.Popen(
        [sys.executable, "-m", "noteseek.interfaces.cli", "watch"],
        cwd=folder,
        env={**os.environ, **env},
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    try:
        deadline = time.monotonic() + 60
        while not (folder / ".noteseek" / "writer.json").exists():
            assert watcher.poll() is None and time.monotonic() < deadline
            time.sleep(0.05)
        refused = run_cli(["index"], folder, env, code=4)
        assert f"noteseek watch (pid {watcher.pid})" in refused.stderr
        run_cli(["rebuild"], folder, env, code=4)
    finally:
        watcher.send_signal(signal.SIGTERM)
        watcher.wait(timeout=30)
    done = run_cli(["index", "--json"], folder, env)
    assert '"scanned": 36' in done.stdout


def test_a_server_runtime_settles_its_heap_once_the_index_is_open(tmp_path: Path) -> None:
    """``Runtime(settle=True)`` (mcp, serve) freezes the heap it started with and collects
    its youngest generation less often; run in a child process (the test process's own
    collector stays as it is)."""
    folder = tmp_path / "project"
    folder.mkdir()
    vault = tmp_path / "vault"
    shutil.copytree(EXAMPLE_VAULT, vault)
    project(folder, {"vault": vault})
    script = (
        "import gc, sys\n"
        "from pathlib import Path\n"
        "from noteseek.engine import open_engine\n"
        "from noteseek.operations import Runtime\n"
        "folder = Path(sys.argv[1])\n"
        "settle = sys.argv[2] == 'settle'\n"
        "def load():\n"
        "    engine = open_engine(folder)\n"
        "    engine.close()\n"
        "    return engine.config\n"
        "runtime = Runtime(load, watch=False, settle=settle)\n"
        "runtime.start()\n"
        "runtime.call('index_status', {})\n"
        "print(gc.get_freeze_count(), gc.get_threshold()[0])\n"
        "runtime.shutdown()\n"
    )
    for mode in ("settle", "leave"):
        proc = subprocess.run(
            [sys.executable, "-c", script, str(folder), mode],
            capture_output=True,
            text=True,
            timeout=120,
            env={**os.environ, "NOTESEEK_EMBEDDING__ENABLED": "false"},
        )
        assert proc.returncode == 0, proc.stderr
        frozen, young = map(int, proc.stdout.split())
        if mode == "settle":
            assert frozen > 10_000 and young == 10_000
        else:
            assert frozen == 0 and young == 700
