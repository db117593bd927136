"""Which setting a ``NOTESEEK_*`` environment variable sets.

The documented form puts two underscores between levels (``NOTESEEK_WATCH__DEBOUNCE_MS``),
since names hold single ones. People write one underscore all the same
(``NOTESEEK_WATCH_DEBOUNCE_MS=1500``), and pydantic-settings ignores a name that is no field:
a setting silently not applied. So every ``NOTESEEK_*`` name is accounted for here: the
documented form as it is; a name with single underscores that spells exactly one setting
(``NOTESEEK_WATCH_DEBOUNCE_MS`` is ``watch.debounce_ms``) as that setting; the variables that
settings name as holding a secret (``embedding.api_key_env``, ``flush.api_key_env``: by
default ``NOTESEEK_EMBEDDING_API_KEY`` and ``NOTESEEK_FLUSH_API_KEY``) left alone; and any
other name an error that says what was meant.
"""

from __future__ import annotations

import difflib
from collections.abc import Iterable, Mapping
from typing import Any

from pydantic import BaseModel

from noteseek.config.base import ConfigError
from noteseek.config.settings import ENV_PREFIX, Settings


def _section(annotation: Any) -> type[BaseModel] | None:
    is_model = isinstance(annotation, type) and issubclass(annotation, BaseModel)
    return annotation if is_model else None


def _paths(model: type[BaseModel], rest: str) -> list[list[str]]:
    """Every way of reading ``rest`` (lower case, single underscores) as a path of fields."""
    found: list[list[str]] = []
    for name, info in model.model_fields.items():
        if rest == name:
            found.append([name])
        elif rest.startswith(name + "_") and (section := _section(info.annotation)) is not None:
            found.extend([name, *path] for path in _paths(section, rest[len(name) + 1 :]))
    return found


def _leaves(model: type[BaseModel], prefix: str = "") -> list[str]:
    out = []
    for name, info in model.model_fields.items():
        section = _section(info.annotation)
        out.extend(_leaves(section, f"{prefix}{name}__") if section else [f"{prefix}{name}"])
    return out


def key_variables(layers: Iterable[Mapping[str, Any]] = ()) -> set[str]:
    """Environment variables settings name as holding a key (the ``*_env`` settings): their
    defaults and the values the files set."""
    names: set[str] = set()

    def collect(model: type[BaseModel], data: Mapping[str, Any] | None) -> None:
        for name, info in model.model_fields.items():
            section = _section(info.annotation)
            value = None if data is None else data.get(name)
            if section is not None:
                collect(section, value if isinstance(value, Mapping) else None)
            elif name.endswith("_env"):
                for candidate in (info.default, value):
                    if isinstance(candidate, str) and candidate:
                        names.add(candidate.upper())

    collect(Settings, None)
    for data in layers:
        collect(Settings, data)
    return names


def env_names(variables: Mapping[str, str], keys: set[str]) -> dict[str, str]:
    """``variables`` (``NOTESEEK_*`` names and their values) as pydantic-settings reads them:
    single-underscore names that spell one setting renamed to the documented form, the key
    variables left out; :class:`ConfigError` for any other name."""
    out: dict[str, str] = {}
    renamed: dict[str, str] = {}
    for key, value in variables.items():
        upper = key.upper()
        rest = upper[len(ENV_PREFIX) :].lower()
        if "__" in rest or rest in Settings.model_fields:
            out[key] = value
            continue
        if upper in keys:
            continue
        paths = _paths(Settings, rest) if rest else []
        if len(paths) == 1:
            documented = ENV_PREFIX + "__".join(paths[0]).upper()
            renamed[documented] = key
            continue
        raise ConfigError(_unknown(key, paths))
    for documented, key in renamed.items():
        same = next((k for k in out if k.upper() == documented), None)
        if same is not None and out[same] != variables[key]:
            raise ConfigError(
                f"environment: {key} and {same} both set {documented} to different values; "
                f"keep one ({documented} is the documented form)"
            )
        out.setdefault(documented, variables[key])
    return out


def _unknown(key: str, paths: list[list[str]]) -> str:
    if paths:
        options = " or ".join(ENV_PREFIX + "__".join(p).upper() for p in paths)
        return f"environment: {key} could be {options}; write the one meant"
    leaves = {leaf.replace("__", "_"): leaf for leaf in _leaves(Settings)}
    rest = key.lower()[len(ENV_PREFIX) :].replace("__", "_")
    guess = difflib.get_close_matches(rest, list(leaves), n=1, cutoff=0.75)
    hint = f" (did you mean {ENV_PREFIX}{leaves[guess[0]].upper()}?)" if guess else ""
    return (
        f"environment: {key} is no setting{hint}: settings are NOTESEEK_SECTION__KEY, with two "
        "underscores between levels (NOTESEEK_WATCH__DEBOUNCE_MS=1500, "
        "NOTESEEK_ROOTS__NOTES__PATH=~/notes); unset it or fix its name"
    )
