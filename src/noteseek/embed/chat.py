"""A client for any OpenAI-compatible chat endpoint (Ollama, llama.cpp's server, vLLM, hosted).

``POST {base_url}/chat/completions`` with ``{"model", "messages", "temperature",
"max_tokens"}`` answers ``{"choices": [{"message": {"content": ...}}]}``; the first choice's
content is returned. Retries follow the remote embedder's rules (connection errors, timeouts,
429 and 5xx are retried with exponential backoff or the server's ``Retry-After``; other 4xx
answers fail at once with the server's message), and every failure is one :class:`ChatError`
whose message names the endpoint and what went wrong.

The API key is a secret: it is sent only in the ``Authorization`` header, never appears in
``repr()``, and is masked out of every error message, since some hosted APIs echo part of a
wrong key back in their error body. httpx logs requests without their headers, so the header
never reaches a log either (a test checks this at DEBUG level).
"""

from __future__ import annotations

import logging
import random
import time
from collections.abc import Mapping, Sequence
from typing import Any

import httpx

# The remote embedder's answer readers, shared rather than copied (see the merge note: they
# belong in a small shared HTTP helper module both clients import).
from noteseek.embed.http import RETRY_STATUS, retry_after, server_message

log = logging.getLogger(__name__)

_MAX_BACKOFF = 30.0
"""No wait between attempts is longer, whatever ``Retry-After`` asks for."""
_MASK = "***"


class ChatError(Exception):
    """The chat endpoint gave no answer: unreachable, timed out, refused, or malformed."""


class ChatClient:
    """One chat model behind an OpenAI-compatible endpoint; ``complete`` returns its text."""

    def __init__(
        self,
        *,
        base_url: str,
        model: str,
        api_key: str | None = None,
        timeout: float = 120.0,
        retries: int = 2,
        backoff: float = 0.5,
    ) -> None:
        if not model:
            raise ChatError("the chat endpoint needs a model name (flush.model)")
        if not base_url:
            raise ChatError("the chat endpoint needs a base URL (flush.base_url)")
        self._secret = api_key or ""
        self.url = base_url.rstrip("/") + "/chat/completions"
        try:
            url = httpx.URL(self.url)
        except httpx.InvalidURL as exc:
            raise ChatError(f"the chat base URL is not a URL: {exc}") from None
        if url.scheme not in ("http", "https"):
            scheme = f"{url.scheme}://" if url.scheme else "no scheme"
            raise ChatError(f"the chat base URL must start with http:// or https:// (not {scheme})")
        # Credentials written into the URL (http://user:pass@host) are left out of messages.
        self.endpoint = str(url.copy_with(username=None, password=None))
        self.model = model
        self.timeout = timeout
        self.retries = max(0, retries)
        self.backoff = backoff
        headers = {"Content-Type": "application/json"}
        if api_key:
            headers["Authorization"] = f"Bearer {api_key}"
        self._client = httpx.Client(timeout=timeout, headers=headers)
        self.requests = 0
        """Requests sent, retries included (for status and tests)."""

    def __repr__(self) -> str:
        key = "set" if self._secret else "none"
        return f"ChatClient(endpoint={self.endpoint!r}, model={self.model!r}, api_key={key})"

    def __enter__(self) -> ChatClient:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def close(self) -> None:
        self._client.close()

    def complete(
        self,
        messages: Sequence[Mapping[str, str]],
        *,
        max_tokens: int = 1024,
        temperature: float = 0.2,
    ) -> str:
        """The first choice's message content for ``messages`` (``role``/``content`` maps)."""
        payload = {
            "model": self.model,
            "messages": [dict(m) for m in messages],
            "temperature": temperature,
            "max_tokens": max_tokens,
        }
        return self._content(self._post(payload))

    # -- one request, with retries --------------------------------------------------------------

    def _post(self, payload: dict[str, Any]) -> httpx.Response:
        attempt = 0
        while True:
            self.requests += 1
            wait: float | None = None
            try:
                response = self._client.post(self.url, json=payload)
            except httpx.TimeoutException:
                problem = f"timed out after {self.timeout:g} s"
            except httpx.TransportError as exc:
                problem = f"cannot connect ({exc or type(exc).__name__})"
            else:
                if response.status_code == 200:
                    return response
                # Masked before server_message cuts the body short, so no piece of the key survives.
                masked = httpx.Response(response.status_code, text=self._mask(response.text))
                problem = f"HTTP {response.status_code}: {server_message(masked)}"
                if response.status_code not in RETRY_STATUS:
                    raise self._error(problem)
                wait = retry_after(response)
            if attempt >= self.retries:
                raise self._error(f"{problem} (gave up after {attempt + 1} attempts)")
            delay = self.backoff * (2**attempt) * (0.5 + random.random() / 2)
            delay = min(_MAX_BACKOFF, wait if wait is not None else delay)
            log.info("%s: %s; retrying in %.1f s", self.endpoint, self._mask(problem), delay)
            time.sleep(delay)
            attempt += 1

    def _content(self, response: httpx.Response) -> str:
        try:
            body = response.json()
        except ValueError:
            raise self._error(f"the answer is not JSON: {self._excerpt(response.text)}") from None
        if not isinstance(body, dict):
            raise self._error(f"the answer is not a chat completion: {self._excerpt(body)}")
        choices = body.get("choices")
        if not isinstance(choices, list) or not choices:
            raise self._error(f"the answer has no choices: {self._excerpt(body)}")
        first = choices[0]
        message = first.get("message") if isinstance(first, dict) else None
        content = message.get("content") if isinstance(message, dict) else None
        if not isinstance(content, str):
            raise self._error(f"the first choice has no message content: {self._excerpt(first)}")
        return content

    def _excerpt(self, value: object) -> str:
        """The start of an answer for a message, masked before it is cut short."""
        return repr(self._mask(str(value))[:200])

    def _mask(self, text: str) -> str:
        return text.replace(self._secret, _MASK) if self._secret else text

    def _error(self, problem: str) -> ChatError:
        return ChatError(self._mask(f"{self.endpoint} (model {self.model}): {problem}"))
