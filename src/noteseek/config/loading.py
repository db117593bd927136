"""Layered settings: built-in defaults < user file < project file < environment < flags.

* user file: ``$XDG_CONFIG_HOME/noteseek/config.toml`` (platformdirs' user config dir)
* project file: ``.noteseek.toml``, found from the working directory upwards
  (or given explicitly with ``--config``)
* environment: ``NOTESEEK_SECTION__KEY`` (``NOTESEEK_INDEX__MAX_FILE_SIZE=1000000``,
  ``NOTESEEK_ROOTS__NOTES__PATH=~/notes``); a name with single underscores that spells one
  setting works too, and any other ``NOTESEEK_*`` name is an error (``config/environment.py``)
* flags: whatever the command line sets

Each layer is read into a plain dict (the files by ``tomllib``, the environment by a
pydantic-settings source, imported only when a ``NOTESEEK_*`` variable is set); the dicts are
merged key by key so :func:`load_settings` can say which layer every resolved value came from
(``noteseek config show``). Relative root paths and ``index.dir`` are resolved against the
folder of the file that set them (the working directory for environment and flags).
"""

from __future__ import annotations

import hashlib
import os
import re
import tomllib
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal

import platformdirs
from pydantic import ValidationError

from noteseek.config.base import ConfigError
from noteseek.config.environment import env_names, key_variables
from noteseek.config.indexing import RootConfig
from noteseek.config.milvus import MilvusSettings
from noteseek.config.redaction import redact_uri
from noteseek.config.settings import ENV_PREFIX, Settings
from noteseek.places import APP_NAME, data_dir, find_project_file

Layer = Literal["default", "user", "project", "env", "flag"]
LAYERS: tuple[Layer, ...] = ("default", "user", "project", "env", "flag")


@dataclass
class LoadedConfig:
    """Resolved settings plus where they came from."""

    settings: Settings
    origins: dict[str, Layer]
    """Dotted key (``index.max_file_size``) -> the layer that set it."""
    user_file: Path
    project_file: Path | None
    index_dir: Path
    index_dir_reason: str
    files_read: list[Path] = field(default_factory=list)
    named: str | None = None
    """The name the index was opened by (``--index NAME``): its roots are then the ones it
    holds, and no project file found from the working directory was read
    (``engine/opening.py``)."""

    def flat(self) -> list[tuple[str, Any, Layer]]:
        """Every resolved leaf value with its layer, in a stable order."""
        rows: list[tuple[str, Any, Layer]] = []
        for key, value in _flatten(self.settings.model_dump(mode="json")).items():
            if isinstance(value, str) and key.endswith(("uri", "url")):
                value = redact_uri(value)  # credentials in a URI are never shown
            rows.append((key, value, self.origins.get(key, "default")))
        rows.append(("index.dir (resolved)", str(self.index_dir), "default"))
        return rows


MEMORY_FOLDER = ".memories"
"""The project-scope memory folder, beside the project file."""


def user_config_file() -> Path:
    return Path(platformdirs.user_config_dir(APP_NAME)) / "config.toml"


def load_settings(
    cwd: Path | None = None,
    config_file: Path | None = None,
    flags: Mapping[str, Any] | None = None,
    environ: Mapping[str, str] | None = None,
    user_file: Path | None = None,
    *,
    find_project: bool = True,
) -> LoadedConfig:
    """Resolve settings from all layers. Raises :class:`ConfigError` with a clear message.

    Without ``find_project`` no project file is looked for from ``cwd``: only
    ``config_file``, when given, is the project layer (a named index is opened with its own
    settings, never those of the folder it is opened from).
    """
    cwd = (cwd or Path.cwd()).resolve()
    user_path = user_file if user_file is not None else user_config_file()
    if config_file is not None:
        explicit = Path(config_file).expanduser()
        if not explicit.is_absolute():
            explicit = cwd / explicit
        if not explicit.is_file():
            raise ConfigError(f"config file not found: {explicit}")
        project_path: Path | None = explicit
    else:
        project_path = find_project_file(cwd) if find_project else None

    layers: list[tuple[Layer, dict[str, Any]]] = []
    files_read: list[Path] = []
    for layer, path in (("user", user_path), ("project", project_path)):
        if path is not None and path.is_file():
            data = _read_toml(path)
            _resolve_paths(data, path.parent)
            layers.append((layer, data))  # type: ignore[arg-type]
            files_read.append(path)
    env_data = _read_env(environ, layers)
    _resolve_paths(env_data, cwd)
    layers.append(("env", env_data))
    flag_data = _unflatten(dict(flags or {}))
    _resolve_paths(flag_data, cwd)
    layers.append(("flag", flag_data))

    merged: dict[str, Any] = {}
    origins: dict[str, Layer] = {}
    for layer, data in layers:
        _merge(merged, data)
        for key in _flatten(data):
            origins[key] = layer
    try:
        settings = Settings(**merged)
    except ValidationError as exc:
        raise ConfigError(_describe_validation(exc, layers)) from None
    # A root's defaults (include, exclude, kind) belong to the layer that defined the root.
    for name in settings.roots:
        root_layer = origins.get(f"roots.{name}.path", "default")
        for sub in RootConfig.model_fields:
            origins.setdefault(f"roots.{name}.{sub}", root_layer)

    index_dir, reason = _index_dir(settings, project_path, origins)
    return LoadedConfig(settings, origins, user_path, project_path, index_dir, reason, files_read)


def memory_folder(config: LoadedConfig) -> Path:
    """The memory folder of ``[memory]``: its ``path``, else by ``scope`` (see the setting)."""
    memory = config.settings.memory
    if memory.path:
        return Path(memory.path).expanduser()
    if memory.scope == "user":
        return data_dir() / "memory"
    if config.project_file is not None:
        return config.project_file.parent / MEMORY_FOLDER
    # No project: one folder per index, outside the index folder (an index is a cache that
    # may be deleted; memories are not).
    return data_dir() / "memories" / config.index_dir.name


def default_index_dir(roots: Mapping[str, RootConfig]) -> Path:
    """The user-data index folder for a set of roots (no project file)."""
    key = "\n".join(f"{n}={Path(r.path).expanduser()}" for n, r in sorted(roots.items()))
    digest = hashlib.blake2b(key.encode(), digest_size=6).hexdigest()
    slug = re.sub(r"[^A-Za-z0-9_-]+", "-", "-".join(sorted(roots)))[:40] or "index"
    return data_dir() / "indexes" / f"{slug}-{digest}"


def milvus_state_dir(milvus: MilvusSettings) -> Path:
    """The local folder of an index kept in Milvus (its writer lock, the roots it was built
    from, pending hand-offs), keyed by where the index is: the URI (without credentials; a
    Lite file by its absolute path), the database and the collection prefix. Never the folder
    of another index (the named index in use, the index used last)."""
    uri = milvus.uri
    local = "://" not in uri
    uri = str(Path(uri).expanduser().resolve()) if local else redact_uri(uri).rstrip("/")
    key = "\n".join((uri, milvus.db_name, milvus.collection))
    digest = hashlib.blake2b(key.encode(), digest_size=6).hexdigest()
    return data_dir() / "milvus" / f"{milvus.collection}-{digest}"


MILVUS_STATE_REASON = "the Milvus index's own, keyed by milvus.uri, db_name and collection"


def _index_dir(
    settings: Settings, project_file: Path | None, origins: Mapping[str, Layer]
) -> tuple[Path, str]:
    if settings.index.dir:
        return Path(settings.index.dir).expanduser(), f"index.dir ({origins.get('index.dir')})"
    if project_file is not None:
        return project_file.parent / ".noteseek", f"beside {project_file}"
    if settings.milvus.enabled:
        return milvus_state_dir(settings.milvus), MILVUS_STATE_REASON
    if settings.roots:
        return default_index_dir(settings.roots), "user data dir, keyed by the roots"
    return data_dir() / "indexes" / "default", "user data dir (no roots configured)"


def _read_toml(path: Path) -> dict[str, Any]:
    """A settings file's tables; a table's name matches its section in any case
    (``[Index]`` is ``[index]``), as the environment's names do."""
    try:
        with path.open("rb") as handle:
            data = tomllib.load(handle)
    except (OSError, ValueError) as exc:  # unreadable, not UTF-8, not TOML
        raise ConfigError(f"{path}: {exc}") from None
    out: dict[str, Any] = {}
    for key, value in data.items():
        name = key.lower() if key.lower() in Settings.model_fields else key
        out[name] = value
    return out


def _read_env(
    environ: Mapping[str, str] | None, files: Sequence[tuple[Layer, dict[str, Any]]] = ()
) -> dict[str, Any]:
    if environ is None:
        environ = os.environ
    relevant = {k: v for k, v in environ.items() if k.upper().startswith(ENV_PREFIX)}
    if not relevant:
        return {}
    relevant = env_names(relevant, key_variables([data for _, data in files]))
    from pydantic_settings import EnvSettingsSource  # only when a variable is set

    source = EnvSettingsSource(
        Settings,  # type: ignore[arg-type]  # reads the fields only
        env_prefix=ENV_PREFIX,
        env_nested_delimiter="__",
        case_sensitive=False,
    )
    source.env_vars = {k.lower(): v for k, v in relevant.items()}
    try:
        return dict(source())
    except Exception as exc:
        raise ConfigError(f"environment: {exc}") from None


def _resolve_paths(data: dict[str, Any], base: Path) -> None:
    roots = data.get("roots")
    if isinstance(roots, dict):
        for root in roots.values():
            if isinstance(root, dict) and isinstance(root.get("path"), str):
                root["path"] = str(_resolve(root["path"], base))
    for section, key in (("index", "dir"), ("memory", "path"), ("flush", "prompt_file")):
        table = data.get(section)
        if isinstance(table, dict) and isinstance(table.get(key), str) and table[key]:
            table[key] = str(_resolve(table[key], base))
    milvus = data.get("milvus")
    if isinstance(milvus, dict) and isinstance(milvus.get("uri"), str):
        uri = milvus["uri"].strip()
        if uri and "://" not in uri:  # a Milvus Lite file, relative to the file that set it
            milvus["uri"] = str(_resolve(uri, base))


def _resolve(value: str, base: Path) -> Path:
    path = Path(value).expanduser()
    return path if path.is_absolute() else (base / path)


def _merge(into: dict[str, Any], data: Mapping[str, Any]) -> None:
    for key, value in data.items():
        if isinstance(value, Mapping) and isinstance(into.get(key), dict):
            _merge(into[key], value)
        elif isinstance(value, Mapping):
            into[key] = {}
            _merge(into[key], value)
        else:
            into[key] = value


def _flatten(data: Mapping[str, Any], prefix: str = "") -> dict[str, Any]:
    out: dict[str, Any] = {}
    for key, value in data.items():
        dotted = f"{prefix}{key}"
        if isinstance(value, Mapping) and value:
            out.update(_flatten(value, dotted + "."))
        else:
            out[dotted] = value
    return out


def _unflatten(flat: Mapping[str, Any]) -> dict[str, Any]:
    out: dict[str, Any] = {}
    for dotted, value in flat.items():
        if value is None:
            continue
        node = out
        *parents, leaf = dotted.split(".")
        for part in parents:
            node = node.setdefault(part, {})
        node[leaf] = value
    return out


def _describe_validation(exc: ValidationError, layers: list[tuple[Layer, dict[str, Any]]]) -> str:
    lines = ["invalid configuration:"]
    for err in exc.errors():
        loc = ".".join(str(p) for p in err["loc"])
        where = [layer for layer, data in layers if loc in _flatten(data)]
        source = f" (from {where[-1]})" if where else ""
        lines.append(f"  {loc}: {err['msg']}{source}")
    return "\n".join(lines)


def ad_hoc_root(path: Path, taken: Mapping[str, RootConfig]) -> tuple[str, RootConfig]:
    """A root for a folder given on the command line, named after the folder."""
    resolved = path.expanduser().resolve()
    for name, root in taken.items():
        if Path(root.path).expanduser().resolve() == resolved:
            return name, root
    base = re.sub(r"[^A-Za-z0-9_.-]+", "-", resolved.name).strip("-.") or "root"
    name = base
    n = 2
    while name in taken:
        name = f"{base}-{n}"
        n += 1
    return name, RootConfig(path=str(resolved))
