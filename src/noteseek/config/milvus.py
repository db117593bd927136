"""Settings for the scale-out store: one Milvus (Lite, Server or Zilliz Cloud) by one URI."""

from __future__ import annotations

from pydantic import Field, SecretStr, field_validator

from noteseek.config.base import Section


class MilvusSettings(Section):
    """``[milvus]``: where the index lives when it is not the embedded SQLite file."""

    uri: str = Field(
        default="",
        description="Empty: the embedded SQLite index (the default). A local file path ending "
        "in .db: Milvus Lite, in process (one process at a time). http(s)://host:19530: a "
        "Milvus Server. A Zilliz Cloud endpoint (with milvus.token): the managed service. "
        "Needs `pip install noteseek[milvus]`.",
    )
    token: SecretStr | None = Field(
        default=None,
        description="Credentials for a Milvus Server or Zilliz Cloud ('user:password' or an "
        "API key). Prefer the environment variable NOTESEEK_MILVUS__TOKEN.",
    )
    db_name: str = Field(
        default="",
        description="The Milvus database holding the index's collections (empty: the "
        "server's default database).",
    )
    collection: str = Field(
        default="noteseek",
        description="Prefix of the index's collection names: two indexes in one database need "
        "two prefixes.",
    )
    timeout: float = Field(
        default=10.0,
        gt=0,
        le=600,
        description="Seconds to wait for the server to answer before the index is reported "
        "unavailable.",
    )

    @field_validator("uri")
    @classmethod
    def _strip(cls, value: str) -> str:
        return value.strip()

    @field_validator("collection")
    @classmethod
    def _prefix(cls, value: str) -> str:
        import re

        if not re.fullmatch(r"[A-Za-z_][A-Za-z0-9_]{0,39}", value):
            raise ValueError(
                "milvus.collection must start with a letter or '_' and hold at most 40 "
                "letters, digits and '_'"
            )
        return value

    @property
    def enabled(self) -> bool:
        return bool(self.uri)
