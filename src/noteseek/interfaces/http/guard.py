"""What stands between the network and the API: the token, the Host/Origin guard, body limits.

Outermost first: CORS (off unless ``serve.cors_origins``), a Host/Origin guard against DNS
rebinding and other sites' pages (one rule for the API, the page and ``/mcp``), a request body
limit (``serve.max_body_bytes``, 413), and the API token (``serve.token``, sent as
``Authorization: Bearer``) on every API and MCP route.
"""

from __future__ import annotations

import contextlib
import hmac
import ipaddress
import socket
from collections import deque
from collections.abc import Callable, Container, Mapping
from urllib.parse import urlsplit

from fastapi import Depends, Request
from fastapi.responses import JSONResponse
from fastapi.security import HTTPAuthorizationCredentials, HTTPBearer
from starlette.datastructures import Headers
from starlette.types import ASGIApp, Message, Receive, Scope, Send

from noteseek.operations.json_shape import shorten, text_problem

LOOPBACK_NAMES = ("localhost", "127.0.0.1", "::1")
WILDCARD_HOSTS = ("0.0.0.0", "::", "")
OPEN_PATHS = frozenset({"/health"})
"""Answered whatever the Host header says (a load balancer's health check uses an IP)."""


class ApiError(Exception):
    """An HTTP error with a JSON message (for what is HTTP's own: token, body, media type)."""

    def __init__(self, status: int, message: str, headers: dict[str, str] | None = None) -> None:
        super().__init__(message)
        self.status = status
        self.message = message
        self.headers = headers


def error_response(
    status: int, message: str, headers: Mapping[str, str] | None = None
) -> JSONResponse:
    """``{"error": message}``, the message at most 1,000 bytes as JSON (its start and end)."""
    return JSONResponse({"error": shorten(message)}, status_code=status, headers=headers)


# -- the token ---------------------------------------------------------------------------------


def token_checker(token: str | None) -> Callable[[str | None], str | None]:
    """A check of an Authorization header value: None when it passes, else why not."""
    expected = token.encode("utf-8") if token else None

    def check(authorization: str | None) -> str | None:
        if expected is None:
            return None
        scheme, _, given = (authorization or "").partition(" ")
        if scheme.lower() != "bearer" or not given.strip():
            return "this server requires an API token: send 'Authorization: Bearer <token>'"
        # Header values arrive decoded as Latin-1: this gives back the bytes that were sent.
        if not hmac.compare_digest(given.strip().encode("latin-1"), expected):
            return "wrong API token"
        return None

    return check


def auth_dependency(token: str | None) -> Callable[..., None]:
    check = token_checker(token)
    if token is None:

        def no_token() -> None:
            """No token is configured (loopback only): every request passes."""

        return no_token
    bearer = HTTPBearer(
        auto_error=False,
        description="The API token (serve.token or NOTESEEK_SERVE__TOKEN).",
    )

    def require_token(
        request: Request, _credentials: HTTPAuthorizationCredentials | None = Depends(bearer)
    ) -> None:
        problem = check(request.headers.get("authorization"))
        if problem is not None:
            raise ApiError(401, problem, {"WWW-Authenticate": "Bearer"})

    return require_token


# -- Host and Origin: DNS rebinding --------------------------------------------------------------


def is_loopback(host: str) -> bool:
    """True for addresses only this machine can reach (127.0.0.0/8, ::1, localhost)."""
    name = host.strip("[]").lower()
    if name == "localhost":
        return True
    try:
        return ipaddress.ip_address(name).is_loopback
    except ValueError:
        return False


def is_local_address(name: str) -> bool:
    """Whether ``name`` is an IP address of one of this machine's interfaces, now: a socket can
    be bound to it (interfaces come and go; an address given by DHCP after start-up counts).

    The unspecified (``0.0.0.0``, ``::``), multicast and broadcast addresses are not.
    """
    try:
        address = ipaddress.ip_address(name.strip("[]"))
    except ValueError:
        return False
    if address.is_unspecified or address.is_multicast or str(address) == "255.255.255.255":
        return False
    family = socket.AF_INET6 if address.version == 6 else socket.AF_INET
    try:
        with socket.socket(family, socket.SOCK_DGRAM) as probe:
            probe.bind((str(address), 0))
    except OSError:
        return False
    return True


class HostNames:
    """The Host names a server accepts: fixed names (lower case, without port) and, listening on
    every interface, any address of this machine's interfaces (:func:`is_local_address`).

    An IP address in a Host header is no DNS rebinding: a rebinding page's Host is the
    attacker's name, which stays refused.
    """

    def __init__(self, names: set[str], local_addresses: bool = False) -> None:
        self.names = names
        self.local_addresses = local_addresses

    def __contains__(self, name: object) -> bool:
        if not isinstance(name, str):
            return False
        name = name.lower()
        return name in self.names or (self.local_addresses and is_local_address(name))


def allowed_host_names(host: str, extra: list[str]) -> HostNames | None:
    """Host header names to accept (lower case, without port); None accepts any."""
    if "*" in extra:
        return None
    names = set(LOOPBACK_NAMES)
    wildcard = host in WILDCARD_HOSTS
    if wildcard:
        # Listening on every interface: this machine's own names and addresses.
        for name in {socket.gethostname(), socket.getfqdn()}:
            names.add(name)
            with contextlib.suppress(OSError):
                names.update(str(info[4][0]) for info in socket.getaddrinfo(name, None))
    else:
        names.add(host.strip("[]"))
    names.update(e.strip("[]") for e in extra)
    return HostNames({n.lower() for n in names if n}, local_addresses=wildcard)


def _host_name(value: str) -> str:
    """``example.org:8765`` -> ``example.org``; ``[::1]:8765`` -> ``::1``."""
    if value.startswith("["):
        return value[1:].partition("]")[0].lower()
    if value.count(":") > 1:  # a bare IPv6 address
        return value.lower()
    return value.partition(":")[0].lower()


DEFAULT_PORTS = {"http": 80, "https": 443}


def _host_port(value: str, scheme: str) -> int | None:
    """The port of a Host header (the scheme's default without one); None if malformed."""
    if value.startswith("["):
        after = value.partition("]")[2]
    elif value.count(":") == 1:
        after = value[value.index(":") :]
    else:
        after = ""  # no port, or a bare IPv6 address
    if not after:
        return DEFAULT_PORTS.get(scheme)
    digits = after[1:]
    if after[0] != ":" or not (digits.isascii() and digits.isdigit()) or len(digits) > 5:
        return None
    return int(digits)


def same_server(origin: str, host: str, scheme: str, names: Container[str] | None) -> bool:
    """Whether a page at ``origin`` is this server's own: http(s), a name of this server (the
    Host's name when any is accepted) and the port the request came to.

    Another port of the same machine is another site (a dev server, another app), as
    browsers see it: it gets no more than any other origin.
    """
    parts = urlsplit(origin)
    if parts.scheme not in DEFAULT_PORTS or not parts.hostname:
        return False
    try:
        port = parts.port or DEFAULT_PORTS[parts.scheme]
    except ValueError:  # a port that is not a number
        return False
    if port != _host_port(host, scheme):
        return False
    name = parts.hostname.lower()
    return name == _host_name(host) if names is None else name in names


class HostGuard:
    """Refuse requests whose Host is not one of this server's names (DNS rebinding), and
    browser requests from pages that are neither this server's own (:func:`same_server`) nor
    in ``serve.cors_origins``. One rule for the API, the page and ``/mcp``.
    """

    def __init__(self, app: ASGIApp, names: Container[str] | None, cors_origins: list[str]) -> None:
        self.app = app
        self.names = names
        self.cors = set(cors_origins)

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http" or scope["path"] in OPEN_PATHS:
            await self.app(scope, receive, send)
            return
        headers = Headers(scope=scope)
        host = headers.get("host", "")
        problem = None
        if self.names is not None and _host_name(host) not in self.names:
            problem = (421, f"Host {host!r} is not a name of this server (serve.allowed_hosts)")
        origin = headers.get("origin")
        if (
            problem is None
            and origin
            and origin not in self.cors
            and not same_server(origin, host, scope.get("scheme", "http"), self.names)
        ):
            problem = (403, f"origin {origin!r} is not allowed (serve.cors_origins)")
        if problem is not None:
            await error_response(*problem)(scope, receive, send)
            return
        await self.app(scope, receive, send)


# -- body size ---------------------------------------------------------------------------------


class BodyLimit:
    """Answer 413 (JSON) to a request body over ``limit`` bytes, before the app reads any, and
    400 to a JSON body nested too deep or holding too many keys (:mod:`json_shape
    <noteseek.operations.json_shape>`), before anything parses it: every route and ``/mcp``.

    The body is read up to the limit first and replayed to the app: at 1 MiB that costs
    little, and a route never sees half a body.
    """

    def __init__(self, app: ASGIApp, limit: int) -> None:
        self.app = app
        self.limit = limit

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        too_large = error_response(
            413, f"request body larger than {self.limit} bytes (serve.max_body_bytes)"
        )
        declared = Headers(scope=scope).get("content-length")
        if declared is not None and declared.isdigit() and int(declared) > self.limit:
            await too_large(scope, receive, send)
            return
        messages: deque[Message] = deque()
        size = 0
        while True:
            message = await receive()
            if message["type"] == "http.disconnect":
                return  # the client left (or was cut off as too slow) before its body was whole
            messages.append(message)
            if message["type"] != "http.request":
                break
            size += len(message.get("body", b""))
            if size > self.limit:
                await too_large(scope, receive, send)
                return
            if not message.get("more_body", False):
                break
        if size and _is_json(scope):
            problem = text_problem(b"".join(m.get("body", b"") for m in messages))
            if problem is not None:
                await error_response(400, problem)(scope, receive, send)
                return

        async def replay() -> Message:
            return messages.popleft() if messages else await receive()

        await self.app(scope, replay, send)


def _is_json(scope: Scope) -> bool:
    """Whether the body is meant as JSON: any media type naming JSON (the API takes
    ``application/json`` and ``*+json``; the MCP SDK looks for ``application/json`` in a list)."""
    return "json" in Headers(scope=scope).get("content-type", "").lower()
