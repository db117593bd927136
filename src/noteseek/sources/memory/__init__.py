"""The memory kind: an agent's memory folder (``MEMORY.md``, daily logs, one file per memory).

Its spec says what makes memories differ from documents, for every door alike: they answer
the ``memory`` scope; they are cut small (``memory.chunk_chars``, never merged) and each result
grows to ``memory.expand_chars`` of its neighbours; memories carry real dates, so the memory
recency boost always applies; a daily log mixes a day's topics, so the memory document weight
and per-document cap hold; links are typed by the words around them; the folder belongs to
the kind (other roots never walk into it, the watcher creates and watches it from the start);
the folder is a root even when no setting names it (``memory.enabled``); and agents write it
through :class:`~noteseek.sources.memory.folder.MemoryFolder`, the kind's writer.
"""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path
from typing import TYPE_CHECKING

from noteseek.config import LoadedConfig, RootConfig, Settings, memory_folder
from noteseek.sources.spec import KindSpec, Profile, lazy_source

if TYPE_CHECKING:
    from noteseek.sources.memory.folder import MemoryFolder

MEMORY_KIND = "memory"
MEMORY_SCOPE = "memory"


def profile(settings: Settings) -> Profile:
    """Memory's ranking under ``[memory]`` (measured on LoCoMo logs: docs/evaluation.md)."""
    m = settings.memory
    recency = (
        ()
        if m.recency_factor == 1.0 or m.recency_days <= 0
        else ((m.recency_days, m.recency_factor),)
    )
    return Profile(
        chunk_chars=m.chunk_chars,
        merge_small=False,
        expand_chars=m.expand_chars,
        recency=recency,
        document_weight=m.document_weight,
        max_per_document=m.max_per_document,
    )


def _implicit(config: LoadedConfig, roots: Mapping[str, RootConfig]) -> dict[str, RootConfig]:
    memory = config.settings.memory
    if not memory.enabled or memory.root in roots:
        return {}
    folder = str(memory_folder(config))
    return {memory.root: RootConfig(path=folder, kind=MEMORY_KIND, include=["*.md"])}


def writer(path: Path, settings: Settings) -> MemoryFolder:
    """The folder agents write memories to (atomic, locked, bounded)."""
    from noteseek.sources.memory.folder import MemoryFolder

    return MemoryFolder(path, max_bytes=settings.memory.max_bytes)


SPEC = KindSpec(
    MEMORY_KIND,
    lazy_source("noteseek.sources.memory.source:MemorySource"),
    scope=MEMORY_SCOPE,
    profile=profile,
    typed_links=True,
    names_index=False,
    owns_folder=True,
    implicit_roots=_implicit,
    writer=writer,
)
