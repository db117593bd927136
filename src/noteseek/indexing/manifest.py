"""The index manifest: the settings an index was built with.

Stored in the index; when the current settings produce a different manifest, what is indexed
no longer matches what queries expect, so the index is rebuilt and the reason is reported.
"""

from __future__ import annotations

from typing import Any

from noteseek.analysis import get_analyzer
from noteseek.chunking import CHUNKER_VERSION
from noteseek.config import Settings
from noteseek.parse import default_registry
from noteseek.parse.versions import LOGSEQ_VERSION, STYLES_VERSION
from noteseek.store.migrations import SCHEMA_VERSION

# Bump when the meaning of stored rows changes in a way a schema migration cannot express.
SPEC_VERSION = 5  # 2: chunks carry embedding keys; 3: document-level keyword rows; 4: merges
# carried lines out of the keyword body, code identifiers' parts in the code field; 5: a name
# row per file a commit adds


def build_manifest(settings: Settings) -> dict[str, Any]:
    analyzer = get_analyzer(settings.analysis.language, settings.analysis.stopwords)
    return {
        "spec_version": SPEC_VERSION,
        "schema_version": SCHEMA_VERSION,
        "analyzer": analyzer.settings(),
        "chunking": {
            "max_chars": settings.chunking.max_chars,
            "merge_below": settings.chunking.merge_below,
            "memory_chars": settings.memory.chunk_chars,
            "version": CHUNKER_VERSION,
        },
        "parsers": {
            **default_registry().versions(),
            "logseq": LOGSEQ_VERSION,
            "styles": STYLES_VERSION,
        },
    }


def manifest_changes(old: dict[str, Any], new: dict[str, Any]) -> list[str]:
    """Human-readable differences (``analyzer.stopwords: False -> True``); [] when equal."""
    changes: list[str] = []

    def walk(a: Any, b: Any, key: str) -> None:
        if isinstance(a, dict) and isinstance(b, dict):
            for k in sorted(set(a) | set(b)):
                walk(a.get(k), b.get(k), f"{key}.{k}" if key else k)
        elif a != b:
            changes.append(f"{key}: {a!r} -> {b!r}")

    walk(old, new, "")
    return changes
