"""``noteseek migrate --to TARGET``: the index in use copied into another backend.

The source is the index ``noteseek`` opens with the present settings (the embedded SQLite
index, or Milvus when ``milvus.uri`` is set); it is opened read-only and held in the writer
role for the whole copy, so nothing changes it meanwhile. The target is chosen by one rule
(:func:`parse_target`):

* ``http://...`` or ``https://...``: a Milvus Server or Zilliz Cloud (``milvus.token`` and
  ``milvus.db_name`` apply; the collection prefix is ``milvus.collection`` unless given);
* ``milvus:PATH``, or any path ending in ``.db``: a Milvus Lite file;
* ``sqlite:FOLDER``, or any other path: the embedded SQLite index in that index folder.

A target that holds anything is refused unless ``replace`` (which deletes it first). The copy
(``store/migrate.py``) keeps ids, vectors and the model they were made with, then both sides
are counted and must agree.
"""

from __future__ import annotations

import contextlib
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from noteseek.config import Settings
from noteseek.store import folder as index_folder
from noteseek.store.base import Store, StoreError
from noteseek.store.factory import INDEX_FILE, backend_for, index_present, open_store
from noteseek.store.migrate import Progress, copy_index, counts, is_empty

if TYPE_CHECKING:
    from noteseek.store.milvus.core import MilvusConfig

SCHEMES = ("http://", "https://")
EXTRA = "pip install 'noteseek[milvus]'"


class MigrateError(ValueError):
    """The migration cannot be done as asked (a bad target, a non-empty one, the source)."""


class MigrateMismatch(StoreError):
    """The target's counts differ from the source's after the copy."""


@dataclass(frozen=True)
class Place:
    """One end of a migration: its backend, and for SQLite the index folder."""

    backend: str | MilvusConfig
    folder: Path | None
    label: str
    """Where it is, as the user reads it (no secrets)."""

    @property
    def milvus(self) -> bool:
        return not isinstance(self.backend, str)

    def identity(self) -> tuple[str, ...]:
        """Equal for two places that are the same index."""
        if isinstance(self.backend, str):
            return ("sqlite", str(self.folder))
        uri = self.backend.uri
        where = str(_absolute(uri)) if self.backend.lite else uri.rstrip("/")
        return ("milvus", where, self.backend.db_name, self.backend.prefix)


def source_place(settings: Settings, index_dir: Path) -> Place:
    """The index the present settings open."""
    backend = backend_for(settings)
    if isinstance(backend, str):
        folder = index_dir.expanduser().resolve()
        return Place(backend, folder, f"the SQLite index in {folder}")
    return Place(backend, None, _milvus_label(backend))


def parse_target(text: str, settings: Settings, collection: str | None = None) -> Place:
    """The target named by ``text`` (see the module's rule); ``collection`` is the Milvus
    collection prefix (default ``milvus.collection``)."""
    given = text.strip()
    if not given:
        raise MigrateError("--to is empty: give a Milvus URI, a Milvus Lite .db file or a folder")
    low = given.lower()
    if low.startswith("sqlite:"):
        return _sqlite(given[len("sqlite:") :], given, collection)
    if low.startswith("milvus:"):
        path = given[len("milvus:") :]
        if not path.endswith(".db"):
            raise MigrateError(f"--to {given}: a Milvus Lite file's name ends in .db")
        return _milvus(str(_absolute(path)), settings, collection)
    if "://" in given:
        if not low.startswith(SCHEMES):
            from noteseek.store.milvus.errors import redact

            raise MigrateError(
                f"--to {redact(given)}: a Milvus Server URI starts with http:// or https://"
            )
        return _milvus(given, settings, collection)
    if given.endswith(".db"):
        return _milvus(str(_absolute(given)), settings, collection)
    return _sqlite(given, given, collection)


def _sqlite(path: str, given: str, collection: str | None) -> Place:
    if not path.strip():
        raise MigrateError(f"--to {given}: give the index folder after sqlite:")
    if collection is not None:
        raise MigrateError("--collection names a Milvus collection prefix; the target is SQLite")
    folder = _absolute(path)
    if folder.name.endswith(".db") or folder.is_file():
        raise MigrateError(
            f"--to {given}: sqlite: takes the index folder (the one that holds {INDEX_FILE}), "
            "not a file"
        )
    return Place("sqlite", folder, f"the SQLite index in {folder}")


def _milvus(uri: str, settings: Settings, collection: str | None) -> Place:
    from noteseek.config.milvus import MilvusSettings
    from noteseek.store.milvus.core import MilvusConfig

    given = settings.milvus
    prefix = given.collection
    if collection is not None:
        try:
            prefix = MilvusSettings(collection=collection).collection
        except ValueError as exc:
            raise MigrateError(f"--collection {collection!r}: {_first_error(exc)}") from None
    config = MilvusConfig(
        uri=uri,
        token=given.token.get_secret_value() if given.token else "",
        db_name=given.db_name,
        prefix=prefix,
        timeout=given.timeout,
    )
    return Place(config, None, _milvus_label(config))


def _first_error(exc: ValueError) -> str:
    errors = getattr(exc, "errors", None)
    if callable(errors):
        found = errors()
        if found:
            return str(found[0].get("msg", exc))
    return str(exc)


def _milvus_label(config: MilvusConfig) -> str:
    from noteseek.store.milvus.errors import redact

    kind = "Milvus Lite" if config.lite else "Milvus"
    return f"{kind} at {redact(config.uri)} (collections {config.prefix}_*)"


def _absolute(path: str) -> Path:
    return Path(path).expanduser().resolve()


def check_places(source: Place, target: Place) -> None:
    """Refuse a target that is the source, or needs a package that is not installed."""
    if source.identity() == target.identity():
        raise MigrateError(f"the target is the source ({source.label}): nothing to copy")
    lite = None if isinstance(target.backend, str) else target.backend
    source_file = None if source.folder is None else source.folder / INDEX_FILE
    if lite is not None and lite.lite and _absolute(lite.uri) == source_file:
        raise MigrateError(
            f"--to {lite.uri} is the source's SQLite file: a Milvus Lite file needs a "
            "name of its own"
        )
    if source.milvus or target.milvus:
        try:
            import pymilvus  # noqa: F401
        except ImportError:
            raise StoreError(
                f"copying to or from Milvus needs the Milvus client: {EXTRA}"
            ) from None


def open_target(target: Place) -> Store:
    """The target's store, created when missing; an unusable Milvus says so about ``--to``."""
    try:
        store, _ = open_store(target.folder or Path(), backend=target.backend)
    except StoreError as exc:
        if not target.milvus:
            raise
        from noteseek.store.milvus.errors import hint

        raise StoreError(
            f"the migration target {target.label} cannot be used: {exc.reason}; "
            f"{hint(exc.reason, '--to')}",
            exc.reason,
        ) from None
    return store


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
    source = source_place(settings, index_dir)
    target = parse_target(to, settings, collection)
    check_places(source, target)
    if not index_present(index_dir, source.backend):
        raise MigrateError(f"no index to migrate in {index_dir}: run `noteseek index` first")
    started = time.monotonic()
    with _writer_roles(index_dir, target), _opened(source, target) as (src, dst):
        if not src.roots() and not src.file_ids():
            raise MigrateError(f"{source.label} holds nothing to migrate")
        if not is_empty(dst):
            if not replace:
                raise MigrateError(refusal(src, dst, target.label))
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
            f"the copy in {target.label} differs from the source ({differ}); the source is "
            "unchanged: run the migration again with --replace"
        )
    return {
        "source": source.label,
        "target": target.label,
        "replaced": replace,
        "counts": {"source": before, "target": after},
        "seconds": round(time.monotonic() - started, 3),
        "next": _how_to_use(target),
    }


def _how_to_use(target: Place) -> str:
    if isinstance(target.backend, str):
        return (
            f"to use the copy: leave milvus.uri empty and give --index-dir {target.folder} "
            "(or set index.dir)"
        )
    from noteseek.store.milvus.errors import redact

    return (
        f"to use the copy: set milvus.uri = {redact(target.backend.uri)} "
        f"(NOTESEEK_MILVUS__URI) and milvus.collection = {target.backend.prefix}"
    )


@contextlib.contextmanager
def _writer_roles(index_dir: Path, target: Place) -> Iterator[None]:
    """The writer role of the source's index folder, and of a SQLite target's folder."""
    from noteseek.engine.writer import writer_role

    with contextlib.ExitStack() as stack:
        stack.enter_context(writer_role(index_dir, "migrate"))
        if target.folder is not None and target.folder != index_dir.expanduser().resolve():
            stack.enter_context(writer_role(target.folder, "migrate"))
        yield


@contextlib.contextmanager
def _opened(source: Place, target: Place) -> Iterator[tuple[Store, Store]]:
    src, _ = open_store(source.folder or Path(), readonly=True, backend=source.backend)
    try:
        dst = open_target(target)
        try:
            yield src, dst
        finally:
            dst.close()
    finally:
        src.close()
