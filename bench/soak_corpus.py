"""The soak's working copy of a corpus: seeded random edits, and what the index holds of it.

The editor changes files the way people and sync tools do: appends and rewrites (in place or
through a temporary file renamed over the note), new notes that link to old ones, deletions
and renames (the content unchanged, so the index can recognise the move by its hash). Files
in ``protected`` are never touched, so a reader can keep asking for them and expect a 200.

``snapshot`` reads an index file read-only with plain sqlite3, outside noteseek, so a bug in
noteseek's own reading cannot hide a bug in its writing.
"""

from __future__ import annotations

import hashlib
import random
import shutil
import sqlite3
import string
from collections import Counter
from dataclasses import dataclass
from pathlib import Path

import pathspec

ROOT = "docs"  # the name of the copy's root in the soak's project files
NOTE_SUFFIXES = {".md", ".markdown", ".txt"}  # the default include globs
# Words of the corpus's own subject, so edits read like the notes around them.
_WORDS = (
    "page site template content front matter render build server theme layout shortcode "
    "menu taxonomy partial function image resource module config output format archetype "
    "section bundle language translation deploy cache minify asset pipeline markdown"
)
FILLER = _WORDS.split()


class Corpus:
    """A folder of notes under random edits (every choice drawn from ``rng``)."""

    def __init__(self, root: Path, rng: random.Random, protected: frozenset[str] = frozenset()):
        self.root = root
        self.rng = rng
        self.protected = protected
        self.ops: Counter[str] = Counter()
        self._made = 0
        self.last_word = ""
        # The notes as the editor left them, kept up to date by its own changes, so a change
        # does not walk the whole folder (the editor runs ten times a second under load).
        self._files = set(self.on_disk())

    @classmethod
    def copy(cls, source: Path, dest: Path, rng: random.Random) -> Corpus:
        shutil.copytree(source, dest)
        return cls(dest, rng)

    def on_disk(self) -> list[str]:
        """Every note on disk as the index names it: the POSIX path under the root of each
        file the default settings index (``*.md``, ``*.markdown``, ``*.txt``; hidden files
        and folders and what the root's ``.gitignore`` names left out)."""
        ignore = self.root / ".gitignore"
        spec = pathspec.GitIgnoreSpec.from_lines(
            ignore.read_text(encoding="utf-8").splitlines() if ignore.is_file() else []
        )
        found = []
        for p in self.root.rglob("*"):
            rel = p.relative_to(self.root)
            if (
                p.suffix in NOTE_SUFFIXES
                and p.is_file()
                and not any(part.startswith(".") for part in rel.parts)
                and not spec.match_file(rel.as_posix())
            ):
                found.append(rel.as_posix())
        return sorted(found)

    def files(self) -> list[str]:
        return sorted(self._files)

    def state(self) -> dict[str, str]:
        """path -> content hash of every note on disk, computed as noteseek's indexer does
        (BLAKE2b, 16 bytes)."""
        return {
            path: hashlib.blake2b((self.root / path).read_bytes(), digest_size=16).hexdigest()
            for path in self.on_disk()
        }

    def unique_word(self) -> str:
        """A word no note holds: letters only, so the analyzer keeps it whole."""
        self._made += 1
        n, letters = self._made, ""
        while n:
            n, digit = divmod(n, 26)
            letters += string.ascii_lowercase[digit]
        tail = "".join(self.rng.choice(string.ascii_lowercase) for _ in range(4))
        self.last_word = f"soakq{letters}z{tail}"
        return self.last_word

    def _sentence(self) -> str:
        words = [self.rng.choice(FILLER) for _ in range(self.rng.randint(6, 16))]
        return " ".join(words).capitalize() + f" {self.unique_word()}."

    def _mutable(self) -> list[str]:
        return [p for p in self.files() if p not in self.protected]

    def edit(self, path: str) -> None:
        target = self.root / path
        text = target.read_text(encoding="utf-8", errors="replace")
        if self.rng.random() < 0.5:
            text += f"\n\n## Soak {self._made}\n\n{self._sentence()}\n"
        else:
            lines = text.splitlines()
            at = self.rng.randrange(len(lines) + 1)
            lines.insert(at, self._sentence())
            text = "\n".join(lines) + "\n"
        if self.rng.random() < 0.5:
            # Saved the way editors and sync tools save: a hidden temporary file renamed over
            # the note, so a reader never sees half of it.
            tmp = target.with_name(f".{target.name}.soak-tmp")
            tmp.write_text(text, encoding="utf-8")
            tmp.replace(target)
        else:
            target.write_text(text, encoding="utf-8")

    def add(self) -> str:
        folders = sorted({str(Path(p).parent) for p in self.files()}) or ["."]
        folder = self.rng.choice(folders)
        path = (Path(folder) / f"soak-{self._made + 1}-{self.rng.randrange(10**6)}.md").as_posix()
        others = self.files()
        link = f"[[{Path(self.rng.choice(others)).stem}]]" if others else ""
        word = self.unique_word()
        body = f"---\ntitle: Soak note {word}\n---\n\n# Soak note\n\n{self._sentence()} {link}\n"
        (self.root / path).parent.mkdir(parents=True, exist_ok=True)
        (self.root / path).write_text(body, encoding="utf-8")
        self._files.add(path)
        return path

    def delete(self, path: str) -> None:
        (self.root / path).unlink()
        self._files.discard(path)

    def rename(self, path: str) -> str:
        folders = sorted({str(Path(p).parent) for p in self.files()})
        new = (Path(self.rng.choice(folders)) / f"moved-{self.rng.randrange(10**6)}.md").as_posix()
        if (self.root / new).exists():
            return path
        (self.root / path).rename(self.root / new)
        self._files.discard(path)
        self._files.add(new)
        return new

    def random_edit(self) -> str:
        """One random change; returns its kind."""
        mutable = self._mutable()
        kind = self.rng.choices(["edit", "add", "delete", "rename"], [45, 20, 15, 20])[0]
        if kind != "add" and len(mutable) < 10:
            kind = "add"
        if kind == "add":
            self.add()
        else:
            path = self.rng.choice(mutable)
            {"edit": self.edit, "delete": self.delete, "rename": self.rename}[kind](path)
        self.ops[kind] += 1
        return kind

    def bulk_edit(self, count: int) -> int:
        """Edit ``count`` files at once (enough to make the indexer parse in worker
        processes); returns how many."""
        mutable = self._mutable()
        chosen = self.rng.sample(mutable, min(count, len(mutable)))
        for path in chosen:
            self.edit(path)
        self.ops["edit"] += len(chosen)
        self.ops["bulk"] += 1
        return len(chosen)


def make_project(folder: Path, corpus: Path, rng: random.Random, *, embeddings: bool) -> Corpus:
    """A project folder holding a copy of ``corpus`` (``vault/``) as its one root."""
    folder.mkdir(parents=True)
    copy = Corpus.copy(corpus, folder / "vault", rng)
    settings = "" if embeddings else "[embedding]\nenabled = false\n"
    (folder / ".noteseek.toml").write_text(
        f'[roots.{ROOT}]\npath = "vault"\n{settings}', encoding="utf-8"
    )
    return copy


@dataclass
class Snapshot:
    """What one root of an index holds, read straight from its SQLite file."""

    files: dict[str, str]
    chunks: int
    chunks_fts: int
    docs_fts: int
    integrity: str

    @property
    def sound(self) -> bool:
        """The file is intact and the keyword tables hold one row per chunk and document."""
        return (
            self.integrity == "ok"
            and self.chunks == self.chunks_fts
            and len(self.files) <= self.docs_fts
        )


def snapshot(db: Path, root: str) -> Snapshot:
    """Read ``root``'s documents and counts from the index file ``db`` (read-only), and check
    the file and its full-text tables (on an in-memory copy, as FTS5 checks by writing)."""
    source = sqlite3.connect(f"file:{db}?mode=ro", uri=True)
    copy = sqlite3.connect(":memory:")
    try:
        source.backup(copy)
    finally:
        source.close()
    try:
        files = dict(
            copy.execute(
                "SELECT f.path, f.content_hash FROM files f JOIN roots r ON r.id = f.root_id "
                "WHERE r.name = ?",
                (root,),
            ).fetchall()
        )
        problems = [row[0] for row in copy.execute("PRAGMA integrity_check").fetchall()]
        for table in ("chunks_fts", "docs_fts"):
            try:
                copy.execute(f"INSERT INTO {table}({table}) VALUES ('integrity-check')")
            except sqlite3.DatabaseError as exc:
                problems.append(f"{table}: {exc}")
        (chunks,) = copy.execute("SELECT count(*) FROM chunks").fetchone()
        (chunks_fts,) = copy.execute("SELECT count(*) FROM chunks_fts").fetchone()
        (docs_fts,) = copy.execute("SELECT count(*) FROM docs_fts").fetchone()
    finally:
        copy.close()
    integrity = "ok" if problems == ["ok"] else "; ".join(p for p in problems if p != "ok")
    return Snapshot(files, chunks, chunks_fts, docs_fts, integrity)
