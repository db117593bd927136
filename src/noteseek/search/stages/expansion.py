"""Query expansion (optional, ``search.expansion_terms``): words of the concept vocabulary
nearest the query's embedding join the keyword query (``search/concepts.py``)."""

from __future__ import annotations

import numpy as np
import numpy.typing as npt

from noteseek.search.concepts import expand_query
from noteseek.search.request import SearchResources
from noteseek.search.stages.registry import QueryStage, register
from noteseek.types import KeywordQuery


@register
class Expansion(QueryStage):
    name = "expansion"
    setting = "search.expansion_terms"
    needs_query_vector = True

    @classmethod
    def named(cls, resources: SearchResources) -> Expansion | None:
        # The engine hands out the vocabulary only for hybrid searches with vectors.
        wanted = resources.settings.expansion_terms and resources.concepts is not None
        return cls() if wanted else None

    def rewrite(
        self,
        keyword_query: KeywordQuery,
        query: KeywordQuery,
        query_vector: npt.NDArray[np.float32] | None,
        resources: SearchResources,
    ) -> KeywordQuery:
        concepts, settings = resources.concepts, resources.settings
        if concepts is None or query_vector is None:
            return keyword_query
        self.words = [
            word
            for word, _ in concepts.nearest(
                query_vector, settings.expansion_terms, settings.expansion_min_cosine, query.terms
            )
        ]
        return expand_query(keyword_query, self.words, resources.analyzer)
