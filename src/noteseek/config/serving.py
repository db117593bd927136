"""Settings for the long-running processes: the watcher and ``noteseek serve``."""

from __future__ import annotations

from pydantic import Field, SecretStr, field_validator

from noteseek.config.base import Section


class WatchSettings(Section):
    debounce_ms: int = Field(
        default=500,
        ge=10,
        le=60_000,
        description="Changes arriving within this many milliseconds are indexed as one batch "
        "(the last event per path wins).",
    )
    reconcile_interval: float = Field(
        default=3600.0,
        ge=0,
        description="Seconds between full reconciliations with the file system (stale files "
        "removed, missing ones added), besides the one at start. 0 disables.",
    )
    check_interval: float = Field(
        default=3600.0,
        ge=0,
        description="Seconds between the live writer's full checks of the index for damage "
        "no search has met (PRAGMA integrity_check, in the background at a lower CPU "
        "priority); the first comes after the reconciliation at start, unless the index file "
        "was checked more recently. 0 disables.",
    )
    takeover_interval: float = Field(
        default=2.0,
        gt=0,
        le=3600,
        description="Seconds between a reader's attempts to take the writer role.",
    )


class ServeSettings(Section):
    """``noteseek serve``: the HTTP API, MCP over streamable HTTP and the web page."""

    host: str = Field(
        default="127.0.0.1",
        min_length=1,
        description="Address to listen on. Any address other than loopback (127.0.0.1, ::1, "
        "localhost) requires serve.token.",
    )
    port: int = Field(default=8765, ge=0, le=65535, description="Port; 0 picks a free one.")
    token: SecretStr | None = Field(
        default=None,
        description="API token: every API and MCP request must send "
        "'Authorization: Bearer <token>'. Required off loopback. Prefer the environment "
        "(NOTESEEK_SERVE__TOKEN) to a file.",
    )
    cors_origins: list[str] = Field(
        default_factory=list,
        description="Browser origins allowed to call the API from other pages "
        "(https://notes.example.org); empty = CORS off.",
    )
    allowed_hosts: list[str] = Field(
        default_factory=list,
        description="Extra Host header names accepted (besides loopback names and the "
        "listening address), e.g. the machine's DNS name when listening on 0.0.0.0; "
        "'*' accepts any (turns the DNS-rebinding check off).",
    )
    max_body_bytes: int = Field(
        default=1_048_576,
        ge=1024,
        le=64 * 1_048_576,
        description="Largest request body in bytes; larger requests get 413.",
    )
    max_connections: int = Field(
        default=1000,
        ge=8,
        le=100_000,
        description="Most HTTP connections held open at once (also kept below the open-file "
        "limit). A new connection beyond it closes the connection idle longest, or gets 503 "
        "when every one is busy with a request.",
    )
    idle_timeout: float = Field(
        default=10.0,
        gt=0,
        le=3600,
        description="Seconds a connection may stay open without sending a request (after it "
        "opens, or after a response); then it is closed.",
    )
    request_timeout: float = Field(
        default=30.0,
        gt=0,
        le=3600,
        description="Seconds a client may take to send a whole request (head and body) once it "
        "has started; a slower one gets 408 and is disconnected.",
    )

    @field_validator("token")
    @classmethod
    def _token_strength(cls, value: SecretStr | None) -> SecretStr | None:
        if value is not None:
            secret = value.get_secret_value()
            if len(secret) < 16 or secret != secret.strip():
                raise ValueError(
                    "serve.token must hold at least 16 characters and no surrounding "
                    "whitespace (e.g. python -c 'import secrets; print(secrets.token_urlsafe())')"
                )
        return value
