"""YAML frontmatter: loading it safely, and the aliases, tags and links it declares.

The YAML is untrusted input: it is loaded with the safe loader and converted to JSON-safe values
under a node and depth budget (alias expansion can make a small document describe a huge or
cyclic tree). Problems become warnings, never exceptions.
"""

from __future__ import annotations

import datetime as dt
import math
import re
from collections.abc import Iterator
from typing import Any

import yaml

from noteseek.parse.dialect import WIKILINK_RE, split_wikilink
from noteseek.parse.inline import SCHEME_RE, TAG_WORD_RE, clean_tag
from noteseek.types import Link

__all__ = [
    "RELATION_KEYS",
    "frontmatter_aliases",
    "frontmatter_links",
    "frontmatter_tags",
    "load_frontmatter",
]

_YAML_LOADER: type[yaml.CSafeLoader] | type[yaml.SafeLoader]
try:
    _YAML_LOADER = yaml.CSafeLoader
except AttributeError:  # PyYAML built without libyaml
    _YAML_LOADER = yaml.SafeLoader

# Alias expansion can make a small YAML document describe an exponentially large tree
# ("billion laughs"), and YAML anchors can build cycles; converting to JSON must stop somewhere.
_MAX_FRONTMATTER_NODES = 20_000
_MAX_FRONTMATTER_DEPTH = 64


class _JsonBudget:
    """Converts YAML values to JSON-safe ones, stopping on huge or cyclic structures."""

    def __init__(self) -> None:
        self.nodes = 0
        self.truncated = False

    def value(self, value: Any, depth: int = 0) -> Any:
        self.nodes += 1
        if self.nodes > _MAX_FRONTMATTER_NODES or depth > _MAX_FRONTMATTER_DEPTH:
            self.truncated = True
            return None
        if value is None or isinstance(value, bool | str):
            return value
        if isinstance(value, int):
            return _safe_int(value)
        if isinstance(value, float):
            # NaN and infinities are not JSON.
            return value if math.isfinite(value) else str(value)
        if isinstance(value, dt.date | dt.datetime | dt.time):
            return value.isoformat()
        if isinstance(value, dict):
            return {self.key(k): self.value(v, depth + 1) for k, v in value.items()}
        if isinstance(value, list | tuple):
            return [self.value(v, depth + 1) for v in value]
        if isinstance(value, set | frozenset):
            return [self.value(v, depth + 1) for v in sorted(value, key=str)]
        if isinstance(value, bytes):  # !!binary
            return value.decode("utf-8", "replace")
        return str(value)

    def key(self, key: Any) -> str:
        if isinstance(key, str):
            return key
        if isinstance(key, bool):
            return "true" if key else "false"
        if key is None:
            return "null"
        converted = self.value(key, _MAX_FRONTMATTER_DEPTH)
        return converted if isinstance(converted, str) else str(converted)


def _safe_int(value: int) -> int | str:
    # Hex/octal YAML ints are not bound by Python's int->str digit limit on the way in, but
    # json.dumps would fail on the way out.
    return value if value.bit_length() <= 4000 else hex(value)


def load_frontmatter(source: str, warnings: list[str]) -> dict[str, Any]:
    """The frontmatter YAML as a JSON-safe mapping; ``{}`` (and a warning) when unusable."""
    try:
        data = yaml.load(source, Loader=_YAML_LOADER)
    except yaml.MarkedYAMLError as exc:
        mark = exc.problem_mark or exc.context_mark
        problem = exc.problem or exc.context or "parse error"
        if mark is not None:
            # The YAML text starts on line 2 of the file, after the opening ``---``.
            warnings.append(f"frontmatter: invalid YAML at line {mark.line + 2}: {problem}")
        else:
            warnings.append(f"frontmatter: invalid YAML: {problem}")
        return {}
    except Exception as exc:  # e.g. ValueError for a date like 2024-13-45, RecursionError
        warnings.append(f"frontmatter: invalid YAML: {type(exc).__name__}: {exc}")
        return {}
    if data is None:
        return {}
    if not isinstance(data, dict):
        warnings.append(
            f"frontmatter: expected a mapping, got {type(data).__name__}; frontmatter ignored"
        )
        return {}
    budget = _JsonBudget()
    converted: dict[str, Any] = budget.value(data)
    if budget.truncated:
        warnings.append("frontmatter: too large or too deeply nested; some values dropped")
    return converted


def _frontmatter_strings(value: Any) -> list[str]:
    items = value if isinstance(value, list) else [value]
    return [
        str(item) for item in items if item is not None and not isinstance(item, bool | dict | list)
    ]


def frontmatter_aliases(frontmatter: dict[str, Any]) -> list[str]:
    """The note's other names, from ``aliases``/``alias`` (lists or comma-separated)."""
    out: list[str] = []
    seen: set[str] = set()
    for key in ("aliases", "alias"):
        for item in _frontmatter_strings(frontmatter.get(key)):
            for alias in item.split(","):
                alias = alias.strip()
                if alias and alias not in seen:
                    seen.add(alias)
                    out.append(alias)
    return out


def frontmatter_tags(frontmatter: dict[str, Any]) -> list[str]:
    """Tags from ``tags``/``tag`` (lists, commas or spaces; a leading ``#`` is optional)."""
    out: list[str] = []
    for key in ("tags", "tag"):
        for item in _frontmatter_strings(frontmatter.get(key)):
            for word in re.split(r"[,\s]+", item):
                tag = clean_tag(word.lstrip("#"))
                if tag:
                    out.append(tag)
    return out


def frontmatter_links(frontmatter: dict[str, Any], source: str) -> list[Link]:
    """Links written as frontmatter properties (kind ``property``, ``display`` = the key).

    * Any string value holding wikilinks (``related: "[[Note]]"``, as Obsidian properties
      write them) links to each of them, under every key but aliases, tags and title.
    * Under a relation key (``related``, ``see_also``, ``up``, ``parent``, ``implements``,
      ``tests``... see ``RELATION_KEYS``) a plain note name counts too (``related: [a, b]``),
      and so does YAML's reading of an unquoted ``up: [[Note]]`` (a list inside a list).
    The line is the key's line in the file.
    """
    out: list[Link] = []
    key_lines = _frontmatter_key_lines(source)
    for key, value in frontmatter.items():
        folded = " ".join(key.lower().replace("_", " ").replace("-", " ").split())
        if folded in _NOT_RELATION_KEYS:
            continue
        relation = folded in RELATION_KEYS
        line = key_lines.get(key, 1)
        for text, nested in _property_strings(value):
            found = [m.group(2) for m in WIKILINK_RE.finditer(text)]
            if found:
                for inner in found:
                    parts = split_wikilink(inner)
                    if parts is not None and parts[0]:
                        out.append(Link(parts[0], "property", line, parts[1], key))
            elif (relation or nested) and _looks_like_note_name(text):
                target, _, anchor = text.strip().partition("#")
                out.append(Link(target.strip(), "property", line, anchor.strip() or None, key))
    return out


RELATION_KEYS = frozenset(
    {
        "related",
        "related notes",
        "see also",
        "seealso",
        "links",
        "up",
        "down",
        "parent",
        "parents",
        "child",
        "children",
        "next",
        "prev",
        "previous",
        "source",
        "sources",
        "implements",
        "implementation",
        "tests",
        "tested by",
    }
)
"""Frontmatter keys (folded: lower case, ``_`` and ``-`` as spaces) whose plain values are
note names."""
_NOT_RELATION_KEYS = frozenset({"aliases", "alias", "tags", "tag", "title", "cssclasses"})
_FRONTMATTER_KEY_RE = re.compile(r"^(['\"]?)([^\s:#'\"][^:]*?)\1\s*:")


def _frontmatter_key_lines(source: str) -> dict[str, int]:
    """Top-level key -> its line in the file (the YAML starts on line 2)."""
    lines: dict[str, int] = {}
    for number, text in enumerate(source.split("\n"), start=2):
        m = _FRONTMATTER_KEY_RE.match(text)
        if m:
            lines.setdefault(m.group(2).strip(), number)
    return lines


def _property_strings(value: Any, depth: int = 0) -> Iterator[tuple[str, bool]]:
    """The strings inside a property value, each with whether it sat in a list in a list."""
    if isinstance(value, str):
        yield value, False
    elif isinstance(value, list) and depth < 3:
        for item in value:
            if isinstance(item, list) and len(item) == 1 and isinstance(item[0], str):
                yield item[0], True  # up: [[Note]] unquoted is [["Note"]] to YAML
            else:
                yield from _property_strings(item, depth + 1)
    elif isinstance(value, dict) and depth < 3:
        for item in value.values():
            yield from _property_strings(item, depth + 1)


def _looks_like_note_name(text: str) -> bool:
    text = text.strip()
    return (
        0 < len(text) <= 200
        and "\n" not in text
        and not SCHEME_RE.match(text)
        and TAG_WORD_RE.search(text) is not None
    )
