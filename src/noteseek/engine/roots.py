"""The roots of one opened index, and their sources.

A root is configured (``[roots.NAME]``), added by its kind without a setting (the memory
folder: the kind's ``implicit_roots``), remembered from an earlier run here (a root indexed
with ``--root`` and no project file), or discovered from the others (``[git] discover``: the
kind's ``discovered_roots``). Every kind-specific rule comes from the kind's spec
(``sources/spec.py``); nothing here knows a kind by name.

An index opened by its name (``--index NAME``) has the roots it holds and no other: nothing
configured, implicit or discovered is added by opening it (see :meth:`Roots.held`).
"""

from __future__ import annotations

import os
from collections.abc import Callable, Mapping
from pathlib import Path

from noteseek.config import ConfigError, LoadedConfig, RootConfig
from noteseek.sources.base import Source, SourceContext
from noteseek.sources.registry import DEFAULT_KIND, open_source, spec_of, specs
from noteseek.store.base import Store
from noteseek.store.errors import IndexCorrupt
from noteseek.store.folder import saved_roots

StoredRoots = dict[str, tuple[str, str]]
"""Root name -> (location, kind), as the index (or the file kept beside it) records them."""


class Roots:
    """The roots of one index: configured, implicit, remembered and discovered."""

    def __init__(
        self,
        config: LoadedConfig,
        store: Callable[[], Store],
        index_exists: Callable[[], bool],
        foreign: Callable[[], set[str]],
    ) -> None:
        self.config = config
        self.settings = config.settings
        self._store = store
        self._index_exists = index_exists
        self._foreign = foreign
        self._discovery: dict[tuple[str, tuple[tuple[str, str], ...]], dict[str, RootConfig]] = {}

    def stored(self) -> StoredRoots:
        """The roots the index holds, or those kept beside it when it is damaged."""
        try:
            store = self._store()
            kinds = store.root_kinds()
            return {n: (p, kinds.get(n, DEFAULT_KIND)) for n, p in store.roots().items()}
        except IndexCorrupt:
            return saved_roots(self.config.index_dir)

    def all(self) -> dict[str, RootConfig]:
        """Configured roots, the kinds' implicit roots (the memory folder), roots an earlier
        run here added (not another machine's: a shared index's foreign roots), and the roots
        the kinds discover from those; for an index opened by its name, :meth:`held`."""
        if self.config.named is not None:
            return self.held()
        roots = self._remembered()
        for spec in specs():
            if spec.discovered_roots is not None:
                for name, root in self._discovered(spec.name, roots).items():
                    roots.setdefault(name, root)
        return roots

    def _remembered(self) -> dict[str, RootConfig]:
        """The roots the settings give, and those an earlier run here added."""
        roots = self._given()
        if self._index_exists():
            known = {_location(r.path) for r in roots.values()}
            foreign = self._foreign()
            for name, (path, kind) in self.stored().items():
                if name not in roots and path not in known and name not in foreign:
                    roots[name] = RootConfig(path=path, kind=kind)
        return roots

    def _given(self) -> dict[str, RootConfig]:
        """The roots the settings give: configured, and the kinds' implicit roots."""
        roots = dict(self.settings.roots)
        for spec in specs():
            for name, root in spec.implicit_roots(self.config, roots).items():
                roots.setdefault(name, root)
        return roots

    def held(self) -> dict[str, RootConfig]:
        """The roots the index holds (not another machine's), each as the settings describe
        it when they name it at the same place and kind (its include and exclude patterns,
        its style), else as the index recorded it.

        The roots of a named index: a root that only the settings of the folder it is opened
        from (or its implicit memory folder, or a git repository found around a root) would
        give is not added, so the roots change only when a command says so (``noteseek roots
        add`` or ``remove``, ``noteseek index FOLDER``).
        """
        if not self._index_exists():
            return {}
        given = self._given()
        foreign = self._foreign()
        roots: dict[str, RootConfig] = {}
        for name, (path, kind) in self.stored().items():
            if name in foreign:
                continue
            root = given.get(name)
            same = root is not None and root.kind == kind and _location(root.path) == path
            roots[name] = root if same and root is not None else RootConfig(path=path, kind=kind)
        return roots

    def comes_back(self, name: str) -> str | None:
        """Why root ``name`` would be indexed again by the next run if it were removed from
        the index now (configured, implicit or discovered), or None: an ad hoc root, or any
        root of an index opened by its name."""
        if self.config.named is not None:
            return None
        if name in self.settings.roots:
            layer = self.config.origins.get(f"roots.{name}.path", "default")
            return f"it is configured ([roots.{name}] in the {layer} settings)"
        given = self._given()
        if name in given:
            return f"the settings of its kind ({given[name].kind}) add it to every index"
        others = {n: r for n, r in self._remembered().items() if n != name}
        for spec in specs():
            if spec.discovered_roots is not None and name in self._discovered(spec.name, others):
                return f"the settings of its kind ({spec.name}) find it from the other roots"
        return None

    def _discovered(self, kind: str, roots: Mapping[str, RootConfig]) -> dict[str, RootConfig]:
        """The roots ``kind`` discovers from ``roots`` (looked for once per set of folders: a
        walk of every root on each call would cost as much as a scan). Folders a kind owns
        (the memory folder) lead to nothing, so they do not count."""
        spec = spec_of(kind)
        assert spec.discovered_roots is not None
        owned = {n for n, r in roots.items() if spec_of(r.kind).owns_folder}
        key = (kind, tuple(sorted((n, r.path) for n, r in roots.items() if n not in owned)))
        found = self._discovery.get(key)
        if found is None:
            found = spec.discovered_roots(self.config, roots, self.source_context(roots))
            self._discovery = {
                **{k: v for k, v in self._discovery.items() if k[0] != kind},
                key: found,
            }
        return found

    def kinds(self) -> dict[str, str]:
        """Root name -> its source kind, for every root of :meth:`all`."""
        return {name: root.kind for name, root in self.all().items()}

    def source(self, name: str, stored: str | None = None) -> Source:
        """The source of root ``name``; ``stored`` is where the store says the root is, for a
        root no longer among :meth:`all` (its documents are still read from there)."""
        roots = self.all()
        root = roots.get(name)
        if root is None:
            if stored is None:
                raise ConfigError(f"{name!r} is not a root of this index")
            root = RootConfig(path=stored)
        return open_source(name, root, self.source_context(roots))

    def source_context(self, roots: Mapping[str, RootConfig] | None = None) -> SourceContext:
        """What every source of this index is built with (``roots``: :meth:`all`, when the
        caller has them already): folders a kind owns (the memory folder) are kept out of
        other roots' walks."""
        owned = frozenset(
            os.path.realpath(Path(r.path).expanduser())
            for r in (self.all() if roots is None else roots).values()
            if spec_of(r.kind).owns_folder
        )
        return SourceContext(self.settings.index, self.config.index_dir, owned, self.settings.git)

    def naming(self) -> dict[str, str]:
        """The indexed roots that tell this index apart (name -> location): every one but
        those of kinds any index may have (the memory folder)."""
        if not self._index_exists():
            return {}
        return {n: p for n, (p, kind) in self.stored().items() if spec_of(kind).names_index}


def _location(path: str) -> str:
    """A root's folder as the index records it (absolute, links resolved)."""
    return str(Path(path).expanduser().resolve())
