"""The files kind: the documents under a folder, a root's Markdown style detected from them.

Its source is the generic folder walk (:class:`~noteseek.sources.folder.FolderSource`); what
makes it a kind is its spec: it answers the ``docs`` scope with the index's own ranking, its
documents join the link graph, and its roots' styles (notes, docs, Logseq, Dendron) are
detected from their files.
"""

from __future__ import annotations

from noteseek.sources.spec import KindSpec, lazy_source

FILES_KIND = "files"


SPEC = KindSpec(FILES_KIND, lazy_source("noteseek.sources.folder:FolderSource"), detects_style=True)
