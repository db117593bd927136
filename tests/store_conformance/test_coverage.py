"""The suite covers every member of every store protocol: a new member needs a test here."""

from __future__ import annotations

import re
from pathlib import Path

from noteseek.store import base

ROLES = (
    base.Versioned,
    base.Meta,
    base.Catalog,
    base.Chunks,
    base.KeywordIndex,
    base.VectorStore,
    base.VectorIndex,
    base.GraphStore,
    base.Portable,
    base.Store,
)


def members(protocol: type) -> set[str]:
    return {
        name
        for klass in protocol.__mro__
        if klass is not object and getattr(klass, "_is_protocol", False)
        for name in vars(klass)
        if not name.startswith("_")
    }


def test_every_protocol_member_is_exercised() -> None:
    suite = "\n".join(
        p.read_text(encoding="utf-8")
        for p in Path(__file__).parent.glob("*.py")
        if p.name != Path(__file__).name
    )
    used = set(re.findall(r"\.(\w+)\b", suite))
    missing = {f"{role.__name__}.{name}" for role in ROLES for name in members(role) - used}
    assert not missing, sorted(missing)
    assert members(base.Store) >= {"transaction", "close", "change_token", "vector_index"}
