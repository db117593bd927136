"""The embedding model as an index-time choice, remembered in the index.

``noteseek index --set embedding.model=minilm-l6`` builds vectors of that model. A later
search, ``index``, ``serve`` or ``mcp`` without the flag must use the index's model rather
than the default, which would find no vectors and start embedding everything again. So the
provider and model are recorded in the index's meta whenever it embeds, and adopted when the
index is opened, unless a setting in any layer (file, environment, flag) chose them: an explicit
choice still wins and switches models as before.
"""

from __future__ import annotations

import json

from noteseek.config import ConfigError, LoadedConfig, Settings
from noteseek.store.base import Meta
from noteseek.store.errors import StoreError

CHOICE_META_KEY = "embedding_choice"
"""Meta key: the embedding provider and model the index's vectors were made with (JSON)."""
MODEL_KEYS = ("provider", "model")


def record(settings: Settings, store: Meta) -> None:
    """Remember the embedding provider and model of ``settings`` in the index."""
    emb = settings.embedding
    value = json.dumps({k: getattr(emb, k) for k in MODEL_KEYS}, sort_keys=True)
    if store.meta(CHOICE_META_KEY) != value:
        store.set_meta(CHOICE_META_KEY, value)


def adopt(config: LoadedConfig, store: Meta) -> str | None:
    """Use the recorded model in ``config.settings`` (in place: every service of an engine
    holds that object) when no setting chose one; returns a notice saying so, or None."""
    origins = config.origins
    if any(origins.get(f"embedding.{k}", "default") != "default" for k in MODEL_KEYS):
        return None
    try:
        recorded = json.loads(store.meta(CHOICE_META_KEY) or "null")
    except (StoreError, ValueError):
        return None
    if not isinstance(recorded, dict):
        return None
    settings = config.settings
    current = settings.embedding
    update = {
        k: recorded[k]
        for k in MODEL_KEYS
        if isinstance(recorded.get(k), str) and recorded[k] != getattr(current, k)
    }
    if not update:
        return None
    try:
        settings.embedding = type(current).model_validate({**current.model_dump(), **update})
    except (ValueError, ConfigError):
        return None
    return (
        f"embedding model {settings.embedding.model!r}: the one this index was built with "
        "(set embedding.model to choose another)"
    )
