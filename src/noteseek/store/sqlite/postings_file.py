"""The keyword postings saved beside the index, one file every process reads.

Layout: 8 bytes of header length, a JSON header (format, what the postings were built from,
each array's table, name, dtype, shape and offset), then the arrays, each at an offset that is
a multiple of 64. The header's ``checksum`` is the CRC-32 of the header without it and of every
byte after it: a file whose bytes changed is not searched (FTS5 answers, ranking the same) and
``noteseek status --check`` reports it (:func:`damage`). A writer writes a new file under a
temporary name and renames it over the old one, so a process that has the old file open keeps
reading it whole.
"""

from __future__ import annotations

import contextlib
import json
import os
import sqlite3
import zlib
from dataclasses import fields
from pathlib import Path
from typing import TYPE_CHECKING, Any

# numpy (and the postings it builds) load with the first save or load: whether the saved file
# is there is asked without them (an index run that changed nothing, keyword.py).
if TYPE_CHECKING:
    import numpy as np
    import numpy.typing as npt

    from noteseek.store.sqlite.postings import Postings

FORMAT = 2
"""2: the header holds a checksum (files of format 1 are ignored, and saved again)."""
NAME = "keyword-postings.bin"
ALIGN = 64
READ_PIECE = 4 * 1024 * 1024
"""Bytes read at a time to compute a file's checksum."""


def save(path: Path, tables: dict[str, Postings], header: dict[str, Any]) -> None:
    """Write ``tables`` and ``header`` to ``path`` (atomically, by rename)."""
    import numpy as np

    from noteseek.store.sqlite.postings import Postings

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
    described_header = {**header, "format": FORMAT, "arrays": described}
    crc = zlib.crc32(json.dumps(described_header).encode("utf-8"))
    written = 0
    for table, name, at in entries:
        crc = zlib.crc32(bytes(at - written), crc)  # the padding, read back as zeros
        data = np.ascontiguousarray(getattr(tables[table], name)).data
        crc = zlib.crc32(data, crc)
        written = at + data.nbytes
    head = json.dumps({**described_header, "checksum": crc}).encode("utf-8")
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
    """The header and tables of a saved file; None when it is missing, unreadable, of
    another format or damaged (its checksum fails: the caller then keeps to FTS5).

    The per-row and per-term arrays (a few MB) are read into memory; the postings themselves
    stay in the file and are read term by term (:class:`FileRows`). Not memory-mapped: a file
    the writer has just written sits in the page cache in large folios, and each page fault
    on a mapping of it mapped a whole folio: two queries made 59 MB of it resident."""
    import numpy as np

    from noteseek.store.sqlite.postings import Postings

    reader = _File.open(path)
    if reader is None:
        return None
    try:
        size = os.fstat(reader.fd).st_size
        found = _header(reader, size)
        if found is None:
            return None
        header, length = found
        start = -(-(8 + length) // ALIGN) * ALIGN
        if not _sound(reader, header, start, size):
            return None
        arrays: dict[str, dict[str, Any]] = {}
        for entry in header["arrays"]:
            dtype = np.dtype(entry["dtype"])
            shape = tuple(int(s) for s in entry["shape"])
            count = int(np.prod(shape)) if shape else 1
            offset = start + int(entry["offset"])
            if offset + count * dtype.itemsize > size:
                return None
            if entry["name"] in IN_FILE:
                array: Any = FileRows(reader, offset, dtype, shape)
            else:
                raw = reader.read(offset, count * dtype.itemsize)
                array = np.frombuffer(raw, dtype=dtype, count=count).reshape(shape)
            arrays.setdefault(entry["table"], {})[entry["name"]] = array
        names = {f.name for f in fields(Postings)}
        tables = {
            table: Postings(**found) for table, found in arrays.items() if set(found) == names
        }
    except (OSError, ValueError, KeyError, TypeError, UnicodeDecodeError):
        return None
    return header, tables


def header(path: Path) -> dict[str, Any] | None:
    """The header of a saved file (what its postings were built from), read without the
    arrays (nor numpy); None when it is missing, unreadable or of another format."""
    reader = _File.open(path)
    if reader is None:
        return None
    try:
        found = _header(reader, os.fstat(reader.fd).st_size)
    except (OSError, ValueError, UnicodeDecodeError):
        return None
    return None if found is None else found[0]


def damage(path: Path) -> str | None:
    """What is wrong with the saved file at ``path``, or None: sound, missing, or of another
    format (the writer saves it again)."""
    reader = _File.open(path)
    if reader is None:
        return None
    problem = f"the saved keyword postings ({NAME}) are damaged"
    try:
        size = os.fstat(reader.fd).st_size
        found = _header(reader, size)
        if found is None:
            with contextlib.suppress(OSError, ValueError, UnicodeDecodeError, OverflowError):
                head = json.loads(reader.read(8, int.from_bytes(reader.read(0, 8), "little")))
                if isinstance(head, dict) and head.get("format") != FORMAT:
                    return None  # another version's file, not damage
            return f"{problem}: the header cannot be read"
        header, length = found
        start = -(-(8 + length) // ALIGN) * ALIGN
        if not _sound(reader, header, start, size):
            return (
                f"{problem}: the checksum does not match; keyword searches use FTS5 (the "
                "same ranking) until the next index run saves them again"
            )
    except (OSError, ValueError, UnicodeDecodeError) as exc:
        return f"{problem}: {exc}"
    return None


def _sound(reader: _File, header: dict[str, Any], start: int, size: int) -> bool:
    """Whether the file's bytes are those it was saved with (its header's checksum)."""
    expected = header.get("checksum")
    if not isinstance(expected, int):
        return False
    rest = {k: v for k, v in header.items() if k != "checksum"}
    crc = zlib.crc32(json.dumps(rest).encode("utf-8"))
    at = start
    while at < size:
        piece = reader.read(at, min(READ_PIECE, size - at))
        crc = zlib.crc32(piece, crc)
        at += len(piece)
    return crc == expected


def _header(reader: _File, size: int) -> tuple[dict[str, Any], int] | None:
    """(header, its length in bytes), or None when the file is not a saved postings file."""
    length = int.from_bytes(reader.read(0, 8), "little") if size >= 8 else -1
    if length < 0 or 8 + length > size:
        return None
    header = json.loads(reader.read(8, length).decode("utf-8"))
    if not isinstance(header, dict) or header.get("format") != FORMAT:
        return None
    return header, length


def current(conn: sqlite3.Connection, header: dict[str, Any]) -> bool:
    """Whether a saved file (its ``header``) belongs to the index on ``conn`` and the index's
    keyword log still reaches back to it."""
    if header.get("log") != log_id(conn):
        return False
    row = conn.execute("SELECT value FROM meta WHERE key = 'keyword_log_floor'").fetchone()
    floor = int(row[0]) if row else 0
    return int(header.get("seq", -1)) >= floor


def log_id(conn: sqlite3.Connection) -> str:
    """The identity of the index's keyword log (a saved file names the log it was built on)."""
    row = conn.execute("SELECT value FROM meta WHERE key = 'keyword_log'").fetchone()
    return str(row[0]) if row else ""


IN_FILE = ("post_rows", "post_tf")
"""The arrays read from the file slice by slice, as searches need them."""


class _File:
    """An open file that closes when nothing reads it any more."""

    def __init__(self, fd: int) -> None:
        self.fd = fd

    @classmethod
    def open(cls, path: Path) -> _File | None:
        """The file at ``path`` opened for reading, or None when it cannot be."""
        try:
            return cls(os.open(path, os.O_RDONLY))
        except OSError:
            return None

    def read(self, offset: int, size: int) -> bytes:
        data = os.pread(self.fd, size, offset)
        if len(data) != size:
            raise ValueError("the file is shorter than its header says")
        return data

    def __del__(self) -> None:
        with contextlib.suppress(OSError):
            os.close(self.fd)


class FileRows:
    """An array kept in the file, read a slice of rows at a time (``array[a:b]``)."""

    def __init__(self, file: _File, offset: int, dtype: np.dtype[Any], shape: tuple[int, ...]):
        self._file = file
        self._offset = offset
        self.dtype = dtype
        self.shape = shape
        self._row = dtype.itemsize
        for size in shape[1:]:
            self._row *= int(size)

    def __len__(self) -> int:
        return self.shape[0]

    def __getitem__(self, rows: slice) -> npt.NDArray[Any]:
        a, b, step = rows.indices(self.shape[0])
        if step != 1:
            raise ValueError("only contiguous slices are read from the file")
        n = max(0, b - a)
        raw = self._file.read(self._offset + a * self._row, n * self._row)
        import numpy as np  # loaded already: :func:`load` made this

        return np.frombuffer(raw, dtype=self.dtype).reshape((n, *self.shape[1:]))
