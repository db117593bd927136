"""``noteseek migrate --to TARGET``: the index in use copied into another backend.

The source is the index ``noteseek`` opens with the present settings (the embedded SQLite
index, or Milvus when ``milvus.uri`` is set); it is opened read-only and held in the writer
role for the whole copy, so nothing changes it meanwhile. The target is what ``--to`` names
(:func:`parse_target`, the rule in ``store/migrate.py``: a Milvus URI, a Milvus Lite ``.db``
file, or an index folder).

A target that holds anything is refused unless ``replace`` (which deletes it first). The copy
(``store/migrate.py``) keeps ids, vectors and the model they were made with, then both sides
are counted and must agree. Each end is a store backend (``store/backend.py``): nothing here
asks which one.
"""

from __future__ import annotations

import contextlib
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from noteseek.config import Settings
from noteseek.store import folder as index_folder
from noteseek.store.base import Store
from noteseek.store.errors import StoreError
from noteseek.store.factory import Backend, backend_for
from noteseek.store.migrate import MigrateError as MigrateError
from noteseek.store.migrate import Progress, copy_index, counts, is_empty
from noteseek.store.migrate import target as parse_target


class MigrateMismatch(StoreError):
    """The target's counts differ from the source's after the copy."""


def source_backend(settings: Settings, index_dir: Path) -> Backend:
    """The index the present settings open (an index folder by its full path)."""
    return backend_for(settings, index_dir.expanduser().resolve())


def check_places(source: Backend, target: Backend) -> None:
    """Refuse a target that is the source, or needs a package that is not installed."""
    if source.identity() == target.identity():
        raise MigrateError(f"the target is the source ({source.location}): nothing to copy")
    if target.file is not None and target.file == source.file and target.name != source.name:
        raise MigrateError(
            f"--to {target.file} is the file the source ({source.name}) keeps its index in: "
            f"the {target.name} index needs a file of its own"
        )
    for end in (source, target):
        missing = end.missing()
        if missing is not None:
            raise StoreError(f"copying to or from {missing}")


def refusal(source: Store, target: Store, label: str) -> str:
    """Why a target that holds something is refused: what it holds, and a model whose
    vectors there have another dimension than the source's (they could not share it)."""
    found = counts(target)
    theirs, ours = target.vector_dimensions(), source.vector_dimensions()
    models = ", ".join(f"{m} ({theirs.get(m, '?')} dimensions)" for m in target.vector_models())
    held = f"{found['roots']} roots, {found['files']} files, {found['chunks']} chunks" + (
        f", vectors of {models}" if models else ""
    )
    clash = [m for m in ours if m in theirs and theirs[m] != ours[m]]
    why = "".join(
        f"; its vectors of {m} have {theirs[m]} dimensions, the source's {ours[m]}" for m in clash
    )
    return (
        f"{label} is not empty ({held}){why}: give --replace to delete what it holds and "
        "copy into it"
    )


def migrate(
    settings: Settings,
    index_dir: Path,
    to: str,
    *,
    replace: bool = False,
    collection: str | None = None,
    progress: Progress | None = None,
) -> dict[str, Any]:
    """Copy the index the settings open into ``to``; returns both sides' counts and how to
    use the copy. Raises :class:`MigrateError` (a bad or non-empty target), a ``StoreError``
    (an unusable store, a copy that does not match) or ``WriterBusy`` (a writer is running)."""
    source = source_backend(settings, index_dir)
    target = parse_target(to, settings, collection)
    check_places(source, target)
    if not source.present():
        raise MigrateError(f"no index to migrate in {index_dir}: run `noteseek index` first")
    started = time.monotonic()
    with _writer_roles(index_dir, target), _opened(source, target) as (src, dst):
        if not src.roots() and not src.file_ids():
            raise MigrateError(f"{source.location} holds nothing to migrate")
        if not is_empty(dst):
            if not replace:
                raise MigrateError(refusal(src, dst, target.location))
            dst.wipe()
        copy_index(src, dst, progress=progress)
        before, after = counts(src), counts(dst)
        if target.folder is not None:
            kinds = dst.root_kinds()
            index_folder.save_roots(
                target.folder, {n: (p, kinds.get(n, "files")) for n, p in dst.roots().items()}
            )
    if before != after:
        differ = ", ".join(
            f"{k} {before[k]} -> {after[k]}" for k in before if before[k] != after[k]
        )
        raise MigrateMismatch(
            f"the copy in {target.location} differs from the source ({differ}); the source is "
            "unchanged: run the migration again with --replace"
        )
    return {
        "source": source.location,
        "target": target.location,
        "replaced": replace,
        "counts": {"source": before, "target": after},
        "seconds": round(time.monotonic() - started, 3),
        "next": f"to use the copy: {target.usage()}",
    }


@contextlib.contextmanager
def _writer_roles(index_dir: Path, target: Backend) -> Iterator[None]:
    """The writer role of the source's index folder, and of a SQLite target's folder."""
    from noteseek.engine.writer import writer_role

    with contextlib.ExitStack() as stack:
        stack.enter_context(writer_role(index_dir, "migrate"))
        if target.folder is not None and target.folder != index_dir.expanduser().resolve():
            stack.enter_context(writer_role(target.folder, "migrate"))
        yield


@contextlib.contextmanager
def _opened(source: Backend, target: Backend) -> Iterator[tuple[Store, Store]]:
    src, _ = source.open(readonly=True)
    try:
        dst = target.open_target("--to")
        try:
            yield src, dst
        finally:
            dst.close()
    finally:
        src.close()
