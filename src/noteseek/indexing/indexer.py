"""Incremental indexing of roots into a store.

Per file: stat -> (changed?) read + hash -> parse -> chunk -> analyze -> write. Unchanged files
(same mtime_ns and size) are skipped without being read; a touched file with the same content
only has its stat updated; a file that disappeared while a new one with the same content hash
appeared is a rename and keeps its identity. Parsing runs in worker processes for large runs;
writes happen here, in batched transactions that never split one file's rows, so a reader (or a
run killed half-way) never sees half a file.
"""

from __future__ import annotations

import contextlib
import json
import os
import time
from collections import Counter
from collections.abc import Callable, Iterable, Iterator, Mapping
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

from noteseek.config import RootConfig, Settings
from noteseek.indexing.prepare import Outcome, PrepareSettings, RootRules
from noteseek.indexing.styles import ROOT_STYLES_KEY, resolve_style, stored_styles
from noteseek.sources.base import FoundFile, Source, SourceContext, printable_path
from noteseek.sources.registry import open_source, spec_of
from noteseek.store.base import Store
from noteseek.store.errors import WriteRejected
from noteseek.store.rows import FileState

Progress = Callable[[int, int, str], None]
"""progress(done, total, current path)."""

BATCH_FILES = 256
BATCH_SECONDS = 1.0
FAILED = "error"
"""The severity of a problem that is a failed run, not a file's (``skipped``, ``warning``)."""


@dataclass
class IndexReport:
    """What one run did; printed by the CLI and kept as the index's last run."""

    roots: list[str] = field(default_factory=list)
    scanned: int = 0
    added: int = 0
    updated: int = 0
    renamed: int = 0
    touched: int = 0
    """Files whose stat changed but whose content did not."""
    removed: int = 0
    unchanged: int = 0
    skipped: int = 0
    chunks_written: int = 0
    problems: list[dict[str, str]] = field(default_factory=list)
    """``{"root", "path", "severity", "reason"}``: each file skipped or indexed with a warning."""
    seconds: float = 0.0
    rebuilt_because: str | None = None
    interrupted: bool = False
    embedding: dict[str, Any] | None = None
    """What the embedding phase did (None when it did not run)."""

    def to_dict(self) -> dict[str, Any]:
        return {
            "roots": self.roots,
            "scanned": self.scanned,
            "added": self.added,
            "updated": self.updated,
            "renamed": self.renamed,
            "touched": self.touched,
            "removed": self.removed,
            "unchanged": self.unchanged,
            "skipped": self.skipped,
            "chunks_written": self.chunks_written,
            "problems": self.problems,
            "skipped_reasons": dict(
                Counter(
                    _reason_kind(p["reason"]) for p in self.problems if p["severity"] == "skipped"
                )
            ),
            "seconds": round(self.seconds, 3),
            "rebuilt_because": self.rebuilt_because,
            "interrupted": self.interrupted,
            "embedding": self.embedding,
        }


def _reason_kind(reason: str) -> str:
    return reason.split(":")[0].split(" (")[0]


class Indexer:
    def __init__(self, store: Store, settings: Settings, context: SourceContext) -> None:
        self.store = store
        self._renamed_ids: set[int] = set()
        self._at: list[str] = []
        """The roots a run is working on, to say which one failed."""
        self._sources: dict[str, Source] = {}
        """The source of every root this indexer scanned, to read its documents."""
        self.settings = settings
        self.context = context
        self.index_dir = context.index_dir
        ix = settings.index
        self.prepare_settings = PrepareSettings(
            language=settings.analysis.language,
            stopwords=settings.analysis.stopwords,
            max_chars=settings.chunking.max_chars,
            merge_below=settings.chunking.merge_below,
            max_file_size=ix.max_file_size,
        )

    def run(
        self,
        roots: Mapping[str, RootConfig],
        *,
        force: bool = False,
        progress: Progress | None = None,
        report: IndexReport | None = None,
    ) -> IndexReport:
        """Bring the index up to date with ``roots``; files of other roots are left alone.

        A run that fails is recorded as a problem on each of its roots (see
        :meth:`_record_failure`) before the error is raised.
        """
        self._at = list(roots)
        try:
            return self._run(roots, force, progress, report)
        except Exception as exc:
            self._record_failure(exc)
            raise

    def _run(
        self,
        roots: Mapping[str, RootConfig],
        force: bool,
        progress: Progress | None,
        report: IndexReport | None,
    ) -> IndexReport:
        started = time.time()
        report = report or IndexReport()
        report.roots = sorted(roots)
        jobs: list[tuple[FoundFile, str | None]] = []
        states_by_root: dict[str, dict[str, FileState]] = {}
        missing_by_root: dict[str, dict[str, FileState]] = {}

        known_roots = self.store.roots()
        styles = self._stored_styles()
        # Every root's source first: a root of an unknown kind stops the run before any write.
        sources = {name: self._source(name, root) for name, root in roots.items()}
        for name, source in sources.items():
            self._at = [name]
            scan = source.scan()
            resolved = source.location
            moved_to_nothing = "." in scan.unreadable and known_roots.get(name) not in (
                None,
                resolved,
            )
            # A root moved to a folder that cannot be read (a typo, an unmounted disk) keeps
            # what was indexed from where it was; the problem is reported below.
            if not moved_to_nothing:
                self.store.ensure_root(name, resolved, source.kind)
            states = self.store.file_states(name)
            # A root that could not be read says nothing about its style either.
            unread = "." in scan.unreadable
            restyled = not unread and self._style(name, roots[name], source, scan.files, styles)
            seen = self._plan(name, scan.files, states, force or restyled, jobs, report)
            states_by_root[name] = states
            # A root or folder that could not be read (unmounted disk, permissions) says
            # nothing about its files: keep what was indexed from it.
            missing_by_root[name] = {
                p: s
                for p, s in states.items()
                if p not in seen and not _under_any(p, scan.unreadable)
            }
            # Problems of files that are gone, or of scan entries, are replaced wholesale.
            stale = self.store.problem_paths(name) - seen
            self._record_scan_problems(name, stale, scan.problems, report)

        # A failure while writing is reported on the roots that had something to write.
        writing = {found.root for found, _ in jobs} | {n for n, m in missing_by_root.items() if m}
        self._at = sorted(writing) or list(roots)
        self._apply(jobs, states_by_root, missing_by_root, report, progress, started)
        # Recorded once the files are parsed the new way: an interrupted run re-parses.
        self._save_styles(styles, roots)
        return report

    def update_paths(
        self,
        name: str,
        root: RootConfig,
        rels: Iterable[str],
        *,
        report: IndexReport | None = None,
    ) -> IndexReport:
        """Bring only ``rels`` of root ``name`` up to date, with the outcomes of a full run.

        A watcher knows which paths changed but not how; scanning the whole root for each
        batch would cost as much as :meth:`run`. What cannot be judged path by path (a folder,
        a .gitignore, an unreadable folder, a root not indexed from this folder yet) falls
        back to a full run of the root. A failure is recorded as :meth:`run` records it.
        """
        self._at = [name]
        try:
            return self._update_paths(name, root, rels, report)
        except Exception as exc:
            self._record_failure(exc)
            raise

    def _update_paths(
        self, name: str, root: RootConfig, rels: Iterable[str], report: IndexReport | None
    ) -> IndexReport:
        started = time.time()
        report = report or IndexReport()
        source = self._source(name, root)
        scan = source.scan_paths(rels)
        if scan.needs_full_scan or self.store.roots().get(name) != source.location:
            return self._run({name: root}, False, None, report)
        report.roots = [name]
        styles = self._stored_styles()
        if name in styles:
            self._use_style(name, styles[name])
        else:
            self._style(name, root, source, [], styles)
        jobs: list[tuple[FoundFile, str | None]] = []
        states = self.store.file_states(name)
        seen = self._plan(name, scan.files, states, False, jobs, report)
        # Nothing at or under a path that is not an admitted file belongs in the index (a
        # deleted folder takes its files with it).
        not_files = set(scan.gone) | {rel for rel, _ in scan.problems}
        missing = {p: s for p, s in states.items() if p not in seen and _at_or_under(p, not_files)}
        stale = {p for p in self.store.problem_paths(name) if _at_or_under(p, not_files)}
        self._record_scan_problems(name, stale, scan.problems, report)
        self._apply(jobs, {name: states}, {name: missing}, report, None, started)
        self._save_styles(styles, [name])
        return report

    # -- internals ---------------------------------------------------------------------------

    def _record_failure(self, exc: Exception) -> None:
        """Say where status looks that a run failed: an ``error`` on ``.`` of the roots it was
        working on (:attr:`_at`: the root being scanned, or those with files to write).

        Status reports the index's problems, not a live writer's log; without this a server
        whose every reconciliation fails would look ready with nothing wrong. The next full
        run of the root that succeeds replaces it (as any problem of the root's scan).
        """
        reason = f"indexing failed: {type(exc).__name__}: {exc}"
        # The store may be what failed: recording is best effort, the caller gets ``exc``.
        with contextlib.suppress(Exception):
            known = self.store.roots()
            with self.store.transaction():
                for name in self._at:
                    if name in known:
                        self.store.set_problems(name, ".", [(FAILED, reason)])

    def _plan(
        self,
        name: str,
        files: list[FoundFile],
        states: dict[str, FileState],
        force: bool,
        jobs: list[tuple[FoundFile, str | None]],
        report: IndexReport,
    ) -> set[str]:
        """Queue the found files that must be read; return the paths found.

        Files with the stat stored (indexed, or skipped last time) are not read again.
        """
        report.scanned += len(files)
        skipped_before = self.store.skipped_states(name)
        seen: set[str] = set()
        for found in files:
            seen.add(found.path)
            state = states.get(found.path)
            if not force and state is not None and _same_stat(state, found):
                report.unchanged += 1
                continue
            if not force and skipped_before.get(found.path) == (found.mtime_ns, found.size):
                report.unchanged += 1
                report.skipped += 1
                continue
            jobs.append((found, state.content_hash if state and not force else None))
        return seen

    def _record_scan_problems(
        self,
        name: str,
        stale: set[str],
        problems: list[tuple[str, str]],
        report: IndexReport,
    ) -> None:
        """Drop the problems of paths that are gone; record what the scan could not examine."""
        if stale:
            self.store.clear_problems(name, stale)
        for rel, reason in problems:
            self.store.set_problems(name, rel, [("skipped", reason)])
            report.problems.append(
                {"root": name, "path": printable_path(rel), "severity": "skipped", "reason": reason}
            )
            report.skipped += 1

    def _apply(
        self,
        jobs: list[tuple[FoundFile, str | None]],
        states_by_root: dict[str, dict[str, FileState]],
        missing_by_root: dict[str, dict[str, FileState]],
        report: IndexReport,
        progress: Progress | None,
        started: float,
    ) -> None:
        """Write the jobs, delete the missing files that were not renamed, record the run."""
        # Renames: content that disappeared from one path and appears at another.
        missing_by_hash: dict[tuple[str, str], FileState] = {}
        for name, missing in missing_by_root.items():
            for state in missing.values():
                missing_by_hash.setdefault((name, state.content_hash), state)

        try:
            self._process(jobs, states_by_root, missing_by_hash, report, progress)
        except KeyboardInterrupt:
            report.interrupted = True
            raise
        finally:
            if not report.interrupted:
                with self.store.transaction():
                    for missing in missing_by_root.values():
                        for state in missing.values():
                            if state.file_id in self._renamed_ids:
                                continue
                            self.store.delete_file(state.file_id)
                            report.removed += 1
            report.seconds = time.time() - started
            self.store.record_run(started, time.time(), report.to_dict())

    def _stored_styles(self) -> dict[str, str]:
        return stored_styles(self.store)

    def _save_styles(self, styles: Mapping[str, str], names: Iterable[str]) -> None:
        """Record the styles of the roots this run parsed, over those stored now (another
        writer of an index in Milvus records its own roots' meanwhile)."""
        stored = self._stored_styles()
        merged = {**stored, **{n: styles[n] for n in names if n in styles}}
        if merged != stored:
            self.store.set_meta(ROOT_STYLES_KEY, json.dumps(merged, sort_keys=True))

    def _style(
        self,
        name: str,
        root: RootConfig,
        source: Source,
        files: list[FoundFile],
        styles: dict[str, str],
    ) -> bool:
        """Resolve root ``name``'s style (of a kind that detects it; others read as docs) into
        the prepare settings and ``styles``; True when its files were parsed with another one."""
        if not spec_of(root.kind).detects_style:
            return False
        on_disk = [f.abspath for f in files if f.abspath]
        style = resolve_style(root.style, Path(source.location), on_disk)
        self._use_style(name, style)
        before = styles.get(name)
        styles[name] = style
        return before is not None and before != style

    def _use_style(self, name: str, style: str) -> None:
        self.prepare_settings = replace(
            self.prepare_settings, styles={**self.prepare_settings.styles, name: style}
        )

    def _source(self, name: str, root: RootConfig) -> Source:
        source = open_source(name, root, self.context)
        self._sources[name] = source
        # How its kind cuts it (a memory folder: small chunks, never merged, typed links).
        spec = spec_of(root.kind)
        profile = spec.profile(self.settings)
        p = self.prepare_settings
        rules = RootRules(
            profile.chunk_chars or p.max_chars,
            p.merge_below if profile.merge_small else 0,
            spec.typed_links,
        )
        self.prepare_settings = replace(p, rules={**p.rules, name: rules})
        return source

    def _outcomes(self, jobs: list[tuple[FoundFile, str | None]]) -> Iterator[Outcome]:
        # The parser pool with the first run that has documents to prepare: an unchanged
        # re-index is mostly start-up, and needs none of it.
        from noteseek.indexing.outcomes import prepared

        workers = self.settings.index.workers or (os.cpu_count() or 1)
        return prepared(jobs, self._sources, self.prepare_settings, workers)

    def _process(
        self,
        jobs: list[tuple[FoundFile, str | None]],
        states_by_root: dict[str, dict[str, FileState]],
        missing_by_hash: dict[tuple[str, str], FileState],
        report: IndexReport,
        progress: Progress | None,
    ) -> None:
        self._renamed_ids = set()
        total = len(jobs)
        pending: list[Outcome] = []
        last_commit = time.monotonic()
        if progress:
            progress(0, total, "")
        for done, outcome in enumerate(self._outcomes(jobs), start=1):
            pending.append(outcome)
            if progress:
                progress(done, total, outcome.found.path)
            if len(pending) >= BATCH_FILES or time.monotonic() - last_commit > BATCH_SECONDS:
                self._write(pending, states_by_root, missing_by_hash, report)
                pending = []
                last_commit = time.monotonic()
        self._write(pending, states_by_root, missing_by_hash, report)

    def _write(
        self,
        outcomes: Iterable[Outcome],
        states_by_root: dict[str, dict[str, FileState]],
        missing_by_hash: dict[tuple[str, str], FileState],
        report: IndexReport,
    ) -> None:
        """Write a batch in one transaction, each file in a savepoint of its own: a file whose
        rows the store rejects costs that file only (recorded as skipped), never its batch."""
        now = time.time()
        store = self.store
        with store.transaction():
            for out in outcomes:
                found = out.found
                state = states_by_root[found.root].get(found.path)
                try:
                    with store.transaction():
                        done = self._write_one(out, state, missing_by_hash, now)
                except WriteRejected as exc:
                    self._reject(found, str(exc), report)
                    continue
                report.problems.extend(
                    {"root": found.root, "path": found.path, "severity": sev, "reason": why}
                    for sev, why in out.problems
                )
                self._count(out, state, done, missing_by_hash, report)

    def _write_one(
        self,
        out: Outcome,
        state: FileState | None,
        missing_by_hash: dict[tuple[str, str], FileState],
        now: float,
    ) -> FileState | None:
        """Write one outcome's rows; returns the missing file it renames, if any.

        Nothing outside the store changes here, so a rejected file leaves no trace in the
        run's bookkeeping once its savepoint is rolled back.
        """
        store = self.store
        found = out.found
        store.set_problems(found.root, found.path, out.problems, found.mtime_ns, found.size)
        if out.kind == "same_content" and state is not None:
            store.update_file_stat(state.file_id, found.mtime_ns, found.size)
        elif out.kind == "skipped":
            if state is not None:
                # It was indexed before and is now unusable: drop the stale copy.
                store.delete_file(state.file_id)
        elif out.prepared is not None:
            file_id = state.file_id if state is not None else None
            moved = None
            if file_id is None:
                moved = missing_by_hash.get((found.root, out.content_hash))
                if moved is not None and moved.file_id not in self._renamed_ids:
                    file_id = moved.file_id
                else:
                    moved = None
            store.write_file(out.prepared, now, file_id)
            if moved is not None:
                store.clear_problems(found.root, [moved.path])
            return moved
        return None

    def _count(
        self,
        out: Outcome,
        state: FileState | None,
        moved: FileState | None,
        missing_by_hash: dict[tuple[str, str], FileState],
        report: IndexReport,
    ) -> None:
        """Add a written outcome to the run's report (and claim the file it renamed)."""
        if out.kind == "same_content" and state is not None:
            report.touched += 1
        elif out.kind == "skipped":
            report.skipped += 1
            if state is not None:
                report.removed += 1
        elif out.prepared is not None:
            if moved is not None:
                del missing_by_hash[(out.found.root, out.content_hash)]
                self._renamed_ids.add(moved.file_id)
                report.renamed += 1
            elif state is not None:
                report.updated += 1
            else:
                report.added += 1
            report.chunks_written += len(out.prepared.chunks)

    def _reject(self, found: FoundFile, reason: str, report: IndexReport) -> None:
        """Record a file the store would not take as skipped, with the store's reason."""
        self.store.set_problems(
            found.root, found.path, [("skipped", reason)], found.mtime_ns, found.size
        )
        report.problems.append(
            {
                "root": found.root,
                "path": printable_path(found.path),
                "severity": "skipped",
                "reason": reason,
            }
        )
        report.skipped += 1


def _at_or_under(path: str, tops: set[str]) -> bool:
    """``path`` is one of ``tops`` or inside one of them."""
    if path in tops:
        return True
    slash = path.find("/")
    while slash != -1:
        if path[:slash] in tops:
            return True
        slash = path.find("/", slash + 1)
    return False


def _under_any(path: str, folders: list[str]) -> bool:
    return any(f == "." or path.startswith(f + "/") for f in folders)


def _same_stat(state: FileState, found: FoundFile) -> bool:
    return state.mtime_ns == found.mtime_ns and state.size == found.size
