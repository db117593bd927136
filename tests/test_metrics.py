"""Ranking metrics against small examples computed by hand.

Conventions under test (trec_eval / BEIR): gain = grade (linear, not 2^grade - 1), discount
log2(rank + 1), the ideal ranking is built from the judgments and cut at k, documents judged
0 or below are not relevant, and a query without any relevant document scores 0. Every ranked
list here is duplicate-free, as the runner's ``ranked_documents`` produces them.
"""

from __future__ import annotations

import math
from itertools import permutations

import pytest

from noteseek.eval.metrics import dcg, mrr_at_k, ndcg_at_k, percentile, recall_at_k

LOG2_3 = math.log2(3)  # 1.5849625...
LOG2_5 = math.log2(5)  # 2.3219281...

# -- dcg ---------------------------------------------------------------------------------------


def test_dcg_discounts_by_log2_of_rank_plus_one() -> None:
    # 3/log2(2) + 2/log2(3) + 1/log2(4) = 3 + 1.2618595 + 0.5 = 4.7618595
    assert dcg([3, 2, 1]) == pytest.approx(3 + 2 / LOG2_3 + 0.5)
    assert dcg([3, 2, 1]) == pytest.approx(4.7618595, abs=1e-7)


def test_dcg_of_nothing_is_zero() -> None:
    assert dcg([]) == 0.0


# -- ndcg_at_k ---------------------------------------------------------------------------------


def test_ndcg_binary_relevance() -> None:
    qrels = {"d1": 1, "d3": 1}
    # DCG  = 1/log2(2) + 0/log2(3) + 1/log2(4) = 1 + 0 + 0.5 = 1.5
    # IDCG = 1/log2(2) + 1/log2(3)             = 1 + 0.6309298 = 1.6309298
    # nDCG = 1.5 / 1.6309298                   = 0.9197208
    assert ndcg_at_k(["d1", "d2", "d3"], qrels, k=3) == pytest.approx(1.5 / (1 + 1 / LOG2_3))
    assert ndcg_at_k(["d1", "d2", "d3"], qrels, k=3) == pytest.approx(0.9197208, abs=1e-7)


def test_ndcg_graded_relevance_uses_the_grade_as_gain() -> None:
    qrels = {"a": 3, "b": 2, "c": 1}
    # DCG  = 1/log2(2) + 3/log2(3) + 0/log2(4) + 2/log2(5)
    #      = 1 + 1.8927893 + 0 + 0.8613531 = 3.7541424
    # IDCG = 3/log2(2) + 2/log2(3) + 1/log2(4)
    #      = 3 + 1.2618595 + 0.5 = 4.7618595
    # nDCG = 3.7541424 / 4.7618595 = 0.7883774
    expected = (1 + 3 / LOG2_3 + 2 / LOG2_5) / (3 + 2 / LOG2_3 + 0.5)
    assert ndcg_at_k(["c", "a", "x", "b"], qrels, k=10) == pytest.approx(expected)
    assert ndcg_at_k(["c", "a", "x", "b"], qrels, k=10) == pytest.approx(0.7883774, abs=1e-7)


def test_ndcg_of_the_ideal_order_is_one_and_of_the_reverse_less() -> None:
    qrels = {"a": 3, "b": 2, "c": 1}
    assert ndcg_at_k(["a", "b", "c"], qrels, k=3) == pytest.approx(1.0)
    # Reverse: DCG = 1 + 2/log2(3) + 3/log2(4) = 1 + 1.2618595 + 1.5 = 3.7618595
    #          nDCG = 3.7618595 / 4.7618595 = 0.7899980
    assert ndcg_at_k(["c", "b", "a"], qrels, k=3) == pytest.approx(0.7899980, abs=1e-7)


def test_ndcg_ignores_relevant_documents_ranked_beyond_k() -> None:
    qrels = {"a": 1, "z": 1}
    ranked = ["x", "a", "y", "z"]
    # k=2: DCG = 0/log2(2) + 1/log2(3) = 0.6309298; "z" at rank 4 does not count.
    #      IDCG = 1/log2(2) + 1/log2(3) = 1.6309298 (the ideal is cut at k=2 too)
    #      nDCG = 0.6309298 / 1.6309298 = 0.3868528
    assert ndcg_at_k(ranked, qrels, k=2) == pytest.approx(0.3868528, abs=1e-7)
    # k=1: the only ranked document, "x", is not relevant.
    assert ndcg_at_k(ranked, qrels, k=1) == 0.0
    # k=4: DCG = 1/log2(3) + 1/log2(5) = 0.6309298 + 0.4306766 = 1.0616064
    #      nDCG = 1.0616064 / 1.6309298 = 0.6509209
    assert ndcg_at_k(ranked, qrels, k=4) == pytest.approx(0.6509209, abs=1e-7)


def test_ndcg_ideal_is_cut_at_k() -> None:
    # Three relevant documents but k=2: the two best in the two best places is perfect.
    qrels = {"a": 2, "b": 2, "c": 2}
    # DCG = IDCG = 2/log2(2) + 2/log2(3) = 2 + 1.2618595
    assert ndcg_at_k(["a", "b", "c"], qrels, k=2) == pytest.approx(1.0)
    assert ndcg_at_k(["b", "c"], qrels, k=2) == pytest.approx(1.0)


def test_ndcg_is_zero_without_relevant_documents() -> None:
    assert ndcg_at_k(["a", "b"], {}, k=10) == 0.0
    # Judged but not relevant (0) or marked harmful (-1): still no relevant document.
    assert ndcg_at_k(["a", "b"], {"a": 0, "b": -1}, k=10) == 0.0
    assert ndcg_at_k([], {"a": 1}, k=10) == 0.0


def test_ndcg_treats_negative_grades_as_zero_gain() -> None:
    qrels = {"bad": -1, "good": 1}
    # DCG = max(-1, 0)/log2(2) + 1/log2(3) = 0.6309298; IDCG = 1/log2(2) = 1
    assert ndcg_at_k(["bad", "good"], qrels, k=10) == pytest.approx(1 / LOG2_3)


def test_ndcg_stays_between_zero_and_one_for_every_duplicate_free_order() -> None:
    qrels = {"a": 3, "b": 1, "c": 2}
    for order in permutations(["a", "b", "c", "x"]):
        score = ndcg_at_k(list(order), qrels, k=3)
        assert 0.0 <= score <= 1.0 + 1e-12
    # The best order by grade is the only one that reaches exactly 1.
    assert ndcg_at_k(["a", "c", "b", "x"], qrels, k=3) == pytest.approx(1.0)


# -- recall_at_k -------------------------------------------------------------------------------


def test_recall_counts_relevant_documents_in_the_top_k() -> None:
    qrels = {"a": 1, "b": 2, "c": 1, "n": 0}
    ranked = ["a", "x", "b", "n", "c"]
    # Relevant: {a, b, c} (n is judged 0). Top 3 holds a and b: 2/3.
    assert recall_at_k(ranked, qrels, k=3) == pytest.approx(2 / 3)
    # Top 5 holds all three: 3/3.
    assert recall_at_k(ranked, qrels, k=5) == 1.0
    # Top 1 holds a: 1/3.
    assert recall_at_k(ranked, qrels, k=1) == pytest.approx(1 / 3)


def test_recall_does_not_weigh_grades() -> None:
    # One of two relevant documents found, whichever grade it has: 1/2.
    assert recall_at_k(["low"], {"high": 3, "low": 1}, k=10) == 0.5
    assert recall_at_k(["high"], {"high": 3, "low": 1}, k=10) == 0.5


def test_recall_ignores_relevant_documents_beyond_k() -> None:
    assert recall_at_k(["x", "y", "a"], {"a": 1}, k=2) == 0.0
    assert recall_at_k(["x", "y", "a"], {"a": 1}, k=3) == 1.0


def test_recall_is_zero_without_relevant_documents() -> None:
    assert recall_at_k(["a"], {}, k=10) == 0.0
    assert recall_at_k(["a"], {"a": 0}, k=10) == 0.0


# -- mrr_at_k ----------------------------------------------------------------------------------


def test_mrr_is_the_reciprocal_rank_of_the_first_relevant_document() -> None:
    qrels = {"c": 1, "d": 3}
    # First relevant is "c" at rank 3: 1/3. The better-graded "d" at rank 4 does not matter.
    assert mrr_at_k(["a", "b", "c", "d"], qrels, k=10) == pytest.approx(1 / 3)
    assert mrr_at_k(["c", "a"], qrels, k=10) == 1.0


def test_mrr_ignores_relevant_documents_beyond_k() -> None:
    # "c" is at rank 3, outside the top 2.
    assert mrr_at_k(["a", "b", "c"], {"c": 1}, k=2) == 0.0


def test_mrr_is_zero_without_relevant_documents() -> None:
    assert mrr_at_k(["a", "b"], {}, k=10) == 0.0
    assert mrr_at_k(["a", "b"], {"a": 0, "b": -1}, k=10) == 0.0
    assert mrr_at_k([], {"a": 1}, k=10) == 0.0


# -- percentile --------------------------------------------------------------------------------


def test_percentile_interpolates_linearly_between_neighbours() -> None:
    values = [10.0, 20.0, 30.0, 40.0, 50.0]
    # position = (n - 1) * q / 100
    # q=50: 4 * 0.50 = 2.0 -> values[2] = 30
    assert percentile(values, 50) == 30.0
    # q=95: 4 * 0.95 = 3.8 -> 40 + 0.8 * (50 - 40) = 48
    assert percentile(values, 95) == pytest.approx(48.0)
    # q=25: 4 * 0.25 = 1.0 -> values[1] = 20
    assert percentile(values, 25) == 20.0


def test_percentile_of_an_even_count_median() -> None:
    # q=50 over 4 values: 3 * 0.5 = 1.5 -> 2 + 0.5 * (3 - 2) = 2.5
    assert percentile([1.0, 2.0, 3.0, 4.0], 50) == 2.5


def test_percentile_sorts_its_input() -> None:
    # Sorted: [1, 2, 3, 4]; q=75: 3 * 0.75 = 2.25 -> 3 + 0.25 * (4 - 3) = 3.25
    assert percentile([4.0, 1.0, 3.0, 2.0], 75) == pytest.approx(3.25)


def test_percentile_ends_and_edge_cases() -> None:
    values = [7.0, 3.0, 5.0]
    assert percentile(values, 0) == 3.0
    assert percentile(values, 100) == 7.0
    assert percentile([42.0], 95) == 42.0
    assert percentile([], 50) == 0.0
