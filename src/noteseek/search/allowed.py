"""The chunk rowids a filter lets through, for the semantic lane, kept until the index changes.

A filtered semantic search needs the set of chunks the filter allows. Reading it costs a scan
of every chunk row (tens of milliseconds at 200,000 chunks), and the most common filter is the
same on every search: ``source = docs`` whenever the index also holds memories or commits. So
the engine keeps one :class:`AllowedRows` per opened index: the answer per filter (the last
few), keyed by the store's change token, sorted, so the vector index can test membership by
binary search instead of building a set each time.
"""

from __future__ import annotations

import threading
from collections import OrderedDict

import numpy as np
import numpy.typing as npt

from noteseek.store.base import ChangeToken, SearchSource
from noteseek.types import Filters

KEPT = 8
"""Filters remembered."""


class AllowedRows:
    """``rows(store, filters)``: the sorted rowids of the chunks ``filters`` let through (None
    when they let all through), computed once per filter and index change."""

    def __init__(self) -> None:
        self._kept: OrderedDict[tuple[ChangeToken, str], npt.NDArray[np.int64]] = OrderedDict()
        self._store: SearchSource | None = None
        self._lock = threading.Lock()

    def __call__(self, store: SearchSource, filters: Filters) -> npt.NDArray[np.int64] | None:
        if filters.is_empty():
            return None
        key = (store.change_token(), repr(filters))
        with self._lock:
            if store is not self._store:  # the index was opened again: nothing kept holds
                self._kept.clear()
                self._store = store
            found = self._kept.get(key)
            if found is not None:
                self._kept.move_to_end(key)
                return found
        found = np.sort(np.asarray(store.filtered_chunk_ids(filters), dtype=np.int64))
        found.setflags(write=False)
        with self._lock:
            if store is self._store:
                self._kept[key] = found
                while len(self._kept) > KEPT:
                    self._kept.popitem(last=False)
        return found
