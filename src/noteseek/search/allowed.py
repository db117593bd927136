"""The chunk rowids a filter lets through, for the semantic lane, kept until the index changes.

A filtered semantic search needs the set of chunks the filter allows. Reading it costs a scan
of every chunk row (tens of milliseconds at 200,000 chunks), and the most common filter is the
same on every search: ``source = docs`` whenever the index also holds memories or commits. So
the answer is kept per store, per filter, per change token (the last few), sorted, so the vector
index can test membership by binary search instead of building a set each time.
"""

from __future__ import annotations

import threading
import weakref
from collections import OrderedDict

import numpy as np
import numpy.typing as npt

from noteseek.store.base import ChangeToken, SearchSource
from noteseek.types import Filters

KEPT = 8
"""Filters remembered per store."""

_kept: weakref.WeakKeyDictionary[
    object, OrderedDict[tuple[ChangeToken, str], npt.NDArray[np.int64]]
]
_kept = weakref.WeakKeyDictionary()
_lock = threading.Lock()


def allowed_rows(store: SearchSource, filters: Filters) -> npt.NDArray[np.int64] | None:
    """The sorted rowids of the chunks ``filters`` let through; None when it lets all through."""
    if filters.is_empty():
        return None
    key = (store.change_token(), repr(filters))
    with _lock:
        kept = _kept.setdefault(store, OrderedDict())
        found = kept.get(key)
        if found is not None:
            kept.move_to_end(key)
            return found
    found = np.sort(np.asarray(store.filtered_chunk_ids(filters), dtype=np.int64))
    found.setflags(write=False)
    with _lock:
        kept[key] = found
        while len(kept) > KEPT:
            kept.popitem(last=False)
    return found
