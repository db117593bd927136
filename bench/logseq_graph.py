"""What an index makes of a Logseq graph: titles, fields, journals, links, chunks.

    .venv/bin/python bench/logseq_graph.py [GRAPH]      (default: ../shared/data/vaults/logseq-docs)

Indexes the graph keyword-only into a temporary folder (the root's style as ``auto`` detects
it) and prints one JSON line: files, chunks, titles still holding a file-name escape (``___``,
``%2F``), namespaced titles, journals and those with a ``date`` field, files with a ``type``
field (a page property), files with aliases, and the link graph's links and how many resolve
to a page.
"""

from __future__ import annotations

import json
import sys
import tempfile
from pathlib import Path

from noteseek.engine import open_engine

REPO = Path(__file__).resolve().parent.parent
DEFAULT_GRAPH = REPO.parent / "shared" / "data" / "vaults" / "logseq-docs"


def main() -> int:
    graph = Path(sys.argv[1] if len(sys.argv) > 1 else DEFAULT_GRAPH).resolve()
    with tempfile.TemporaryDirectory() as tmp:
        (Path(tmp) / ".noteseek.toml").write_text(f'[roots.ls]\npath = "{graph}"\n')
        with open_engine(Path(tmp), flags={"embedding.enabled": False}, environ={}) as engine:
            engine.index()
            files = list(engine.store.iter_files("ls"))
            edges = engine.link_graph().edges
            journals = [f for f in files if f.path.startswith("journals/")]
            chunks = sum(len(engine.store.file_chunk_rowids(f.file_id)) for f in files)
            print(
                json.dumps(
                    {
                        "files": len(files),
                        "chunks": chunks,
                        "titles_with_escapes": sum(
                            "___" in f.title or "%2F" in f.title for f in files
                        ),
                        "namespaced_titles": sum("/" in f.title for f in files),
                        "journals": len(journals),
                        "journals_dated": sum("date" in f.frontmatter for f in journals),
                        "with_type_field": sum("type" in f.frontmatter for f in files),
                        "with_aliases": sum(bool(f.aliases) for f in files),
                        "links": len(edges),
                        "links_resolved": sum(not e.target.startswith("?") for e in edges),
                    }
                )
            )
    return 0


if __name__ == "__main__":
    sys.exit(main())
