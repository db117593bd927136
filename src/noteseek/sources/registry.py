"""Which source implementation serves a root's ``kind``.

A kind is registered once with a factory (``files``, ``memory`` and ``git`` are built in); a root of
an unknown kind is a configuration error naming the kinds there are. Registering is all
another kind needs: the indexer and the engine only ever see the
:class:`~noteseek.sources.base.Source` protocol.
"""

from __future__ import annotations

from collections.abc import Callable

from noteseek.config import ConfigError, RootConfig
from noteseek.sources.base import Source, SourceContext
from noteseek.sources.files import FilesSource
from noteseek.sources.git import GIT_KIND, GitSource
from noteseek.sources.memory import MEMORY_KIND, MemorySource

SourceFactory = Callable[[str, RootConfig, SourceContext], Source]
"""factory(root name, root settings, context) -> the root's source."""

_BUILTIN: dict[str, SourceFactory] = {
    "files": FilesSource,
    MEMORY_KIND: MemorySource,
    GIT_KIND: GitSource,
}
_FACTORIES: dict[str, SourceFactory] = dict(_BUILTIN)


def register_source(kind: str, factory: SourceFactory) -> None:
    """Make roots of ``kind`` use ``factory``; a kind already registered is refused."""
    if kind in _FACTORIES:
        raise ValueError(f"source kind {kind!r} is already registered")
    _FACTORIES[kind] = factory


def unregister_source(kind: str) -> None:
    """Forget ``kind`` (tests register their own kinds); the built-in kinds stay."""
    if kind not in _BUILTIN:
        _FACTORIES.pop(kind, None)


def known_kinds() -> list[str]:
    return sorted(_FACTORIES)


def open_source(name: str, root: RootConfig, context: SourceContext) -> Source:
    """The source of root ``name``; ConfigError when its kind is not registered."""
    factory = _FACTORIES.get(root.kind)
    if factory is None:
        raise ConfigError(
            f"root {name!r} has kind {root.kind!r}; the known kinds are {', '.join(known_kinds())}"
        )
    return factory(name, root, context)
