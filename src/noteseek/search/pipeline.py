"""The query pipeline: retrievers -> fusion -> results.

Each lane returns a ranked list of chunk rowids: keyword (BM25 over the weighted fields) and
semantic (cosine similarity to the query's embedding). Weighted Reciprocal Rank Fusion merges
them; the results carry each lane's rank and raw score for ``--explain``. A single-lane mode
goes through the same fusion, so scores mean the same thing in every mode.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Literal, Protocol

import numpy as np
import numpy.typing as npt

from noteseek.analysis import Analyzer
from noteseek.chunking import embedding_input
from noteseek.config import SearchSettings
from noteseek.search import keyword, recency
from noteseek.search.compress import shingles, similar
from noteseek.search.concepts import ConceptVocabulary, expand_query
from noteseek.search.expand import expand
from noteseek.search.fusion import Fused, best_score, rescore, rrf, score_aware_weights
from noteseek.search.graph_lane import GraphHit, GraphView, graph_lane
from noteseek.search.query import parse_query, semantic_text
from noteseek.search.snippet import make_snippet
from noteseek.store.base import Catalog, ChunkRow, Chunks, SearchSource, VectorIndex
from noteseek.types import Filters, Hit, KeywordQuery

Mode = Literal["hybrid", "keyword", "semantic"]
MODES: tuple[Mode, ...] = ("hybrid", "keyword", "semantic")
QueryEmbedder = Callable[[str], npt.NDArray[np.float32]]


@dataclass
class VectorLane:
    """What the semantic lane needs; absent when vectors are off or not built yet."""

    index: VectorIndex
    embed_query: QueryEmbedder


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


def run(
    store: SearchSource,
    analyzer: Analyzer,
    text: str,
    filters: Filters,
    k: int,
    mode: Mode,
    settings: SearchSettings,
    vectors: VectorLane | None,
    *,
    explain: bool = False,
    with_text: bool = False,
    snippets: bool = True,
    reranker: Reranker | None = None,
    rerank_top: int = 20,
    recency_tiers: Sequence[tuple[float, float]] = (),
    communities: Mapping[int, int] | None = None,
    expand_chars: int = 0,
    concepts: ConceptVocabulary | None = None,
    graph: GraphView | None = None,
) -> PipelineResult:
    timings: dict[str, float] = {}
    warnings: list[str] = []
    want = max(k, settings.candidates)
    lanes: dict[str, list[tuple[int, float]]] = {}
    kw_response: keyword.KeywordResponse | None = None
    query = parse_query(text, analyzer)
    if mode == "semantic" and vectors is None:
        raise ValueError(
            "semantic search needs embeddings: enable them (embedding.enabled = true) "
            "and run noteseek index"
        )
    qvec: npt.NDArray[np.float32] | None = None
    if mode in ("hybrid", "semantic") and vectors is not None:
        started = time.perf_counter()
        semantic = semantic_text(text)
        if semantic:
            qvec = vectors.embed_query(semantic)
            timings["embed_ms"] = _ms(started)

    expansion: list[str] = []
    if mode in ("hybrid", "keyword"):
        started = time.perf_counter()
        kw_query = query
        if concepts is not None and qvec is not None and settings.expansion_terms:
            expansion = [
                word
                for word, _ in concepts.nearest(
                    qvec, settings.expansion_terms, settings.expansion_min_cosine, query.terms
                )
            ]
            kw_query = expand_query(query, expansion, analyzer)
        kw_response = keyword.retrieve(store, kw_query, filters, want, settings)
        lanes["keyword"] = [(r.rowid, r.blended) for r in kw_response.results]
        timings["keyword_ms"] = _ms(started)

    if vectors is not None and qvec is not None:
        started = time.perf_counter()
        allowed = store.filtered_chunk_ids(filters) if not filters.is_empty() else None
        found = vectors.index.search(qvec, want + (want if query.excluded else 0), allowed)
        if query.excluded and found:
            hidden = store.matching_rowids(KeywordQuery(query.excluded, ()), [r for r, _ in found])
            found = [item for item in found if item[0] not in hidden]
        lanes["semantic"] = found[:want]
        timings["vector_ms"] = _ms(started)

    weights = {"keyword": settings.keyword_weight, "semantic": settings.semantic_weight}
    if settings.fusion == "score-aware" and len(lanes) > 1:
        weights = score_aware_weights(lanes, weights, settings.flat_lane_z)
    fused = rrf(lanes, weights, settings.rrf_k)
    graph_via: dict[int, GraphHit] = {}
    if graph is not None and settings.graph_weight > 0 and fused:
        started = time.perf_counter()
        found, graph_via = graph_lane(
            store,
            graph,
            fused,
            seeds=settings.graph_seeds,
            method=settings.graph_method,
            depth=settings.graph_depth,
            edge_weights=settings.graph_edge_weights,
            query_vector=qvec,
            vectors=vectors.index if vectors else None,
        )
        if found:
            lanes["graph"] = found
            weights = {**weights, "graph": settings.graph_weight}
            fused = rrf(lanes, weights, settings.rrf_k)
        timings["graph_ms"] = _ms(started)
    if communities and settings.community_boost != 1.0 and fused:
        started = time.perf_counter()
        best = best_score(lanes, weights, settings.rrf_k)
        fused = boost_community(store, fused, communities, settings.community_boost, best)
        timings["community_ms"] = _ms(started)
    if recency_tiers and fused:
        started = time.perf_counter()
        best = best_score(lanes, weights, settings.rrf_k)
        fused = boost_recent(store, fused, recency_tiers, best)
        timings["recency_ms"] = _ms(started)
    if settings.mmr_lambda < 1.0 and vectors is not None and len(fused) > 1:
        started = time.perf_counter()
        fused = mmr(fused, vectors.index, settings.mmr_lambda, settings.mmr_depth)
        timings["mmr_ms"] = _ms(started)
    if reranker is not None and fused:
        started = time.perf_counter()
        fused = rerank(store, reranker, text, fused, rerank_top)
        timings["rerank_ms"] = _ms(started)
    if _diversifying(settings):
        started = time.perf_counter()
        fused = diversify(store, fused, k, settings, vectors.index if vectors else None)
        timings["diversify_ms"] = _ms(started)
    started = time.perf_counter()
    hits = _hits(
        store,
        analyzer,
        fused[:k],
        kw_response,
        query,
        settings,
        explain=explain,
        with_text=with_text,
        snippets=snippets,
        rrf_k=settings.rrf_k,
        weights={lane: weights[lane] for lane in lanes},
        expand_chars=expand_chars,
        graph_via=graph_via,
    )
    timings["results_ms"] = _ms(started)
    return PipelineResult(
        hits,
        len(fused),
        {lane: len(found) for lane, found in lanes.items()},
        timings,
        warnings,
        expansion,
    )


def _diversifying(settings: SearchSettings) -> bool:
    return bool(
        settings.dedupe
        or settings.near_duplicate
        or settings.semantic_duplicate
        or settings.max_per_document
    )


def diversify(
    store: Chunks,
    fused: list[Fused],
    k: int,
    settings: SearchSettings,
    vectors: VectorIndex | None = None,
) -> list[Fused]:
    """The first ``k`` results without duplicates of a better-ranked result and with at most
    ``max_per_document`` sections per document (0: no limit).

    A duplicate is, by the switches on: the same section text (``dedupe``, content hash), word
    3-grams overlapping by ``near_duplicate`` Jaccard or more, or embeddings at
    ``semantic_duplicate`` cosine or more (results without a vector are never semantic
    duplicates). Results are looked at in windows, so a long list costs only what is kept.
    """
    near, semantic, per_document = (
        settings.near_duplicate,
        settings.semantic_duplicate if vectors is not None else 0.0,
        settings.max_per_document,
    )
    out: list[Fused] = []
    seen_text: set[str] = set()
    kept_grams: list[frozenset[int]] = []
    kept_mat: npt.NDArray[np.float32] | None = None  # the kept results' vectors, row by row
    kept_n = 0
    per_doc: dict[int, int] = {}
    step = max(k * 2, 50)
    for start in range(0, len(fused), step):
        window = fused[start : start + step]
        rows = {row.rowid: row for row in store.chunk_rows([f.rowid for f in window])}
        vecs = vectors.vectors_for(list(rows)) if semantic and vectors is not None else {}
        for item in window:
            row = rows.get(item.rowid)
            if row is None:
                continue
            if settings.dedupe and row.content_hash in seen_text:
                continue
            if per_document and per_doc.get(row.file_id, 0) >= per_document:
                continue
            grams = shingles(row.text) if near else frozenset()
            if near and any(similar(grams, other, near) for other in kept_grams):
                continue
            vec = vecs.get(item.rowid)
            if (
                vec is not None
                and kept_mat is not None
                and kept_n
                and float(np.max(kept_mat[:kept_n] @ vec)) >= semantic
            ):
                continue
            seen_text.add(row.content_hash)
            kept_grams.append(grams)
            if vec is not None:
                if kept_mat is None:
                    kept_mat = np.empty((k, vec.shape[0]), dtype=np.float32)
                kept_mat[kept_n] = vec
                kept_n += 1
            per_doc[row.file_id] = per_doc.get(row.file_id, 0) + 1
            out.append(item)
            if len(out) >= k:
                return out
    return out


def mmr(fused: list[Fused], index: VectorIndex, lam: float, depth: int) -> list[Fused]:
    """Maximal marginal relevance over the first ``depth`` results.

    Each next pick maximises ``lam * relevance - (1 - lam) * max cosine to the picks so far``,
    relevance being the fused score (in [0, 1]). Results without a vector count as unlike
    everything. Scores stay on the fused scale: each pick takes the score of its position.
    The cosines among the head are computed once (one matrix product); each pick updates every
    candidate's largest cosine to the picks in one vector operation.
    """
    head = fused[:depth]
    if len(head) < 2:
        return fused
    vectors = index.vectors_for([f.rowid for f in head])
    scores = [f.score for f in head]
    n = len(head)
    has = np.array([f.rowid in vectors for f in head])
    sims = np.zeros((n, n), dtype=np.float32)
    if has.any():
        dim = next(iter(vectors.values())).shape[0]
        mat = np.zeros((n, dim), dtype=np.float32)
        for i, f in enumerate(head):
            if has[i]:
                mat[i] = vectors[f.rowid]
        sims = mat @ mat.T
    relevance = np.array(scores, dtype=np.float64)
    closest = np.full(n, -np.inf)  # each candidate's largest cosine to the picks so far
    left = np.ones(n, dtype=bool)
    order: list[int] = []
    for _ in range(n):
        penalty = np.where(np.isneginf(closest), 0.0, closest)  # no pick with a vector yet
        value = np.where(left, lam * relevance - (1 - lam) * penalty, -np.inf)
        best = int(np.argmax(value))  # ties: the better-ranked (first) one
        order.append(best)
        left[best] = False
        if has[best]:
            row = np.where(has, sims[best], 0.0)  # a result without a vector is unlike all
            closest = np.maximum(closest, row)
    picked = [head[i] for i in order]
    for item, score in zip(picked, scores, strict=True):
        item.score = score
    return picked + fused[depth:]


def boost_community(
    store: Chunks,
    fused: list[Fused],
    communities: Mapping[int, int],
    boost: float,
    best: float,
) -> list[Fused]:
    """Multiply the fused value of results in the top result's community (itself included)
    by ``boost``: order within the community stays, results outside it fall behind."""
    files = store.chunk_files([f.rowid for f in fused])
    top = communities.get(files.get(fused[0].rowid, -1))
    if top is None:
        return fused
    for item in fused:
        if communities.get(files.get(item.rowid, -1)) == top:
            item.fused *= boost
            item.raw["community"] = boost
    return rescore(fused, best, ["keyword", "semantic"])


def boost_recent(
    store: Chunks,
    fused: list[Fused],
    tiers: Sequence[tuple[float, float]],
    best: float,
) -> list[Fused]:
    """Multiply each result's fused value by its document's recency factor, then re-sort."""
    dates = store.chunk_modified([f.rowid for f in fused])
    now = time.time()
    for item in fused:
        when = dates.get(item.rowid)
        boost = recency.factor(when, now, tiers) if when is not None else 1.0
        if boost != 1.0:
            item.fused *= boost
            item.raw["recency"] = boost
    return rescore(fused, best, ["keyword", "semantic"])


class Reranker(Protocol):
    def scores(self, query: str, passages: Sequence[str]) -> npt.NDArray[np.float32]: ...


def rerank(
    store: Chunks, reranker: Reranker, query: str, fused: list[Fused], top: int
) -> list[Fused]:
    """Re-order the first ``top`` results by the cross-encoder; the rest stay below them.

    Scores stay on the fused scale: each result takes the score of the position it moves to,
    so they still fall down the list. ``raw`` keeps the logit and the rank before re-ranking
    for --explain.
    """
    head = fused[:top]
    rows = {row.rowid: row for row in store.chunk_rows([f.rowid for f in head])}
    for rank, item in enumerate(head, start=1):
        item.raw["fused_rank"] = rank
    kept = [f for f in head if f.rowid in rows]
    # The section with its context line (title > headings), as the embedding model reads it:
    # the text alone often does not say what it is about.
    passages = [
        embedding_input(r.title, r.path, r.heading_path, r.text)
        for r in (rows[f.rowid] for f in kept)
    ]
    logits = reranker.scores(query, passages)
    order = sorted(range(len(kept)), key=lambda i: -float(logits[i]))
    scores = [f.score for f in kept]
    out = []
    for position, i in enumerate(order):
        item = kept[i]
        item.raw["rerank"] = float(logits[i])
        item.score = scores[position]
        out.append(item)
    return out + fused[top:]


def _ms(started: float) -> float:
    return round((time.perf_counter() - started) * 1000, 3)


def _hits(
    store: SearchSource,
    analyzer: Analyzer,
    fused: list[Fused],
    kw_response: keyword.KeywordResponse | None,
    query: KeywordQuery,
    settings: SearchSettings,
    *,
    explain: bool,
    with_text: bool,
    snippets: bool,
    rrf_k: float,
    weights: dict[str, float],
    expand_chars: int = 0,
    graph_via: Mapping[int, GraphHit] | None = None,
) -> list[Hit]:
    rows = {row.rowid: row for row in store.chunk_rows([f.rowid for f in fused])}
    terms = set(query.terms)
    prefixes = [alt[-1] for c in query.clauses if c.prefix for alt in c.alternatives if alt]
    kw_results = {r.rowid: r for r in kw_response.results} if kw_response else {}
    fields: dict[int, list[float]] = {}
    if explain and kw_response is not None:
        wanted = {f.rowid for f in fused if f.rowid in kw_results}
        fields = keyword.field_scores(store, kw_response, settings, wanted)
    hits: list[Hit] = []
    file_chunks: dict[int, list[ChunkRow]] = {}
    for item in fused:
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
        if with_text:
            hit.text = row.text
        if expand_chars:
            if row.file_id not in file_chunks:
                file_chunks[row.file_id] = store.file_chunks(row.file_id)
            hit.text, hit.start_line, hit.end_line = expand(
                row, file_chunks[row.file_id], expand_chars
            )
        if explain:
            hit.explain = _explain(
                item, kw_results, fields, matched, terms, analyzer, row, rrf_k, weights
            )
            if "graph" in weights:
                hit.explain["graph"] = _explain_graph(store, item, (graph_via or {}))
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


def _explain_graph(store: Catalog, item: Fused, via: Mapping[int, GraphHit]) -> dict[str, Any]:
    hit = via.get(item.rowid)
    if hit is None:
        return {"rank": None, "note": "not linked to the top results"}
    seed = store.file_row(hit.seed)
    return {
        "rank": item.ranks.get("graph"),
        "score": round(hit.score, 6),
        "via": seed.doc_id if seed is not None else None,
        "edge": hit.edge,
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
) -> dict[str, Any]:
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
        else:
            out["semantic"] = {"rank": None, "note": "not among the semantic lane's candidates"}
    if "rerank" in item.raw:
        out["rerank"] = {
            "model": "cross-encoder",
            "logit": round(item.raw["rerank"], 4),
            "rank_before": int(item.raw["fused_rank"]),
        }
    out["fusion"] = {
        "method": "weighted reciprocal rank fusion",
        "k": rrf_k,
        "weights": weights,
        "contributions": {
            lane: round(weights[lane] / (rrf_k + rank), 6) for lane, rank in item.ranks.items()
        },
        "fused": round(item.fused, 6),
        "score": round(item.score, 4),
    }
    if "recency" in item.raw:
        out["fusion"]["recency_factor"] = item.raw["recency"]
    if "community" in item.raw:
        out["fusion"]["community_factor"] = item.raw["community"]
    return out
