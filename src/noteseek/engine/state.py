"""The opened index: its settings, backend and store, embedder, roots and keyword-only choice.

One per engine, shared by its services, closed with it. What is derived from the whole index
(the analyzer, link graph, vector index, communities, ...) is :attr:`IndexState.values`
(``engine/values.py``), kept in step with the store's change token; the roots are
``engine/roots.py``.
"""

from __future__ import annotations

import contextlib
import functools
import json
import os
import threading
from collections.abc import Hashable, Iterator, Mapping
from typing import Any

from noteseek.config import LoadedConfig, RootConfig
from noteseek.embed.base import Embedder
from noteseek.embed.factory import acquire_embedder, configured_model_id, release_embedder
from noteseek.engine import model_choice
from noteseek.engine.roots import Roots
from noteseek.engine.values import IndexValues
from noteseek.sources.base import Source, SourceContext
from noteseek.store import folder as index_folder
from noteseek.store.base import Store
from noteseek.store.errors import IndexCorrupt, StoreError
from noteseek.store.factory import Backend, backend_for, damage, index_file
from noteseek.types import KEYWORD_ONLY_NOTE as KEYWORD_ONLY_NOTE

REBUILDING = "being rebuilt from the files; it was damaged: "
"""How a damaged index is recorded while it is rebuilt (searches are refused meanwhile)."""

KEYWORD_ONLY_META_KEY = "keyword_only"
"""Meta key: "1" when the user chose a keyword-only index (``noteseek index --keyword-only``)."""
CHOICES_FILE = "choices.json"
"""The index's choices kept beside it (``{"keyword_only": true}``): a damaged index file is
deleted unread, or cannot be read at all, and the choice must outlive it (issue 44 item 4)."""


class IndexState:
    """One index opened by one engine: shared by its services, closed with it."""

    def __init__(self, config: LoadedConfig) -> None:
        self.config = config
        self.settings = config.settings
        self.index_dir = config.index_dir
        self.notices: list[str] = []
        """Things the user should know (vectors dropped, the index open read-only)."""
        self.read_only: str | None = None
        """Why the index is open read-only (its folder is not writable), when it is."""
        self._store: Store | None = None
        self._file: index_folder.FileIdentity | None = None
        self._embedder: Embedder | None = None
        self._roots = Roots(config, lambda: self.store, lambda: self.index_exists, self._foreign)
        self.values = IndexValues(self)
        """Every value derived from the index (``engine/values.py``)."""

    # -- the store and the embedder --------------------------------------------------------

    @property
    def store(self) -> Store:
        """The index's store, opened (or created) on first use.

        Raises a ``StoreError`` when the index cannot be used (``IndexCorrupt``: damaged).
        """
        if self._store is None:
            store, self.read_only = self.backend.open()
            self._store = store
            self._file = index_file(self.index_dir)
            self._adopt_model(store)
        return self._store

    @functools.cached_property
    def backend(self) -> Backend:
        """Where the index is kept, as the settings choose (asked, never type-checked); the
        settings never change, so it is chosen once (``index_exists`` asks it per search)."""
        return backend_for(self.settings, self.index_dir)

    def _adopt_model(self, store: Store) -> None:
        notice = model_choice.adopt(self.config, store)
        if notice:
            self.notices.append(notice)

    def record_model(self) -> None:
        """Remember the embedding provider and model this index's vectors are made with."""
        model_choice.record(self.settings, self.store)

    def damage(self) -> str | None:
        """Why the index is damaged (found by any process, recorded in its folder), or None.

        Cheap (a stat and, when damaged, a small read) and safe from any thread.
        """
        return damage(self.index_dir)

    def damaged(self) -> str | None:
        """What every door says while the index is damaged (where, why, what rebuilds it)."""
        reason = self.damage()
        return None if reason is None else index_folder.damaged_message(self.index_dir, reason)

    def refresh(self) -> None:
        """Open the index again when its file was deleted and created again (a rebuild of a
        damaged index, by another process or thread) since this handle opened it."""
        if self._store is not None and index_file(self.index_dir) != self._file:
            self._close_store()

    def recreate(self, reason: str) -> str:
        """Delete the damaged index's files and create an empty index; returns what was done.

        The new file is recorded as being rebuilt until :meth:`rebuilt`, so searches say so
        rather than answer from part of the index.
        """
        reason = reason.removeprefix(REBUILDING)  # a rebuild that was interrupted
        # Recorded before the files go, about whichever file is there: no search, here or in
        # another process, answers from the new index until it is complete.
        index_folder.mark_damaged(self.index_dir, REBUILDING + reason, None)
        index_folder.clear_check(self.index_dir)
        self._close_store()
        removed = self.backend.remove()
        self.store.change_token()  # creates the new, empty index
        return (
            f"the index was damaged ({reason}): deleted {', '.join(removed) or 'its files'} "
            "and built it again from the files"
        )

    def rebuilt(self) -> None:
        """The index was built again from the files: nothing recorded against it or about it
        holds (the new file is checked through by the live writer, or on demand)."""
        index_folder.clear_damage(self.index_dir)
        index_folder.clear_check(self.index_dir)
        self.remember_roots()

    def remember_roots(self) -> None:
        """Keep the index's roots beside it, so a rebuild of a damaged index knows them (and
        its keyword-only choice: an index chosen so before the copy existed gets one here)."""
        if self.read_only is None:
            index_folder.save_roots(self.index_dir, self._roots.stored())
            self._keep_choice(self.keyword_only())

    def store_info(self) -> dict[str, Any]:
        """The backend and where it is, without secrets (and, for Milvus once open, its
        server version and rows per collection)."""
        try:
            return self.backend.describe(lambda: self.store)
        except StoreError as exc:
            return {**self.backend.describe(), "error": str(exc)}

    @property
    def index_exists(self) -> bool:
        return self.backend.present()

    def token(self) -> Hashable:
        """The store's change token; None while there is no index (nothing to derive from)."""
        if self._store is None and not self.index_exists:
            return None
        return self.store.change_token()

    @contextlib.contextmanager
    def reader(self) -> Iterator[Store]:
        """A read-only connection of its own, for work on a background thread."""
        store = self.backend.reader()
        try:
            yield store
        finally:
            store.close()

    @property
    def model_id(self) -> str:
        """The id of the embedding model in use (without loading it): the configured one, or
        the one the index was built with when no setting chose one."""
        if self._store is None and self.index_exists:
            self.store  # noqa: B018 (opening the index adopts its model)
        return configured_model_id(self.settings.embedding)

    def embedder(self) -> Embedder:
        """The configured embedder, loaded on first use and shared by every state of this
        process with the same embedding settings (raises EmbeddingError)."""
        if self._embedder is None:
            # A damaged index cannot name its model: the configured one is used, so work on
            # the files (a session's capture, issue 44 R10) goes on while the index is a loss.
            with contextlib.suppress(IndexCorrupt):
                self.model_id  # noqa: B018 (an existing index's model first: see model_choice)
            self._embedder = acquire_embedder(self.settings.embedding)
        return self._embedder

    def close(self) -> None:
        if self._embedder is not None:
            release_embedder(self._embedder)
            self._embedder = None
        self._close_store()

    def _close_store(self) -> None:
        # Change tokens are per connection: nothing derived from this one holds after it.
        self.values.reset()
        if self._store is not None:
            self._store.close()
            self._store = None

    def roots(self) -> dict[str, RootConfig]:
        """Every root of the index (``engine/roots.py``)."""
        return self._roots.all()

    def kinds(self) -> dict[str, str]:
        """Root name -> its source kind, for every root of :meth:`roots`."""
        return self._roots.kinds()

    def source(self, name: str, stored: str | None = None) -> Source:
        """The source of root ``name`` (``stored``: where the store says a root no longer
        configured is)."""
        return self._roots.source(name, stored)

    def source_context(self, roots: Mapping[str, RootConfig] | None = None) -> SourceContext:
        """What every source of this index is built with."""
        return self._roots.source_context(roots)

    def root_comes_back(self, name: str) -> str | None:
        """Why the next run would index root ``name`` again if it were dropped now, or None
        (``engine/roots.py``)."""
        return self._roots.comes_back(name)

    def naming_roots(self) -> dict[str, str]:
        """The indexed roots that tell this index apart (name -> location)."""
        return self._roots.naming()

    def _foreign(self) -> set[str]:
        return self.backend.foreign_roots(lambda: self.store)

    # -- the derived values ----------------------------------------------------------------

    def keyword_only(self) -> bool:
        """Whether the user chose a keyword-only index (remembered in the index, so later
        ``index`` runs, ``serve``, ``mcp`` and ``watch`` do not start embedding)."""
        if self._store is None and not self.index_exists:
            return False
        return self.store.meta(KEYWORD_ONLY_META_KEY) == "1"

    def choose_keyword_only(self, keyword_only: bool) -> None:
        """Remember (True) or drop (False) the choice of a keyword-only index."""
        self.store.set_meta(KEYWORD_ONLY_META_KEY, "1" if keyword_only else "0")
        self._keep_choice(keyword_only)

    def kept_keyword_only(self) -> bool | None:
        """The keyword-only choice kept beside the index (None: no copy, or unreadable), for
        a rebuild of a damaged index, whose own record of it is not trusted."""
        try:
            data = json.loads((self.index_dir / CHOICES_FILE).read_text(encoding="utf-8"))
        except (OSError, ValueError):
            return None
        value = data.get("keyword_only") if isinstance(data, dict) else None
        return value if isinstance(value, bool) else None

    def _keep_choice(self, keyword_only: bool) -> None:
        """Write the copy :meth:`kept_keyword_only` reads (atomically; unchanged, not at all;
        a folder that cannot be written keeps no copy, as it keeps no roots)."""
        if self.kept_keyword_only() == keyword_only:
            return
        target = self.index_dir / CHOICES_FILE
        tmp = target.with_name(f"{CHOICES_FILE}.{os.getpid()}.{threading.get_native_id()}.tmp")
        with contextlib.suppress(OSError):
            tmp.write_text(json.dumps({"keyword_only": keyword_only}), encoding="utf-8")
            os.replace(tmp, target)
        with contextlib.suppress(OSError):
            tmp.unlink(missing_ok=True)

    def wants_vectors(self) -> bool:
        """Whether chunks should be embedded: embeddings on, and not a keyword-only index."""
        return self.settings.embedding.enabled and not self.keyword_only()
