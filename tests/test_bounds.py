"""One bound per parameter, read from its settings field: the settings file, the library, every
operation's parameters (so MCP, HTTP and the page) and the CLI accept and refuse the same values."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from noteseek.config import ConfigError, SearchSettings, load_settings
from noteseek.config.ranges import EXPAND_CHARS, SIMILARITY, TOP_K, range_of
from noteseek.engine import Engine, SearchRequest
from noteseek.operations.errors import Invalid
from noteseek.operations.git import SearchGitHistory
from noteseek.operations.memory_params import SearchMemories
from noteseek.operations.params import (
    Hypothesis,
    QueryCompressed,
    QueryDocuments,
    input_schema,
    parse_arguments,
)
from tests.helpers import engine_for, project, run_cli, write


@pytest.fixture(scope="module")
def engine(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Engine]:
    tmp = tmp_path_factory.mktemp("bounds")
    for i in range(3):
        write(tmp / "notes" / f"n{i}.md", f"# Note {i}\n\nThe walrus number {i}.\n")
    with engine_for(project(tmp, {"notes": tmp / "notes"})) as opened:
        opened.index()
        yield opened


def test_the_ranges_are_the_settings_fields_own(tmp_path: Path) -> None:
    assert range_of(SearchSettings, "top_k") == TOP_K
    assert range_of(SearchSettings, "expand_chars") == EXPAND_CHARS
    assert SIMILARITY.high == range_of(SearchSettings, "near_duplicate").high
    for key, value in (("search.top_k", TOP_K.high + 1), ("search.expand_chars", -1)):
        with pytest.raises(ConfigError, match=key.split(".")[1]):
            load_settings(tmp_path, flags={key: value}, environ={})


@pytest.mark.parametrize(
    ("model", "name"),
    [
        (QueryDocuments, "top_k"),
        (QueryCompressed, "top_k"),
        (Hypothesis, "top_k"),
        (SearchMemories, "top_k"),
        (SearchGitHistory, "top_k"),
        (QueryDocuments, "expand_chars"),
        (SearchMemories, "expand_chars"),
    ],
)
def test_every_operation_takes_the_setting_bounds(model: type, name: str) -> None:
    bounds = {"top_k": TOP_K, "expand_chars": EXPAND_CHARS}[name]
    schema = input_schema(model)["properties"][name]
    assert (schema["minimum"], schema["maximum"]) == (bounds.low, bounds.high)
    text = "hypothesis" if model is Hypothesis else "query"
    parse_arguments("op", model, {text: "x", name: bounds.high})
    with pytest.raises(Invalid, match=f"less than or equal to {bounds.high}"):
        parse_arguments("op", model, {text: "x", name: bounds.high + 1})
    with pytest.raises(Invalid, match=f"greater than or equal to {bounds.low}"):
        parse_arguments("op", model, {text: "x", name: bounds.low - 1})


def test_the_library_takes_the_same_bounds(engine: Engine) -> None:
    assert len(engine.search(SearchRequest("walrus", top_k=TOP_K.high, mode="keyword")).hits) == 3
    engine.search(SearchRequest("walrus", expand_chars=EXPAND_CHARS.high, mode="keyword"))
    wrong = {
        "top_k": [TOP_K.low - 1, TOP_K.high + 1],
        "expand_chars": [EXPAND_CHARS.low - 1, EXPAND_CHARS.high + 1],
        "min_score": [-0.1, 1.5],
        "similarity_threshold": [-0.1, 1.5],
    }
    for name, values in wrong.items():
        for value in values:
            with pytest.raises(ValueError, match=f"{name} must be between"):
                engine.search(SearchRequest("walrus", **{name: value}))  # type: ignore[arg-type]
    with pytest.raises(ValueError, match="top_k must be between 1 and 1000, got 1001"):
        engine.search_commits(SearchRequest("walrus", top_k=TOP_K.high + 1))
    with pytest.raises(ValueError, match="mode must be one of"):
        engine.search(SearchRequest("walrus", mode="fuzzy"))


def test_the_cli_takes_the_same_bounds(tmp_path: Path) -> None:
    write(tmp_path / "notes" / "a.md", "# A\n\nwalrus\n")
    folder = project(tmp_path, {"notes": tmp_path / "notes"})
    run_cli(["index", "--keyword-only"], folder)
    refused = run_cli(["search", "walrus", "--top-k", str(TOP_K.high + 1)], folder, code=2)
    assert f"less than or equal to {TOP_K.high}" in refused.stderr
    run_cli(["search", "walrus", "--top-k", str(TOP_K.high)], folder)
