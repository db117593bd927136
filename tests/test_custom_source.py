"""A second kind of source, kept in memory and registered by this test alone, goes through
indexing, search, updates, deletes and reading with nothing outside ``sources/`` knowing it."""

from __future__ import annotations

from collections.abc import Iterable, Iterator
from pathlib import Path

import pytest

from noteseek.config import ConfigError, RootConfig
from noteseek.engine import Engine, NotFound, SearchRequest
from noteseek.sources import base
from noteseek.sources.registry import known_kinds, register_source, unregister_source
from tests.helpers import engine_for, paths

KIND = "inmemorytest"


class MemoryDocs:
    """Documents by path; every change bumps a version that stands for the mtime."""

    def __init__(self, docs: dict[str, str]) -> None:
        self.version = 1
        self.docs = {path: (text.encode(), self.version) for path, text in docs.items()}

    def put(self, path: str, text: str) -> None:
        self.version += 1
        self.docs[path] = (text.encode(), self.version)

    def delete(self, path: str) -> None:
        del self.docs[path]


class MemorySource:
    """The Source protocol over a :class:`MemoryDocs`; nothing on disk, nothing to watch."""

    kind = KIND

    def __init__(self, name: str, docs: MemoryDocs) -> None:
        self.name = name
        self.docs = docs
        self.location = f"{KIND}:{name}"

    def _found(self, path: str) -> base.FoundFile:
        data, version = self.docs.docs[path]
        return base.FoundFile(self.name, path, "", version, len(data))

    def scan(self) -> base.ScanResult:
        return base.ScanResult(files=[self._found(p) for p in sorted(self.docs.docs)])

    def scan_paths(self, rels: Iterable[str]) -> base.PathScan:
        scan = base.PathScan()
        for rel in sorted(set(rels)):
            if rel in self.docs.docs:
                scan.files.append(self._found(rel))
            else:
                scan.gone.append(rel)
        return scan

    def read(self, path: str, limit: int | None = None) -> bytes:
        if path not in self.docs.docs:
            raise base.ReadError("unreadable: no such document")
        data = self.docs.docs[path][0]
        return data if limit is None else data[:limit]

    def fingerprint(self, path: str) -> base.Fingerprint | None:
        if path not in self.docs.docs:
            return None
        found = self._found(path)
        return base.Fingerprint(found.mtime_ns, found.size)

    def inside(self, path: str) -> bool:
        return True

    def locate(self, disk_path: Path) -> str | None:
        return None

    def watch_folder(self) -> Path | None:
        return None


@pytest.fixture
def docs() -> Iterator[MemoryDocs]:
    held = MemoryDocs(
        {
            "animals/aardvark.md": "# Aardvark\n\nThe aardvark digs termite mounds at dawn.\n",
            "animals/badger.md": "# Badger\n\nThe badger sleeps all day in its sett.\n",
            "plants/cactus.md": "# Cactus\n\nThe cactus stores water in its stem.\n",
        }
    )

    def factory(name: str, root: RootConfig, context: base.SourceContext) -> MemorySource:
        return MemorySource(name, held)

    register_source(KIND, factory)
    try:
        yield held
    finally:
        unregister_source(KIND)


@pytest.fixture
def engine(tmp_path: Path, docs: MemoryDocs) -> Iterator[Engine]:
    (tmp_path / ".noteseek.toml").write_text(
        f'[roots.mem]\npath = "memory"\nkind = "{KIND}"\n', encoding="utf-8"
    )
    with engine_for(tmp_path, **{"memory.enabled": False}) as opened:
        yield opened


def test_a_memory_source_indexes_and_searches(engine: Engine) -> None:
    report = engine.index()
    assert (report.added, report.problems) == (3, [])
    assert paths(engine.search(SearchRequest("termite")).hits) == ["animals/aardvark.md"]
    status = engine.status()
    assert [(r["name"], r["files"]) for r in status["roots"]] == [("mem", 3)]


def test_a_changed_document_is_found_by_its_new_text_only(engine: Engine, docs: MemoryDocs) -> None:
    engine.index()
    docs.put("animals/badger.md", "# Badger\n\nThe badger hunts earthworms at night.\n")
    report = engine.index()
    assert (report.updated, report.unchanged) == (1, 2)
    assert paths(engine.search(SearchRequest("earthworms")).hits) == ["animals/badger.md"]
    assert not engine.search(SearchRequest("sett")).hits


def test_a_deleted_document_leaves_search_and_status(engine: Engine, docs: MemoryDocs) -> None:
    engine.index()
    docs.delete("plants/cactus.md")
    report = engine.index()
    assert report.removed == 1
    assert not engine.search(SearchRequest("cactus")).hits
    assert [(r["name"], r["files"]) for r in engine.status()["roots"]] == [("mem", 2)]


def test_changed_paths_are_updated_through_the_source(engine: Engine, docs: MemoryDocs) -> None:
    engine.index()
    docs.put("plants/fern.md", "# Fern\n\nThe fern unrolls its fronds.\n")
    docs.delete("animals/aardvark.md")
    report = engine.update_paths("mem", ["plants/fern.md", "animals/aardvark.md"])
    assert (report.added, report.removed) == (1, 1)
    assert paths(engine.search(SearchRequest("fronds")).hits) == ["plants/fern.md"]
    assert not engine.search(SearchRequest("termite")).hits


def test_documents_are_read_back_through_the_source(engine: Engine, docs: MemoryDocs) -> None:
    engine.index()
    file, text = engine.read_document("mem/plants/cactus.md")
    assert file.path == "plants/cactus.md"
    assert "stores water" in text
    got = engine.get("plants/cactus.md")
    assert (got.kind, got.stale) == ("document", False)
    assert "stores water" in got.text
    docs.put("plants/cactus.md", "# Cactus\n\nThe cactus flowers at night.\n")
    assert engine.get("plants/cactus.md").stale
    docs.delete("plants/cactus.md")
    with pytest.raises(NotFound):
        engine.read_document("plants/cactus.md")


def test_an_unknown_kind_names_the_known_ones(tmp_path: Path) -> None:
    (tmp_path / ".noteseek.toml").write_text(
        '[roots.x]\npath = "x"\nkind = "nosuchkind"\n', encoding="utf-8"
    )
    with engine_for(tmp_path) as engine, pytest.raises(ConfigError) as err:
        engine.index()
    assert "'nosuchkind'" in str(err.value)
    assert all(kind in str(err.value) for kind in known_kinds())
