"""The connections ``noteseek serve`` holds: bounded in number and in idle time.

uvicorn's HTTP protocol keeps a connection until the client closes it, and a connection that
never sends a request is never timed out. About 1,000 such sockets use up the usual limit of
1,024 open files; then every accept fails, asyncio logs a traceback per attempt (thousands a
second) and no request gets through. :class:`BoundedH11Protocol` is uvicorn's h11 protocol
with these rules:

- A connection that sends nothing within ``serve.idle_timeout`` seconds of opening or of its
  last response is closed (as keep-alive does, but also for a connection never used).
- Once a request's first byte has arrived, its head and body must arrive within
  ``serve.request_timeout`` seconds (a trickle of bytes does not extend it), or the client gets
  408 and the connection is closed.
- At most ``max_connections`` are open. One more closes the connection that has waited longest
  for its next request (HTTP lets a server close an idle connection at any time; a client
  reconnects), so a crowd of idle sockets never keeps a real request out. If every connection
  is busy with a request, the new one gets 503 and is closed.
- An unparsable request gets a JSON 400 (431 for a head over 16 KiB, however it is framed)
  that says what was wrong; then the server stops sending, reads and drops what the client
  still sends for up to ``LINGER_SECONDS``, and closes: the client reads the answer and an end
  of stream, not a reset.
"""

from __future__ import annotations

import asyncio
import json
import logging
from collections import OrderedDict
from dataclasses import dataclass, field
from typing import Any, ClassVar

import h11
from uvicorn.protocols.http.h11_impl import H11Protocol

log = logging.getLogger(__name__)

HEAD_LIMIT = 16 * 1024
"""Largest request head (request line and headers) in bytes; a larger one gets 431, whether
it arrives in one piece or in many."""
LINGER_SECONDS = 2.0
"""After answering a request HTTP cannot parse: how long what the client still sends is read
and dropped before the connection closes (closing on unread bytes would reset it, and a client
still sending could lose the answer)."""


@dataclass
class ConnectionPool:
    """What the connections of one server share: the limits and who is waiting."""

    max_connections: int
    idle_timeout: float
    request_timeout: float
    open: set[BoundedH11Protocol] = field(default_factory=set)
    waiting: OrderedDict[BoundedH11Protocol, None] = field(default_factory=OrderedDict)
    """Connections without a request in the app (idle, or still sending a head), longest first:
    the ones to close when the pool is full."""


def raw_response(status: int, reason: str, message: str, headers: dict[str, str]) -> bytes:
    """A whole HTTP/1.1 response with a JSON error, written when h11 cannot send one any more
    (the connection is being closed under a request that has not been read)."""
    body = json.dumps({"error": message}).encode()
    lines = [
        f"HTTP/1.1 {status} {reason}",
        "content-type: application/json",
        f"content-length: {len(body)}",
        "connection: close",
        *(f"{name}: {value}" for name, value in headers.items()),
    ]
    return ("\r\n".join(lines) + "\r\n\r\n").encode() + body


class _Connection(h11.Connection):
    """h11's connection, keeping the protocol error it raised (uvicorn drops it), with the
    head limit whatever the framing.

    h11's ``max_incomplete_event_size`` bounds only a head still arriving: a head that came
    whole in one read (a 70 KB header sent at once) was parsed however long it was. Here the
    bytes a request's head took from the buffer are counted too, and over the limit the
    request is refused the same way, before the app sees it.
    """

    error: h11.RemoteProtocolError | None = None

    def __init__(self, max_head: int) -> None:
        super().__init__(h11.SERVER, max_incomplete_event_size=max_head)
        self.max_head = max_head

    def next_event(self) -> Any:
        try:
            before = len(self.trailing_data[0]) if self.their_state is h11.IDLE else 0
            event = super().next_event()
            if isinstance(event, h11.Request):
                head = before - len(self.trailing_data[0])
                if head > self.max_head:
                    raise h11.RemoteProtocolError(
                        f"request head of {head} bytes", error_status_hint=431
                    )
            return event
        except h11.RemoteProtocolError as exc:
            self.error = exc
            raise


class BoundedH11Protocol(H11Protocol):
    """uvicorn's h11 protocol with the limits of a :class:`ConnectionPool` (module docstring).

    A server uses a subclass made by :func:`protocol_class`, which sets ``pool``.
    """

    pool: ClassVar[ConnectionPool]

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.conn = _Connection(self.config.h11_max_incomplete_event_size or HEAD_LIMIT)
        self._deadline: asyncio.TimerHandle | None = None
        self._deadline_kind = ""
        self._lingering = False

    # -- uvicorn's hooks ------------------------------------------------------------------------

    def connection_made(self, transport: asyncio.Transport) -> None:  # type: ignore[override]
        super().connection_made(transport)
        pool = self.pool
        if len(pool.open) >= pool.max_connections and not self._make_room():
            log.warning(
                "%d connections open, all busy with a request (serve.max_connections): "
                "refusing new ones with 503",
                len(pool.open),
            )
            self._refuse(
                503,
                "Service Unavailable",
                f"{len(pool.open)} connections are busy (serve.max_connections); retry shortly",
                {"retry-after": "2"},
            )
            return
        pool.open.add(self)
        self._follow()

    def data_received(self, data: bytes) -> None:
        if self._lingering:
            return  # answered and refused: the rest of the request is dropped
        super().data_received(data)
        self._follow()

    def on_response_complete(self) -> None:
        super().on_response_complete()
        self._follow()

    def connection_lost(self, exc: Exception | None) -> None:
        self._forget()
        super().connection_lost(exc)

    def send_400_response(self, msg: str) -> None:
        # uvicorn's answer is text that says only "Invalid HTTP request received.".
        error = getattr(self.conn, "error", None)
        status = error.error_status_hint if error is not None else 400
        if status == 431:
            message = f"request head too large (request line and headers over {HEAD_LIMIT} bytes)"
        else:
            message = f"malformed HTTP request: {error or msg}"
        reason = _REASONS.get(status, "Bad Request").encode()
        body = json.dumps({"error": message}).encode()
        try:
            for event in (
                h11.Response(
                    status_code=status,
                    reason=reason,
                    headers=[
                        (b"content-type", b"application/json"),
                        (b"content-length", str(len(body)).encode()),
                        (b"connection", b"close"),
                    ],
                ),
                h11.Data(data=body),
                h11.EndOfMessage(),
            ):
                self.transport.write(self.conn.send(event) or b"")
        except h11.LocalProtocolError:
            self._close()  # the peer closed mid-request: there is no one to answer
            return
        self._linger()

    # -- the limits ------------------------------------------------------------------------------

    def _follow(self) -> None:
        """Keep the deadline and the waiting list in step with where the request is."""
        if self._lingering or self not in self.pool.open:
            return
        in_app = self.cycle is not None and not self.cycle.response_complete
        their = self.conn.their_state
        if their is h11.SEND_BODY or (their is h11.IDLE and self.conn.trailing_data[0]):
            kind = "request"  # a head or a body is arriving
        elif their is h11.IDLE:
            kind = "idle"
        elif in_app:
            # Received whole: the app takes the time it needs to answer (a stream, an MCP
            # session's GET); a pipelined request waits in h11 until it is done.
            kind = ""
        else:
            kind = "idle"  # between a response and the next cycle, or closing
        self._set_deadline(kind)
        if in_app:
            self.pool.waiting.pop(self, None)
        else:
            self.pool.waiting.setdefault(self, None)

    def _set_deadline(self, kind: str) -> None:
        """Start the ``idle`` or ``request`` deadline (kept while the kind is unchanged, so
        trickled bytes do not extend it), or none."""
        if kind == self._deadline_kind:
            return
        if self._deadline is not None:
            self._deadline.cancel()
            self._deadline = None
        self._deadline_kind = kind
        if kind == "idle":
            self._deadline = self.loop.call_later(self.pool.idle_timeout, self._close)
        elif kind == "request":
            self._deadline = self.loop.call_later(self.pool.request_timeout, self._too_slow)
        elif kind == "linger":
            self._deadline = self.loop.call_later(LINGER_SECONDS, self._close)

    def _too_slow(self) -> None:
        if self.cycle is not None and self.cycle.response_started:
            self._close()  # answered already (413 before the body was read): just close
            return
        self._refuse(
            408,
            "Request Timeout",
            f"the request did not arrive whole within {self.pool.request_timeout:g} s "
            "(serve.request_timeout)",
            {},
        )

    def _make_room(self) -> bool:
        """Close the connection that has waited longest for a request; False if none waits."""
        if not self.pool.waiting:
            return False
        oldest = next(iter(self.pool.waiting))
        oldest._close()
        log.warning(
            "%d connections open (serve.max_connections): closing those idle longest",
            self.pool.max_connections,
        )
        return True

    def _refuse(self, status: int, reason: str, message: str, headers: dict[str, str]) -> None:
        if self.cycle is not None and not self.cycle.response_complete:
            # The app sees the client gone: its answer, if any, goes nowhere.
            self.cycle.disconnected = True
            self.cycle.message_event.set()
        if not self.transport.is_closing():
            self.transport.write(raw_response(status, reason, message, headers))
        self._close()

    def _linger(self) -> None:
        """Stop sending (the answer is written) and drop what arrives until the client closes
        or ``LINGER_SECONDS`` pass; first to go if the pool needs room."""
        if self.transport.is_closing() or not self.transport.can_write_eof():
            self._close()
            return
        self._lingering = True
        self._set_deadline("linger")
        self.pool.waiting.setdefault(self, None)
        self.transport.write_eof()

    def _close(self) -> None:
        self._forget()
        if not self.transport.is_closing():
            self.transport.close()

    def _forget(self) -> None:
        self.pool.open.discard(self)
        self.pool.waiting.pop(self, None)
        self._set_deadline("")


_REASONS = {400: "Bad Request", 431: "Request Header Fields Too Large", 501: "Not Implemented"}


def protocol_class(pool: ConnectionPool) -> type[BoundedH11Protocol]:
    """The protocol class a server passes to uvicorn (``http=``), bound to its pool."""
    return type("ServeH11Protocol", (BoundedH11Protocol,), {"pool": pool})
