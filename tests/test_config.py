"""Layered configuration: defaults < user file < project file < environment < flags."""

from __future__ import annotations

from pathlib import Path

import pytest

from noteseek.config import ConfigError, default_index_dir, load_settings, user_config_file


def write(path: Path, text: str) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text, encoding="utf-8")
    return path


def test_defaults_alone_resolve(tmp_path: Path) -> None:
    cfg = load_settings(tmp_path, environ={})
    assert cfg.settings.search.top_k == 10
    assert cfg.origins.get("search.top_k", "default") == "default"
    assert cfg.project_file is None


def test_each_layer_overrides_the_one_below(tmp_path: Path) -> None:
    write(user_config_file(), "[search]\ntop_k = 11\nsnippet_chars = 100\n[index]\nworkers = 1\n")
    write(tmp_path / ".noteseek.toml", "[search]\ntop_k = 12\nsnippet_chars = 120\n")
    env = {"NOTESEEK_SEARCH__TOP_K": "13"}
    cfg = load_settings(tmp_path, environ=env, flags={})
    assert cfg.settings.search.top_k == 13
    assert cfg.origins["search.top_k"] == "env"
    assert cfg.settings.search.snippet_chars == 120
    assert cfg.origins["search.snippet_chars"] == "project"
    assert cfg.settings.index.workers == 1
    assert cfg.origins["index.workers"] == "user"
    cfg = load_settings(tmp_path, environ=env, flags={"search.top_k": 14})
    assert cfg.settings.search.top_k == 14
    assert cfg.origins["search.top_k"] == "flag"


def test_project_file_is_found_from_a_subfolder(tmp_path: Path) -> None:
    write(tmp_path / ".noteseek.toml", '[roots.notes]\npath = "notes"\n')
    sub = tmp_path / "a" / "b"
    sub.mkdir(parents=True)
    cfg = load_settings(sub, environ={})
    assert cfg.project_file == tmp_path / ".noteseek.toml"
    # Relative root paths are relative to the file that set them.
    assert Path(cfg.settings.roots["notes"].path) == tmp_path / "notes"
    assert cfg.settings.roots["notes"].include == ["*.md", "*.markdown", "*.txt"]
    assert cfg.index_dir == tmp_path / ".noteseek"


def test_a_root_needs_only_its_path(tmp_path: Path) -> None:
    write(tmp_path / ".noteseek.toml", '[roots.notes]\npath = "~/notes"\n')
    cfg = load_settings(tmp_path, environ={})
    assert cfg.settings.roots["notes"].path.endswith("/notes")
    assert not cfg.settings.roots["notes"].path.startswith("~")


def test_roots_from_the_environment(tmp_path: Path) -> None:
    cfg = load_settings(tmp_path, environ={"NOTESEEK_ROOTS__WORK__PATH": str(tmp_path)})
    assert cfg.settings.roots["work"].path == str(tmp_path)
    assert cfg.origins["roots.work.path"] == "env"


def test_index_dir_without_project_file_is_keyed_by_roots(tmp_path: Path) -> None:
    env = {"NOTESEEK_ROOTS__A__PATH": str(tmp_path / "a")}
    cfg = load_settings(tmp_path, environ=env)
    assert cfg.index_dir == default_index_dir(cfg.settings.roots)
    other = load_settings(tmp_path, environ={"NOTESEEK_ROOTS__A__PATH": str(tmp_path / "b")})
    assert other.index_dir != cfg.index_dir


def test_invalid_value_names_key_and_layer(tmp_path: Path) -> None:
    write(tmp_path / ".noteseek.toml", "[search]\ntop_k = 0\n")
    with pytest.raises(ConfigError, match=r"search\.top_k.*\(from project\)"):
        load_settings(tmp_path, environ={})


def test_unknown_key_is_rejected(tmp_path: Path) -> None:
    write(tmp_path / ".noteseek.toml", "[search]\ntopk = 3\n")
    with pytest.raises(ConfigError, match="topk"):
        load_settings(tmp_path, environ={})


def test_malformed_toml_is_a_clear_error(tmp_path: Path) -> None:
    write(tmp_path / ".noteseek.toml", "[search\n")
    with pytest.raises(ConfigError, match=r"\.noteseek\.toml"):
        load_settings(tmp_path, environ={})


def test_explicit_config_file_must_exist(tmp_path: Path) -> None:
    with pytest.raises(ConfigError, match="not found"):
        load_settings(tmp_path, config_file=tmp_path / "missing.toml", environ={})


def test_bad_root_name(tmp_path: Path) -> None:
    write(tmp_path / ".noteseek.toml", '[roots."my notes"]\npath = "x"\n')
    with pytest.raises(ConfigError, match="root name"):
        load_settings(tmp_path, environ={})
