"""The boundary of a store backend: every public method wrapped, so the backend's own errors
(SQLite's, Milvus's) leave it as the store errors they mean, never as a traceback."""

from __future__ import annotations

import functools
import inspect
from collections.abc import Callable, Iterator
from typing import Any, TypeVar

C = TypeVar("C", bound=type)

Errors = Callable[[], tuple[type[BaseException], ...]]
"""The exception types to translate (a function, so a client library loads only when an
error is actually met)."""
Translate = Callable[[Any, BaseException], None]
"""Raises what ``exc`` means for the store instance; returns when it means nothing (a bug:
the original error propagates)."""


def wrap_public_methods(cls: C, errors: Errors, translate: Translate) -> C:
    """Wrap every public method of ``cls``. Generators are wrapped as generators, since their
    calls into the backend run while the caller iterates."""
    for name in dir(cls):
        if name.startswith("_"):
            continue
        attr = inspect.getattr_static(cls, name)
        if inspect.isfunction(attr):
            setattr(cls, name, _wrapped(attr, errors, translate))
    return cls


def _wrapped(
    method: Callable[..., Any], errors: Errors, translate: Translate
) -> Callable[..., Any]:
    if inspect.isgeneratorfunction(method):

        @functools.wraps(method)
        def generator(self: Any, *args: Any, **kwargs: Any) -> Iterator[Any]:
            try:
                yield from method(self, *args, **kwargs)
            except errors() as exc:
                translate(self, exc)
                raise

        return generator

    @functools.wraps(method)
    def call(self: Any, *args: Any, **kwargs: Any) -> Any:
        try:
            return method(self, *args, **kwargs)
        except errors() as exc:
            translate(self, exc)
            raise

    return call
