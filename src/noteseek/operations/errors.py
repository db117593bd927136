"""The kinds of error an operation can end with, and the engine's exceptions mapped onto them.

Every door maps a kind once: the CLI to an exit code, HTTP to a status (:data:`HTTP_STATUS`,
here since two listeners answer over HTTP: ``serve`` and the hook route beside ``mcp``), MCP to
``isError`` with the message. The message is written for the caller (an agent or a person)
and says what was wrong precisely enough to fix the request; it is the same through every door.
"""

from __future__ import annotations

from typing import Literal, get_args

from noteseek.deadline import DeadlineExceeded
from noteseek.operations.json_shape import shorten

ErrorKind = Literal["invalid", "not_found", "ambiguous", "conflict", "unavailable"]
ERROR_KINDS: tuple[ErrorKind, ...] = get_args(ErrorKind)

ERROR_MEANING: dict[ErrorKind, str] = {
    "invalid": "Invalid parameters: unknown names, wrong types, values out of range, or a "
    "value the engine cannot use (a bad date, filter or root, '..' in a path).",
    "not_found": "No such chunk, document or line in the index (a path that leads out of its "
    "root never names one).",
    "ambiguous": "The path names documents in several roots; the message lists their ids.",
    "conflict": "The request needs the writer role, which another process holds.",
    "unavailable": "The index is still opening or being built, could not be opened, is "
    "damaged (it is rebuilt from the files: noteseek rebuild, or by a running server itself), "
    "or its folder cannot be written (read-only, full disk); or a search ran past its time "
    "limit (search.time_limit).",
}


class OperationError(Exception):
    """An operation could not be served; ``kind`` says why, the message says what to do.

    A message that quotes a huge value (a root name of 200 KB) keeps its start and end, at
    most 1,000 bytes as JSON, through every door.
    """

    kind: ErrorKind = "invalid"

    def __init__(self, message: str, kind: ErrorKind | None = None) -> None:
        message = shorten(message)
        super().__init__(message)
        self.message = message
        if kind is not None:
            self.kind = kind

    def __str__(self) -> str:
        return self.message


class Invalid(OperationError):
    kind = "invalid"


class NotFound(OperationError):
    kind = "not_found"


class Ambiguous(OperationError):
    kind = "ambiguous"


class Conflict(OperationError):
    kind = "conflict"


class Unavailable(OperationError):
    kind = "unavailable"


HTTP_STATUS: dict[ErrorKind, int] = {
    "invalid": 400,
    "not_found": 404,
    "ambiguous": 409,
    "conflict": 409,
    "unavailable": 503,
}
"""Each kind of operation error, once, as an HTTP status."""


def as_operation_error(exc: BaseException) -> OperationError | None:
    """The engine's exception as an operation error, or None for a bug (the door logs it).

    Imported lazily: the engine is not loaded until the first call.
    """
    from noteseek.engine import Ambiguous as EngineAmbiguous
    from noteseek.engine import NotFound as EngineNotFound
    from noteseek.engine.writer import NotWriter
    from noteseek.store.errors import StoreError, WriterConflict

    if isinstance(exc, OperationError):
        return exc
    if isinstance(exc, DeadlineExceeded):
        # The request was well formed (not invalid): the server gave up within its budget,
        # which depends on the load as much as on the query, so the same query may succeed.
        return Unavailable(str(exc))
    message = str(exc.args[0]) if exc.args else str(exc)
    if isinstance(exc, WriterConflict):  # another writer holds the root: it is named
        return Conflict(message)
    if isinstance(exc, StoreError):  # damaged, read-only, full, locked: the message says what
        return Unavailable(message)
    if isinstance(exc, EngineNotFound):
        return NotFound(message)
    if isinstance(exc, EngineAmbiguous):
        return Ambiguous(message)
    if isinstance(exc, NotWriter):
        return Conflict(message)
    refused = _write_error(exc, message)
    if refused is not None:
        return refused
    from noteseek.embed.chat import ChatError

    if isinstance(exc, ChatError):  # the flush endpoint failed: the request was fine
        return Unavailable(message)
    if isinstance(exc, ValueError):  # the engine's precise messages (ConfigError included)
        return Invalid(message)
    return None


def _write_error(exc: BaseException, message: str) -> OperationError | None:
    """A kind's writer's refusal (a memory folder's) as its kind: a name or text that is not
    acceptable is invalid, a missing document not found, an existing one or a busy folder a
    conflict."""
    from noteseek.sources.base import WriteConflict, WriteNotFound, WriteRefused

    if not isinstance(exc, WriteRefused):
        return None
    if isinstance(exc, WriteNotFound):
        return NotFound(message)
    if isinstance(exc, WriteConflict):
        return Conflict(message)
    return Invalid(message)
