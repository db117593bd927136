"""Names imported with their first use, so a light command does not load a heavy module.

``LazyClass("noteseek.engine.indexing", "Indexing")`` stands for the class until it is called
or one of its attributes is resolved; ``LazyClass(...).index`` is a :class:`LazyAttribute`
that the engine's facade resolves on the first call of that method (``engine/__init__.py``).
``LazyModule("noteseek.store.sqlite.postings_search")`` imports the module with the first
attribute read from it. tests/test_cli_starts.py checks what a light command leaves unloaded.
"""

from __future__ import annotations

import importlib
from typing import Any


class LazyClass:
    """A class named by its module and name, imported when first called or resolved."""

    def __init__(self, module: str, name: str) -> None:
        self.module = module
        self.name = name

    def resolve(self) -> Any:
        return getattr(importlib.import_module(self.module), self.name)

    def __call__(self, *args: Any, **kwargs: Any) -> Any:
        return self.resolve()(*args, **kwargs)

    def __getattr__(self, attribute: str) -> LazyAttribute:
        if attribute.startswith("__"):
            raise AttributeError(attribute)
        return LazyAttribute(self, attribute)

    def __repr__(self) -> str:
        return f"<lazy {self.module}.{self.name}>"


class LazyAttribute:
    """An attribute (a method) of a :class:`LazyClass`, resolved on demand."""

    def __init__(self, owner: LazyClass, name: str) -> None:
        self.owner = owner
        self.name = name

    def resolve(self) -> Any:
        return getattr(self.owner.resolve(), self.name)


class LazyModule:
    """A module imported with the first attribute read from it."""

    def __init__(self, name: str) -> None:
        self.module_name = name

    def __getattr__(self, attribute: str) -> Any:
        if attribute.startswith("__"):
            raise AttributeError(attribute)
        return getattr(importlib.import_module(self.module_name), attribute)


def lazy_exports(package: str, exports: dict[str, str], namespace: dict[str, Any]) -> Any:
    """A package's module ``__getattr__`` (PEP 562): each name in ``exports`` is imported
    from the module it maps to on first use and kept in ``namespace`` (the package's
    globals), so importing the package loads none of them."""

    def __getattr__(name: str) -> Any:
        module = exports.get(name)
        if module is None:
            raise AttributeError(f"module {package!r} has no attribute {name!r}")
        value = getattr(importlib.import_module(module), name)
        namespace[name] = value
        return value

    return __getattr__
