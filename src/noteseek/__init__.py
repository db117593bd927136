"""noteseek: local-first search over Markdown notes, docs and agent memory.

The library API is :class:`Engine` (open one with :func:`open_engine`); the CLI, and later the
MCP server and HTTP API, are thin layers over it.
"""

from noteseek.config import ConfigError, LoadedConfig, Settings, load_settings
from noteseek.engine import Ambiguous, Engine, GetResult, NotFound, SearchResponse, open_engine
from noteseek.indexing.indexer import IndexReport
from noteseek.types import Chunk, Hit, Link, ParsedDocument

__version__ = "0.1.0"

__all__ = [
    "Ambiguous",
    "Chunk",
    "ConfigError",
    "Engine",
    "GetResult",
    "Hit",
    "IndexReport",
    "Link",
    "LoadedConfig",
    "NotFound",
    "ParsedDocument",
    "SearchResponse",
    "Settings",
    "__version__",
    "load_settings",
    "open_engine",
]
