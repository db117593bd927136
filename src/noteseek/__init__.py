"""noteseek: local-first search over Markdown notes, docs and agent memory.

The library API is :class:`Engine` (open one with :func:`open_engine`); the CLI, and later the
MCP server and HTTP API, are thin layers over it.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from noteseek.lazy import lazy_exports

__version__ = "0.1.0"

# Public names and the module each lives in; imported on first use, so that importing a part
# of noteseek (the MCP server's start, the CLI's --help) does not pull in all of it.
_EXPORTS = {
    "ConfigError": "noteseek.config",
    "LoadedConfig": "noteseek.config",
    "Settings": "noteseek.config",
    "load_settings": "noteseek.config",
    "Ambiguous": "noteseek.engine",
    "Engine": "noteseek.engine",
    "GetResult": "noteseek.engine",
    "NotFound": "noteseek.engine",
    "SearchResponse": "noteseek.engine",
    "open_engine": "noteseek.engine",
    "Filter": "noteseek.search.ask",
    "SearchRequest": "noteseek.search.ask",
    "IndexReport": "noteseek.indexing.indexer",
    "Chunk": "noteseek.types",
    "Hit": "noteseek.types",
    "Link": "noteseek.types",
    "ParsedDocument": "noteseek.types",
}

if TYPE_CHECKING:
    from noteseek.config import ConfigError, LoadedConfig, Settings, load_settings
    from noteseek.engine import Ambiguous, Engine, GetResult, NotFound, SearchResponse, open_engine
    from noteseek.indexing.indexer import IndexReport
    from noteseek.search.ask import Filter, SearchRequest
    from noteseek.types import Chunk, Hit, Link, ParsedDocument


__getattr__ = lazy_exports(__name__, _EXPORTS, globals())


__all__ = [
    "Ambiguous",
    "Chunk",
    "ConfigError",
    "Engine",
    "Filter",
    "GetResult",
    "Hit",
    "IndexReport",
    "Link",
    "LoadedConfig",
    "NotFound",
    "ParsedDocument",
    "SearchRequest",
    "SearchResponse",
    "Settings",
    "__version__",
    "load_settings",
    "open_engine",
]
