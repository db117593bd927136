"""The facade's public API, pinned: every door and every library user calls these, so the engine's
split into services must not change a name, a parameter or a default."""

from __future__ import annotations

import inspect
from collections.abc import Callable
from dataclasses import fields
from pathlib import Path
from typing import Any

import pytest

import noteseek
from noteseek.engine import (
    Ambiguous,
    Engine,
    Filter,
    GetResult,
    NotFound,
    SearchRequest,
    SearchResponse,
    open_engine,
)
from tests.helpers import engine_for, project, write

METHODS = {
    "add_root": (
        "(path, *, name=None, kind='files', progress=None, keyword_only=False, embed_progress=None)"
    ),
    "remove_root": "(name)",
    "analyzer": "()",
    "close": "()",
    "settle_vectors": "()",
    "damaged": "()",
    "full_check": "(stop=None)",
    "check_due": "(interval)",
    "communities": "()",
    "concept_vocabulary": "(*, wait=True)",
    "embed": "(progress=None, stop=None)",
    "embed_hypothesis": "(text)",
    "embed_query": "(text)",
    "embedder": "()",
    "embedding_progress": "(*, allow_stale=False)",
    "get": "(ref)",
    "index": (
        "(roots=None, *, force=False, progress=None, keyword_only=False, embed_progress=None, "
        "choose_keyword_only=None)"
    ),
    "keyword_only": "()",
    "link_graph": "()",
    "links": "(ref)",
    "read_document": "(ref)",
    "section": "(ref, line)",
    "rebuild": (
        "(progress=None, *, keyword_only=False, embed_progress=None, choose_keyword_only=None)"
    ),
    "refresh": "()",
    "roots": "()",
    "kinds": "()",
    "naming_roots": "()",
    "source": "(name, stored=None)",
    "search": "(request)",
    "memory_roots": "()",
    "memory_root": "()",
    "memory_folder": "(root=None)",
    "memory_files": "()",
    "memory_selection": "(*, type=None, status=None, created_after=None, created_before=None)",
    "memory_links": "(target)",
    "flush_memories": (
        "(root=None, *, doc_ids=None, tags=(), max_chars=None, dry_run=False, archive=False)"
    ),
    "search_commits": "(request, *, include_diff=False)",
    "last_changes": "(doc_ids)",
    "status": "()",
    "update_graph": "()",
    "update_paths": "(root_name, rels, *, graph=True)",
    "vector_index": "()",
    "wants_vectors": "()",
}
"""Each public method's parameters (names, kinds, defaults): the facade's public API."""


def test_the_facade_keeps_every_method_and_signature(tmp_path: Path) -> None:
    write(tmp_path / "notes" / "a.md", "# A\n\nalpha\n")
    with engine_for(project(tmp_path, {"notes": tmp_path / "notes"})) as engine:
        public = {n for n in dir(Engine) if not n.startswith("_")}
        assert public == {
            *METHODS,
            "store",
            "index_exists",
            "model_id",
            "memories",
            "location",
        }
        for name, signature in METHODS.items():
            method = getattr(engine, name)
            assert callable(method), name
            assert _parameters(method) == signature, name
        assert {"config", "settings", "index_dir", "notices"} <= set(vars(engine))
        assert engine.notices is engine._state.notices  # one list, appended to by the services
        engine.index()
        assert engine.index_exists and engine.store is engine.store
        assert engine.search(SearchRequest("alpha", mode="keyword")).hits[0].path == "a.md"
        assert engine.get("a.md").text.startswith("# A")


def _parameters(method: Callable[..., Any]) -> str:
    params = inspect.signature(method).parameters.values()
    plain = [p.replace(annotation=inspect.Parameter.empty) for p in params]
    return str(inspect.Signature(plain))


REQUEST = (
    "query, top_k, mode, filter, source, min_score, expand_chars, hypothesis, explain, "
    "with_text, snippets, compressed, similarity_threshold"
)
FILTER = "paths, exclude_paths, tags, roots, after, before, where, authors, changed, doc_ids"


def test_one_request_and_one_filter_description_at_the_facade() -> None:
    """Every search (documents, memories, commits) is one SearchRequest with one Filter."""
    assert ", ".join(f.name for f in fields(SearchRequest)) == REQUEST
    assert ", ".join(f.name for f in fields(Filter)) == FILTER
    request = SearchRequest("q", top_k=3, filter=Filter(tags=["a"]))
    assert (request.mode, request.source, request.filter.roots) == (None, "docs", ())
    with pytest.raises(TypeError):
        SearchRequest("q", 3)  # type: ignore[misc]  # everything but the query is named


def test_the_package_exports() -> None:
    names = ("Engine", "open_engine", "NotFound", "Ambiguous", "SearchResponse", "GetResult")
    for name in (*names, "SearchRequest", "Filter"):
        assert getattr(noteseek, name) is globals()[name]
    assert issubclass(NotFound, LookupError) and issubclass(Ambiguous, LookupError)
    assert callable(open_engine) and GetResult.to_dict and SearchResponse.to_dict


def test_services_load_with_their_first_call_in_any_order(tmp_path: Path) -> None:
    """The facade makes its services on first use; one made first may need another (commit
    search needs searching), and neither waits on the other."""
    write(tmp_path / "notes" / "a.md", "# A\n\nalpha\n")
    with engine_for(project(tmp_path, {"notes": tmp_path / "notes"})) as engine:
        assert engine.last_changes(["notes/a.md"]) == {}  # commits first: makes searching
        engine.index()
        assert engine.search(SearchRequest("alpha", mode="keyword")).hits
