"""Parsers: turn a file's text into a :class:`~noteseek.types.ParsedDocument`."""

from noteseek.parse.markdown import parse_markdown
from noteseek.parse.registry import (
    FunctionParser,
    Parser,
    ParserRegistry,
    default_registry,
    get_parser,
)
from noteseek.parse.text import parse_text

__all__ = [
    "FunctionParser",
    "Parser",
    "ParserRegistry",
    "default_registry",
    "get_parser",
    "parse_markdown",
    "parse_text",
]
