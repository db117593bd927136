"""Recency: recently changed documents rank a little higher (``search.recency``).

A document's date is its frontmatter ``updated``/``modified``/``lastmod``/``date`` when it has
one, else its file's modification time (``files.modified``). Tiers multiply the fused score:
changed within 7 days 1.2x, within 30 days 1.1x by default (``search.recency_tiers``).

File times are often meaningless: a fresh clone, a copied or synced folder, an unpacked
archive give every file the same time. In ``auto`` mode the boost is off when at least
``CLUSTERED_SHARE`` of the documents changed within ``CLUSTER_SECONDS`` of the index's most
common minute, which is what such copies look like; notes written over weeks do not.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Sequence

CLUSTER_SECONDS = 600.0
CLUSTERED_SHARE = 0.8
DAY = 86400.0


def dates_trustworthy(modified: Sequence[float]) -> bool:
    """False when most dates sit within minutes of each other (a bulk copy or checkout)."""
    if len(modified) < 5:
        return True
    minutes = Counter(int(m // 60) for m in modified)
    peak = minutes.most_common(1)[0][0] * 60.0
    near = sum(1 for m in modified if abs(m - peak) <= CLUSTER_SECONDS)
    return near / len(modified) < CLUSTERED_SHARE


def factor(modified: float, now: float, tiers: Sequence[tuple[float, float]]) -> float:
    """The multiplier of the first tier ``modified`` falls into (1.0 if none)."""
    age = now - modified
    if age < 0:
        age = 0.0  # dates in the future (clock skew, planned notes) count as now
    for days, multiplier in sorted(tiers):
        if age <= days * DAY:
            return multiplier
    return 1.0
