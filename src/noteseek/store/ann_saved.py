"""The vector index saved in the index folder, so a new process maps it instead of building it.

Per model, the index folder holds (``<m>`` is the model id made safe for a file name, ``<tag>``
the first 16 hex digits of the key checksum):

* ``vectors-<m>.json``: the sidecar, written last; it names the files below and records the
  model, dimension, dtype, row count, a checksum of the row keys it covers, and a fingerprint
  (size plus a hash of sampled blocks) of each data file;
* ``vectors-<m>.<tag>.keys.npy``: per chunk its rowid, its (rowid, embedding key) ident and
  its row of the matrix; then per distinct vector its key (store/vector_rows.py);
* ``vectors-<m>.<tag>.npy``: the matrix of distinct unit vectors, loaded with ``mmap_mode='r'``;
* ``vectors-<m>.<tag>.usearch``: the HNSW graph, if there was one, opened as a usearch view.

Nothing here is trusted: a sidecar for another model, dimension or dtype, keys whose checksum
is not the one recorded, or not the checksum of the rows the store holds now (the index changed
while no writer saved), or a data file whose fingerprint differs (truncated, overwritten) makes
``load`` return None, and the caller loads from the store as if no file were there. Data files
are named by their content, so a writer replacing them never changes a file a reader has
mapped: it writes new ones (temp file + rename), then the sidecar, then deletes the old ones.
Only the writer role saves (``InMemoryVectorIndex.may_save``); readers only map.
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import os
import re
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
import numpy.typing as npt

from noteseek.store.exact import usearch_module
from noteseek.store.vector_rows import VectorRows

FORMAT = 2
"""2: the matrix holds each distinct vector once (1: one row per chunk)."""
SAMPLE_BLOCKS = 64
BLOCK = 4096


@dataclass(frozen=True)
class Saved:
    """A saved state that matched the store: the rows and the graph."""

    rows: VectorRows
    graph: Any
    graph_path: Path | None


def stem(model: str) -> str:
    """``vectors-<model>`` with every character unsafe in a file name replaced."""
    return "vectors-" + re.sub(r"[^A-Za-z0-9._-]", "_", model)


def key_checksum(idents: npt.NDArray[np.int64]) -> str:
    """A checksum of the row idents, in row order: equal exactly when the rows are equal."""
    return hashlib.blake2b(np.ascontiguousarray(idents, dtype=np.int64).tobytes()).hexdigest()


def fingerprint(path: Path) -> str:
    """The file's size and a hash of its first, last and evenly spaced blocks: cheap at any
    size (a few hundred KB read), and it tells a truncated or overwritten file apart."""
    size = path.stat().st_size
    digest = hashlib.blake2b(str(size).encode())
    with path.open("rb") as fh:
        step = max(size // SAMPLE_BLOCKS, BLOCK)
        for offset in range(0, size, step):
            fh.seek(offset)
            digest.update(fh.read(BLOCK))
        fh.seek(max(size - 16 * BLOCK, 0))
        digest.update(fh.read())
    return f"{size}:{digest.hexdigest()}"


def sidecar_path(folder: Path, model: str) -> Path:
    return folder / f"{stem(model)}.json"


def load(
    folder: Path,
    model: str,
    dimension: int,
    dtype: Any,
    current_idents: npt.NDArray[np.int64] | None,
    *,
    want_graph: bool | None,
) -> Saved | None:
    """The saved state if it is sound and covers exactly ``current_idents``; else None.

    ``current_idents`` None: sound, whatever rows the store holds now (the caller checks them
    later). ``want_graph`` None: the graph if the state has one.
    """
    try:
        meta = json.loads(sidecar_path(folder, model).read_text(encoding="utf-8"))
        if (
            meta.get("format") != FORMAT
            or meta.get("model") != model
            or meta.get("dimension") != dimension
            or meta.get("dtype") != np.dtype(dtype).name
            or (current_idents is not None and meta.get("checksum") != key_checksum(current_idents))
        ):
            return None
        files = meta["files"]
        keys_path = folder / files["keys"]
        matrix_path = folder / files["matrix"]
        for name, path in (("keys", keys_path), ("matrix", matrix_path)):
            if fingerprint(path) != meta["fingerprints"][name]:
                return None
        keys = np.load(keys_path, allow_pickle=False)
        count, distinct = int(meta["count"]), int(meta["distinct"])
        if keys.shape != (3 * count + distinct,):
            return None
        ids, idents, rows = keys[:count], keys[count : 2 * count], keys[2 * count : 3 * count]
        if key_checksum(idents) != meta["checksum"] or (
            count and not 0 <= int(rows.min()) <= int(rows.max()) < distinct
        ):
            return None
        # A plain array over the mapped file: the memmap subclass made every product with it
        # 1.5 ms slower (3.7 against 2.2 ms at 35k rows).
        matrix = np.asarray(np.load(matrix_path, mmap_mode="r", allow_pickle=False))
        if matrix.shape != (distinct, dimension) or matrix.dtype != np.dtype(dtype):
            return None
        graph, graph_path = None, None
        if want_graph is not False and files.get("graph"):
            graph_path = folder / files["graph"]
            if fingerprint(graph_path) != meta["fingerprints"]["graph"]:
                return None
            graph = _view(graph_path, dimension, distinct)
            if graph is None:
                return None
        state = VectorRows(ids, idents, rows, matrix, keys[3 * count :])
        return Saved(state, graph, graph_path)
    except (OSError, ValueError, KeyError, TypeError, RuntimeError):
        return None


def saved_rows(folder: Path, model: str) -> int:
    """The rows the saved state of ``model`` holds, as its sidecar says (0: none, unreadable)."""
    try:
        return int(json.loads(sidecar_path(folder, model).read_text(encoding="utf-8"))["count"])
    except (OSError, ValueError, KeyError, TypeError):
        return 0


def _view(path: Path, dimension: int, count: int) -> Any:
    graph = usearch_module().Index.restore(str(path), view=True)
    if graph is None or graph.ndim != dimension or len(graph) != count:
        return None
    return graph


def restore_copy(path: Path) -> Any | None:
    """An in-memory, writable copy of a saved graph (to update in place); None when the file
    is gone (another writer saved a newer state and deleted it) or unreadable."""
    try:
        return usearch_module().Index.restore(str(path), view=False)
    except (OSError, RuntimeError, ValueError):
        return None


def save(
    folder: Path,
    model: str,
    dimension: int,
    state: VectorRows,
    graph: Any,
) -> None:
    """Save the state atomically: content-named data files first, the sidecar last, then the
    files the previous sidecar named are deleted. Raises OSError (a full disk, a read-only
    folder): the caller carries on with what it has in memory."""
    checksum = key_checksum(state.idents)
    base = f"{stem(model)}.{checksum[:16]}"
    names = {"keys": f"{base}.keys.npy", "matrix": f"{base}.npy"}
    if graph is not None:
        names["graph"] = f"{base}.usearch"
    parts = (state.ids, state.idents, state.rows, state.vkeys)
    keys = np.concatenate([np.asarray(a, dtype=np.int64) for a in parts])
    _atomic(folder / names["keys"], lambda p: _save_npy(p, keys))
    _atomic(folder / names["matrix"], lambda p: _save_npy(p, np.asarray(state.matrix)))
    if graph is not None:
        _atomic(folder / names["graph"], lambda p: graph.save(str(p)))
    meta = {
        "format": FORMAT,
        "model": model,
        "dimension": dimension,
        "dtype": np.dtype(state.matrix.dtype).name,
        "count": state.size,
        "distinct": state.distinct,
        "checksum": checksum,
        "files": names,
        "fingerprints": {k: fingerprint(folder / v) for k, v in names.items()},
    }
    side = sidecar_path(folder, model)
    old: dict[str, str] = {}
    with contextlib.suppress(OSError, ValueError, KeyError, TypeError):
        old = dict(json.loads(side.read_text(encoding="utf-8"))["files"])
    _atomic(side, lambda p: p.write_text(json.dumps(meta), encoding="utf-8"))
    for name in set(old.values()) - set(names.values()):
        with contextlib.suppress(OSError):
            (folder / Path(name).name).unlink()


def _save_npy(path: Path, array: npt.NDArray[Any]) -> None:
    with path.open("wb") as fh:
        np.save(fh, array, allow_pickle=False)


def _atomic(path: Path, write: Any) -> None:
    tmp = path.with_name(f".{path.name}.{os.getpid()}.tmp")
    try:
        write(tmp)
        os.replace(tmp, path)
    finally:
        with contextlib.suppress(OSError):
            tmp.unlink(missing_ok=True)
