"""Layered configuration: defaults < user file < project file < environment < flags."""

from __future__ import annotations

import re
from collections.abc import Iterator
from pathlib import Path
from typing import Any, get_args

import pytest
from pydantic import BaseModel, SecretStr
from pydantic.fields import FieldInfo

from noteseek.config import (
    ConfigError,
    RootConfig,
    Settings,
    ad_hoc_root,
    default_index_dir,
    init_template,
    load_settings,
    user_config_file,
)


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


def test_a_table_name_matches_its_section_in_any_case(tmp_path: Path) -> None:
    write(tmp_path / ".noteseek.toml", "[Search]\ntop_k = 7\n")
    cfg = load_settings(tmp_path, environ={}, user_file=tmp_path / "no-user.toml")
    assert cfg.settings.search.top_k == 7 and cfg.origins["search.top_k"] == "project"


def test_a_settings_file_not_in_utf8_is_a_clear_error(tmp_path: Path) -> None:
    (tmp_path / ".noteseek.toml").write_bytes(b"[search]\ntop_k = 7 # caf\xe9\n")
    with pytest.raises(ConfigError, match=r"\.noteseek\.toml: .*utf-8"):
        load_settings(tmp_path, environ={})


def test_explicit_config_file_must_exist(tmp_path: Path) -> None:
    with pytest.raises(ConfigError, match="not found"):
        load_settings(tmp_path, config_file=tmp_path / "missing.toml", environ={})


def test_bad_root_name(tmp_path: Path) -> None:
    write(tmp_path / ".noteseek.toml", '[roots."my notes"]\npath = "x"\n')
    with pytest.raises(ConfigError, match="root name"):
        load_settings(tmp_path, environ={})


# -- roots' kind --------------------------------------------------------------------------------


def test_a_root_is_of_kind_files_unless_it_says_otherwise(tmp_path: Path) -> None:
    write(tmp_path / ".noteseek.toml", '[roots.a]\npath = "a"\n[roots.b]\npath = "b"\n')
    cfg = load_settings(tmp_path, environ={"NOTESEEK_ROOTS__B__KIND": "memory"})
    assert cfg.settings.roots["a"].kind == "files"
    assert cfg.origins["roots.a.kind"] == "project"  # the layer that defined the root
    assert cfg.settings.roots["b"].kind == "memory"
    assert cfg.origins["roots.b.kind"] == "env"
    assert ad_hoc_root(tmp_path / "c", cfg.settings.roots)[1].kind == "files"


@pytest.mark.parametrize("kind", ["", "Files", "my kind", "1st", "files/x"])
def test_a_root_kind_must_be_a_lowercase_name(tmp_path: Path, kind: str) -> None:
    write(tmp_path / ".noteseek.toml", f'[roots.a]\npath = "a"\nkind = "{kind}"\n')
    with pytest.raises(ConfigError, match=r"roots\.a\.kind.*root kind.*\(from project\)"):
        load_settings(tmp_path, environ={})


# -- the init template --------------------------------------------------------------------------


def sections() -> Iterator[tuple[str, FieldInfo, type[BaseModel]]]:
    """Every table the template writes: (table name, the field holding it, its model)."""

    def walk(table: str, field: FieldInfo, model: type[BaseModel]) -> Iterator[Any]:
        yield table, field, model
        for name, sub in model.model_fields.items():
            if isinstance(sub.annotation, type) and issubclass(sub.annotation, BaseModel):
                yield from walk(f"{table}.{name}", sub, sub.annotation)

    for name, field in Settings.model_fields.items():
        model = RootConfig if name == "roots" else field.annotation
        assert isinstance(model, type) and issubclass(model, BaseModel)
        yield from walk("roots.notes" if name == "roots" else name, field, model)


def leaves(model: type[BaseModel]) -> Iterator[tuple[str, FieldInfo]]:
    for name, field in model.model_fields.items():
        if not (isinstance(field.annotation, type) and issubclass(field.annotation, BaseModel)):
            yield name, field


def paragraphs(template: str) -> dict[str, dict[str, tuple[str, str]]]:
    """table -> {key ("" for the table itself): (its description, its key or header line)}."""
    tables: dict[str, dict[str, tuple[str, str]]] = {}
    current = ""
    for block in template.split("\n\n")[1:]:  # the first is the header
        *comments, last = block.strip("\n").split("\n")
        assert all(line.startswith("# ") for line in comments), block
        description = " ".join(line[2:] for line in comments)
        if last.startswith("["):
            current = last.strip("[]")
            tables[current] = {"": (description, last)}
        else:
            match = re.fullmatch(r"(?:# )?([a-z_]+) = .+", last)
            assert match, block
            tables[current][match[1]] = (description, last)
    return tables


def test_every_setting_is_in_the_init_template_with_its_description() -> None:
    written = paragraphs(init_template("notes"))
    expected_tables = [table for table, _, _ in sections()]
    assert list(written) == expected_tables
    for table, field, model in sections():
        assert field.description, f"{table} has no description"
        assert written[table][""][0] == " ".join(field.description.split())
        keys = [name for name, _ in leaves(model)]
        assert list(written[table])[1:] == keys, table
        for name, sub in leaves(model):
            assert sub.description, f"{table}.{name} has no description"
            assert written[table][name][0] == " ".join(sub.description.split())
            line = written[table][name][1]
            assert line.startswith("path = " if table == "roots.notes" and name == "path" else "# ")


def test_the_init_template_reads_back_as_the_defaults_plus_its_root(tmp_path: Path) -> None:
    for folder in ("notes", ".", 'odd "name" \\ été'):
        write(tmp_path / ".noteseek.toml", init_template(folder))
        cfg = load_settings(tmp_path, environ={}, user_file=tmp_path / "no-user.toml")
        expected = Settings(roots={"notes": RootConfig(path=str(tmp_path / folder))})
        assert cfg.settings == expected
        assert cfg.settings.roots["notes"].path == str(tmp_path / folder)


def test_the_init_templates_commented_defaults_are_the_defaults(tmp_path: Path) -> None:
    # Uncomment the key line (the last line of a field's paragraph) of every default the
    # template shows: the settings must not change.
    header, *blocks = init_template("notes").rstrip("\n").split("\n\n")
    uncommented = 0
    for i, block in enumerate(blocks):
        *comments, last = block.split("\n")
        if last.startswith("# ") and "  # " not in last:  # not an unset example or a secret
            blocks[i] = "\n".join([*comments, last[2:]])
            uncommented += 1
    unset = {
        f"{table}.{name}": field.get_default(call_default_factory=True) is None
        for table, _, model in sections()
        for name, field in leaves(model)
    }
    assert uncommented == len(unset) - sum(unset.values()) - 1  # all but the root's path
    write(tmp_path / ".noteseek.toml", "\n\n".join([header, *blocks]))
    cfg = load_settings(tmp_path, environ={}, user_file=tmp_path / "no-user.toml")
    assert cfg.settings == Settings(roots={"notes": RootConfig(path=str(tmp_path / "notes"))})
    not_from_file = {key for key, _, layer in cfg.flat() if layer != "project"}
    assert not_from_file == {key for key, is_unset in unset.items() if is_unset} | {
        "index.dir (resolved)"
    }


def test_the_init_template_writes_no_secret() -> None:
    written = paragraphs(init_template("notes"))
    secrets = [
        (table, name)
        for table, _, model in sections()
        for name, field in leaves(model)
        if SecretStr in (field.annotation, *get_args(field.annotation))
    ]
    assert secrets == [("serve", "token"), ("milvus", "token")]
    for table, name in secrets:
        assert written[table][name][1] == f'# {name} = "..."  # a secret: unset by default'
