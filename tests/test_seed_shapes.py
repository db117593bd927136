"""The parameter shapes agents bring from the seed (issue 30, item 7): after and before as Unix
timestamps (integers and floats, seconds) as well as dates, on every door (MCP over stdio with
the SDK client, HTTP against a running ``noteseek serve``, the CLI, the operations table); and
``NOTESEEK_*`` environment names with single underscores, which work when they spell one
setting and are refused otherwise, never ignored."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import anyio
import pytest

from noteseek.config import ConfigError, load_settings
from noteseek.search.filters import FilterError, parse_when
from tests.git_repos import BASE_DATE, DAY
from tests.helpers import engine_for, project
from tests.mcp_client import call, error_of, eventually, session
from tests.test_git_doors import history
from tests.test_memory import refused, run
from tests.test_serve import serve_env, serving

SHORTEN = BASE_DATE + 100 * DAY
"""When the commit "Shorten token lifetime" was made (the others: days 10 and 120)."""


def test_parse_when_reads_unix_time_and_refuses_what_is_likely_a_year() -> None:
    assert parse_when("@1735689600") == 1_735_689_600.0
    assert parse_when("1735689600") == 1_735_689_600.0
    assert parse_when("1735689600.25") == 1_735_689_600.25
    assert parse_when("@-86400") == -86_400.0
    assert parse_when("20250101") == parse_when("2025-01-01")  # ISO basic: a date, not seconds
    with pytest.raises(FilterError, match="at least 9 digits"):
        parse_when("2025")
    with pytest.raises(FilterError, match="between the years 1 and 9999"):
        parse_when("@99999999999999")


def test_mcp_search_git_history_takes_unix_timestamps(tmp_path: Path) -> None:
    _repo, folder = history(tmp_path)

    async def main() -> None:
        async with session(folder) as client:
            tools = {t.name: t for t in (await client.list_tools()).tools}
            after = tools["search_git_history"].input_schema["properties"]["after"]
            assert {"type": "number"} in after["anyOf"] and {"type": "string"} in after["anyOf"]

            async def subjects(**window: object) -> set[str]:
                asked = {"query": "auth token changelog", "mode": "keyword", **window}
                out = await call(client, "search_git_history", asked)
                return {c["subject"] for c in out["commits"]}

            async def indexed() -> bool:
                return len(await subjects()) == 3

            await eventually(indexed, timeout=30)
            only = {"Shorten token lifetime"}
            assert await subjects(after=SHORTEN - DAY, before=SHORTEN + DAY) == only
            assert await subjects(after=float(SHORTEN) - 0.5, before=SHORTEN + 0.5) == only
            assert await subjects(after=f"@{SHORTEN - DAY}", before=str(SHORTEN + DAY)) == only
            assert await subjects(after="2024-02-21", before=SHORTEN + DAY) == only
            docs = await call(client, "query_documents", {"query": "tokens", "after": SHORTEN})
            assert docs["results"] == [] or all(r["path"] for r in docs["results"])
            for bad, message in [
                (True, "not true or false"),
                (10**20, "between the years 1 and 9999"),
                ("2025", "at least 9 digits"),
            ]:
                error = await error_of(client, "search_git_history", {"query": "x", "after": bad})
                assert message in error

    anyio.run(main)

    # The CLI: seconds as @N or as a bare number of 9 digits or more.
    env = serve_env(tmp_path / "home")
    subprocess.run(
        [sys.executable, "-m", "noteseek.interfaces.cli", "index"],
        cwd=folder,
        env=env,
        check=True,
        capture_output=True,
    )
    shown = subprocess.run(
        [
            sys.executable,
            "-m",
            "noteseek.interfaces.cli",
            "search",
            "token changelog auth",
            "--source",
            "commits",
            "--mode",
            "keyword",
            "--json",
            "--after",
            f"@{SHORTEN - DAY}",
            "--before",
            str(SHORTEN + DAY),
        ],
        cwd=folder,
        env=env,
        capture_output=True,
        text=True,
    )
    assert shown.returncode == 0, shown.stderr
    assert "Shorten token lifetime" in shown.stdout
    assert "Add the changelog" not in shown.stdout and "Add the auth guide" not in shown.stdout


def test_http_search_git_history_takes_unix_timestamps(tmp_path: Path) -> None:
    _repo, folder = history(tmp_path)
    with serving(folder, env=serve_env(tmp_path / "home")) as server, server.client() as client:
        server.wait_ready(client)
        body = {"query": "auth token changelog", "mode": "keyword"}

        def subjects(**window: object) -> set[str]:
            answer = client.post("/search_git_history", json={**body, **window})
            assert answer.status_code == 200, answer.text
            return {c["subject"] for c in answer.json()["commits"]}

        for _ in range(100):
            if len(subjects()) == 3:
                break
            anyio.run(anyio.sleep, 0.2)
        assert subjects(after=SHORTEN - DAY, before=SHORTEN + DAY) == {"Shorten token lifetime"}
        assert subjects(after=SHORTEN + 0.5) == {"Add the changelog"}
        refused_answer = client.post("/search_git_history", json={**body, "after": 1e300})
        assert refused_answer.status_code == 400
        assert "between the years 1 and 9999" in refused_answer.text


def test_memory_filters_take_unix_timestamps(tmp_path: Path) -> None:
    docs = tmp_path / "docs"
    docs.mkdir()
    (docs / "a.md").write_text("# A\n\nA note.\n")
    folder = project(tmp_path, {"docs": docs})
    with engine_for(folder) as engine:
        engine.index()
        run(engine, "create_memory", name="okapi", content="The okapi lives in the Ituri.")
        now = __import__("time").time()
        assert run(engine, "list_memories", after=int(now) - 60)["count"] == 1
        assert run(engine, "list_memories", after=now + 60.5)["count"] == 0
        assert run(engine, "list_memories", before=f"@{int(now) - 60}")["count"] == 0
        found = run(engine, "search_memories", query="okapi", mode="keyword", after=now - 60)
        assert [r["path"] for r in found["results"]] == ["okapi.md"]
        assert "true or false" in str(refused(engine, "list_memories", after=False))


# -- NOTESEEK_* names ------------------------------------------------------------------------------


def test_environment_names_with_single_underscores_work_when_they_spell_one_setting() -> None:
    loaded = load_settings(environ={"NOTESEEK_WATCH_DEBOUNCE_MS": "1500"})
    assert loaded.settings.watch.debounce_ms == 1500
    assert loaded.origins["watch.debounce_ms"] == "env"
    loaded = load_settings(
        environ={"NOTESEEK_INDEX_MAX_FILE_SIZE": "5000", "NOTESEEK_SEARCH_WEIGHTS_TITLE": "7"}
    )
    assert (loaded.settings.index.max_file_size, loaded.settings.search.weights.title) == (
        5000,
        7.0,
    )
    same = {"NOTESEEK_WATCH_DEBOUNCE_MS": "1500", "NOTESEEK_WATCH__DEBOUNCE_MS": "1500"}
    assert load_settings(environ=same).settings.watch.debounce_ms == 1500
    # The variables that hold keys are no settings, and are left alone.
    loaded = load_settings(
        environ={"NOTESEEK_FLUSH_API_KEY": "sk-x", "NOTESEEK_EMBEDDING_API_KEY": "sk-y"}
    )
    assert loaded.settings.watch.debounce_ms == 500


@pytest.mark.parametrize(
    ("environ", "message"),
    [
        ({"NOTESEEK_WATCH_DEBOUNCE": "7"}, "did you mean NOTESEEK_WATCH__DEBOUNCE_MS?"),
        ({"NOTESEEK_SEARCH_TOPK": "3"}, "did you mean NOTESEEK_SEARCH__TOP_K?"),
        ({"NOTESEEK_NOPE": "1"}, "NOTESEEK_NOPE is no setting: settings are NOTESEEK_SECTION__KEY"),
        ({"NOTESEEK_ROOTS_NOTES_PATH": "~/notes"}, "NOTESEEK_ROOTS__NOTES__PATH"),
        (
            {"NOTESEEK_WATCH_DEBOUNCE_MS": "1500", "NOTESEEK_WATCH__DEBOUNCE_MS": "900"},
            "both set NOTESEEK_WATCH__DEBOUNCE_MS to different values",
        ),
    ],
)
def test_other_environment_names_are_reported_never_ignored(
    environ: dict[str, str], message: str
) -> None:
    with pytest.raises(ConfigError, match=message.replace("?", r"\?")):
        load_settings(environ=environ)


def test_the_cli_reports_an_unknown_environment_name(tmp_path: Path) -> None:
    env = {**serve_env(tmp_path / "home"), "NOTESEEK_WATCH_DEBOUNCE": "1500"}
    shown = subprocess.run(
        [sys.executable, "-m", "noteseek.interfaces.cli", "config", "show"],
        cwd=tmp_path,
        env=env,
        capture_output=True,
        text=True,
    )
    assert shown.returncode == 2
    assert "NOTESEEK_WATCH_DEBOUNCE is no setting" in shown.stderr
    env = {**serve_env(tmp_path / "home"), "NOTESEEK_WATCH_DEBOUNCE_MS": "1500"}
    shown = subprocess.run(
        [sys.executable, "-m", "noteseek.interfaces.cli", "config", "show"],
        cwd=tmp_path,
        env=env,
        capture_output=True,
        text=True,
        check=True,
    )
    assert any("watch.debounce_ms" in line and "1500" in line for line in shown.stdout.split("\n"))
