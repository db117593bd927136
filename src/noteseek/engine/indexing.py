"""Indexing: bringing the index up to date with the roots, and embedding what lacks vectors.

Before any run the index's manifest (what the settings made the index hold: analyzer, chunking,
parsers ...) is compared with the settings; when they differ, the index is cleared and every
root indexed again, since a partial index built two ways would rank inconsistently. Nothing
here resets a derived value: each one follows the store's change token (``engine/state.py``).

After every run the link graph kept with the index takes the run's writes in, and its
communities are recomputed when the graph changed enough (``graph/sync.py``), so no search
resolves links or runs Louvain.

In an index in Milvus, a run first takes the leases of the roots it writes (another writer
indexing one of them stops it with a message naming that writer) and holds them until the
engine closes; the graph is brought up to date by one writer at a time.

A damaged index (recorded by any process, or met during the run) is never patched: ``index``,
``update_paths`` and ``rebuild`` delete its files and build it again from the roots' files,
and the report says so (``rebuilt_because``).
"""

from __future__ import annotations

import re
import threading
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from noteseek.config import ConfigError, RootConfig, ad_hoc_root
from noteseek.embed.base import EmbeddingError
from noteseek.engine.opening import remember_index
from noteseek.engine.results import NotFound
from noteseek.engine.state import IndexState
from noteseek.graph.sync import refresh_communities, sync_graph
from noteseek.indexing.embedding import EmbedReport, embed_pending
from noteseek.indexing.styles import forget_style
from noteseek.sources.registry import DEFAULT_KIND, known_kinds, spec_of
from noteseek.store.errors import UNREADABLE, IndexCorrupt, StoreError

if TYPE_CHECKING:  # the indexer and the parsers load with the first write, not for a search
    from noteseek.indexing.indexer import Indexer, IndexReport, Progress


class Indexing:
    """``index``, ``update_paths``, ``rebuild``, ``embed`` and the roots' ``add_root`` and
    ``remove_root`` over one opened index."""

    def __init__(self, state: IndexState) -> None:
        self.state = state
        self.settings = state.settings
        self._choice: bool | None = None
        """The keyword-only choice of the run in progress, until it is stored."""

    def index(
        self,
        roots: Sequence[str] | None = None,
        *,
        force: bool = False,
        progress: Progress | None = None,
        keyword_only: bool = False,
        embed_progress: Progress | None = None,
        choose_keyword_only: bool | None = None,
    ) -> IndexReport:
        """Bring the index up to date with the roots (all of them, or the named ones).

        Keyword rows are committed file by file; then, unless ``keyword_only`` (this run),
        a keyword-only index or embeddings off, the chunks without vectors are embedded
        (``embed_progress`` reports it). ``choose_keyword_only`` True makes the index
        keyword-only for every later run and process, False makes it embed again; None keeps
        what was chosen before.
        """
        self._choice = choose_keyword_only
        selected = self._select_roots(roots)
        if not selected:
            raise ConfigError(
                "nothing to index: give a folder (noteseek index ~/notes) or configure a "
                "[roots.<name>] table (noteseek init)"
            )
        return self._index_selected(selected, force, progress, keyword_only, embed_progress)

    def _index_selected(
        self,
        selected: dict[str, RootConfig],
        force: bool,
        progress: Progress | None,
        keyword_only: bool,
        embed_progress: Progress | None,
    ) -> IndexReport:
        """Index the ``selected`` roots, rebuilding the index first when it is damaged."""
        damaged = self.state.damage()
        if damaged is None:
            try:
                return self._index(selected, force, progress, keyword_only, embed_progress)
            except IndexCorrupt as exc:
                damaged = exc.reason
        return self._rebuild(progress, keyword_only, embed_progress, selected, damaged)

    def _index(
        self,
        selected: dict[str, RootConfig],
        force: bool,
        progress: Progress | None,
        keyword_only: bool,
        embed_progress: Progress | None,
    ) -> IndexReport:
        from noteseek.indexing.indexer import IndexReport

        report = IndexReport()
        selected = self._held(selected, report)
        reasons = self._check_manifest()
        self._record_choice()
        if reasons:
            report.rebuilt_because = "; ".join(reasons)
            selected = self._held({**self.state.roots(), **selected}, report)
        result = self._indexer().run(selected, force=force, progress=progress, report=report)
        self.update_graph()
        notice = remember_index(self.state.config)
        if notice:
            self.state.notices.append(notice)
        self.state.remember_roots()
        self._embed_after_index(result, keyword_only, embed_progress)
        return result

    def _held(self, selected: dict[str, RootConfig], report: IndexReport) -> dict[str, RootConfig]:
        """The roots of ``selected`` this writer holds now (an index in Milvus: its leases);
        one another writer holds is left out, reported as a problem naming that writer, and
        taken at a later run; the error itself when it holds every one."""
        busy = self._busy(selected)
        if busy and len(busy) == len(selected):
            raise next(iter(busy.values()))
        for name, exc in sorted(busy.items()):
            report.problems.append(
                {"root": name, "path": "", "severity": "error", "reason": str(exc)}
            )
        return {n: r for n, r in selected.items() if n not in busy}

    def _busy(self, names: Iterable[str]) -> dict[str, StoreError]:
        """Take the leases of roots of an index in Milvus; those another writer holds, with
        the error naming it. The embedded index has one writer (the folder's lock), and its
        store is not opened here (a damaged one is rebuilt without being opened)."""
        return self.state.backend.hold_roots(lambda: self.state.store, names)

    def update_paths(
        self, root_name: str, rels: Iterable[str], *, graph: bool = True
    ) -> IndexReport:
        """Index only the changed paths ``rels`` (relative to root ``root_name``).

        For a watcher's batches: cheaper than :meth:`index`, same outcome for those paths.
        Nothing is embedded here; the caller embeds when it sees fit. Settings that changed
        what the index holds (the manifest) need every root indexed again, so that is done.
        ``graph`` False leaves the kept link graph for :meth:`update_graph` (the live writer
        takes a burst of small batches into it once); the files it has not taken in stay
        marked in the index, so any later update takes them.
        """
        roots = self.state.roots()
        if root_name not in roots:
            raise ConfigError(
                f"{root_name!r} is not a root of this index ({', '.join(sorted(roots)) or 'none'})"
            )
        if self.state.damage() is not None:
            return self.index(keyword_only=True)  # rebuilds it from the files
        for busy in self._busy([root_name]).values():
            raise busy
        try:
            reasons = self._check_manifest()
            if reasons:
                report = self.index(keyword_only=True)
                report.rebuilt_because = "; ".join(reasons)
                return report
            report = self._indexer().update_paths(root_name, roots[root_name], rels)
            if graph:
                self.update_graph()
            return report
        except IndexCorrupt:
            return self.index(keyword_only=True)

    def rebuild(
        self,
        progress: Progress | None = None,
        *,
        keyword_only: bool = False,
        embed_progress: Progress | None = None,
        choose_keyword_only: bool | None = None,
    ) -> IndexReport:
        """Drop everything indexed and index every root again from the files.

        A sound index is cleared in place (stored vectors are kept for reuse). A damaged one
        (recorded, or found by a full check) has its files deleted and created again: nothing
        in it is trusted, but the keyword-only choice is carried over. ``choose_keyword_only``
        is as for :meth:`index`.
        """
        self._choice = choose_keyword_only
        return self._rebuild(progress, keyword_only, embed_progress)

    def _rebuild(
        self,
        progress: Progress | None,
        keyword_only: bool,
        embed_progress: Progress | None,
        extra: Mapping[str, RootConfig] | None = None,
        damaged: str | None = None,
    ) -> IndexReport:
        """:meth:`rebuild`, of ``extra`` roots too; ``damaged`` says why when already known."""
        roots = {**self.state.roots(), **(extra or {})}
        for busy in self._busy(roots).values():
            raise busy  # everything is cleared: every root's writer must be this one
        reason = damaged or self.state.damage()
        if reason is None:
            try:
                reason = self.state.store.check()
                if reason is None:
                    self.state.store.clear()
            except IndexCorrupt as exc:
                reason = exc.reason
        from noteseek.indexing.indexer import IndexReport

        report = IndexReport(rebuilt_because="requested")
        if reason is not None:
            if self._choice is None:
                self._choice = self._saved_choice()
            report.rebuilt_because = self.state.recreate(reason)
        from noteseek.indexing.manifest import build_manifest

        self.state.store.set_manifest(build_manifest(self.settings))
        self._record_choice()
        result = self._indexer().run(roots, force=True, progress=progress, report=report)
        self.update_graph()
        self.state.rebuilt()
        self._embed_after_index(result, keyword_only, embed_progress)
        return result

    def add_root(
        self,
        path: str | None,
        *,
        name: str | None = None,
        kind: str = DEFAULT_KIND,
        progress: Progress | None = None,
        keyword_only: bool = False,
        embed_progress: Progress | None = None,
    ) -> AddedRoot:
        """Add the folder ``path`` to the index as a root (``noteseek roots add``) and index
        it; returns the root (named ``name``, else after the folder) and the run's report.

        Without ``path``, the folder the kind gives every index by itself is added (the
        memory kind: the index's memory folder). ConfigError when the folder is missing, the
        name is another root's, or the folder is another root already.
        """
        if kind not in known_kinds():
            raise ConfigError(f"unknown kind {kind!r}; the known kinds are {_kinds()}")
        roots = self.state.roots()
        found_name, root = self._new_root(path, kind, roots)
        name = name or found_name
        if not _ROOT_NAME.fullmatch(name):
            raise ConfigError(f"root name {name!r} may only hold letters, digits, '_', '-', '.'")
        for other, known in roots.items():
            if other == name and (_place(known.path), known.kind) != (_place(root.path), kind):
                raise ConfigError(
                    f"{name!r} is already a root of this index ({known.path}): give another "
                    "--name, or remove it first (noteseek roots remove)"
                )
            if other != name and _place(known.path) == _place(root.path):
                raise ConfigError(f"{root.path} is already the root {other!r} of this index")
        report = self._index_selected({name: root}, False, progress, keyword_only, embed_progress)
        return AddedRoot(name, _place(root.path), kind, report)

    def _new_root(
        self, path: str | None, kind: str, roots: Mapping[str, RootConfig]
    ) -> tuple[str, RootConfig]:
        if path is None:
            given = spec_of(kind).implicit_roots(self.state.config, {})
            if not given:
                raise ConfigError(f"give the folder to add: the kind {kind!r} has none of its own")
            return next(iter(given.items()))
        if not _folder(path):
            raise ConfigError(f"{path!r} is not a folder")
        found, _ = ad_hoc_root(Path(path).expanduser(), roots)  # the folder's name, or its root's
        return found, RootConfig(path=str(Path(path).expanduser().resolve()), kind=kind)

    def remove_root(self, name: str) -> RemovedRoot:
        """Drop root ``name`` from the index (``noteseek roots remove``): its files with their
        chunks and keyword entries, its problems, its record, its edges in the link graph
        and the vectors no other chunk uses. NotFound when the index holds no such root;
        ConfigError when the settings would index it again at the next run."""
        damaged = self.state.damaged()
        if damaged is not None:
            raise IndexCorrupt(damaged, self.state.damage())
        store = self.state.store
        held = store.roots()
        if name not in held:
            roots = ", ".join(sorted(held)) or "none"
            raise NotFound(f"{name!r} is not a root of this index (its roots: {roots})")
        why = self.state.root_comes_back(name)
        if why is not None:
            raise ConfigError(
                f"{name!r} would come back with the next run: {why}; change that first"
            )
        for busy in self._busy([name]).values():
            raise busy
        counts: dict[str, Any] = next((r for r in store.stats()["roots"] if r["name"] == name), {})
        kind = store.root_kinds().get(name, DEFAULT_KIND)
        store.remove_root(name)
        forget_style(store, name)
        vectors = sum(store.prune_vectors(model) for model in store.vector_models())
        self.update_graph()
        self.state.remember_roots()
        return RemovedRoot(
            name, held[name], kind, counts.get("files", 0), counts.get("chunks", 0), vectors
        )

    def embed(
        self, progress: Progress | None = None, stop: threading.Event | None = None
    ) -> EmbedReport:
        """Embed every chunk that lacks a vector of the configured model."""
        self.state.record_model()
        report = embed_pending(
            self.state.store,
            self.state.embedder(),
            progress=progress,
            stop=stop,
            reads=self.settings.embedding.reads,
        )
        if report.notice:
            self.state.notices.append(report.notice)
        return report

    def update_graph(self) -> None:
        """Take the writes not yet in the kept link graph into it; communities when due."""
        store = self.state.store
        with self.state.backend.writing_graph(store):
            refresh_communities(store, sync_graph(store, self.state.values.cap))

    def _record_choice(self) -> None:
        """Store the keyword-only choice given for this run (once the index exists)."""
        if self._choice is not None:
            self.state.choose_keyword_only(self._choice)
            self._choice = None

    def _saved_choice(self) -> bool | None:
        """The keyword-only choice of a damaged index about to be deleted: the copy kept
        beside it first (the damaged file may not answer, or answer wrong: a scrambled page
        reads as no choice, and the index would be rebuilt with embeddings), else what the
        file says (an index from before the copy), else None."""
        kept = self.state.kept_keyword_only()
        if kept is not None:
            return kept
        try:
            return self.state.keyword_only()
        except UNREADABLE:  # unreadable, and no copy: the choice is lost
            return None

    def _embed_after_index(
        self, report: IndexReport, keyword_only: bool, progress: Progress | None
    ) -> None:
        if keyword_only or not self.state.wants_vectors():
            return
        try:
            report.embedding = self.embed(progress=progress).to_dict()
        except KeyboardInterrupt:
            report.interrupted = True
            raise
        except EmbeddingError as exc:
            report.embedding = {"model": self.state.model_id, "error": str(exc)}

    def _check_manifest(self) -> list[str]:
        """Compare the index's manifest with the settings; clear the index when they differ."""
        from noteseek.indexing.manifest import build_manifest, manifest_changes

        current = build_manifest(self.settings)
        stored = self.state.store.manifest()
        if stored == current:
            return []
        reasons = manifest_changes(stored, current) if stored else []
        if stored:
            self.state.store.clear()
        self.state.store.set_manifest(current)
        return reasons

    def _select_roots(self, names: Sequence[str] | None) -> dict[str, RootConfig]:
        roots = self.state.roots()
        if not names:
            return roots
        selected: dict[str, RootConfig] = {}
        for name in names:
            if name in roots:
                selected[name] = roots[name]
                continue
            if _folder(name):
                path = Path(name).expanduser()
                root_name, root = ad_hoc_root(path, roots)
                roots[root_name] = root
                selected[root_name] = root
                continue
            raise ConfigError(
                f"{name!r} is neither a configured root ({', '.join(sorted(roots)) or 'none'}) "
                "nor a folder"
            )
        return selected

    def _indexer(self) -> Indexer:
        from noteseek.indexing.indexer import Indexer

        return Indexer(self.state.store, self.settings, self.state.source_context())


@dataclass(frozen=True, slots=True)
class AddedRoot:
    """A root ``add_root`` added, and the run that indexed it."""

    name: str
    path: str
    kind: str
    report: IndexReport

    def to_dict(self) -> dict[str, Any]:
        return {"root": self.name, "path": self.path, "kind": self.kind} | self.report.to_dict()


@dataclass(frozen=True, slots=True)
class RemovedRoot:
    """A root ``remove_root`` dropped, and what went with it."""

    name: str
    path: str
    kind: str
    files: int
    chunks: int
    vectors: int
    """Vectors no chunk used any more (of every model)."""

    def to_dict(self) -> dict[str, Any]:
        return {
            "root": self.name,
            "path": self.path,
            "kind": self.kind,
            "files": self.files,
            "chunks": self.chunks,
            "vectors": self.vectors,
        }


_ROOT_NAME = re.compile(r"[A-Za-z0-9_.-]+")
"""What a root name may hold (as ``[roots.NAME]``: ``config/settings.py``)."""


def _kinds() -> str:
    return ", ".join(known_kinds())


def _place(path: str) -> str:
    """A folder as roots are compared: absolute, links resolved."""
    return str(Path(path).expanduser().resolve())


def _folder(name: str) -> bool:
    """Whether ``name`` is a folder; ``~nobody/x``, a name too long to look up or a folder
    behind one without permission are not (the caller says so), never an exception."""
    try:
        return Path(name).expanduser().is_dir()
    except (OSError, RuntimeError):
        return False
