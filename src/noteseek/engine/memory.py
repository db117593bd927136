"""Agent memory over one opened index: the memory folder agents write, which memories pass a
filter, and what memories say about a document (their typed links, ghost nodes included).

Memories are documents of roots of kind ``memory`` (:mod:`noteseek.sources.memory`); writing
them is :class:`~noteseek.sources.memory.folder.MemoryFolder`'s job, searching them the same
pipeline as documents with ``source="memory"``. What this service adds is what needs both the
folder's rules and the index: the memory filters that need defaults the files do not spell out
(a daily log is a ``journal`` created on its date), and the memory side of the link graph.
"""

from __future__ import annotations

import datetime as dt
import os
from collections.abc import Callable, Sequence
from dataclasses import dataclass, replace
from pathlib import Path
from typing import TYPE_CHECKING, Any

from noteseek.config import ConfigError
from noteseek.engine.reading import Reading
from noteseek.engine.results import NotFound
from noteseek.engine.state import IndexState
from noteseek.graph.links import bare_name, placeholder
from noteseek.sources.memory import MEMORY_KIND, writer
from noteseek.sources.memory.folder import MemoryFolder, WriteResult
from noteseek.sources.memory.format import daily_name, memory_kind
from noteseek.sources.memory.record import MemoryFields, fields_match, memory_fields
from noteseek.sources.memory.sessions import (
    SessionEntry,
    recorded_turns,
    upsert,
    without_entry,
)
from noteseek.store.rows import FileRow

if TYPE_CHECKING:  # the summarisers (numpy, httpx, the parsers) load with a flush
    from noteseek.engine import Engine
    from noteseek.engine.live import IndexService
    from noteseek.sources.memory.summarize import Passage, Summarizer


@dataclass(frozen=True, slots=True)
class MemoryLink:
    """One link from a memory to a document (or to a note that does not exist yet)."""

    memory: str
    """The memory's doc_id."""
    target: str
    """The document's doc_id, or ``?name`` for a ghost node (no such document yet)."""
    type: str
    """mentions, refactors or plans."""
    line: int
    context: str


@dataclass(frozen=True, slots=True)
class Written:
    """A write to the memory folder, and how it reached the index."""

    root: str
    result: WriteResult
    indexed: str
    """``indexed``, ``queued: ...``, ``handed to ...``: what the policy did with it."""

    def to_dict(self) -> dict[str, Any]:
        return {
            "name": self.result.name,
            "root": self.root,
            "created": self.result.created,
            "duplicate_of": self.result.duplicate_of,
            "message": self.result.message,
            "indexed": self.indexed,
        }


class Memories:
    """The memory folder and the memory side of the index: reading, filtering, writing
    (through the memory kind's writer, then the index by the one handoff policy), flushing."""

    def __init__(
        self,
        state: IndexState,
        reading: Reading,
        engine: Callable[[], Engine],
        live: Callable[[], IndexService | None],
    ) -> None:
        self.state = state
        self.reading = reading
        self.settings = state.settings
        self.engine = engine
        self.live = live

    def memory_roots(self) -> list[str]:
        """Names of the roots that hold memories."""
        return sorted(n for n, kind in self.state.kinds().items() if kind == MEMORY_KIND)

    def memory_root(self) -> str:
        """The root memory tools write to (``memory.root``, else the only memory root)."""
        roots = self.memory_roots()
        wanted = self.settings.memory.root
        if wanted in roots:
            return wanted
        if len(roots) == 1:
            return roots[0]
        if not roots:
            raise ConfigError(
                "this index has no memory folder: set memory.enabled = true or add a "
                '[roots.NAME] with kind = "memory"'
            )
        raise ConfigError(
            f"memory.root is {wanted!r}, which is not one of the memory roots "
            f"({', '.join(roots)}): set memory.root to the one to write to"
        )

    def memory_folder(self, root: str | None = None) -> MemoryFolder:
        """The folder of a memory root (default :meth:`memory_root`), written through the
        kind's writer (``sources/memory``: atomic, locked, bounded)."""
        name = root or self.memory_root()
        config = self.state.roots().get(name)
        if config is None or config.kind != MEMORY_KIND:
            raise ConfigError(f"{name!r} is not a memory root ({', '.join(self.memory_roots())})")
        return writer(Path(config.path).expanduser(), self.settings)

    # -- writes: the folder first, then the index, whichever process is its writer -----------

    def create(
        self,
        name: str,
        content: str,
        *,
        type: str = "fact",
        tags: Sequence[str] = (),
        status: str = "active",
        links: Sequence[str] = (),
        title: str | None = None,
    ) -> Written:
        """Write a new memory (or find the identical one already there) and index it."""
        root, folder = self._target()
        result = folder.create(
            name, content, type=type, tags=tags, status=status, links=links, title=title
        )
        return self._indexed(root, result, changed=result.created)

    def append(self, content: str, *, title: str | None = None) -> Written:
        """Append an entry to today's daily log and index it."""
        root, folder = self._target()
        result = folder.append(content, title=title)
        return self._indexed(root, result, changed=result.created)

    def record_session(self, entry: SessionEntry, *, when: dt.datetime | None = None) -> Written:
        """Write a session's summary as its one entry of the daily log (``sources/memory/
        sessions.py``): brought up to date where it already is (yesterday's log, for a
        session that began there), else added to today's; and index it."""
        root, folder = self._target()
        now = when.astimezone() if when is not None else dt.datetime.now().astimezone()
        yesterday, today = now.date() - dt.timedelta(days=1), now.date()
        day = yesterday if _has_session(folder, yesterday, entry) else today
        # A full log runs on in a continuation file: the entry is brought up to date in the
        # file that holds it, or moves to the day's last file (or a new one) with room for it.
        result = folder.edit_daily(
            day,
            lambda old: upsert(old, entry, f"# {day.isoformat()}"),
            holds=lambda log: f"\n{entry.marker}" in log,
            leave=lambda log: without_entry(log, entry.session_id),
        )
        return self._indexed(root, result, changed=result.created)

    def session_turns(self, session_id: str, *, when: dt.datetime | None = None) -> int | None:
        """The turns a session's entry already summarises, in today's or yesterday's log
        (where :meth:`record_session` writes it); None when it has no entry yet."""
        folder = self.memory_folder()
        now = when.astimezone() if when is not None else dt.datetime.now().astimezone()
        for day in (now.date(), now.date() - dt.timedelta(days=1)):
            found = [recorded_turns(log, session_id) for log in _daily_logs(folder, day)]
            turns = [t for t in found if t is not None]
            if turns:
                return max(turns)
        return None

    def update(self, name: str, **fields: Any) -> Written:
        """Change a memory's body (``body``), append to it (``append_text``) or change its
        fields (``type``, ``tags``, ``status``, ``title``), and index it."""
        root, folder = self._target()
        result = folder.update(name, **fields)
        return self._indexed(root, result, changed=result.changed)

    def delete(self, name: str) -> Written:
        """Move a memory to the folder's trash and drop it from the index."""
        root, folder = self._target()
        result = folder.delete(name)
        return self._indexed(root, result, also=[_name(name)])

    def restore(self, name: str) -> Written:
        """Bring a trashed memory back and index it."""
        root, folder = self._target()
        return self._indexed(root, folder.restore(name))

    def _target(self) -> tuple[str, MemoryFolder]:
        root = self.memory_root()
        return root, self.memory_folder(root)

    def _indexed(
        self, root: str, result: WriteResult, *, changed: bool = True, also: Sequence[str] = ()
    ) -> Written:
        """``result`` with how its files reached the index (``engine/handoff.py``)."""
        if not changed:
            return Written(root, result, "unchanged")
        return Written(root, result, self._index(root, [*also, result.name]))

    def _index(self, root: str, names: Sequence[str]) -> str:
        from noteseek.engine.handoff import index_written

        rels = sorted({f"{_name(n)}.md" for n in names})
        return index_written(self.engine(), root, rels, self.live())

    def memory_files(self) -> list[FileRow]:
        """The indexed memories of every memory root."""
        if not self.state.index_exists:
            return []
        store = self.state.store
        return [f for root in self.memory_roots() for f in store.iter_files(root)]

    def memory_rows(self, root: str | None = None) -> list[tuple[FileRow, MemoryFields]]:
        """The indexed memories (of one memory root, or all) with their fields, read as the
        folder reads them (:func:`~noteseek.sources.memory.record.memory_fields`)."""
        rows = []
        for row in self.memory_files():
            kind = memory_kind(row.path)
            if kind is None or (root is not None and row.root != root):
                continue
            mtime = dt.datetime.fromtimestamp(row.mtime_ns / 1e9).astimezone()
            rows.append((row, memory_fields(_name(row.path), kind, row.frontmatter, mtime)))
        return rows

    def memory_selection(
        self,
        *,
        type: str | None = None,
        status: str | None = None,
        created_after: dt.datetime | None = None,
        created_before: dt.datetime | None = None,
    ) -> list[str]:
        """doc_ids of the indexed memories that pass, read as the folder reads them (a daily
        log is a ``journal`` created on its date, ...: see :meth:`memory_rows`)."""
        return [
            row.doc_id
            for row, fields in self.memory_rows()
            if fields_match(
                fields, type=type, status=status, after=created_after, before=created_before
            )
        ]

    def memory_links(self, target: str) -> tuple[str, list[MemoryLink]]:
        """What memories link to ``target``: a document (path or doc id, as results give it)
        or, when no such document is indexed, the ghost node of that name (a memory may
        mention ``src/auth.py`` before, or without, it being indexed). Returns the node and
        the links, newest memory line first within each memory.

        A ghost keeps its folders: ``src/auth.py`` gets the memories that link to it, or to
        the bare ``auth.py``, never those that link ``lib/auth.py``; a bare name gets every
        memory that links a file of that name, as a name resolves anywhere."""
        graph = self.state.values.link_graph()
        try:
            node = self.reading.resolve_file(target).doc_id
        except NotFound:
            # A note name as a wikilink gives it ([[auth]]), else a ghost node: a document
            # that does not exist (or is not indexed) yet.
            node = graph.resolver.resolve_name(target) or placeholder(target, whole=True)
        nodes = {node}
        if node.startswith("?"):
            bare = bare_name(node)
            nodes.add(bare)
            if bare == node:  # a bare name: the ghosts of every file of that name
                nodes |= {g for g in graph.placeholders() if bare_name(g) == bare}
        links = [
            MemoryLink(e.source, e.target, e.type, e.line, e.context)
            for n in sorted(nodes)
            for e in graph.backlinks(n)
            if (source := graph.docs.get(e.source)) is not None and source.memory
        ]
        return node, links

    # -- flush -------------------------------------------------------------------------------

    def flush_memories(
        self,
        root: str | None = None,
        *,
        doc_ids: Sequence[str] | None = None,
        tags: Sequence[str] = (),
        max_chars: int | None = None,
        dry_run: bool = False,
        archive: bool = False,
    ) -> FlushOutcome:
        """Summarise the active memories of ``folder``'s root (those among ``doc_ids`` with
        every tag in ``tags``, when given) and append the summary, with its sources as
        wikilinks, to today's daily log; ``archive`` marks the memories it draws on archived
        (the long-term file and today's log excepted). Passages go oldest first. What it
        wrote is indexed as every memory write is (``engine/handoff.py``)."""
        root = root or self.memory_root()
        folder = self.memory_folder(root)
        wanted = None if doc_ids is None else set(doc_ids)
        rows = []
        for row, fields in self.memory_rows(root):
            if wanted is not None and row.doc_id not in wanted:
                continue
            if fields.status == "archived":
                continue
            # The index's tags: the frontmatter's and the inline #tags, as searches filter.
            if not fields_match(replace(fields, tags=tuple(row.tags)), tags=tags):
                continue
            rows.append((fields.created_at, row))
        rows.sort(key=lambda item: (item[0], item[1].path))
        store = self.state.store
        from noteseek.sources.memory.sessions import FLUSH_TITLE, flushable
        from noteseek.sources.memory.summarize import Passage

        passages = [
            Passage(_name(row.path), text, chunk.start_line, chunk.end_line)
            for _, row in rows
            for chunk in store.file_chunks(row.file_id)
            if (text := flushable(chunk.heading_path, chunk.text))
        ]
        limit = max_chars or self.settings.flush.max_chars
        if not passages:
            return FlushOutcome(dry_run, "none", 0, [], "", None, [], "no active memories match")
        summarizer = self.summarizer()
        summary = summarizer.summarize(passages, max_chars=limit)
        if not summary.text.strip():
            return FlushOutcome(
                dry_run, summary.method, len(passages), [], "", None, [], "nothing to summarise"
            )
        entry = (
            summary.text.rstrip()
            + "\n\nSources: "
            + ", ".join(f"[[{source}]]" for source in summary.sources)
        )
        title = f"{FLUSH_TITLE} ({len(summary.sources)} memories, {summary.method})"
        if dry_run:
            return FlushOutcome(
                True,
                summary.method,
                len(passages),
                summary.sources,
                entry,
                None,
                [],
                f"dry run: would append to today's daily log under '{title}'",
            )
        written = folder.append(entry, title=title)
        archived: list[str] = []
        already: list[str] = []
        if archive:
            # What was summarised: what a chat model was sent (the oldest may be left out
            # over its input budget), or every passage the extractive summariser weighed.
            fed = summary.sources if summary.method.startswith("llm:") else _names(passages)
            for source in fed:
                if source == written.name or memory_kind(source + ".md") == "long_term":
                    continue
                # A rerun after a flush that was stopped half-way finds some archived in
                # their files before the index knows: those are counted apart, not again.
                done = folder.update(source, status="archived")
                (archived if done.changed else already).append(source)
        message = written.message
        if archived:
            message += f"; archived {len(archived)} memories"
        if already:
            message += f"; {len(already)} were archived already"
        return FlushOutcome(
            False,
            summary.method,
            len(passages),
            summary.sources,
            entry,
            written,
            archived,
            message,
            self._index(root, [written.name, *archived, *already]),
        )

    def summarizer(self) -> Summarizer:
        """The LLM endpoint of ``[flush]`` when one is set, else the offline extractive
        summariser over this index's embedding model. The API key is read from the
        environment here and never kept anywhere else."""
        from noteseek.sources.memory.summarize import (
            ChatSummarizer,
            ExtractiveSummarizer,
            load_prompt,
        )

        flush = self.settings.flush
        if not flush.base_url:
            return ExtractiveSummarizer(self.state.embedder().embed_documents)
        if not flush.model:
            raise ConfigError("flush.base_url is set but flush.model is empty: name the model")
        prompt = load_prompt(Path(flush.prompt_file)) if flush.prompt_file else None
        from noteseek.embed.chat import ChatClient

        client = ChatClient(
            base_url=flush.base_url,
            model=flush.model,
            api_key=os.environ.get(flush.api_key_env) or None,
            timeout=flush.timeout,
        )
        return ChatSummarizer(client, prompt=prompt)


@dataclass(frozen=True, slots=True)
class FlushOutcome:
    """What a flush did (or, in a dry run, would do)."""

    dry_run: bool
    method: str
    passages: int
    sources: list[str]
    summary: str
    written: WriteResult | None
    archived: list[str]
    message: str
    indexed: str | None = None
    """How what it wrote reached the index (None: nothing written)."""

    def to_dict(self) -> dict[str, Any]:
        return {
            "dry_run": self.dry_run,
            "method": self.method,
            "passages": self.passages,
            "sources": list(self.sources),
            "summary": self.summary,
            "written_to": self.written.name if self.written else None,
            "archived": list(self.archived),
            "message": self.message,
            "indexed": self.indexed,
        }


def _names(passages: Sequence[Passage]) -> list[str]:
    return list(dict.fromkeys(p.source for p in passages))


def _name(path: str) -> str:
    return path[:-3] if path.endswith(".md") else path


def _daily_logs(folder: MemoryFolder, day: dt.date) -> list[str]:
    """The texts of the daily log of ``day``: its file and its continuations (``-2``, ``-3``:
    :meth:`MemoryFolder.edit_daily`), as far as they run without a gap."""
    texts = []
    first = daily_name(day)
    n = 1
    while True:
        name = first if n == 1 else f"{first}-{n}"
        try:
            texts.append((folder.path / f"{name}.md").read_text("utf-8", "replace"))
        except OSError:
            if n > 1:
                return texts
        n += 1


def _has_session(folder: MemoryFolder, day: dt.date, entry: SessionEntry) -> bool:
    """Whether the daily log of ``day`` (any of its files) holds the session's entry."""
    return any(f"\n{entry.marker}" in log for log in _daily_logs(folder, day))
