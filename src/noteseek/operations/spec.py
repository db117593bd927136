"""What one operation is: its name, parameters, result, run function, errors and doors."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, Literal

from pydantic import BaseModel

from noteseek.operations.errors import ErrorKind
from noteseek.operations.params import Params

Door = Literal["cli", "mcp", "http"]
Rendering = Literal[
    "results", "commits", "document", "section", "links", "memory_write", "flush", "text", "fields"
]
"""How a door that answers in text (MCP's text content) shows an operation's result: chosen
with the operation, never guessed from the keys its payload happens to have."""


@dataclass(frozen=True)
class HttpRoute:
    method: Literal["GET", "POST"]
    path: str
    """Starlette path; its ``{name}`` parts are parameters of the operation."""
    status_code: int = 200


@dataclass(frozen=True)
class Operation:
    name: str
    summary: str
    """One line: CLI help, OpenAPI summary."""
    params: type[Params]
    result: type[BaseModel]
    run: Callable[..., dict[str, Any]]
    read_only: bool
    errors: tuple[ErrorKind, ...]
    """The kinds of error it can end with (documented per door)."""
    description: str = ""
    """What an agent needs to use it well (MCP tool description); the summary when empty."""
    http: HttpRoute | None = None
    mcp: bool = True
    needs_index: bool = False
    """Refused as unavailable while no index exists (instead of "not found")."""
    finish: Callable[[dict[str, Any]], dict[str, Any]] | None = None
    """Work on the result that needs no engine (rendering HTML), done once the engine is
    released, so a long note does not hold up the searches waiting for it."""
    rendering: Rendering = "fields"
    """The text rendering of its result (:data:`Rendering`); ``fields``: a line per field."""
    reads_index: bool = False
    """Answers from what the index holds: refused as unavailable while the index is damaged,
    rather than answering from the part of it that can still be read (so does every
    operation with ``needs_index``)."""

    @property
    def doors(self) -> tuple[Door, ...]:
        return ("cli", *(("mcp",) if self.mcp else ()), *(("http",) if self.http else ()))

    @property
    def text(self) -> str:
        return self.description or self.summary
