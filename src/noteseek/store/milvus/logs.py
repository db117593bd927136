"""pymilvus's own log lines, routed into noteseek's log instead of the terminal.

pymilvus logs every failed call with a full traceback on its own console handler (about twenty
of them when a server goes away mid-index, before noteseek's one-line error). What went wrong
leaves the store as one :class:`~noteseek.store.milvus.errors.MilvusUnavailable`, so these
lines are only worth keeping for someone debugging: each becomes one line (its first, without
secrets) on the ``noteseek.store.milvus`` logger at DEBUG level.
"""

from __future__ import annotations

import logging

from noteseek.config.redaction import redact_text

CLIENT_LOGGERS = ("pymilvus", "pymilvus.milvus_client", "pymilvus.bulk_writer", "milvus_lite")
"""The loggers pymilvus configures with handlers of its own (``pymilvus/settings.py``)."""
TARGET = logging.getLogger("noteseek.store.milvus")


class Routed(logging.Handler):
    """Re-logs a client's record as one DEBUG line on :data:`TARGET`."""

    def emit(self, record: logging.LogRecord) -> None:
        try:
            first = record.getMessage().strip().splitlines()[0] if record.msg else ""
        except Exception:  # a record that cannot be formatted says nothing worth keeping
            return
        if TARGET.isEnabledFor(logging.DEBUG):
            TARGET.debug("%s: %s", record.name, redact_text(first))


ROUTED = Routed(logging.DEBUG)


def route_client_logs() -> None:
    """Take pymilvus's loggers off the terminal and into :data:`TARGET` (idempotent; call
    after importing pymilvus, whose import installs its console handlers)."""
    for name in CLIENT_LOGGERS:
        logger = logging.getLogger(name)
        logger.handlers = [ROUTED]
        logger.propagate = False
        logger.setLevel(logging.DEBUG if TARGET.isEnabledFor(logging.DEBUG) else logging.ERROR)
