"""Search settings: keyword weights, fusion, the graph lane and the post-fusion stages."""

from __future__ import annotations

from typing import Literal

from pydantic import Field

from noteseek.config.base import Section


class ColumnWeights(Section):
    """BM25 weight of each indexed field (``[search.weights]``)."""

    # Title 40 and headings 1 (issue 34, docs/evaluation.md): chosen on half of the queries of
    # hugo-docs-kis and scifact-dev together; on the other half and on dendron-kis and
    # logseq-kis no set loses more than 0.004 nDCG@10 and dendron-kis gains 0.02-0.025.
    title: float = Field(
        default=40.0, ge=0, description="The document title (in every chunk of the document)."
    )
    aliases: float = Field(
        default=10.0,
        ge=0,
        description="Frontmatter aliases, plus the file name when it differs from the title.",
    )
    headings: float = Field(default=1.0, ge=0, description="The chunk's heading path.")
    tags: float = Field(default=3.0, ge=0, description="The document's tags.")
    body: float = Field(
        default=1.0, ge=0, description="The chunk's prose (without headings and code blocks)."
    )
    code: float = Field(
        default=0.5,
        ge=0,
        description="The chunk's code blocks, and the parts of code identifiers written in its "
        "prose (change in onDidChange): a word found only there ranks below the same word as "
        "prose.",
    )


MAX_EXPAND_CHARS = 8_000
"""Largest expansion of one result, for every kind (``search.expand_chars``,
``memory.expand_chars``)."""


class SearchSettings(Section):
    top_k: int = Field(
        default=10,
        ge=1,
        le=1000,
        description="Results returned when a search does not say (--top-k, top_k); a search may "
        "ask for 1 to 1000 on every door (an agent's answer carries at most 40,000 characters of "
        "text: past that, results keep their snippets).",
    )
    expand_chars: int = Field(
        default=0,
        ge=0,
        le=MAX_EXPAND_CHARS,
        description="Each document result grows to its whole section, then its neighbours, "
        "within this many characters when a search does not say (expand_chars); 0 = the "
        "section's chunk alone. A kind may set its own (memory.expand_chars).",
    )
    weights: ColumnWeights = Field(
        default_factory=ColumnWeights, description="BM25 weight of each indexed field."
    )
    all_terms_first: int = Field(
        default=4,
        ge=0,
        description="For queries of up to this many words, sections holding every word rank "
        "ahead (search.all_terms_bonus); longer (natural-language) queries rank by BM25 alone. "
        "0 disables.",
    )
    all_terms_bonus: float = Field(
        default=0.1,
        ge=0,
        description="How far ahead: a section holding every word of a short query gains this "
        "share of the keyword lane's best score. 1 or more puts all of them first, whatever "
        "BM25 says of the rest.",
    )
    common_term_fraction: float = Field(
        default=0.5,
        ge=0,
        le=1,
        description="Words found in more than this share of chunks only count when no rarer "
        "word of the query matches; when every word is that common, documents naming them in "
        "title, aliases or tags come first. Keeps queries fast on large indexes. At 0.5 such a "
        "word has no BM25 weight left, so ranking does not change; lower values rank by fewer "
        "words (0.05 cost the PowerShell known-item set 0.048 nDCG@10).",
    )
    common_term_min: int = Field(
        default=2000,
        ge=0,
        description="...but only words found in at least this many chunks: small indexes "
        "rank every word.",
    )
    max_query_terms: int = Field(
        default=64,
        ge=1,
        le=1000,
        description="Most distinct words, phrases and exclusions a keyword query searches "
        "(a repeated one counts once); the rest of the query is left out, with a warning. "
        "Bounds the cost of one query: 800 copies of one word took 12 s.",
    )
    time_limit: float = Field(
        default=10.0,
        ge=0,
        le=3600,
        description="Seconds one search may run (retrieval, fusion, stages and results; not "
        "loading the model or the link graph, which every search shares); past it the search "
        "is stopped with an 'unavailable' error, so no request holds the others up for longer. "
        "0 = no limit.",
    )
    document_weight: float = Field(
        default=0.75,
        ge=0,
        le=1,
        description="Share of a chunk's keyword score that comes from how well its whole "
        "document matches (BM25 over the document); the rest is the chunk's own BM25. "
        "Chosen on scifact-dev and hugo-docs-kis (docs/evaluation.md). 0 = chunk only.",
    )
    mode: Literal["hybrid", "keyword", "semantic"] = Field(
        default="hybrid",
        description="hybrid fuses keyword and semantic lanes; either alone is available.",
    )
    candidates: int = Field(
        default=50,
        ge=1,
        le=2000,
        description="Results each lane fetches for fusion (at least top_k).",
    )
    # Chosen with bench/tune_hybrid.py on scifact-dev and hugo-docs-kis (docs/evaluation.md).
    rrf_k: float = Field(
        default=10.0, gt=0, description="Reciprocal Rank Fusion constant (k in 1/(k + rank))."
    )
    fusion: Literal["rrf", "score-aware"] = Field(
        default="rrf",
        description="rrf: weighted Reciprocal Rank Fusion with the fixed lane weights. "
        "score-aware: a lane whose raw scores are flat for this query (its best result does "
        "not stand out) gets a lower weight (formula in search/fusion.py). rrf by default: "
        "score-aware measured +0.005 nDCG@10 on hugo-docs-kis and -0.004 on the dendron set.",
    )
    flat_lane_z: float = Field(
        default=3.0,
        gt=0,
        description="score-aware fusion: a lane whose best score stands this many standard "
        "deviations above its mean keeps its full weight; flatter lanes get proportionally less.",
    )
    keyword_weight: float = Field(default=1.0, ge=0, description="Fusion weight of keyword.")
    semantic_weight: float = Field(default=1.5, ge=0, description="Fusion weight of semantic.")
    relevance_gate: bool = Field(
        default=True,
        description="The semantic lane runs only for a query with a content word (not only "
        "punctuation, stop words or question words) that occurs in the index: gibberish, "
        "text in a script the notes do not use and '?!.' find nothing instead of the nearest "
        "sections (search/relevance.py).",
    )
    semantic_floor: float | None = Field(
        default=None,
        ge=0.0,
        le=1.0,
        description="Least cosine similarity of a semantic result. Default: the embedding "
        "model's calibrated floor (0.50 for bge-small-en; none for other models), measured in "
        "docs/evaluation.md. 0 = no floor.",
    )
    partial_vectors: Literal["rescale", "impute", "scale", "off"] = Field(
        default="rescale",
        description="While embedding is incomplete: rescale reads the semantic lane's ranks "
        "as ranks over the whole index (rank / share embedded) and gives a keyword result that "
        "has no vector yet the semantic contribution of its keyword rank, so partial vectors "
        "never push keyword hits out; impute does the second only; scale multiplies the "
        "semantic weight by the share embedded; off fuses as if every chunk had a vector "
        "(docs/evaluation.md).",
    )
    question_weight: float = Field(
        default=1.0,
        ge=0.0,
        le=10.0,
        description="Multiplies the semantic lane's fusion weight for question-shaped queries "
        "(ending with ? or opening with how, what, can, ...). 1.0: on eval/hugo-questions "
        "2.0 lost 0.03 nDCG@10 (docs/evaluation.md).",
    )
    function_words: Literal["keep", "questions", "always"] = Field(
        default="questions",
        description="Drop function words (what, how, do, I, ...) from the keyword query: for "
        "question-shaped queries (questions), for every query (always) or never (keep); a "
        "query made only of them keeps them.",
    )
    typo_tolerance: bool = Field(
        default=True,
        description="A query word that no document holds (procrastinaton) is searched with "
        "the index's own terms one or two edits away (procrastination: one edit for words of "
        "4-7 letters, two from 8 letters on); the response lists them as also searched and "
        "offers the corrected query (did you mean). A word that matches is never changed.",
    )
    typo_rare_documents: int = Field(
        default=0,
        ge=0,
        le=1000,
        description="Words held by at most this many documents are also given alternatives, "
        "when those are at least 20 times as common (0: only words that match nothing).",
    )
    snippet_chars: int = Field(
        default=220, ge=40, le=5000, description="Snippet length in characters."
    )
    highlight: tuple[str, str] = Field(
        default=("**", "**"), description="Markers put around matched words in snippets."
    )
    community_boost: float = Field(
        default=1.1,
        ge=1.0,
        le=3.0,
        description="Results in the same link-graph community (Louvain) as the top result "
        "have their fused score multiplied by this; 1.0 turns it off. Measured: "
        "docs/evaluation.md.",
    )
    max_links_per_document: int = Field(
        default=2000,
        ge=0,
        description="The link graph (backlinks, neighbourhoods, communities, the graph lane) "
        "keeps the first this many links of each document; 0 = all. A note of 100,000 "
        "wikilinks made every search build a graph that size.",
    )
    graph_weight: float = Field(
        default=0.0,
        ge=0.0,
        description="RRF weight of the graph lane (documents linked to the top results; "
        "search/graph_lane.py); 0 = off, as measured (docs/evaluation.md).",
    )
    graph_seeds: int = Field(
        default=3, ge=1, le=50, description="Graph lane: top documents whose links it follows."
    )
    graph_depth: int = Field(default=1, ge=1, le=2, description="Graph lane: links followed.")
    graph_method: Literal["neighbours", "ppr"] = Field(
        default="neighbours",
        description="Graph lane: linked documents scored by the seed's score and the edge type "
        "(neighbours), or personalised PageRank from the seeds (ppr).",
    )
    graph_edge_weights: dict[str, float] = Field(
        default_factory=lambda: {
            "links_to": 1.0,
            "embeds": 1.0,
            "related": 1.0,
            "implements": 1.0,
            "tests": 1.0,
        },
        description="Graph lane (neighbours): weight of each edge type (links_to, embeds, "
        "related, implements, tests); a missing type counts 1.0, 0 ignores it.",
    )
    mmr_lambda: float = Field(
        default=1.0,
        ge=0.0,
        le=1.0,
        description="Maximal marginal relevance over the top results: 1.0 = off (pure "
        "relevance); lower values trade relevance for variety between results. Measured: "
        "docs/evaluation.md.",
    )
    mmr_depth: int = Field(
        default=30, ge=2, le=500, description="How many top results MMR re-orders."
    )
    dedupe: bool = Field(
        default=False,
        description="Show a section whose text is identical to a better-ranked one (a copied "
        "note, a template) only once. Off by default: it measured slightly worse on the "
        "known-item sets, where the copy can be the note sought (docs/evaluation.md).",
    )
    expansion_terms: int = Field(
        default=0,
        ge=0,
        le=20,
        description="Query expansion: add this many words from the index's concept vocabulary "
        "nearest the query's embedding to the keyword lane (hybrid mode); 0 = off, as measured "
        "(docs/evaluation.md).",
    )
    expansion_min_cosine: float = Field(
        default=0.75,
        ge=0.0,
        le=1.0,
        description="Least cosine between the query and an expansion word.",
    )
    hypothesis_keyword: bool = Field(
        default=True,
        description="search_with_hypothesis fuses keyword matches of the hypothesis with its "
        "vector matches (as hybrid search does); false: the vector lane alone.",
    )
    near_duplicate: float = Field(
        default=0.0,
        ge=0.0,
        le=1.0,
        description="Drop a section whose word 3-grams overlap a better-ranked one's by at least "
        "this Jaccard similarity (an edited copy); 0 = off.",
    )
    semantic_duplicate: float = Field(
        default=0.0,
        ge=0.0,
        le=1.0,
        description="Drop a section whose embedding has at least this cosine to a better-ranked "
        "one's (the same thing said again); 0 = off. Needs embeddings.",
    )
    max_per_document: int = Field(
        default=1,
        ge=0,
        le=1000,
        description="At most this many sections per document in the results; further "
        "sections of it that matched are listed under its result (also in this document). "
        "1 = results grouped by document, as measured (docs/evaluation.md); 0 = no limit.",
    )
    recency: Literal["auto", "on", "off"] = Field(
        default="auto",
        description="Boost recently changed documents (search.recency_tiers). auto: only when "
        "the index's dates are trustworthy (not most of them within minutes of each other, "
        "as after a copy or a fresh checkout).",
    )
    recency_tiers: list[tuple[float, float]] = Field(
        default=[(7.0, 1.2), (30.0, 1.1)],
        description="(days, factor) pairs: a document changed within that many days has its "
        "fused score multiplied by the factor (the first tier that applies).",
    )
