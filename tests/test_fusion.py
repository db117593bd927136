"""Weighted Reciprocal Rank Fusion and the paired significance test, on hand-computed cases."""

from __future__ import annotations

import pytest

from noteseek.eval.runner import compare_runs, paired_permutation_p
from noteseek.search.fusion import rrf


def test_rrf_sums_weighted_reciprocal_ranks() -> None:
    lanes = {"keyword": [(1, 9.0), (2, 5.0)], "semantic": [(2, 0.8), (3, 0.7)]}
    fused = rrf(lanes, {"keyword": 1.0, "semantic": 1.0}, k=10)
    by_id = {f.rowid: f for f in fused}
    # doc 2: 1/(10+2) + 1/(10+1) = 0.0833333 + 0.0909091 = 0.1742424
    assert by_id[2].fused == pytest.approx(1 / 12 + 1 / 11)
    assert by_id[1].fused == pytest.approx(1 / 11)
    assert by_id[3].fused == pytest.approx(1 / 12)
    assert [f.rowid for f in fused] == [2, 1, 3]
    assert by_id[2].ranks == {"keyword": 2, "semantic": 1}
    assert by_id[2].raw == {"keyword": 5.0, "semantic": 0.8}


def test_rrf_score_is_normalised_to_first_in_every_lane() -> None:
    lanes = {"keyword": [(7, 1.0), (8, 0.5)], "semantic": [(7, 0.9)]}
    fused = rrf(lanes, {"keyword": 2.0, "semantic": 1.0}, k=60)
    assert fused[0].rowid == 7 and fused[0].score == pytest.approx(1.0)
    # doc 8: 2/(60+2) over the best 2/61 + 1/61 = 3/61
    assert fused[1].score == pytest.approx((2 / 62) / (3 / 61))
    assert all(0.0 <= f.score <= 1.0 for f in fused)


def test_rrf_weights_change_the_order() -> None:
    lanes = {"keyword": [(1, 1.0), (2, 1.0)], "semantic": [(2, 1.0), (1, 1.0)]}
    assert rrf(lanes, {"keyword": 2.0, "semantic": 1.0}, 60)[0].rowid == 1
    assert rrf(lanes, {"keyword": 1.0, "semantic": 2.0}, 60)[0].rowid == 2


def test_rrf_ties_are_broken_by_lane_order() -> None:
    lanes = {"keyword": [(1, 1.0)], "semantic": [(2, 1.0)]}
    assert [f.rowid for f in rrf(lanes, {}, 60)] == [1, 2]


def test_single_lane_keeps_its_order() -> None:
    lanes = {"keyword": [(5, 3.0), (4, 2.0), (9, 1.0)]}
    fused = rrf(lanes, {"keyword": 1.0}, 60)
    assert [f.rowid for f in fused] == [5, 4, 9]
    assert fused[0].score == 1.0 and fused[2].score == pytest.approx(61 / 63)


def test_permutation_p_value_of_no_difference_is_one() -> None:
    assert paired_permutation_p([0.0] * 50) == 1.0


def test_permutation_p_value_small_for_consistent_gains() -> None:
    assert paired_permutation_p([0.1] * 40) < 0.001


def test_permutation_p_value_large_for_symmetric_noise() -> None:
    diffs = [0.2, -0.2] * 30 + [0.01]
    assert paired_permutation_p(diffs) > 0.5


def test_permutation_p_value_matches_exact_enumeration() -> None:
    # Differences 1.0, 0.6, 0.4, 0.2: observed sum 2.2. Of the 2^4 = 16 sign patterns only
    # all-plus (2.2) and all-minus (-2.2) reach |sum| >= 2.2 (flipping even the 0.2 gives
    # 1.8), so the exact p-value is 2/16 = 0.125.
    p = paired_permutation_p([1.0, 0.6, 0.4, 0.2], rounds=200_000)
    assert p == pytest.approx(0.125, abs=0.005)


def test_compare_runs_reports_paired_differences() -> None:
    old = {"per_query": {"keyword": {"q1": _m(0.5), "q2": _m(0.0), "q3": _m(1.0)}}}
    new = {"per_query": {"keyword": {"q1": _m(1.0), "q2": _m(0.5), "q3": _m(1.0), "q4": _m(0)}}}
    out = compare_runs(new, old)
    row = out["keyword"]
    assert row["queries"] == 3  # q4 is not in the old run
    assert row["metrics"]["ndcg@10"]["old"] == pytest.approx(0.5)
    assert row["metrics"]["ndcg@10"]["new"] == pytest.approx(0.8333, abs=1e-4)
    assert row["metrics"]["ndcg@10"]["diff"] == pytest.approx(0.3333, abs=1e-4)
    assert 0 < row["metrics"]["ndcg@10"]["p_value"] <= 1


def test_compare_needs_per_query_scores() -> None:
    with pytest.raises(ValueError, match="--save"):
        compare_runs({"per_query": {}}, {"modes": {}})


def _m(v: float) -> dict[str, float]:
    return {"ndcg@10": v, "recall@10": v, "recall@100": v, "mrr@10": v}


def test_lane_confidence_is_the_best_scores_lead_in_deviations() -> None:
    from noteseek.search.fusion import lane_confidence

    peaked = [(1, 10.0), (2, 1.0), (3, 1.0), (4, 1.0)]
    # mean 3.25, population std sqrt(((6.75)^2 + 3 * 2.25^2) / 4) = 3.897...
    assert lane_confidence(peaked) == pytest.approx(6.75 / 3.8971, abs=1e-3)
    assert lane_confidence([(1, 0.5), (2, 0.5), (3, 0.5)]) == 0.0  # flat
    assert lane_confidence([(1, 3.0), (2, 1.0)]) == 0.0  # too few to tell


def test_score_aware_weights_turn_down_a_flat_lane() -> None:
    from noteseek.search.fusion import score_aware_weights

    sharp = [(i, 10.0 if i == 1 else 1.0) for i in range(1, 51)]  # z = 7: full weight
    flat = [(i, 0.80 - 0.001 * i) for i in range(1, 51)]  # z = 1.7
    w = score_aware_weights(
        {"keyword": sharp, "semantic": flat}, {"keyword": 1, "semantic": 1.5}, 3
    )
    assert w["keyword"] == 1.0
    assert w["semantic"] == pytest.approx(1.5 * 1.7 / 3, abs=0.01)
    even = [(i, 1.0) for i in range(1, 10)]
    both_flat = score_aware_weights({"keyword": even, "semantic": even}, {"semantic": 1.5}, 3)
    assert both_flat == {"keyword": 1.0, "semantic": 1.5}  # nothing to prefer: plain weights
