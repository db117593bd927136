"""Named indexes: index folders registered under a name, and the one in use.

Without a project file, a command opens the index used last (``engine/opening.py``). Named
indexes make that choice deliberate: ``noteseek index ~/work --name work`` registers the index
it wrote under ``work``, ``noteseek use work`` makes it the index every command opens by
default, ``noteseek use --list`` (or ``noteseek indexes``) lists them, ``noteseek use --remove
work`` forgets the name (the index folder stays). While a name is in use, indexing another
folder does not take its place: the command says so, and ``noteseek use`` switches.

The registry is one JSON file in the user config dir: ``{"in_use": name or null, "indexes":
{name: {"dir": folder, "roots": {root: path}, "config": project file or null}}}``, written
atomically. ``config`` is the project file whose settings made the index (none for a folder
indexed from outside any project): ``--index NAME`` opens the index with those settings, never
with the project file of the folder it is started in (``engine/opening.py``). A project file
(``.noteseek.toml``) still chooses its own index, in its folder and below.
"""

from __future__ import annotations

import contextlib
import json
import os
import re
import tempfile
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from noteseek.config import PROJECT_FILE, data_dir, user_config_file
from noteseek.engine.results import NotFound
from noteseek.store.factory import INDEX_FILE

REGISTRY_FILE = "indexes.json"
LAST_INDEX_FILE = "last-index"
"""In the user data dir: the folder of the index used last (or put in use by name)."""
_NAME_RE = re.compile(r"^[A-Za-z0-9][A-Za-z0-9_.-]{0,63}$")


@dataclass
class NamedIndex:
    name: str
    folder: Path
    roots: dict[str, str] = field(default_factory=dict)
    in_use: bool = False
    config: Path | None = None
    """The project file whose settings made the index, as registered (None: none)."""

    @property
    def exists(self) -> bool:
        return (self.folder / INDEX_FILE).exists()

    @property
    def project_file(self) -> Path | None:
        """The project file the index is opened with: the one registered with it, else (a
        name registered before they were) the project file beside an index folder that
        rule 2 put there (``PROJECT/.noteseek``); None when it is gone."""
        found = self.config
        if found is None and self.folder.name == ".noteseek":
            found = self.folder.parent / PROJECT_FILE
        return found if found is not None and found.is_file() else None

    def to_dict(self) -> dict[str, Any]:
        return {
            "name": self.name,
            "dir": str(self.folder),
            "roots": dict(self.roots),
            "in_use": self.in_use,
            "exists": self.exists,
        }

    def details(self) -> dict[str, Any]:
        """:meth:`to_dict` with what the index holds: its roots (as ``noteseek --index NAME
        status`` lists them, so the two never disagree), files, chunks, embedding model, size
        on disk and last write."""
        out = self.to_dict()
        if not self.exists:
            return out
        files = [f for f in self.folder.rglob("*") if f.is_file()]
        out["size_bytes"] = sum(f.stat().st_size for f in files)
        out["last_written"] = max(f.stat().st_mtime for f in files)
        from noteseek.engine import open_engine  # the facade imports this module

        with open_engine(name=self.name) as engine:
            status = engine.status()
        out["roots"] = {r["name"]: r["path"] for r in status["roots"]}
        out["files"] = sum(r["files"] for r in status["roots"])
        out["chunks"] = sum(r["chunks"] for r in status["roots"])
        out["model"] = status["embedding"]["index_model"]
        return out


def registry_file() -> Path:
    return user_config_file().parent / REGISTRY_FILE


def check_name(name: str) -> str:
    """``name`` if it can name an index (letters, digits, ``_ . -``; up to 64), else
    ValueError saying what a name may hold."""
    if not _NAME_RE.match(name):
        raise ValueError(
            f"{name!r} cannot name an index: use letters, digits, '_', '.' or '-' "
            "(up to 64, starting with a letter or digit)"
        )
    return name


def named_indexes() -> list[NamedIndex]:
    """Every registered index, by name."""
    data = _load()
    return [
        _entry(name, item, data.get("in_use") == name)
        for name, item in sorted(data["indexes"].items())
    ]


def named(name: str) -> NamedIndex:
    """The index registered as ``name`` (NotFound naming the known ones if none, or if its
    folder is gone)."""
    data = _load()
    item = data["indexes"].get(name)
    if item is None:
        raise NotFound(_unknown(name, data))
    entry = _entry(name, item, data.get("in_use") == name)
    if not entry.exists:
        raise NotFound(
            f"the index named {name!r} is gone ({entry.folder}); index its folders again "
            f"with --name {name}, or remove the name (noteseek use --remove {name})"
        )
    return entry


def in_use() -> NamedIndex | None:
    """The named index put in use, if any."""
    return next((n for n in named_indexes() if n.in_use), None)


def register(
    name: str,
    folder: Path,
    roots: Mapping[str, str],
    *,
    use: bool = False,
    config: Path | None = None,
) -> NamedIndex:
    """Register ``folder`` (an index, built or about to be) under ``name``, replacing what
    the name held; with ``use``, it is also put in use. ``config``: the project file whose
    settings made the index (``--index NAME`` opens it with them)."""
    data = _load()
    data["indexes"][check_name(name)] = {
        "dir": str(folder),
        "roots": dict(roots),
        "config": None if config is None else str(config),
    }
    if use:
        data["in_use"] = name
    _save(data)
    if use:
        remember_last(folder)
    return _entry(name, data["indexes"][name], data.get("in_use") == name)


def use(name: str) -> NamedIndex:
    """Make the index named ``name`` the one commands open by default (NotFound if none)."""
    entry = named(name)
    data = _load()
    data["in_use"] = name
    _save(data)
    remember_last(entry.folder)
    return entry


def record_roots(folder: Path, roots: Mapping[str, str]) -> list[str]:
    """Record ``roots`` as those of every name registered for the index in ``folder`` (after
    ``noteseek roots add`` or ``remove``); returns those names."""
    data = _load()
    names = [n for n, item in data["indexes"].items() if Path(str(item.get("dir"))) == folder]
    for name in names:
        data["indexes"][name]["roots"] = dict(roots)
    if names:
        _save(data)
    return sorted(names)


def remove(name: str) -> NamedIndex:
    """Forget the name (its index folder stays); NotFound if no index has it."""
    data = _load()
    item = data["indexes"].pop(name, None)
    if item is None:
        raise NotFound(_unknown(name, data))
    was_in_use = data.get("in_use") == name
    if was_in_use:
        data["in_use"] = None
    _save(data)
    return _entry(name, item, was_in_use)


def remember_last(folder: Path) -> None:
    """Later commands without a project file open ``folder``'s index."""
    with contextlib.suppress(OSError):
        target = data_dir()
        target.mkdir(parents=True, exist_ok=True)
        (target / LAST_INDEX_FILE).write_text(str(folder), encoding="utf-8")


def last_index() -> Path | None:
    """The folder of the index used last, if it still holds an index."""
    with contextlib.suppress(OSError):
        remembered = Path((data_dir() / LAST_INDEX_FILE).read_text(encoding="utf-8").strip())
        if (remembered / INDEX_FILE).exists():
            return remembered
    return None


def _entry(name: str, item: Mapping[str, Any], using: bool) -> NamedIndex:
    config = item.get("config")
    return NamedIndex(
        name,
        Path(str(item.get("dir", ""))),
        dict(item.get("roots") or {}),
        using,
        Path(config) if isinstance(config, str) and config else None,
    )


def _unknown(name: str, data: Mapping[str, Any]) -> str:
    known = ", ".join(sorted(data["indexes"])) or "none yet (noteseek index FOLDER --name NAME)"
    return f"no index is named {name!r}; named indexes: {known}"


def _load() -> dict[str, Any]:
    """The registry; an absent or unreadable file is an empty one (never an error)."""
    data: dict[str, Any] = {}
    with contextlib.suppress(OSError, ValueError):
        loaded = json.loads(registry_file().read_text(encoding="utf-8"))
        if isinstance(loaded, dict):
            data = loaded
    indexes = data.get("indexes")
    data["indexes"] = (
        {k: v for k, v in indexes.items() if isinstance(v, dict)}
        if isinstance(indexes, dict)
        else {}
    )
    if data.get("in_use") not in data["indexes"]:
        data["in_use"] = None
    return data


def _save(data: Mapping[str, Any]) -> None:
    """Write the registry atomically (a temporary file renamed over it)."""
    target = registry_file()
    target.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(prefix=".indexes.", dir=target.parent)
    try:
        with os.fdopen(fd, "w", encoding="utf-8") as handle:
            json.dump(data, handle, indent=1, ensure_ascii=False)
            handle.flush()
            os.fsync(handle.fileno())
        os.replace(tmp, target)
    except BaseException:
        with contextlib.suppress(OSError):
            os.unlink(tmp)
        raise
