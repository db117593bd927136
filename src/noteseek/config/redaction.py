"""Secrets in settings, kept out of everything noteseek prints: ``config show``, ``status``,
errors and logs.

A URI setting (``milvus.uri``) may carry credentials: ``user:password@`` (a password may hold
``@`` or ``/``, which URL parsers then split in the wrong place), a ``token=`` query, or a
fragment (``#token=...``). Token settings are ``SecretStr`` and never printed; but a server's
error message may quote what it was given, so messages are also scrubbed of the literal
secrets, and of the pieces a parser may have made of a password (``p@ss/word`` parsed as host
``ss``).
"""

from __future__ import annotations

import re
from collections.abc import Iterable

HIDDEN = "***"
SECRET_PARAMS = re.compile(
    r"(?i)([?&;#](?:token|password|passwd|pwd|secret|api_?key|access_?key)=)[^&;#\s]*"
)
EMBEDDED_USERINFO = re.compile(r"(?<=://)[^\s/@]*@")
"""``user:password@`` of a URL inside free text (where the URL's end is unknown)."""


def redact_uri(uri: str) -> str:
    """``uri`` without credentials: everything between ``://`` and the last ``@`` (a password
    may hold ``@`` or ``/``), secret query values, and the fragment."""
    text = uri.strip()
    scheme, sep, rest = text.partition("://")
    if sep:
        if "@" in rest:
            rest = rest[rest.rindex("@") + 1 :]
        text = scheme + sep + rest
    text = SECRET_PARAMS.sub(r"\1" + HIDDEN, text)
    head, hash_, fragment = text.partition("#")
    return f"{head}#{HIDDEN}" if hash_ and fragment else head


def redact_text(text: str, secrets: Iterable[str] = ()) -> str:
    """Free text (an error message, a log line) without the URLs' credentials and without
    any of ``secrets`` (see :func:`secrets_of`)."""
    text = EMBEDDED_USERINFO.sub("", text)
    text = SECRET_PARAMS.sub(r"\1" + HIDDEN, text)
    for secret in sorted(set(secrets), key=len, reverse=True):
        if len(secret) >= 4:
            text = text.replace(secret, HIDDEN)
        elif secret:  # a short piece of a password: only where it stands alone
            text = re.sub(rf"(?<![\w.-]){re.escape(secret)}(?![\w-])", HIDDEN, text)
    return text


def secrets_of(uri: str = "", token: str = "") -> list[str]:
    """The secret strings a URI and a token hold: the password (with the pieces ``@``, ``/``
    and ``:`` split it into), the token (and the password of a ``user:password`` token), and
    the values of secret query or fragment parameters."""
    found: list[str] = []
    _, sep, rest = uri.strip().partition("://")
    if sep and "@" in rest:
        userinfo = rest[: rest.rindex("@")]
        password = userinfo.partition(":")[2]
        found.append(userinfo)
        if password:
            found.append(password)
            found += [p for p in re.split(r"[@/:]", password) if len(p) > 1]
        # what a parser that stopped at the first "/" or "@" took for the host
        found += [p for p in re.split(r"[@/]", userinfo)[1:] if len(p) > 1]
    found += [m.group(0).partition("=")[2] for m in SECRET_PARAMS.finditer(uri)]
    if token:
        found.append(token)
        _user, colon, password = token.partition(":")
        if colon and password:
            found.append(password)
    return [s for s in dict.fromkeys(found) if s]
