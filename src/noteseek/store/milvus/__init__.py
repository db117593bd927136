"""The scale-out store: the whole index in Milvus (Lite, Server or Zilliz Cloud by one URI).

One module per role (``catalog``, ``chunks``, ``keyword``, ``vectors``, ``graph``,
``transfer``) over one client (``core``); ``schema`` declares the collections, ``rows``
converts rows, ``bm25`` is the keyword lane's arithmetic (FTS5's), ``filters`` turns filters
into Milvus expressions and ``errors`` turns Milvus's errors into one store error naming the
setting.
:class:`MilvusStore` joins the roles into the handle that ``store.factory`` opens.
"""

from __future__ import annotations

from noteseek.store.milvus.core import MilvusConfig
from noteseek.store.milvus.errors import MilvusUnavailable, redact, translate_errors
from noteseek.store.milvus.keyword import MilvusKeywordIndex
from noteseek.store.milvus.transfer import MilvusTransfer
from noteseek.store.milvus.vectors import MilvusVectorIndex


@translate_errors
class MilvusStore(MilvusTransfer, MilvusKeywordIndex):
    """A :class:`noteseek.store.base.Store` in Milvus collections (``schema.py``).

    Calls are serialised by a lock so the handle may be shared between threads; other
    handles (other processes, other machines for a Milvus Server) see what it commits.
    Every public method raises :class:`MilvusUnavailable`, never a Milvus error.
    """


__all__ = ["MilvusConfig", "MilvusStore", "MilvusUnavailable", "MilvusVectorIndex", "redact"]
