"""HNSW graphs by usearch: built over rows of vectors, stopped when the process exits."""

from __future__ import annotations

import atexit
import threading
import weakref
from typing import Any

import numpy as np
import numpy.typing as npt

from noteseek.store.exact import usearch_module


def build_hnsw(
    ids: npt.NDArray[np.int64],
    matrix: npt.NDArray[Any],
    dimension: int,
    *,
    connectivity: int = 16,
    expansion_add: int = 128,
    expansion_search: int = 256,
) -> Any:
    """An in-memory usearch HNSW graph over the rows (cosine metric)."""
    index = usearch_module().Index(
        ndim=dimension,
        metric="cos",
        dtype="f32",
        connectivity=connectivity,
        expansion_add=expansion_add,
        expansion_search=expansion_search,
    )
    if ids.size:
        index.add(
            ids.astype(np.uint64),
            np.asarray(matrix, dtype=np.float32),
            threads=insert_threads(ids.size),
            progress=_until_exit,
        )
    return index


# A graph still being built when the process exits is stopped, and the exit waits for it:
# usearch's worker threads destroyed mid-build abort the process ("terminate called without
# an active exception", exit 134) after a one-shot command has already answered.
_EXITING = threading.Event()
_BUILDERS: weakref.WeakSet[threading.Thread] = weakref.WeakSet()
EXIT_WAIT_SECONDS = 10.0


def _until_exit(done: int, total: int) -> bool:
    """usearch's progress callback: go on unless the process is exiting."""
    return not _EXITING.is_set()


# usearch checks the callback's annotations as types, not as the strings this module's
# ``from __future__ import annotations`` makes of them.
_until_exit.__annotations__ = {"done": int, "total": int, "return": bool}


def stop_at_exit(builder: threading.Thread) -> None:
    """Stop the graph ``builder`` builds at exit, and let the exit wait for it (started by
    the caller)."""
    _BUILDERS.add(builder)


@atexit.register
def _stop_builders() -> None:
    _EXITING.set()
    for builder in list(_BUILDERS):
        builder.join(EXIT_WAIT_SECONDS)


# Parallel insertion races on the graph's links (measured: recall@10 0.996 instead of 1.0 on
# small graphs, and different on every build); below this many vectors one thread is fast
# enough, so the graph is exact-as-built and the same every time.
PARALLEL_INSERT_MIN = 10_000


def insert_threads(n: int) -> int:
    """usearch's ``threads`` for inserting ``n`` vectors (0: one per core)."""
    return 0 if n >= PARALLEL_INSERT_MIN else 1
