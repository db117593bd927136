"""What the OpenAI-compatible HTTP clients share: which answers are worth a retry, the
server's own message from an error body, and the Retry-After header."""

from __future__ import annotations

from typing import Any

import httpx

RETRY_STATUS = {408, 409, 425, 429, 500, 502, 503, 504}
"""Statuses a retry may cure (overload, timeouts, restarts); others fail at once."""


def server_message(response: httpx.Response) -> str:
    """The error message of an answer (OpenAI's ``{"error": {"message"}}`` or the body), cut
    to 200 characters."""
    try:
        body: Any = response.json()
    except ValueError:
        return response.text[:200]
    if isinstance(body, dict):
        err = body.get("error", body)
        if isinstance(err, dict):
            return str(err.get("message", err))[:200]
        return str(err)[:200]
    return str(body)[:200]


def retry_after(response: httpx.Response) -> float | None:
    """The seconds the server asks to wait (Retry-After), if it says."""
    value = response.headers.get("retry-after")
    if value is None:
        return None
    try:
        return max(0.0, float(value))
    except ValueError:
        return None
