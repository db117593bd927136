"""A copy of an eval index whose vectors cover only part of its chunks (``--coverage``).

While ``noteseek index`` embeds, searches see an index where a share of the chunks has vectors
and the rest does not yet. To measure ranking in that state without stopping an embedding run
at the right moment, :func:`partial_index` copies a fully embedded index and deletes the
vectors of a seeded random share of its embedding keys; the copy is then searched as it is
(nothing is embedded again). The engine reads the share from the store, exactly as while
indexing.
"""

from __future__ import annotations

import random
import shutil
from pathlib import Path

from noteseek.store.factory import INDEX_FILE, embedded_backend

DB = INDEX_FILE


def partial_index(index: Path, fraction: float, *, seed: int = 7) -> Path:
    """Copy the index folder ``index`` next to it, keeping vectors for ``fraction`` of the
    embedding keys (chosen by a seeded shuffle); returns the copy's folder."""
    if not 0.0 <= fraction <= 1.0:
        raise ValueError(f"coverage must be between 0 and 1, got {fraction}")
    backend = embedded_backend(index)
    if not backend.file.is_file():
        raise FileNotFoundError(f"{index}: no {DB}")
    target = index.with_name(f"{index.name}-coverage-{fraction:g}")
    if target.exists():
        shutil.rmtree(target)
    target.mkdir(parents=True)
    for item in index.iterdir():
        if item.name.startswith(DB):
            continue
        copy = shutil.copytree if item.is_dir() else shutil.copy2
        copy(item, target / item.name)

    def keep(keys: list[str]) -> list[str]:
        random.Random(seed).shuffle(keys)
        return keys[: round(fraction * len(keys))]

    backend.copy_to(target, keep)
    return target
