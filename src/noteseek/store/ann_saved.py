"""The vector index saved in the index folder, so a new process maps it instead of building it.

Per model, the index folder holds (``<m>`` is the model id made safe for a file name, ``<tag>``
the first 16 hex digits of the key checksum):

* ``vectors-<m>.json``: the sidecar, written last; it names the files below and records the
  model, dimension, dtype, row count, a checksum of the row keys it covers, and a fingerprint
  (size plus a hash of sampled blocks) of each data file;
* ``vectors-<m>.<tag>.keys.npy``: the chunk rowids and their (rowid, embedding key) idents;
* ``vectors-<m>.<tag>.npy``: the matrix of unit vectors, loaded with ``mmap_mode='r'``;
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

FORMAT = 1
SAMPLE_BLOCKS = 64
BLOCK = 4096


@dataclass(frozen=True)
class Saved:
    """A saved state that matched the store: rows, their idents, the matrix, the graph."""

    ids: npt.NDArray[np.int64]
    idents: npt.NDArray[np.int64]
    matrix: npt.NDArray[Any]
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
        count = int(meta["count"])
        if keys.shape != (2, count) or key_checksum(keys[1]) != meta["checksum"]:
            return None
        matrix = np.load(matrix_path, mmap_mode="r", allow_pickle=False)
        if matrix.shape != (count, dimension) or matrix.dtype != np.dtype(dtype):
            return None
        graph, graph_path = None, None
        if want_graph is not False and files.get("graph"):
            graph_path = folder / files["graph"]
            if fingerprint(graph_path) != meta["fingerprints"]["graph"]:
                return None
            graph = _view(graph_path, dimension, count)
            if graph is None:
                return None
        return Saved(keys[0].astype(np.int64), keys[1].astype(np.int64), matrix, graph, graph_path)
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


def restore_copy(path: Path) -> Any:
    """An in-memory, writable copy of a saved graph (to update in place)."""
    return usearch_module().Index.restore(str(path), view=False)


def save(
    folder: Path,
    model: str,
    dimension: int,
    ids: npt.NDArray[np.int64],
    idents: npt.NDArray[np.int64],
    matrix: npt.NDArray[Any],
    graph: Any,
) -> None:
    """Save the state atomically: content-named data files first, the sidecar last, then the
    files the previous sidecar named are deleted. Raises OSError (a full disk, a read-only
    folder): the caller carries on with what it has in memory."""
    checksum = key_checksum(idents)
    base = f"{stem(model)}.{checksum[:16]}"
    names = {"keys": f"{base}.keys.npy", "matrix": f"{base}.npy"}
    if graph is not None:
        names["graph"] = f"{base}.usearch"
    keys = np.stack([np.asarray(ids, dtype=np.int64), np.asarray(idents, dtype=np.int64)])
    _atomic(folder / names["keys"], lambda p: _save_npy(p, keys))
    _atomic(folder / names["matrix"], lambda p: _save_npy(p, np.asarray(matrix)))
    if graph is not None:
        _atomic(folder / names["graph"], lambda p: graph.save(str(p)))
    meta = {
        "format": FORMAT,
        "model": model,
        "dimension": dimension,
        "dtype": np.dtype(matrix.dtype).name,
        "count": int(ids.size),
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


def usearch_module() -> Any:
    """``usearch.index``, imported after ONNX Runtime.

    Importing onnxruntime after usearch's SIMD library is loaded crashes the process with a
    segmentation fault (onnxruntime 1.31, usearch 2.26; reproduced here); the other order is
    fine, so ONNX Runtime is loaded first whenever usearch is needed.
    """
    import onnxruntime  # noqa: F401  # must precede usearch
    import usearch.index

    return usearch.index
