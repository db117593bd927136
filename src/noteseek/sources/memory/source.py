"""The memory source: an agent's memory folder, read as memsearch, OpenClaw and
mcp-markdown-ragdocs lay it out.

* ``MEMORY.md``: long-lived facts;
* ``memory/YYYY-MM-DD.md``: daily logs, appended to during the day;
* any other Markdown file: one memory, with frontmatter ``type``, ``status``, ``tags``,
  ``created_at`` (see :mod:`noteseek.sources.memory.folder`, which writes them);
* ``.trash/``: deleted memories, kept for ``restore`` and never indexed.

It is a files source with the rules a memory folder needs: hidden files and folders (the
trash, lock and temporary files) are never read, symbolic links are not followed (a memory
folder holds what agents wrote, nothing it links to), and a folder that does not exist yet is
simply empty: it is created by the first write.
"""

from __future__ import annotations

import os
from collections.abc import Iterable
from dataclasses import replace

from noteseek.config import RootConfig
from noteseek.sources.base import PathScan, ScanResult, SourceContext
from noteseek.sources.folder import FolderSource


class MemorySource(FolderSource):
    """A root of kind ``memory``."""

    def __init__(self, name: str, root: RootConfig, context: SourceContext) -> None:
        super().__init__(name, root, context)
        self.rules = replace(
            self.rules,
            include_hidden=False,
            follow_symlinks=False,
            follow_symlinks_outside=False,
            exclude=[*self.rules.exclude, ".trash/"],
        )

    def _absent(self) -> bool:
        return not os.path.lexists(self.folder)

    def scan(self) -> ScanResult:
        if self._absent():
            return ScanResult()
        return super().scan()

    def scan_paths(self, rels: Iterable[str]) -> PathScan:
        if self._absent():
            return PathScan(gone=sorted(set(rels)))
        return super().scan_paths(rels)
