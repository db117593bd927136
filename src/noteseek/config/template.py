"""The ``noteseek init`` template, generated from the settings models.

Every section and field is written with its ``description`` as a comment and its default
commented out, so the template can never fall behind the settings: a new field appears in it
by being declared. Only the first root's ``path`` is set. The result is valid TOML that
:func:`~noteseek.config.loading.load_settings` reads back to the defaults plus that root.

Layout: a short header, then one paragraph per table and per field, separated by blank
lines (the description, then the key line), nested tables after their parent's fields.
"""

from __future__ import annotations

import re
import textwrap
from typing import Any, get_args

from pydantic import BaseModel, SecretStr
from pydantic.fields import FieldInfo

from noteseek.config.indexing import RootConfig
from noteseek.config.settings import Settings

EXAMPLE_ROOT = "notes"
"""The name of the root the template defines (``[roots.notes]``)."""

PLACEHOLDER = "..."
"""What a commented-out line shows where it may not (a secret) or cannot (unset) show a value."""

_WIDTH = 88
_HEADER = """\
# noteseek project configuration (written by `noteseek init`).
# Every key is optional except a root's path; a commented-out key shows its default.
# Precedence: built-in defaults < user file < this file < NOTESEEK_SECTION__KEY env < flags.
# `noteseek config show` prints every resolved value and where it came from."""
_BARE_KEY = re.compile(r"[A-Za-z0-9_-]+")


def init_template(path: str) -> str:
    """The commented ``.noteseek.toml`` for a project whose first root is the folder ``path``."""
    lines = [_HEADER]
    for name, field in Settings.model_fields.items():
        if name == "roots":
            _table(lines, f"roots.{EXAMPLE_ROOT}", field, RootConfig, {"path": path})
        elif (section := _section_model(field)) is not None:
            _table(lines, name, field, section, {})
        else:
            raise TypeError(f"Settings.{name} is not a section: {field.annotation!r}")
    return "\n".join(lines) + "\n"


def _table(
    lines: list[str],
    table: str,
    field: FieldInfo,
    model: type[BaseModel],
    values: dict[str, Any],
) -> None:
    """Append ``[table]`` and its fields; ``values`` are written set, the rest commented out."""
    lines.append("")
    lines.extend(_comment(field.description))
    lines.append(f"[{table}]")
    nested: list[tuple[str, FieldInfo, type[BaseModel]]] = []
    for name, sub in model.model_fields.items():
        if (section := _section_model(sub)) is not None:
            nested.append((name, sub, section))
            continue
        lines.append("")
        lines.extend(_comment(sub.description))
        if name in values:
            lines.append(f"{name} = {toml_value(values[name])}")
        else:
            lines.append(_commented_default(name, sub))
    for name, sub, section in nested:
        _table(lines, f"{table}.{name}", sub, section, {})


def _commented_default(name: str, field: FieldInfo) -> str:
    # A secret is never written with a value, whatever its default; an unset field shows its
    # first example, marked as such, since TOML has no null to show.
    if _is_secret(field):
        return f'# {name} = "{PLACEHOLDER}"  # a secret: unset by default'
    default = field.get_default(call_default_factory=True)
    if default is None:
        example = field.examples[0] if field.examples else PLACEHOLDER
        return f"# {name} = {toml_value(example)}  # unset by default; an example"
    return f"# {name} = {toml_value(default)}"


def _comment(text: str | None) -> list[str]:
    if not text:
        return []
    return [
        f"# {line}"
        for line in textwrap.wrap(text, _WIDTH - 2, break_on_hyphens=False, break_long_words=False)
    ]


def _section_model(field: FieldInfo) -> type[BaseModel] | None:
    """The model of a field that is a table of its own, else None."""
    annotation = field.annotation
    if isinstance(annotation, type) and issubclass(annotation, BaseModel):
        return annotation
    return None


def _is_secret(field: FieldInfo) -> bool:
    return field.annotation is SecretStr or SecretStr in get_args(field.annotation)


def toml_value(value: Any) -> str:
    """``value`` as a TOML literal (the plain types settings defaults use)."""
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, int | float):
        return repr(value)
    if isinstance(value, str):
        return _toml_string(value)
    if isinstance(value, list | tuple):
        return "[" + ", ".join(toml_value(v) for v in value) + "]"
    if isinstance(value, dict):
        if not value:
            return "{}"
        pairs = (f"{_toml_key(str(k))} = {toml_value(v)}" for k, v in value.items())
        return "{ " + ", ".join(pairs) + " }"
    raise TypeError(f"no TOML form for {type(value).__name__}: {value!r}")


def _toml_key(key: str) -> str:
    return key if _BARE_KEY.fullmatch(key) else _toml_string(key)


def _toml_string(text: str) -> str:
    # A basic string: quote and backslash escaped, control characters (DEL included, which
    # TOML forbids raw) as \uXXXX; everything else stays as it is (the file is UTF-8).
    escaped = "".join(
        "\\" + ch
        if ch in '"\\'
        else f"\\u{ord(ch):04x}"
        if ord(ch) < 0x20 or ord(ch) == 0x7F
        else ch
        for ch in text
    )
    return f'"{escaped}"'
