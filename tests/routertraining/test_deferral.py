"""Routing metrics on hand-made cases whose answers are worked out on paper."""

from __future__ import annotations

import numpy as np
import pytest

from hybridinfer.routertraining.deferral import (
    apgr,
    cpt,
    curve_metrics,
    deferral_curve,
    length_scores,
    oracle_scores,
    paired_apgr_difference,
    pgr,
    random_scores,
    strong_share_at_quality,
    subject_oracle_scores,
    within_group_rank_correlation,
)

# Ten prompts: the weak model gets the first six right, the strong model gets all ten.
WEAK = np.array([True] * 6 + [False] * 4)
STRONG = np.array([True] * 10)


def test_perfect_router_curve() -> None:
    # Scores 0 x6, 1 x4: quantile thresholds 0 (x6), 0.4, 1 (x4); the last takes ">".
    curve = deferral_curve(oracle_scores(WEAK, STRONG), WEAK, STRONG)
    assert curve.strong_share.tolist() == pytest.approx([0.0] + [0.4] * 4 + [1.0] * 6)
    assert curve.quality.tolist() == pytest.approx([0.6] + [1.0] * 10)
    # Area 0.4 * 0.8 + 0.6 * 1.0 = 0.92 between all-weak 0.6 and all-strong 1.0.
    assert apgr(curve) == pytest.approx(0.8)
    assert cpt(curve, 0.5) == pytest.approx(0.2)
    assert cpt(curve, 0.8) == pytest.approx(0.32)
    assert strong_share_at_quality(curve, 0.95) == pytest.approx(0.35)


def test_inverted_router_sends_the_easy_prompts_first() -> None:
    curve = deferral_curve(-oracle_scores(WEAK, STRONG), WEAK, STRONG)
    # 60 % strong buys nothing (the weak model had those right), the last 40 % buys it all.
    assert curve.strong_share.tolist() == pytest.approx([0.0] + [0.6] * 6 + [1.0] * 4)
    assert apgr(curve) == pytest.approx(0.2)
    assert cpt(curve, 0.5) == pytest.approx(0.8)


def test_constant_scores_are_a_straight_line() -> None:
    curve = deferral_curve(np.zeros(10), WEAK, STRONG)
    assert apgr(curve) == pytest.approx(0.5)
    assert cpt(curve, 0.5) == pytest.approx(0.5)
    assert strong_share_at_quality(curve) == pytest.approx(0.875)


def test_random_router_recovers_half_the_gap() -> None:
    rng = np.random.default_rng(1)
    weak = rng.random(20_000) < 0.68
    strong = rng.random(20_000) < 0.81
    summary = curve_metrics(deferral_curve(random_scores(20_000), weak, strong))
    assert summary["apgr"] == pytest.approx(0.5, abs=0.05)
    assert summary["cpt50"] == pytest.approx(0.5, abs=0.05)


def test_quality_out_of_reach_needs_every_strong_call() -> None:
    weak = np.array([False, False, True, True])
    strong = np.array([True, True, True, True])
    curve = deferral_curve(np.zeros(4), weak, strong)
    assert strong_share_at_quality(curve, 1.0) == pytest.approx(1.0)
    assert strong_share_at_quality(curve, 2.0) == pytest.approx(1.0)


def test_pgr_and_no_gap() -> None:
    assert pgr(0.7, 0.6, 0.8) == pytest.approx(0.5)
    same = np.array([True, False, True])
    assert curve_metrics(deferral_curve([1.0, 2.0, 3.0], same, same)) == {
        "apgr": None,
        "cpt50": None,
        "cpt80": None,
        "strong_share_at_95": None,
    }


def test_baseline_scores() -> None:
    assert length_scores(["a", "abc", ""]).tolist() == [1.0, 3.0, 0.0]
    assert np.array_equal(random_scores(5), random_scores(5))


def test_the_subject_oracle_knows_each_subjects_mean_gain_and_nothing_inside() -> None:
    weak = [True, False, False, True, True, False]
    strong = [True, True, True, False, True, True]
    groups = ["b", "a", "b", "a", "b", "c"]
    scores = subject_oracle_scores(weak, strong, groups)
    # a: gains +1, -1 -> 0; b: 0, +1, 0 -> 1/3; c: +1
    np.testing.assert_allclose(scores, [1 / 3, 0.0, 1 / 3, 0.0, 1 / 3, 1.0])


def test_mismatched_inputs_are_rejected() -> None:
    with pytest.raises(ValueError, match="same length"):
        deferral_curve([1.0, 2.0], [True], [False])
    with pytest.raises(ValueError, match="at least one"):
        deferral_curve([], [], [])


def test_the_paired_difference_tells_a_clear_gap_from_noise() -> None:
    rng = np.random.default_rng(3)
    weak = rng.random(400) < 0.6
    strong = weak | (rng.random(400) < 0.5)
    oracle, noise = oracle_scores(weak, strong), rng.random(400)
    above = paired_apgr_difference(oracle, noise, weak, strong, resamples=200)
    assert above is not None
    assert above.verdict == "above"
    assert 0.0 < above.low <= above.difference <= above.high
    below = paired_apgr_difference(noise, oracle, weak, strong, resamples=200)
    assert below is not None
    assert below.verdict == "below"
    assert below.difference == pytest.approx(-above.difference)
    same = paired_apgr_difference(noise, noise, weak, strong, resamples=200)
    assert same is not None
    assert same.verdict == "level"
    assert (same.low, same.difference, same.high) == (0.0, 0.0, 0.0)
    # two unrelated random routers: level, the interval spanning zero
    other = paired_apgr_difference(noise, rng.random(400), weak, strong, resamples=200)
    assert other is not None
    assert other.verdict == "level"
    assert other.low < 0.0 < other.high
    assert paired_apgr_difference(noise, noise, weak, weak) is None


def test_within_group_correlation_reads_the_order_inside_each_group_only() -> None:
    # two groups; the strong model helps on some prompts of each
    weak = np.array([1, 1, 0, 0, 1, 1, 0, 0], dtype=bool)
    strong = np.array([1, 1, 1, 1, 1, 1, 1, 1], dtype=bool)
    groups = ["a"] * 4 + ["b"] * 4
    inside = np.array([0.1, 0.2, 0.8, 0.9, 0.1, 0.2, 0.8, 0.9])
    assert within_group_rank_correlation(inside, weak, strong, groups) == pytest.approx(
        np.sqrt(0.8),  # Spearman of (0, 1, 2, 3) against the tied gains (0, 0, 1, 1)
        abs=1e-4,
    )
    # scores that only tell the groups apart order nothing inside them
    between = np.array([0.1, 0.1, 0.1, 0.1, 0.9, 0.9, 0.9, 0.9])
    assert within_group_rank_correlation(between, weak, strong, groups) is None
    # reversed inside each group, however the groups compare
    reversed_inside = np.array([0.9, 0.8, 0.2, 0.1, 1.9, 1.8, 1.2, 1.1])
    assert within_group_rank_correlation(reversed_inside, weak, strong, groups) == pytest.approx(
        -np.sqrt(0.8), abs=1e-4
    )
    # a group with no gain to find is left out; the other keeps its weight
    strong_b_flat = strong.copy()
    weak_b_flat = weak.copy()
    weak_b_flat[4:] = True
    mixed = within_group_rank_correlation(inside, weak_b_flat, strong_b_flat, groups)
    assert mixed == pytest.approx(np.sqrt(0.8), abs=1e-4)
