"""Parsers: turn a file's text into a :class:`~noteseek.types.ParsedDocument`.

The names below load with their first use: a submodule that needs no parser
(``parse/conventions.py`` for ``noteseek status``) does not import markdown-it and PyYAML.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from noteseek.lazy import lazy_exports

if TYPE_CHECKING:
    from noteseek.parse.markdown import parse_markdown
    from noteseek.parse.registry import (
        FunctionParser,
        Parser,
        ParserRegistry,
        default_registry,
        get_parser,
    )
    from noteseek.parse.text import parse_text

_EXPORTS = {
    "FunctionParser": "noteseek.parse.registry",
    "Parser": "noteseek.parse.registry",
    "ParserRegistry": "noteseek.parse.registry",
    "default_registry": "noteseek.parse.registry",
    "get_parser": "noteseek.parse.registry",
    "parse_markdown": "noteseek.parse.markdown",
    "parse_text": "noteseek.parse.text",
}


__getattr__ = lazy_exports(__name__, _EXPORTS, globals())


__all__ = [
    "FunctionParser",
    "Parser",
    "ParserRegistry",
    "default_registry",
    "get_parser",
    "parse_markdown",
    "parse_text",
]
