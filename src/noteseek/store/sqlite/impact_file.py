"""The keyword postings saved beside the index, one file every process maps.

Layout: 8 bytes of header length, a JSON header (format, what the postings were built from,
each array's table, name, dtype, shape and offset), then the arrays, each at an offset that is
a multiple of 64. A writer writes a new file under a temporary name and renames it over the
old one, so a process that has the old file mapped keeps reading it whole.
"""

from __future__ import annotations

import json
import mmap
import os
from dataclasses import fields
from pathlib import Path
from typing import Any

import numpy as np

from noteseek.store.sqlite.impact import Postings

FORMAT = 1
NAME = "keyword-postings.bin"
ALIGN = 64


def save(path: Path, tables: dict[str, Postings], header: dict[str, Any]) -> None:
    """Write ``tables`` and ``header`` to ``path`` (atomically, by rename)."""
    entries: list[tuple[str, str, int]] = []
    described = []
    offset = 0
    for table, postings in tables.items():
        for f in fields(Postings):
            array = np.ascontiguousarray(getattr(postings, f.name))
            offset = -(-offset // ALIGN) * ALIGN
            entries.append((table, f.name, offset))
            described.append(
                {
                    "table": table,
                    "name": f.name,
                    "dtype": array.dtype.str,
                    "shape": list(array.shape),
                    "offset": offset,
                }
            )
            offset += array.nbytes
    head = json.dumps({**header, "format": FORMAT, "arrays": described}).encode("utf-8")
    start = -(-(8 + len(head)) // ALIGN) * ALIGN
    tmp = path.with_name(f".{path.name}.{os.getpid()}.tmp")
    try:
        with open(tmp, "wb") as out:
            out.write(len(head).to_bytes(8, "little"))
            out.write(head)
            for table, name, at in entries:
                out.seek(start + at)
                out.write(np.ascontiguousarray(getattr(tables[table], name)).tobytes())
            out.flush()
            os.fsync(out.fileno())
        os.replace(tmp, path)
    except BaseException:
        tmp.unlink(missing_ok=True)
        raise


def load(path: Path) -> tuple[dict[str, Any], dict[str, Postings]] | None:
    """The header and tables of a saved file, mapped read-only; None when it is missing,
    unreadable or of another format (the caller then keeps to FTS5)."""
    try:
        with open(path, "rb") as fh:
            size = os.fstat(fh.fileno()).st_size
            if size < 8:
                return None
            mapped = mmap.mmap(fh.fileno(), 0, access=mmap.ACCESS_READ)
    except (OSError, ValueError):
        return None
    try:
        length = int.from_bytes(mapped[:8], "little")
        header = json.loads(mapped[8 : 8 + length].decode("utf-8"))
        if header.get("format") != FORMAT:
            return None
        start = -(-(8 + length) // ALIGN) * ALIGN
        arrays: dict[str, dict[str, Any]] = {}
        for entry in header["arrays"]:
            dtype = np.dtype(entry["dtype"])
            shape = tuple(int(s) for s in entry["shape"])
            count = int(np.prod(shape)) if shape else 1
            offset = start + int(entry["offset"])
            if offset + count * dtype.itemsize > size:
                return None
            array = np.frombuffer(mapped, dtype=dtype, count=count, offset=offset).reshape(shape)
            arrays.setdefault(entry["table"], {})[entry["name"]] = array
        names = {f.name for f in fields(Postings)}
        tables = {
            table: Postings(**found) for table, found in arrays.items() if set(found) == names
        }
    except (ValueError, KeyError, TypeError, UnicodeDecodeError):
        return None
    return header, tables
