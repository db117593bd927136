"""The query pipeline: retrievers -> fusion -> results.

Each lane returns a ranked list of chunk rowids: keyword (BM25 over the weighted fields) and
semantic (cosine similarity to the query's embedding). Weighted Reciprocal Rank Fusion merges
them; the results carry each lane's rank and raw score for ``--explain``. A single-lane mode
goes through the same fusion, so scores mean the same thing in every mode.

After fusion the default stages of ``search/stages/`` run in order (the community and
recency boosts, then diversity: grouping by document); the candidates' chunk rows are read once
(``search/rows.py``) and shared by the stages and the hits.

The stages measured as no gain (``docs/evaluation.md``: query expansion, score-aware fusion,
the graph lane, MMR, re-ranking, duplicate removal) are not part of this path: they enter
through ``search/stages/registry.py`` when a setting names them, at their point (the keyword
query, the weights, a lane after fusion, a re-ordering before diversity, a duplicate rule).
"""

from __future__ import annotations

import math
import threading
import time
from collections.abc import Callable, Mapping, Sequence
from concurrent.futures import Future
from dataclasses import dataclass, field, replace
from functools import lru_cache
from typing import Any, TypeVar

import numpy as np
import numpy.typing as npt

from noteseek import deadline
from noteseek.analysis import Analyzer
from noteseek.config import SearchSettings
from noteseek.search import fusion, keyword, relevance, typos
from noteseek.search.allowed import AllowedRows
from noteseek.search.expand import Continued, Expansions
from noteseek.search.fusion import Fused, rrf
from noteseek.search.query import parse_bounded, semantic_text
from noteseek.search.request import PipelineRequest, SearchResources, VectorLane
from noteseek.search.rows import CandidateRows
from noteseek.search.snippet import make_snippet
from noteseek.search.stages import BOOSTS, Chosen, Diversify, Stage, StageContext, chosen
from noteseek.search.typos import Correction
from noteseek.store.base import SearchSource
from noteseek.store.rows import ChunkRow
from noteseek.types import Clause, Hit, KeywordQuery


@dataclass
class PipelineResult:
    hits: list[Hit]
    candidates: int
    lanes: dict[str, int] = field(default_factory=dict)
    """Results each lane returned."""
    timings_ms: dict[str, float] = field(default_factory=dict)
    warnings: list[str] = field(default_factory=list)
    expansion: list[str] = field(default_factory=list)
    """Words the concept vocabulary added to the keyword query."""
    corrections: list[Correction] = field(default_factory=list)
    """Query words that matched nothing, and the spellings searched besides them."""


RETRIEVERS = ("keyword", "semantic")
"""The lanes that fetch ``want`` candidates (a lane added after fusion fetches no more)."""

WIDEN_MAX = 2000
"""Most candidates a lane fetches when grouping by document left fewer results than asked."""
WIDEN_MARGIN = 1.25
"""A widened pass asks for this much more than the documents found per candidate predict."""


_T = TypeVar("_T")


def beside(work: Callable[[str], _T], text: str) -> Future[_T]:
    """``work(text)`` on a thread of its own, while the caller goes on.

    Query embeddings of hybrid searches run so while the keyword lane runs on the caller's
    thread: ONNX Runtime and SQLite both release the GIL, so the lanes overlap (the model's 4
    to 8 ms per query no longer adds to the keyword lane's time). A daemon thread per query
    (about 0.1 ms to start) rather than a pool: a pool's idle workers are threads the process
    must join at exit, which kept a reading command from ending at once
    (``interfaces/cli/__init__.py``'s ``run``).
    """
    future: Future[_T] = Future()

    def run_it() -> None:
        if not future.set_running_or_notify_cancel():
            return
        try:
            future.set_result(work(text))
        except BaseException as exc:  # handed to the caller by future.result()
            future.set_exception(exc)

    threading.Thread(target=run_it, name="noteseek-query-embed", daemon=True).start()
    return future


def run(request: PipelineRequest, resources: SearchResources) -> PipelineResult:
    """Retrieve, fuse, run the post-fusion stages and build the hits for ``request``.

    The request's ``min_score`` and ``compressed`` are the caller's to apply to the hits.

    Grouping by document (``search.max_per_document``) keeps one result per document, so the
    lanes' ``search.candidates`` sections may hold fewer documents than ``k`` when a few long
    documents match everywhere. Then the lanes fetch more (:func:`wider`), up to
    :data:`WIDEN_MAX`, while a lane was cut at its limit (more may match): asking for ten
    results gives ten documents whenever ten match. The query is embedded once.
    """
    settings, vectors = resources.settings, resources.vectors
    want = max(request.k, settings.candidates)
    if vectors is not None:
        vectors = replace(vectors, embed_query=lru_cache(maxsize=1)(vectors.embed_query))
        resources = replace(resources, vectors=vectors)
    grouping = bool(settings.max_per_document)
    ahead = 4 if grouping and resources.store.scores_every_match else 1
    memo = keyword.KeywordMemo(resources.store, ahead=ahead, cap=WIDEN_MAX)
    rows = CandidateRows(resources.store)  # rows read by a pass serve the next one
    ranked = _run(request, resources, want, memo, rows)
    while (
        settings.max_per_document
        and ranked.shown < request.k
        and want < WIDEN_MAX
        and any(n >= want for lane, n in ranked.lanes.items() if lane in RETRIEVERS)
    ):
        want = wider(want, ranked.shown, request.k, memo.held())
        ranked = _run(request, resources, want, memo, rows)
    return ranked.finish()


def wider(want: int, shown: int, k: int, held: int = 0) -> int:
    """Candidates for the next pass, when ``want`` of them gave ``shown`` < ``k`` results.

    Documents found grow with the candidates, so ``k / shown`` times as many should find
    ``k``. When the keyword lane already holds that many (it fetched ahead), the next pass
    takes all it holds (they cost no new fetch); otherwise :data:`WIDEN_MARGIN` more than
    predicted and at least twice as many (documents found can stall, as when the candidates
    repeat one boilerplate section), at most :data:`WIDEN_MAX`. Before: four times as many
    each pass, three passes (100, 400, 1,600) where 800 would have found enough.
    """
    predicted = want * k / max(shown, 1)
    if predicted <= held:
        return min(WIDEN_MAX, max(held, want + 1))
    return min(WIDEN_MAX, max(math.ceil(predicted * WIDEN_MARGIN), 2 * want))


@dataclass
class _Ranked:
    """One pass ranked; its hits (rows, snippets, explanations) are built only by
    :meth:`finish`, so a pass that is widened and thrown away costs no snippets."""

    shown: int
    """Results the pass would show (at most ``k``)."""
    lanes: dict[str, int]
    finish: Callable[[], PipelineResult]


def _run(
    request: PipelineRequest,
    resources: SearchResources,
    want: int,
    memo: keyword.KeywordMemo,
    rows: CandidateRows,
) -> _Ranked:
    """One pass of :func:`run` with ``want`` candidates per lane; ``memo`` keeps the keyword
    index's answers and ``rows`` the chunk rows read for the next, wider pass."""
    store, analyzer, settings = resources.store, resources.analyzer, resources.settings
    text, filters, k, mode = request.text, request.filters, request.k, request.mode
    vectors = resources.vectors
    optional = chosen(resources)  # the optional stages the settings name (none by default)
    timings: dict[str, float] = {}
    warnings: list[str] = []
    lanes: dict[str, list[tuple[int, float]]] = {}
    kw_response: keyword.KeywordResponse | None = None
    query, truncated = parse_bounded(text, analyzer, settings.max_query_terms)
    corrections: list[Correction] = []
    if mode != "semantic" and resources.spelling is not None:
        rare = settings.typo_rare_documents
        query, corrections = typos.correct(text, query, analyzer, store, resources.spelling, rare)
    if truncated:
        warnings.append(
            f"the query has more than {settings.max_query_terms} distinct words, phrases and "
            f"exclusions; only the first {settings.max_query_terms} were used "
            "(search.max_query_terms)"
        )
    if mode == "semantic" and vectors is None:
        raise ValueError(
            "semantic search needs embeddings: enable them (embedding.enabled = true) "
            "and run noteseek index"
        )
    qvec: npt.NDArray[np.float32] | None = None
    embedding: Future[npt.NDArray[np.float32]] | None = None
    run_keyword = mode in ("hybrid", "keyword")
    if mode in ("hybrid", "semantic") and vectors is not None:
        started = time.perf_counter()
        semantic = semantic_text(text)
        gate = _semantic_gate(semantic, vectors, store, analyzer, settings)
        if gate in (NO_WORDS, ONLY_COMMON):
            # Nothing to look for: a keyword match on "what" or "these" would look like one.
            run_keyword = False
            warnings.append(f"nothing to search for: {gate}")
        elif gate:
            warnings.append(f"the semantic lane did not run: {gate}")
        elif semantic and run_keyword and not optional.needs_query_vector:
            embedding = beside(vectors.embed_query, semantic)  # beside the keywords
        elif semantic:
            qvec = vectors.embed_query(semantic)
            timings["embed_ms"] = _ms(started)

    if run_keyword:
        started = time.perf_counter()
        kw_query = query
        if settings.function_words == "always" or (
            settings.function_words == "questions" and relevance.is_question(text)
        ):
            kw_query = relevance.strip_function_words(query, analyzer)
        for rewrite in optional.query:
            kw_query = rewrite.rewrite(kw_query, query, qvec, resources)
        kw_response = keyword.retrieve(store, kw_query, filters, want, settings, memo)
        lanes["keyword"] = [(r.rowid, r.blended) for r in kw_response.results]
        timings["keyword_ms"] = _ms(started)
        deadline.check()
    if embedding is not None:
        started = time.perf_counter()
        qvec = embedding.result()
        timings["embed_wait_ms"] = _ms(started)

    if vectors is not None and qvec is not None:
        started = time.perf_counter()
        allowed = (resources.allowed or AllowedRows())(store, filters)
        found = vectors.index.search(qvec, want + (want if query.excluded else 0), allowed)
        if query.excluded and found:
            hidden = store.matching_rowids(KeywordQuery(query.excluded, ()), [r for r, _ in found])
            found = [item for item in found if item[0] not in hidden]
        floor = vectors.floor if settings.semantic_floor is None else settings.semantic_floor
        lanes["semantic"] = [item for item in found[:want] if item[1] >= floor]
        timings["vector_ms"] = _ms(started)
        deadline.check()

    weights = {"keyword": settings.keyword_weight, "semantic": settings.semantic_weight}
    if settings.question_weight != 1.0 and relevance.is_question(text):
        weights["semantic"] *= settings.question_weight
    for reweight in optional.weights:
        weights = reweight.weights(lanes, weights, settings)
    partial = vectors is not None and vectors.coverage < 1.0 and "semantic" in lanes
    if partial and settings.partial_vectors == "scale" and vectors is not None:
        weights["semantic"] *= vectors.coverage
    imputing = partial and settings.partial_vectors in ("impute", "rescale")
    missing = (
        _unembedded(vectors, lanes.get("keyword", []))
        if imputing and "keyword" in lanes
        else set[int]()
    )
    rank_scale: dict[str, float] = {}
    if partial and settings.partial_vectors == "rescale" and vectors is not None:
        rank_scale["semantic"] = 1.0 / max(vectors.coverage, 0.01)

    def fuse() -> list[Fused]:
        fused = rrf(lanes, weights, settings.rrf_k, rank_scale)
        if not missing:
            return fused
        return fusion.impute_missing(
            fused,
            source="keyword",
            target="semantic",
            weight=weights["semantic"],
            k=settings.rrf_k,
            missing=missing,
            best=fusion.best_score(lanes, weights, settings.rrf_k),
            order=list(lanes),
        )

    fused = fuse()
    for extra in optional.lanes:  # a lane built from the fused results (the graph lane)
        if not fused:
            break
        started = time.perf_counter()
        found = extra.retrieve(fused, resources, qvec)
        if found:
            lanes[extra.name] = found
            weights = {**weights, extra.name: extra.weight(settings)}
            fused = fuse()
        timings[f"{extra.name}_ms"] = _ms(started)
    rows.know_files(memo.files)
    context = StageContext(request, resources, rows, lanes, weights)
    stages: list[Stage] = [*BOOSTS, *optional.post, Diversify(optional.duplicates)]
    rows.full = any(s.full_rows and s.enabled(fused, context) for s in stages)
    for stage in stages:
        if stage.enabled(fused, context):
            started = time.perf_counter()
            fused = stage.apply(fused, context)
            timings[f"{stage.name}_ms"] = _ms(started)
            deadline.check()
    counts = {lane: len(found) for lane, found in lanes.items()}

    def finish() -> PipelineResult:
        started = time.perf_counter()
        hits = _hits(
            store,
            analyzer,
            rows,
            fused[:k],
            kw_response,
            query,
            settings,
            explain=request.explain,
            with_text=request.with_text,
            snippets=request.snippets,
            rrf_k=settings.rrf_k,
            rank_scale=rank_scale,
            weights={lane: weights[lane] for lane in lanes},
            expand_chars=request.expand_chars,
            expand_by_root=request.expand_by_root,
            stages=stages,
            optional=optional,
            also=context.also,
        )
        timings["results_ms"] = _ms(started)
        expansion = [word for stage in optional.query for word in stage.words]
        shown = rows.get(f.rowid for f in fused[:k]).values() if corrections else ()
        spelled = typos.spelled_as(corrections, (row.text for row in shown), analyzer)
        return PipelineResult(hits, len(fused), counts, timings, warnings, expansion, spelled)

    return _Ranked(min(k, len(fused)), counts, finish)


NO_WORDS = "the query has no words"
ONLY_COMMON = "the query holds only common words (stop words, question words)"


def _semantic_gate(
    semantic: str,
    vectors: VectorLane,
    store: SearchSource,
    analyzer: Analyzer,
    settings: SearchSettings,
) -> str:
    """Why the semantic lane has nothing meaningful to look for ('' when it has): see
    ``search/relevance.py``."""
    if not settings.relevance_gate:
        return ""
    if not relevance.has_words(semantic):
        return NO_WORDS
    words = relevance.content_words(semantic, analyzer)
    if not words:
        return ONLY_COMMON
    for word in words:
        if vectors.knows_word is not None and vectors.knows_word(word):
            return ""
        if any(store.is_common(Clause(((term,),)), 0.0, 1) for term in analyzer.terms(word)):
            return ""
    return "none of the query's words occurs in the notes or is known to the embedding model"


def _unembedded(vectors: VectorLane | None, ranked: list[tuple[int, float]]) -> set[int]:
    """The rowids of ``ranked`` that have no vector yet."""
    if vectors is None or not ranked:
        return set()
    ids = [rowid for rowid, _ in ranked]
    have = vectors.index.vectors_for(ids)
    return {rowid for rowid in ids if rowid not in have}


def _ms(started: float) -> float:
    return round((time.perf_counter() - started) * 1000, 3)


def _hits(
    store: SearchSource,
    analyzer: Analyzer,
    candidates: CandidateRows,
    fused: list[Fused],
    kw_response: keyword.KeywordResponse | None,
    query: KeywordQuery,
    settings: SearchSettings,
    *,
    explain: bool,
    with_text: bool,
    snippets: bool,
    rrf_k: float,
    rank_scale: Mapping[str, float],
    weights: dict[str, float],
    expand_chars: int = 0,
    expand_by_root: Mapping[str, int] | None = None,
    stages: Sequence[Stage] = (),
    optional: Chosen | None = None,
    also: Mapping[int, list[int]] | None = None,
) -> list[Hit]:
    rows = candidates.get(f.rowid for f in fused)
    terms = set(query.terms)
    prefixes = [alt[-1] for c in query.clauses if c.prefix for alt in c.alternatives if alt]
    kw_results = {r.rowid: r for r in kw_response.results} if kw_response else {}
    fields: dict[int, list[float]] = {}
    if explain and kw_response is not None:
        wanted = {f.rowid for f in fused if f.rowid in kw_results}
        fields = keyword.field_scores(store, kw_response, settings, wanted)
    hits: list[Hit] = []
    expansions = Expansions(expand_chars, store.file_chunks)
    for item in fused:
        deadline.check()  # snippets and explanations cost per hit
        row = rows.get(item.rowid)
        if row is None:  # deleted between the two statements
            continue
        snippet, matched = "", list[str]()
        if snippets:
            snippet, matched = make_snippet(
                row.text, terms, prefixes, analyzer, settings.snippet_chars, settings.highlight
            )
        hit = _hit(row, len(hits) + 1, item)
        hit.snippet = snippet
        hit.also = [_section(r) for r in candidates.get((also or {}).get(item.rowid, ())).values()]
        if with_text:
            hit.text = row.text
        budget = expand_chars if not expand_by_root else expand_by_root.get(row.root, expand_chars)
        if budget:
            grown = expansions.expand(row, hit.rank, budget)
            if isinstance(grown, int):  # a better result's text holds this section
                hit.text, hit.expanded_in = "", grown
            elif isinstance(grown, Continued):  # ...and this one continues it
                hit.expanded_in = grown.owner
                hit.text, hit.start_line, hit.end_line = (
                    grown.text,
                    grown.start_line,
                    grown.end_line,
                )
            else:
                hit.text, hit.start_line, hit.end_line = grown
        if explain:
            parts = [stage.explain(item) for stage in stages]
            hit.explain = _explain(
                item,
                kw_results,
                fields,
                matched,
                terms,
                analyzer,
                row,
                rrf_k,
                weights,
                parts,
                rank_scale,
            )
            for extra in optional.lanes if optional else ():  # optional lanes that found some
                if extra.name in weights:
                    hit.explain[extra.name] = extra.explain(item, store)
        hits.append(hit)
    return hits


def _hit(row: ChunkRow, rank: int, item: Fused) -> Hit:
    return Hit(
        chunk_id=row.chunk_id,
        doc_id=row.doc_id,
        root=row.root,
        path=row.path,
        title=row.title,
        heading_path=row.heading_path,
        start_line=row.start_line,
        end_line=row.end_line,
        score=item.score,
        snippet="",
        rank=rank,
        lanes=dict(item.ranks),
    )


def _section(row: ChunkRow) -> dict[str, Any]:
    return {
        "chunk_id": row.chunk_id,
        "heading_path": list(row.heading_path),
        "start_line": row.start_line,
        "end_line": row.end_line,
    }


def _explain(
    item: Fused,
    kw_results: dict[int, keyword.KeywordResult],
    fields: dict[int, list[float]],
    matched: list[str],
    terms: set[str],
    analyzer: Analyzer,
    row: ChunkRow,
    rrf_k: float,
    weights: dict[str, float],
    parts: Sequence[dict[str, Any]] = (),
    rank_scale: Mapping[str, float] | None = None,
) -> dict[str, Any]:
    """Each lane's rank and score, and the fusion; ``parts`` are the post-fusion stages'
    explanations (re-ranking's logit; the boosts' factors, which join ``fusion``)."""
    rank_scale = rank_scale or {}
    out: dict[str, Any] = {}
    kw = kw_results.get(item.rowid)
    if "keyword" in weights:
        if kw is not None:
            detail = keyword.explain(kw, matched, fields.get(item.rowid), terms, analyzer, row.text)
            out["keyword"] = {"rank": item.ranks["keyword"], **detail}
        else:
            out["keyword"] = {"rank": None, "note": "not among the keyword lane's candidates"}
    if "semantic" in weights:
        if "semantic" in item.ranks:
            out["semantic"] = {
                "rank": item.ranks["semantic"],
                "cosine": round(item.raw["semantic"], 4),
            }
        elif "semantic" in item.imputed:
            out["semantic"] = {
                "rank": None,
                "note": "no vector yet (embedding in progress): the keyword rank stands in",
            }
        else:
            out["semantic"] = {"rank": None, "note": "not among the semantic lane's candidates"}
    for part in parts:
        out.update((key, value) for key, value in part.items() if key != "fusion")
    out["fusion"] = {
        "method": "weighted reciprocal rank fusion",
        "k": rrf_k,
        "weights": weights,
        "contributions": {
            **{
                lane: round(weights[lane] / (rrf_k + r * rank_scale.get(lane, 1.0)), 6)
                for lane, r in item.ranks.items()
            },
            **{
                f"{lane} (imputed from keyword rank)": round(weights[lane] / (rrf_k + r), 6)
                for lane, r in item.imputed.items()
            },
        },
        "fused": round(item.fused, 6),
        "score": round(item.score, 4),
    }
    if rank_scale:
        out["fusion"]["rank_scale"] = dict(rank_scale)
    for part in parts:
        out["fusion"].update(part.get("fusion", {}))
    return out
