"""Personalised PageRank over the link graph."""

from __future__ import annotations

import pytest

from noteseek.graph.ppr import WalkGraph


def chain_and_star() -> WalkGraph:
    # a - b - c - d (a chain), and a hub h linked to x, y, z; nothing joins the two parts.
    return WalkGraph.build(
        [("a", "b"), ("b", "c"), ("c", "d"), ("h", "x"), ("h", "y"), ("z", "h"), ("b", "a")]
    )


def test_mass_stays_with_the_seeds_part_and_falls_with_distance() -> None:
    pr = chain_and_star().personalised({"a": 1.0})
    assert sum(pr.values()) == pytest.approx(1.0, abs=1e-6)
    assert set(pr) == {"a", "b", "c", "d"}  # the star is unreachable from a
    # b collects from both sides, so it may pass the seed itself; beyond it mass falls.
    assert min(pr["a"], pr["b"]) > pr["c"] > pr["d"] > 0


def test_restart_weights_and_unknown_seeds() -> None:
    g = chain_and_star()
    both = g.personalised({"a": 1.0, "h": 3.0})
    assert both["h"] > both["a"]
    assert g.personalised({"nowhere": 1.0}) == {}
    assert WalkGraph.build([]).personalised({"a": 1.0}) == {}


def test_duplicate_and_self_edges_do_not_count_twice() -> None:
    g = WalkGraph.build([("a", "b"), ("b", "a"), ("a", "a"), ("a", "b")])
    assert list(g.degree) == [1.0, 1.0]
    pr = g.personalised({"a": 1.0}, alpha=0.5)
    # Two nodes, restart 0.5 to a: x_a = 0.5 + 0.5 * x_b, x_b = 0.5 * x_a -> x_a = 2/3.
    assert pr["a"] == pytest.approx(2 / 3, abs=1e-5)
