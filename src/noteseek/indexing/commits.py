"""Turn commits into the rows the store writes: one document per commit, chunked for retrieval.

A commit is rendered as a Markdown document (``sources/git/render.py``): its subject as the
title, its message, a metadata block, then a section per changed file with that file's hunks.
The chunks point at lines of exactly that text, so a result opens at the right place:

* the message: the subject and body as one chunk (cut at paragraph and line ends when the body
  is longer than the chunk budget), heading = the subject;
* per changed file: its hunks grouped while they fit the budget (a hunk bigger than the budget
  is cut at line ends), heading = the file's path; a binary or hunk-less change (a rename, a
  mode change, a file past the diff bound) is one short chunk naming it, so a file's path
  still finds the commit;
* per file the commit added (not a merge): a name row before its hunks, pointing at the file's
  heading line and keyword-indexed as a note is named (title = the page's title, aliases = the
  file name), so "which commit added the page on X" finds the commit that wrote it rather
  than later edits whose short rows name the file (``_added_name``).

The keyword fields: title = subject; aliases = author, email and hashes (``who`` and
``which`` questions); headings = the file path (and the old one of a rename); body = the
message, or the lines the hunk added and removed (context lines, and the line git names after
a hunk header, say what did *not* change, so they are left out); code = the parts of code
identifiers in them (as for notes: a word found only inside an identifier ranks below the same
word as prose). A merge's hunks are its diff against the first parent: the lines the merged
branch's own commits wrote, carried in. They stay in its text (and its embedding) but not in
its keyword body, so "which commit added the page on X" finds the commit that wrote the page
rather than every merge that carried it (docs/evaluation.md, issue 34); a merge is found by
its message and the paths it changed. The document fields the filters read (``author``,
``author_email``, ``files``) and the date (the author date) are the commit's.
"""

from __future__ import annotations

import hashlib
from collections import deque
from collections.abc import Iterator, Sequence
from concurrent.futures import Executor, Future
from datetime import UTC, datetime

from noteseek.analysis import Analyzer
from noteseek.chunking import embedding_input, embedding_key
from noteseek.indexing.prepare import Outcome, worker_analyzer
from noteseek.sources.base import FoundFile
from noteseek.sources.git.log import Commit, FileChange
from noteseek.sources.git.render import FileSection, RenderedCommit, render_commit
from noteseek.sources.git.source import GitSource
from noteseek.types import Chunk, FileRecord, IndexedChunk, PreparedFile

PARSER = "git"
"""The parser name commits are recorded with."""
POOL_BATCH = 16
"""Commits per task sent to a worker process."""
IN_FLIGHT = 8
"""Tasks queued ahead of the writer: bounds the commits held in memory at once."""
SHORT = 10
"""Characters of a short hash: unique in repositories far bigger than this tool indexes."""
FILES_HEADING = "Files changed"
"""The heading of a chunk listing several changes without hunks."""


def commit_outcomes(
    source: GitSource,
    found: Sequence[FoundFile],
    analyzer: Analyzer,
    max_chars: int,
    pool: Executor | None = None,
) -> Iterator[Outcome]:
    """One outcome per found commit, in no particular order. The commits are read in one pass
    of ``git log`` here; with a ``pool`` (worker processes started with
    :class:`~noteseek.indexing.pool.ParserPool`) they are rendered, chunked and analyzed
    there, in batches, while git and this process read on."""
    by_hash = {f.path: f for f in found}
    pending: deque[Future[list[Outcome]]] = deque()
    batch: list[tuple[FoundFile, Commit]] = []
    for commit_hash, commit in source.commits([f.path for f in found]):
        item = by_hash.pop(commit_hash, None)
        if item is None:
            continue
        if isinstance(commit, str):
            yield Outcome(item, "skipped", problems=[("skipped", commit)])
        elif pool is None:
            yield prepare_commit(
                item, commit, render_commit(commit), analyzer, max_chars, source.embed_diffs
            )
        else:
            batch.append((item, commit))
            if len(batch) == POOL_BATCH:
                pending.append(pool.submit(prepare_in_worker, batch, max_chars, source.embed_diffs))
                batch = []
                while len(pending) > IN_FLIGHT:
                    yield from pending.popleft().result()
    if batch and pool is not None:
        pending.append(pool.submit(prepare_in_worker, batch, max_chars, source.embed_diffs))
    while pending:
        yield from pending.popleft().result()
    for item in by_hash.values():  # the reader never answered for these
        yield Outcome(item, "skipped", problems=[("skipped", "git did not return this commit")])


def prepare_in_worker(
    batch: list[tuple[FoundFile, Commit]], max_chars: int, embed_diffs: bool
) -> list[Outcome]:
    """:func:`prepare_commit` for a batch, in a worker process."""
    analyzer = worker_analyzer()
    return [
        prepare_commit(f, c, render_commit(c), analyzer, max_chars, embed_diffs) for f, c in batch
    ]


def prepare_commit(
    found: FoundFile,
    commit: Commit,
    rendered: RenderedCommit,
    analyzer: Analyzer,
    max_chars: int,
    embed_diffs: bool,
) -> Outcome:
    """The rows of one commit (see the module docstring). Without ``embed_diffs`` the hunks'
    chunks get no embedding key: only the message, the file lists and the added pages' name
    rows are embedded."""
    doc_id = f"{found.root}/{found.path}"
    subject = commit.subject.strip() or "(no subject)"
    lines = rendered.text.split("\n")
    chunks: list[Chunk] = []
    fields: list[tuple[str, str]] = []  # (headings, body) per chunk, analyzed below
    names: dict[int, tuple[str, str]] = {}  # chunk ordinal -> (title, alias) of a name row
    hunks: set[int] = set()  # ordinals of the chunks that hold a file's changed lines

    start, end = rendered.message
    body = commit.body.strip()
    for piece, (a, b) in _pieces(body or subject, start, end, max_chars):
        chunks.append(_chunk(doc_id, len(chunks), (subject,), a, b, piece))
        # A subject alone is the title already: counted twice it would outweigh a body.
        fields.append((subject, piece if body else ""))

    listed: list[FileSection] = []
    carried = len(commit.parents) > 1
    for section in rendered.files:
        if not section.hunks:
            listed.append(section)
            continue
        change = section.change
        paths = [change.path] + ([change.old_path] if change.old_path else [])
        if change.status == "added" and not (carried or commit.grafted):
            # The added file's name row, just before its hunks (see _added_name).
            names[len(chunks)] = _added_name(change)
            at = section.heading_line
            chunks.append(_chunk(doc_id, len(chunks), (change.path,), at, at, lines[at - 1]))
            fields.append((change.path, ""))
        for text, (a, b) in _file_pieces(section, lines, max_chars):
            hunks.add(len(chunks))
            chunks.append(_chunk(doc_id, len(chunks), (change.path,), a, b, text))
            # A merge's hunk keeps no keyword terms at all: with only its path left, a short
            # row matched a page's name better than the commit that wrote the page.
            fields.append(("", "") if carried else (" ".join(paths), _changed_lines(text)))
    # Changes without hunks (renames, binary files, files past the diff bound) are one line
    # each, grouped: a commit touching a thousand files is not a thousand chunks.
    for group in _listed_groups(listed, max_chars):
        text = "\n".join(_summary(s.change) for s in group)
        heading = (group[0].change.path,) if len(group) == 1 else (FILES_HEADING,)
        paths = [n for s in group for n in (s.change.path, s.change.old_path) if n]
        line_range = (group[0].heading_line, group[-1].heading_line)
        chunks.append(_chunk(doc_id, len(chunks), heading, *line_range, text))
        fields.append((" ".join(paths), text))

    who = [commit.author, commit.author_email, commit.hash[:SHORT], commit.hash]
    if commit.committer and commit.committer != commit.author:
        who.append(commit.committer)
    title_terms = analyzer.text(subject)
    alias_terms = analyzer.texts(who)
    indexed = []
    for c, (heads, text) in zip(chunks, fields, strict=True):
        title, aliases, shown = title_terms, alias_terms, c.text
        if c.ordinal in names:
            page, file_name = names[c.ordinal]
            title = analyzer.text(page)
            aliases = f"{alias_terms} {analyzer.text(file_name)}"
            shown = f"{c.text}\n{page}"
        indexed.append(
            IndexedChunk(
                c,
                (title, aliases, analyzer.text(heads), "", *analyzer.split_terms(text)),
                ""
                if c.ordinal in hunks and not embed_diffs
                else embedding_key(embedding_input(subject, found.path, c.heading_path, shown)),
            )
        )
    record = FileRecord(
        root=found.root,
        path=found.path,
        doc_id=doc_id,
        title=subject,
        mtime_ns=found.mtime_ns,
        size=found.size,
        content_hash=hashlib.blake2b(rendered.text.encode("utf-8"), digest_size=16).hexdigest(),
        modified=commit.authored,
        aliases=[commit.hash[:SHORT]],
        frontmatter=commit_fields(commit),
        parser=PARSER,
    )
    # A partial clone's commit whose blobs are absent is indexed by its message and files,
    # and the problem list (status, the index report) says its diff is missing and why.
    problems = [("warning", commit.diff_unread)] if commit.diff_unread else []
    return Outcome(
        found,
        "prepared",
        record.content_hash,
        PreparedFile(record, indexed, []),
        problems=problems,
    )


def commit_fields(commit: Commit) -> dict[str, object]:
    """What a commit's document records besides its text: read by the author and changed-file
    filters, by results, and by "last changed" of the documents it touched."""
    files: list[str] = []
    for change in commit.files:
        files.append(change.path)
        if change.old_path and change.old_path != change.path:
            files.append(change.old_path)
    return {
        "commit": commit.hash,
        "author": commit.author,
        "author_email": commit.author_email,
        "authored": _iso(commit.authored),
        "committer": commit.committer,
        "committer_email": commit.committer_email,
        "committed": _iso(commit.committed),
        "parents": list(commit.parents),
        "files": files,
        "changes": [_change_fields(c) for c in commit.files],
        "files_omitted": commit.files_omitted,
        "insertions": commit.insertions,
        "deletions": commit.deletions,
        "diff_truncated": commit.diff_truncated,
        "grafted": commit.grafted,
    }


def _change_fields(change: FileChange) -> dict[str, object]:
    out: dict[str, object] = {
        "path": change.path,
        "status": change.status,
        "added": change.added,
        "removed": change.removed,
    }
    if change.old_path:
        out["old_path"] = change.old_path
    if change.binary:
        out["binary"] = True
    return out


def _iso(when: float) -> str:
    return datetime.fromtimestamp(when, UTC).isoformat().replace("+00:00", "Z")


def chunk_id(doc_id: str, ordinal: int) -> str:
    """A commit chunk's id: commits never change, so the position identifies a chunk."""
    key = f"{doc_id}\x1f{ordinal}"
    return hashlib.blake2b(key.encode("utf-8", "surrogatepass"), digest_size=8).hexdigest()


def message_chunk_id(doc_id: str) -> str:
    """The id of a commit's first chunk: its message (subject and body)."""
    return chunk_id(doc_id, 0)


def _chunk(
    doc_id: str, ordinal: int, heading_path: tuple[str, ...], start: int, end: int, text: str
) -> Chunk:
    return Chunk(
        chunk_id=chunk_id(doc_id, ordinal),
        ordinal=ordinal,
        heading_path=heading_path,
        start_line=start,
        end_line=max(start, end),
        text=text,
        prose=text,
        code="",
        content_hash=hashlib.blake2b(
            text.encode("utf-8", "surrogatepass"), digest_size=16
        ).hexdigest(),
    )


def _pieces(text: str, start: int, end: int, max_chars: int) -> list[tuple[str, tuple[int, int]]]:
    """``text`` (the message) cut at line ends into pieces of at most ``max_chars`` (a longer
    line is one piece), each pointing at the whole message: a message is short, and a result
    in a long one opens at its start."""
    if len(text) <= max_chars:
        return [(text, (start, end))]
    out: list[tuple[str, tuple[int, int]]] = []
    for piece in _split_lines(text.split("\n"), max_chars):
        out.append(("\n".join(piece), (start, end)))
    return out


def _file_pieces(
    section: FileSection, lines: Sequence[str], max_chars: int
) -> list[tuple[str, tuple[int, int]]]:
    """A file's hunks grouped within ``max_chars`` (a bigger hunk cut at line ends), with the
    lines of the rendered text each group spans."""
    out: list[tuple[str, tuple[int, int]]] = []
    group: list[tuple[int, int]] = []
    size = 0
    for a, b in section.hunks:
        length = sum(len(line) + 1 for line in lines[a - 1 : b])
        if group and size + length > max_chars:
            out.append(_group(group, lines))
            group, size = [], 0
        if length > max_chars:
            out.extend(_cut(a, b, lines, max_chars))
            continue
        group.append((a, b))
        size += length
    if group:
        out.append(_group(group, lines))
    return out


def _listed_groups(sections: list[FileSection], max_chars: int) -> list[list[FileSection]]:
    groups: list[list[FileSection]] = []
    size = 0
    for section in sections:
        length = len(_summary(section.change)) + 1
        if groups and size + length <= max_chars:
            groups[-1].append(section)
            size += length
        else:
            groups.append([section])
            size = length
    return groups


def _group(spans: list[tuple[int, int]], lines: Sequence[str]) -> tuple[str, tuple[int, int]]:
    text = "\n".join(line for a, b in spans for line in lines[a - 1 : b])
    return text, (spans[0][0], spans[-1][1])


def _cut(a: int, b: int, lines: Sequence[str], max_chars: int) -> list[tuple[str, tuple[int, int]]]:
    """Lines ``a``..``b`` in pieces of at most ``max_chars`` (a longer line is one piece)."""
    out: list[tuple[str, tuple[int, int]]] = []
    at = a
    for piece in _split_lines(list(lines[a - 1 : b]), max_chars):
        out.append(("\n".join(piece), (at, at + len(piece) - 1)))
        at += len(piece)
    return out


def _split_lines(lines: Sequence[str], max_chars: int) -> list[list[str]]:
    out: list[list[str]] = []
    piece: list[str] = []
    size = 0
    for line in lines:
        if piece and size + len(line) + 1 > max_chars:
            out.append(piece)
            piece, size = [], 0
        piece.append(line)
        size += len(line) + 1
    if piece:
        out.append(piece)
    return out


def _summary(change: FileChange) -> str:
    """The one line a change without hunks is found by."""
    what = change.status
    if change.old_path and change.old_path != change.path:
        what += f" from {change.old_path}"
    if change.binary:
        what = f"binary, {what}"
    return f"{change.path} ({what})"


def _changed_lines(text: str) -> str:
    """The added and removed lines of diff text, without their markers (context lines and
    hunk headers say nothing about what the commit did).

    The line git names after a hunk header is context too: in a Markdown note without a diff
    driver it is the last line above the hunk that starts with a letter, often the note's
    ``title:``, so every later edit of a note matched its title as strongly as the commit
    that wrote it (issue 34: the added-page set)."""
    out = []
    for line in text.split("\n"):
        if line[:1] in "+-" and line[:1] and not line.startswith(("+++ ", "--- ")):
            out.append(line[1:])
    return "\n".join(out) or text


MARKDOWN = (".md", ".markdown", ".mdx")
TITLE_LINES = 60
"""Lines of an added Markdown file looked at for its title (frontmatter or first heading)."""


def _added_name(change: FileChange) -> tuple[str, str]:
    """The (title, file name) a commit that added ``change`` is found by, in its name row.

    The file's hunk is the whole new file, so its chunks are long rows, and BM25 ranked them
    below any short row naming the file: a later edit's hunk (its path), a subject mentioning
    the page. So each file a commit adds gets one more, short row, indexed as a note is named:
    title = the page's title (frontmatter ``title:``, else its first ``# `` heading, else the
    file name), aliases = the file name without its extension. It points at the file's
    heading line ("## `path` (added, ...)"). Only the commit that adds a path has it (not
    its later edits, not a merge that carried it in, not a shallow clone's boundary commit
    that shows every file as added): "which commit added the page on X" (issue 34)."""
    file_name = change.path.rsplit("/", 1)[-1]
    stem = file_name.rsplit(".", 1)[0] if "." in file_name[1:] else file_name
    title = ""
    if change.hunks and file_name.lower().endswith(MARKDOWN):
        title = _markdown_title(change.hunks[0])
    return title or stem, stem


def _markdown_title(hunk: str) -> str:
    """A new Markdown file's title from its first hunk (all added lines): frontmatter
    ``title:``, else the first level-one heading."""
    head = [line[1:] for line in hunk.split("\n")[1:TITLE_LINES] if line[:1] == "+"]
    if head and head[0].strip() == "---":
        for line in head[1:]:
            if line.strip() in ("---", "..."):
                break
            if line.startswith("title:"):
                value = line[6:].strip()
                if len(value) > 1 and value[0] == value[-1] and value[0] in "'\"":
                    value = value[1:-1]
                if value:
                    return value.strip()
    for line in head:
        if line.startswith("# "):
            return line[2:].strip().rstrip("#").strip()
    return ""
