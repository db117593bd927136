"""Secrets in settings (``config/redaction.py``) and the local folder of a Milvus index
(``config.loading.milvus_state_dir``): pure functions, no server."""

from __future__ import annotations

from pathlib import Path

import pytest

from noteseek.config import MilvusSettings
from noteseek.config.loading import milvus_state_dir
from noteseek.config.redaction import redact_text, redact_uri, secrets_of


@pytest.mark.parametrize(
    ("uri", "shown"),
    [
        ("http://root:Milvus@host:19530", "http://host:19530"),
        ("http://root:p@ss/w0rd@host:19530/", "http://host:19530/"),
        (
            "https://u:x:y@in01.cloud.example:443?token=abc&db=x",
            "https://in01.cloud.example:443?token=***&db=x",
        ),
        ("https://in01.cloud.example:443#token=frag", "https://in01.cloud.example:443#***"),
        ("http://host:19530", "http://host:19530"),
        ("./team-index.db", "./team-index.db"),
    ],
)
def test_a_uri_is_shown_without_its_credentials(uri: str, shown: str) -> None:
    assert redact_uri(uri) == shown


def test_messages_are_scrubbed_of_every_piece_of_a_secret() -> None:
    uri = "http://root:p@ss/w0rd-X@10.0.0.5:19530/?token=QTok#token=FTok"
    secrets = secrets_of(uri, "root:TokSecret")
    # pymilvus names the piece after the first "@" as the host when a password holds "/"
    message = (
        "Fail connecting to server on ss:19530 (p@ss/w0rd-X, QTok, FTok, TokSecret) at "
        "http://root:p@10.0.0.5 or root:TokSecret; passed address"
    )
    scrubbed = redact_text(message, secrets)
    for secret in ("p@ss", "w0rd-X", "QTok", "FTok", "TokSecret"):
        assert secret not in scrubbed
    assert "server on ***:19530" in scrubbed and "passed address" in scrubbed


def test_a_milvus_index_has_a_folder_keyed_by_uri_database_and_collection(
    tmp_path: Path,
) -> None:
    def folder(**kw: str) -> Path:
        return milvus_state_dir(MilvusSettings(**{"uri": "http://h:19530", **kw}))

    assert folder() == folder(uri="http://user:secret@h:19530/")  # credentials are no part
    assert folder() != folder(collection="other")
    assert folder() != folder(db_name="notes")
    assert folder() != folder(uri="http://other:19530")
    assert folder().name.startswith("noteseek-") and "secret" not in str(
        folder(uri="http://u:secret@h:19530")
    )
    lite = folder(uri=str(tmp_path / "a.db"))
    assert lite == milvus_state_dir(MilvusSettings(uri=str(tmp_path / "." / "a.db")))
