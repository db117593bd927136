"""Which parser handles which file: glob patterns on the file name, first match wins."""

from __future__ import annotations

import fnmatch
import re
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import PurePosixPath
from typing import Protocol, runtime_checkable

from noteseek.parse import text
from noteseek.parse.versions import MARKDOWN_NAME, MARKDOWN_VERSION
from noteseek.types import ParsedDocument

__all__ = [
    "MARKDOWN_PARSER",
    "TEXT_PARSER",
    "FunctionParser",
    "Parser",
    "ParserRegistry",
    "default_registry",
    "get_parser",
]


@runtime_checkable
class Parser(Protocol):
    """Turns a file's decoded text into a :class:`ParsedDocument`.

    ``name`` and ``version`` go into the index manifest: changing a parser's version makes
    existing indexes rebuild, so bump it whenever the same input would parse differently.
    """

    @property
    def name(self) -> str: ...

    @property
    def version(self) -> str: ...

    def __call__(self, text: str, path: str) -> ParsedDocument: ...


@dataclass(frozen=True, slots=True)
class FunctionParser:
    """A :class:`Parser` made from a plain ``(text, path) -> ParsedDocument`` function."""

    name: str
    version: str
    func: Callable[[str, str], ParsedDocument]

    def __call__(self, text: str, path: str) -> ParsedDocument:
        return self.func(text, path)


def _parse_markdown(text: str, path: str) -> ParsedDocument:
    """``parse.markdown.parse_markdown``, loaded with the first document parsed: opening an
    index and comparing its manifest need the parser's version, not markdown-it."""
    from noteseek.parse.markdown import parse_markdown

    return parse_markdown(text, path)


MARKDOWN_PARSER = FunctionParser(MARKDOWN_NAME, MARKDOWN_VERSION, _parse_markdown)
TEXT_PARSER = FunctionParser(text.PARSER_NAME, text.PARSER_VERSION, text.parse_text)


class ParserRegistry:
    """Parsers keyed by glob patterns matched case-insensitively against the file name."""

    def __init__(self) -> None:
        self._entries: list[tuple[str, re.Pattern[str], Parser]] = []

    def register(self, glob: str, parser: Parser) -> None:
        """Add ``glob`` -> ``parser`` after the existing patterns.

        Registering a pattern that is already present (ignoring case) replaces its parser in
        place, which is how a default mapping is overridden. Patterns match the final path
        component only, so a ``/`` in one is rejected rather than silently never matching.
        """
        if not glob or "/" in glob:
            raise ValueError(f"parser patterns match file names, not paths: {glob!r}")
        compiled = re.compile(fnmatch.translate(glob), re.IGNORECASE)
        for index, (existing, _, _) in enumerate(self._entries):
            if existing.casefold() == glob.casefold():
                self._entries[index] = (glob, compiled, parser)
                return
        self._entries.append((glob, compiled, parser))

    def parser_for(self, path: str) -> Parser | None:
        """The parser of the first pattern matching ``path``'s file name, or None."""
        name = PurePosixPath(path).name
        for _, compiled, parser in self._entries:
            if compiled.match(name):
                return parser
        return None

    def patterns(self) -> list[str]:
        """The registered patterns, in matching order."""
        return [glob for glob, _, _ in self._entries]

    def versions(self) -> dict[str, str]:
        """``{parser name: version}`` for every registered parser, for the index manifest."""
        return {parser.name: parser.version for _, _, parser in self._entries}


def default_registry() -> ParserRegistry:
    """A new registry with the built-in parsers: Markdown (``*.md``, ``*.markdown``), text."""
    registry = ParserRegistry()
    registry.register("*.md", MARKDOWN_PARSER)
    registry.register("*.markdown", MARKDOWN_PARSER)
    registry.register("*.txt", TEXT_PARSER)
    return registry


_DEFAULT = default_registry()


def get_parser(path: str) -> Parser | None:
    """The built-in parser for ``path`` (by file name), or None when no pattern matches."""
    return _DEFAULT.parser_for(path)
