"""The built-in parsers' versions, known without loading markdown-it (or the parsers).

The index manifest records every parser's version (a tokenizer upgrade can move block
boundaries, so a new version rebuilds the index). Every index run compares the manifest, and
most runs parse nothing (an unchanged re-index): they read markdown-it-py's version from its
package metadata instead of importing it (35 ms of a 0.9 s run on the 14k-page corpus).
"""

from __future__ import annotations

from importlib.metadata import version

MARKDOWN_NAME = "markdown"
MARKDOWN_FORMAT = "3"
"""Bump when noteseek's reading of markdown-it's tokens changes what is indexed."""
MARKDOWN_VERSION = f"{MARKDOWN_FORMAT}+markdown-it-py.{version('markdown-it-py')}"
STYLES_VERSION = "1"
"""Bump when a note style (``parse/conventions.py``) would title or parse a note differently."""
LOGSEQ_VERSION = "1"
"""Bump when a Logseq page (``parse/logseq.py``) would parse differently."""
