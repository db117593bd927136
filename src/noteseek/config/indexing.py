"""Settings for what is indexed: the roots, the index itself, chunking and text analysis."""

from __future__ import annotations

import re
from typing import Literal

from pydantic import Field, field_validator

from noteseek.config.base import Section

# A kind names a source implementation; which kinds exist is the source registry's business
# (noteseek.sources), so config only checks the spelling and never imports it.
_KIND = re.compile(r"[a-z][a-z0-9_-]*")


class RootConfig(Section):
    """One named place documents come from (``[roots.NAME]``)."""

    path: str = Field(
        description="Folder to index (~ and relative paths allowed; a relative path is "
        "relative to the file that sets it)."
    )
    kind: str = Field(
        default="files",
        description="Where the root's documents come from: files = the Markdown and text "
        "files under path; memory = an agent memory folder (MEMORY.md, memory/YYYY-MM-DD.md "
        "daily logs, one file per memory), searched apart from documents.",
    )
    style: Literal["auto", "notes", "docs", "logseq", "dendron"] = Field(
        default="auto",
        description="How the root's notes are written, which decides their titles: notes = "
        "a note vault (Obsidian, Foam): the title is the frontmatter title, else the file "
        "name; docs = a documentation tree: the frontmatter title, else a leading H1, else "
        "the file name; logseq = a Logseq graph (page properties, outlines, namespaces, "
        "journals); dendron = a Dendron vault (a.b.c.md). auto = detected from the folder "
        "(.obsidian/, logseq/config.edn or pages/ with journals/, dendron.yml, wikilinks).",
    )
    include: list[str] = Field(
        default_factory=lambda: ["*.md", "*.markdown", "*.txt"],
        description="gitignore-style patterns of files to index.",
    )
    exclude: list[str] = Field(
        default_factory=list, description="gitignore-style patterns of files to skip."
    )

    @field_validator("kind")
    @classmethod
    def _kind_spelling(cls, value: str) -> str:
        if not _KIND.fullmatch(value):
            raise ValueError(
                f"root kind {value!r} must be a lowercase name (letters, digits, '_', '-'), "
                "such as 'files'"
            )
        return value


class IndexSettings(Section):
    dir: str | None = Field(
        default=None,
        description="Index folder. Default: .noteseek/ beside the project file, else the "
        "user data dir keyed by the roots.",
        examples=[".noteseek"],
    )
    max_file_size: int = Field(
        default=5_000_000, ge=1, description="Files larger than this (bytes) are skipped."
    )
    include_hidden: bool = Field(
        default=False, description="Also index hidden files and folders (names starting '.')."
    )
    gitignore: bool = Field(default=True, description="Honour .gitignore files inside roots.")
    follow_symlinks: bool = Field(
        default=True,
        description="Follow symbolic links whose target is inside their root (loops, "
        "duplicates and broken links are reported, not followed).",
    )
    follow_symlinks_outside: bool = Field(
        default=False,
        description="Also follow symbolic links that lead outside their root (off: such "
        "links are reported and never read, by the walk or by any door).",
    )
    max_depth: int = Field(
        default=64,
        ge=1,
        description="Deepest folder level walked below a root; deeper folders are reported "
        "and not entered.",
    )
    max_entries: int = Field(
        default=200_000,
        ge=1,
        description="Most folder entries (files and folders, skipped ones too) one walk of a "
        "root examines; past it the walk stops with a problem and keeps what was indexed from "
        "the folders it did not walk.",
    )
    workers: int = Field(
        default=0,
        ge=0,
        description="Processes that parse files; 0 = one per CPU core for large runs.",
    )


class ChunkingSettings(Section):
    max_chars: int = Field(
        default=900,
        ge=200,
        le=20_000,
        description="Largest chunk in characters (sized for a 256-token embedding model).",
    )
    merge_small: bool = Field(
        default=True,
        description="Merge sections shorter than small_chars with their neighbours under the "
        "same parent, up to max_chars: fewer chunks to embed. The merged chunk keeps the "
        "lines it covers and its sections' headings (memory roots are never merged).",
    )
    small_chars: int = Field(
        default=300,
        ge=1,
        le=20_000,
        description="A section shorter than this (characters) is small (see merge_small).",
    )

    @property
    def merge_below(self) -> int:
        """Sections shorter than this are merged with their neighbours; 0 = never."""
        return self.small_chars if self.merge_small else 0


class AnalysisSettings(Section):
    language: str = Field(default="english", description="Snowball stemmer language.")
    stopwords: bool = Field(
        default=True,
        description="Drop the 33 classic English stop words (measured: +0.006 nDCG@10 on "
        "hugo-docs-kis, -0.001 on scifact-dev, and faster queries).",
    )
