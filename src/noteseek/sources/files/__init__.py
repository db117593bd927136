"""The files kind: the documents under a folder, a root's Markdown style detected from them.

Its source is the generic folder walk (:class:`~noteseek.sources.folder.FolderSource`); what
makes it a kind is its spec: it answers the ``docs`` scope with the index's own ranking, its
documents join the link graph, and its roots' styles (notes, docs, Logseq, Dendron) are
detected from their files.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from noteseek.config import RootConfig
from noteseek.sources.spec import KindSpec

if TYPE_CHECKING:
    from noteseek.sources.base import Source, SourceContext

FILES_KIND = "files"


def _open(name: str, root: RootConfig, context: SourceContext) -> Source:
    from noteseek.sources.folder import FolderSource

    return FolderSource(name, root, context)


SPEC = KindSpec(FILES_KIND, _open, detects_style=True)
