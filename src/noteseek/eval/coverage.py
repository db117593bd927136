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
import sqlite3
from pathlib import Path

DB = "index.db"


def partial_index(index: Path, fraction: float, *, seed: int = 7) -> Path:
    """Copy the index folder ``index`` next to it, keeping vectors for ``fraction`` of the
    embedding keys (chosen by a seeded shuffle); returns the copy's folder."""
    if not 0.0 <= fraction <= 1.0:
        raise ValueError(f"coverage must be between 0 and 1, got {fraction}")
    if not (index / DB).is_file():
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
    source = sqlite3.connect(index / DB)
    dest = sqlite3.connect(target / DB)
    try:
        source.backup(dest)
        keys = sorted(
            r[0]
            for r in dest.execute("SELECT DISTINCT embed_key FROM chunks WHERE embed_key != ''")
        )
        random.Random(seed).shuffle(keys)
        keep = keys[: round(fraction * len(keys))]
        with dest:
            dest.execute("CREATE TEMP TABLE keep(key TEXT PRIMARY KEY)")
            dest.executemany("INSERT INTO keep VALUES (?)", [(k,) for k in keep])
            dest.execute("DELETE FROM vectors WHERE key NOT IN (SELECT key FROM keep)")
    finally:
        source.close()
        dest.close()
    return target
