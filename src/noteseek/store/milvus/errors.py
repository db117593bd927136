"""Milvus's errors as one store error that names the setting to fix.

A wrong URI, a refused connection, a bad token, a missing database or a server too old for
the features the index uses all leave every public method of the store as
:class:`MilvusUnavailable` (a :class:`~noteseek.store.errors.StoreError`, which every door
shows as "unavailable", never as a traceback).
"""

from __future__ import annotations

import re
from typing import Any, TypeVar

from noteseek.config.redaction import redact_text, redact_uri, secrets_of
from noteseek.store.boundary import wrap_public_methods
from noteseek.store.errors import IndexUnavailable

C = TypeVar("C", bound=type)

MIN_SERVER = (2, 5)
"""The oldest Milvus Server with what the index uses (sparse vectors with an inverted index,
JSON and ARRAY fields, upsert, COSINE HNSW)."""


class MilvusUnavailable(IndexUnavailable):
    """Milvus cannot be reached or used as configured; the message names ``milvus.*``."""


def redact(uri: str) -> str:
    """The URI without credentials (``config.redaction.redact_uri``)."""
    return redact_uri(uri)


def unavailable(uri: str, reason: str, token: str = "") -> MilvusUnavailable:
    """The error for ``reason`` (Milvus's words, without the URI's or ``token``'s secrets),
    with what to check."""
    reason = redact_text(" ".join(reason.split()), secrets_of(uri, token))[:400]
    return MilvusUnavailable(
        f"the Milvus index at milvus.uri = {redact(uri)} cannot be used: {reason}; {hint(reason)}",
        reason,
    )


def hint(reason: str, uri_setting: str = "milvus.uri (NOTESEEK_MILVUS__URI)") -> str:
    """What to check for ``reason``; ``uri_setting`` names where the URI was given."""
    low = reason.lower()
    if "auth" in low or "token" in low or "password" in low or "permission" in low:
        what = "check milvus.token (NOTESEEK_MILVUS__TOKEN)"
    elif "database" in low:
        what = "check milvus.db_name (the database must exist)"
    elif "too old" in low:
        what = "upgrade the Milvus server"
    elif "open local milvus failed" in low and "not exist" not in low:
        what = (
            "another process may have this Milvus Lite file open (Milvus Lite serves one "
            "process at a time; several need a Milvus Server)"
        )
    elif "earlier noteseek build" in low:
        what = "delete those collections and index again, or set milvus.collection to a new prefix"
    elif "no module named" in low:
        what = "install the extra: pip install 'noteseek[milvus]'"
    else:
        what = f"check {uri_setting} and that the server is running"
    return what


def version_error(uri: str, version: str) -> MilvusUnavailable | None:
    """An error when a Milvus Server's ``version`` is older than :data:`MIN_SERVER`."""
    found = re.search(r"(\d+)\.(\d+)", version)
    if version.startswith("milvus_lite") or found is None:
        return None
    if (int(found[1]), int(found[2])) >= MIN_SERVER:
        return None
    need = ".".join(map(str, MIN_SERVER))
    return unavailable(uri, f"server version {version} is too old (noteseek needs {need}+)")


def milvus_errors() -> tuple[type[BaseException], ...]:
    from pymilvus.exceptions import MilvusException

    errors: list[type[BaseException]] = [MilvusException, ConnectionError]
    try:
        import grpc

        errors.append(grpc.RpcError)
    except ImportError:  # pragma: no cover - grpc comes with pymilvus
        pass
    return tuple(errors)


UNREACHABLE_CODES = ("UNAVAILABLE", "DEADLINE_EXCEEDED", "CANCELLED")


def grpc_code(exc: BaseException) -> str | None:
    """The gRPC status code name ``exc`` carries (``UNIMPLEMENTED``, ...), or None."""
    code = getattr(exc, "code", None)
    if callable(code):
        try:
            code = code()
        except Exception:  # a code that cannot be read says nothing
            return None
    name = getattr(code, "name", None)
    return name if isinstance(name, str) else None


def unreachable(exc: BaseException) -> bool:
    """Whether ``exc`` says the server could not be reached or did not answer in time (as
    opposed to answering that it will not do what was asked)."""
    if isinstance(exc, ConnectionError | TimeoutError) or grpc_code(exc) in UNREACHABLE_CODES:
        return True
    low = str(exc).lower()
    return "unavailable" in low or "deadline" in low or "connect" in low


def translate_errors(cls: C) -> C:
    """Wrap every public method of ``cls`` so Milvus's errors leave it as
    :class:`MilvusUnavailable` (the instance's ``uri`` names where)."""
    return wrap_public_methods(cls, milvus_errors, _unavailable)


def _unavailable(store: Any, exc: BaseException) -> None:
    raise unavailable(store.uri, reason_of(exc), store.config.token) from exc


def reason_of(exc: BaseException) -> str:
    """What ``exc`` says, in one line: a Milvus error's message, a gRPC error's status and
    details (not the call's multi-line description)."""
    message = getattr(exc, "message", None)
    if message:
        return str(message)
    code, details = getattr(exc, "code", None), getattr(exc, "details", None)
    if callable(code) and callable(details):
        try:
            status, said = code(), details()
        except Exception:  # an error whose status cannot be read is described as it is
            status, said = None, None
        if status is not None:
            name = getattr(status, "name", str(status))
            return f"{name}: {said}" if said else str(name)
    return str(exc) or type(exc).__name__
