"""Git history over one opened index: commits that answer a query, and when a document last
changed and by whom.

Commits are documents of roots of kind ``git`` (:mod:`noteseek.sources.git`), chunked by
:mod:`noteseek.indexing.commits` and searched by the same pipeline as documents with
``source="commits"``. What this service adds is the commit as the unit of a result (a commit
matched by its message and three of its hunks is one result, with the file and hunk that
matched best), and the reverse view: which commit last touched a document, read from the
index rather than by running git per query.
"""

from __future__ import annotations

import os
import time
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

from noteseek.config.ranges import TOP_K
from noteseek.engine.derived import Derived
from noteseek.engine.searching import Searching
from noteseek.engine.state import IndexState
from noteseek.globs import any_match
from noteseek.search.ask import SearchRequest
from noteseek.search.query import parse_query
from noteseek.search.snippet import make_snippet
from noteseek.sources.git import COMMITS_SCOPE, GIT_KIND
from noteseek.store.rows import FileRow
from noteseek.types import Hit

FETCH_PER_COMMIT = 6
"""Sections fetched per commit asked for: a commit is several chunks (message, hunks), and
the results are grouped by commit after ranking."""
SHORT = 10
NAME_ROW = "## "
"""How an added file's name row starts (its heading line in the rendered commit); a hunk
starts with ``@@``."""


@dataclass(frozen=True, slots=True)
class LastChange:
    """The newest indexed commit that touched a document."""

    date: str
    """The author date, ISO 8601."""
    author: str
    commit: str
    """The full hash."""
    subject: str
    root: str
    """The git root holding the commit."""

    def to_dict(self) -> dict[str, Any]:
        return {
            "date": self.date,
            "author": self.author,
            "commit": self.commit,
            "short_hash": self.commit[:SHORT],
            "subject": self.subject,
            "root": self.root,
        }


@dataclass(slots=True)
class CommitHit:
    """One commit that answers a query."""

    rank: int
    root: str
    hash: str
    subject: str
    author: str
    author_email: str
    date: str
    score: float
    lanes: dict[str, int]
    snippet: str
    chunk_id: str
    start_line: int
    end_line: int
    files: list[str]
    """The files the commit changed, as far as they are listed (see :attr:`files_changed`)."""
    insertions: int
    deletions: int
    files_changed: int = 0
    """How many files the commit changed: more than ``len(files)`` when a commit changing
    many files lists only the first ones (``DiffBounds.max_listed_files``), which a door
    must then say."""
    file: str | None = None
    """The changed file whose hunk matched best (None when only the message matched)."""
    hunk: str | None = None
    """That hunk's text, when asked for (``include_diff``)."""
    message: str = ""
    explain: dict[str, Any] | None = None

    @property
    def doc_id(self) -> str:
        return f"{self.root}/{self.hash}"

    def to_dict(self) -> dict[str, Any]:
        out: dict[str, Any] = {
            "rank": self.rank,
            "doc_id": self.doc_id,
            "root": self.root,
            "hash": self.hash,
            "short_hash": self.hash[:SHORT],
            "subject": self.subject,
            "message": self.message,
            "author": self.author,
            "author_email": self.author_email,
            "date": self.date,
            "score": round(self.score, 6),
            "lanes": dict(self.lanes),
            "snippet": self.snippet,
            "chunk_id": self.chunk_id,
            "start_line": self.start_line,
            "end_line": self.end_line,
            "files": list(self.files),
            "insertions": self.insertions,
            "deletions": self.deletions,
            "files_changed": self.files_changed,
            "file": self.file,
            "hunk": self.hunk,
        }
        if self.explain is not None:
            out["explain"] = self.explain
        return out


@dataclass(slots=True)
class CommitSearch:
    query: str
    mode: str
    took_ms: float
    commits: list[CommitHit] = field(default_factory=list)
    warnings: list[str] = field(default_factory=list)
    lanes: dict[str, int] = field(default_factory=dict)
    spelling: dict[str, Any] = field(default_factory=dict)
    """Typo tolerance's ``corrections`` and ``did_you_mean`` (empty: no word corrected)."""


class Commits:
    """Commit search and the last change of documents."""

    def __init__(self, state: IndexState, searching: Searching) -> None:
        self.state = state
        self.searching = searching
        self._last = Derived("last-change", self._build_last_changes, state.token)

    def search_commits(self, request: SearchRequest, *, include_diff: bool = False) -> CommitSearch:
        """The commits that answer ``request``, best first, one result per commit.

        The request's filter applies inside retrieval: ``changed`` (globs over the files a
        commit changed), ``authors`` (part of the author's name or email), ``after``/``before``
        (dates, or ages such as ``30d``), ``roots`` (git root names). Each commit comes with
        the changed file whose hunk matched best and, with ``include_diff``, that hunk. Its
        ``source`` is the commits scope whatever the request says.
        """
        started = time.perf_counter()
        top_k = request.top_k or self.state.settings.search.top_k
        TOP_K.check(top_k)
        changed = request.filter.changed
        patterns = [changed] if isinstance(changed, str) else list(changed)
        response = self.searching.ranked(
            replace(
                request,
                source=COMMITS_SCOPE,
                with_text=True,
                # Snippets for the sections shown only (one per commit), made below.
                snippets=False,
                compressed=False,
            ),
            top_k * FETCH_PER_COMMIT,
        )
        warnings = list(response.warnings)
        if self.state.index_exists and GIT_KIND not in self.state.store.root_kinds().values():
            warnings.append(
                'no git history is indexed: add a root with kind = "git" or set '
                "[git] discover = true, then run noteseek index"
            )
        grouped: dict[str, list[Hit]] = {}
        for hit in response.hits:
            grouped.setdefault(hit.doc_id, []).append(hit)
        snippet = self._change_snippet(response.query)
        commits: list[CommitHit] = []
        for doc_id, hits in grouped.items():
            if len(commits) == top_k:
                break
            row = self._row(hits[0])
            if row is None:
                continue
            found = _commit_hit(
                len(commits) + 1, row, hits, patterns, include_diff, self._message(doc_id)
            )
            if found.hunk is not None and found.hunk.startswith(NAME_ROW):
                found.hunk = self._first_hunk(found.chunk_id, found.file)
            found.snippet = snippet(_chunk_text(hits, found.chunk_id), found.file is not None)
            commits.append(found)
        return CommitSearch(
            response.query,
            response.mode,
            (time.perf_counter() - started) * 1000,
            commits,
            warnings,
            response.lanes,
            response.spelling(),
        )

    def _change_snippet(self, query: str) -> Callable[[str, bool], str]:
        """A snippet maker: make(text, diff). Over a hunk (``diff``), the added and removed
        lines are tried first: the context lines around a change often hold the query's
        words without being what changed."""
        analyzer = self.state.values.analyzer()
        parsed = parse_query(query, analyzer)
        terms = set(parsed.terms)
        prefixes = [a[-1] for c in parsed.clauses if c.prefix for a in c.alternatives if a]
        search = self.state.settings.search

        def snip(text: str) -> tuple[str, list[str]]:
            return make_snippet(
                text,
                terms,
                prefixes,
                analyzer,
                search.snippet_chars,
                search.highlight,
                plain=False,
            )

        def make(text: str, diff: bool) -> str:
            if diff:
                changed = "\n".join(
                    line
                    for line in text.split("\n")
                    if line[:1] in ("+", "-")
                    and line[1:].strip()
                    and not line.startswith(("+++", "---"))
                )
                if changed:
                    found, matched = snip(changed)
                    if matched:
                        return found
            return snip(text)[0]

        return make

    def _message(self, doc_id: str) -> str:
        """The commit's message (its first chunk): the body, or the subject alone."""
        from noteseek.indexing.commits import message_chunk_id  # the parsers: not for searches

        chunk = self.state.store.chunk_by_id(message_chunk_id(doc_id))
        return chunk.text if chunk is not None else ""

    def _first_hunk(self, name_row: str, path: str | None) -> str:
        """The hunk shown for a result matched by an added file's name row (its heading line,
        see ``indexing/commits.py``): the first hunk of that file, the row after it."""
        from noteseek.indexing.commits import chunk_id  # the parsers: not for searches

        store = self.state.store
        row = store.chunk_by_id(name_row)
        if row is None:
            return ""
        after = store.chunk_by_id(chunk_id(row.doc_id, row.ordinal + 1))
        if after is None or after.heading_path[:1] != (path,):
            return row.text
        return after.text

    def _row(self, hit: Hit) -> FileRow | None:
        rows = self.state.store.find_files(hit.path, hit.root)
        return rows[0] if rows else None

    # -- last change -------------------------------------------------------------------------

    def last_changes(self, doc_ids: Iterable[str]) -> dict[str, LastChange]:
        """doc_id -> the newest indexed commit that touched it, for the documents of roots
        whose folder lies in an indexed repository (others are left out)."""
        wanted = list(doc_ids)
        if not wanted or not self.state.index_exists:
            return {}
        places, changes = self._last.get()
        if not changes:
            return {}
        out: dict[str, LastChange] = {}
        for doc_id in wanted:
            root, _, path = doc_id.partition("/")
            best: LastChange | None = None
            for git_root, prefix in places.get(root, ()):
                found = changes.get(git_root, {}).get(prefix + path)
                if found is not None and (best is None or found.date > best.date):
                    best = found
            if best is not None:
                out[doc_id] = best
        return out

    def _build_last_changes(
        self,
    ) -> tuple[dict[str, list[tuple[str, str]]], dict[str, dict[str, LastChange]]]:
        """(root -> [(git root, path prefix of the root's folder in that repository)],
        git root -> {repository path -> its last change})."""
        store = self.state.store
        kinds = store.root_kinds()
        locations = store.roots()
        repos = {name: locations[name] for name, kind in kinds.items() if kind == GIT_KIND}
        if not repos:
            return {}, {}
        # The git source (subprocess, repositories) loads only for an index with git roots.
        from noteseek.sources.git.roots import enclosing_repository

        changes: dict[str, dict[str, LastChange]] = {}
        for git_root in repos:
            latest: dict[str, tuple[float, LastChange]] = {}
            for row in store.iter_files(git_root):
                fm = row.frontmatter
                files = fm.get("files")
                if not isinstance(files, list):
                    continue
                change = LastChange(
                    str(fm.get("authored", "")),
                    str(fm.get("author", "")),
                    row.path,
                    row.title,
                    git_root,
                )
                for path in files:
                    if isinstance(path, str):
                        seen = latest.get(path)
                        if seen is None or row.modified > seen[0]:
                            latest[path] = (row.modified, change)
            changes[git_root] = {p: c for p, (_, c) in latest.items()}
        places: dict[str, list[tuple[str, str]]] = {}
        for name, kind in kinds.items():
            if kind == GIT_KIND:
                continue
            folder = Path(locations[name])
            top = enclosing_repository(folder)
            if top is None:
                continue
            for git_root, location in repos.items():
                if os.path.realpath(location) == os.path.realpath(top):
                    rel = os.path.relpath(os.path.realpath(folder), os.path.realpath(top))
                    prefix = "" if rel == "." else rel.replace(os.sep, "/") + "/"
                    places.setdefault(name, []).append((git_root, prefix))
        return places, changes


def _chunk_text(hits: list[Hit], chunk_id: str) -> str:
    return next((h.text or "" for h in hits if h.chunk_id == chunk_id), "")


def _commit_hit(
    rank: int,
    row: FileRow,
    hits: list[Hit],
    patterns: Sequence[str],
    include_diff: bool,
    message: str,
) -> CommitHit:
    fm = row.frontmatter
    files = [f for f in fm.get("files", []) if isinstance(f, str)]
    changes = [c for c in fm.get("changes", []) if isinstance(c, dict)]
    changed = {c.get("path") for c in changes}
    best = hits[0]
    file_hits = [h for h in hits if h.heading_path and h.heading_path[0] in changed]
    if patterns:
        file_hits = [h for h in file_hits if any_match(patterns, h.heading_path[0])]
    file_hit = file_hits[0] if file_hits else None
    file = file_hit.heading_path[0] if file_hit is not None else None
    if file is None and patterns:
        file = next((f for f in files if any_match(patterns, f)), None)
    return CommitHit(
        rank=rank,
        root=row.root,
        hash=row.path,
        subject=row.title,
        author=str(fm.get("author", "")),
        author_email=str(fm.get("author_email", "")),
        date=str(fm.get("authored", "")),
        score=best.score,
        lanes=dict(best.lanes),
        snippet=(file_hit or best).snippet,
        chunk_id=(file_hit or best).chunk_id,
        start_line=(file_hit or best).start_line,
        end_line=(file_hit or best).end_line,
        files=[c for c in files if c in changed] or files,
        insertions=int(fm.get("insertions", 0) or 0),
        deletions=int(fm.get("deletions", 0) or 0),
        files_changed=len(changes) + int(fm.get("files_omitted", 0) or 0),
        file=file,
        hunk=(file_hit.text if include_diff and file_hit is not None else None),
        message=message,
        explain=best.explain,
    )
