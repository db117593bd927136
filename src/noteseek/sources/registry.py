"""The registered source kinds: a root's ``kind`` names a :class:`~noteseek.sources.spec.KindSpec`.

``files``, ``memory`` and ``git`` are built in (each a package under ``sources/`` with its
spec in ``__init__.py``); another kind is one :func:`register_kind`, or, from an installed
package, one entry point in the group ``noteseek.kinds`` naming its spec
(``tickets = "my_package.kind:SPEC"``). Entry points are looked for only when a name is not
registered (reading every installed package's metadata costs a start a fraction of a
second), so a run that uses only the built-in kinds never pays for it. A root of an unknown
kind is a configuration error naming the kinds there are. The rest of noteseek asks a kind's spec
(:func:`spec_of`, :func:`kinds_in_scope`, :func:`shared_profile`), never its name.
"""

from __future__ import annotations

import logging
from collections.abc import Iterable

from noteseek.config import ConfigError, RootConfig
from noteseek.sources.base import Source, SourceContext
from noteseek.sources.files import SPEC as FILES
from noteseek.sources.git import SPEC as GIT
from noteseek.sources.memory import SPEC as MEMORY
from noteseek.sources.spec import (
    ALL_SCOPE,
    DEFAULT_PROFILE,
    DOCS_SCOPE,
    KindSpec,
    Profile,
    SourceFactory,
)

DEFAULT_KIND = FILES.name
"""The kind of a root that names none."""
_BUILTIN: dict[str, KindSpec] = {spec.name: spec for spec in (FILES, MEMORY, GIT)}
_SPECS: dict[str, KindSpec] = dict(_BUILTIN)
ENTRY_POINTS = "noteseek.kinds"
"""The entry-point group installed packages register their kinds' specs in."""
_plugins_loaded = False
log = logging.getLogger(__name__)


def load_plugins() -> None:
    """Register the kinds installed packages declare (``noteseek.kinds`` entry points), once.
    A plugin that fails to load is logged and left out: it never stops the built-in kinds."""
    global _plugins_loaded
    if _plugins_loaded:
        return
    _plugins_loaded = True
    from importlib.metadata import entry_points

    for point in entry_points(group=ENTRY_POINTS):
        try:
            spec = point.load()
            if callable(spec) and not isinstance(spec, KindSpec):
                spec = spec()
            if not isinstance(spec, KindSpec):
                raise TypeError(f"{point.value} is not a KindSpec")
        except Exception as exc:  # a broken plugin is reported, never fatal
            log.warning("source kind plugin %s could not be loaded: %s", point.name, exc)
            continue
        if spec.name not in _SPECS:
            _SPECS[spec.name] = spec


def register_kind(spec: KindSpec) -> None:
    """Make roots of ``spec.name`` use ``spec``; a kind already registered is refused."""
    if spec.name in _SPECS:
        raise ValueError(f"source kind {spec.name!r} is already registered")
    _SPECS[spec.name] = spec


def register_source(kind: str, factory: SourceFactory) -> None:
    """Register a kind that differs from plain documents only by where they come from."""
    register_kind(KindSpec(kind, factory))


def unregister_kind(kind: str) -> None:
    """Forget ``kind`` (tests register their own kinds); the built-in kinds stay."""
    if kind not in _BUILTIN:
        _SPECS.pop(kind, None)


unregister_source = unregister_kind


def known_kinds() -> list[str]:
    load_plugins()
    return sorted(_SPECS)


def spec_of(kind: str | None) -> KindSpec:
    """The spec of ``kind``; a kind no longer registered (an index written with a plugin
    since removed) reads as plain documents, so its rows can still be searched and deleted."""
    found = _SPECS.get(kind or DEFAULT_KIND)
    if found is None:
        load_plugins()
        found = _SPECS.get(kind or DEFAULT_KIND)
    return found or _SPECS[DEFAULT_KIND]


def specs() -> list[KindSpec]:
    """Every registered kind's spec, by name."""
    return [_SPECS[k] for k in sorted(_SPECS)]


def scopes() -> list[str]:
    """The search scopes (``docs`` first, ``all`` last): what ``--source`` accepts."""
    named = {spec.scope for spec in _SPECS.values()} - {DOCS_SCOPE}
    return [DOCS_SCOPE, *sorted(named), ALL_SCOPE]


def kinds_in_scope(scope: str) -> list[str]:
    """The kinds whose documents a search of ``scope`` looks in (every kind for ``all``).
    Raises ValueError naming the scopes for an unknown one."""
    known = scopes()
    if scope not in known:
        load_plugins()
        known = scopes()
    if scope not in known:
        raise ValueError(f"source must be one of {', '.join(known)}, got {scope!r}")
    return sorted(k for k, s in _SPECS.items() if scope == ALL_SCOPE or s.scope == scope)


def scope_operation(scope: str) -> str | None:
    """The operation that answers a search of ``scope`` with its kinds' own unit (every kind
    of the scope naming the same one), if any; a scope that mixes kinds (``all``) has none."""
    named = {_SPECS[k].search_operation for k in kinds_in_scope(scope)}
    return named.pop() if len(named) == 1 else None


def ensure_known(kinds: Iterable[str]) -> None:
    """Register the installed plugins when any of ``kinds`` (read from an index) is not
    registered yet: the one place a kind met in data, not in a setting, is looked for."""
    if any(kind not in _SPECS for kind in kinds):
        load_plugins()


def shared_profile(profiles: Iterable[Profile]) -> Profile:
    """The profile of a search's kinds when they agree, else the index's own (a search of
    every scope mixes kinds)."""
    distinct = set(profiles)
    return distinct.pop() if len(distinct) == 1 else DEFAULT_PROFILE


def open_source(name: str, root: RootConfig, context: SourceContext) -> Source:
    """The source of root ``name``; ConfigError when its kind is not registered."""
    spec = _SPECS.get(root.kind)
    if spec is None:
        load_plugins()
        spec = _SPECS.get(root.kind)
    if spec is None:
        raise ConfigError(
            f"root {name!r} has kind {root.kind!r}; the known kinds are {', '.join(known_kinds())}"
        )
    return spec.open(name, root, context)
