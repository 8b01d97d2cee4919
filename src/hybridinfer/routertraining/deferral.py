"""How good a weak/strong router is: deferral curve, PGR, APGR, CPT and cost at 95 % quality.

The definitions follow RouteLLM's evaluation (``routellm/evals/evaluate.py`` and
``benchmarks.py``) step for step, so numbers are comparable with the published ones:

- the router scores every prompt ("how much the strong model is needed");
- eleven thresholds are the 0, 10, …, 100 % quantiles of those scores (duplicates kept);
  a prompt goes to the strong model when its score is ``>=`` the threshold, except at the
  last threshold where it takes ``>``, so the curve runs from 100 % to 0 % strong calls;
- quality at each point is the share answered correctly by the model each prompt went to;
- the area under the curve (trapezoids over the strong share) gives APGR against the all-weak
  and all-strong areas; CPT(x) and the strong share at 95 % of strong quality are read off the
  curve by linear interpolation (``np.interp`` over the points ordered by strong share).

Shares and qualities are fractions in [0, 1] throughout; APGR is unitless.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import numpy.typing as npt

FloatArray = npt.NDArray[np.float64]
BoolArray = npt.NDArray[np.bool_]

CURVE_BINS = 10  # RouteLLM's ``num_results``


@dataclass(frozen=True)
class DeferralCurve:
    """Quality against the share of prompts sent to the strong model, ordered by that share."""

    strong_share: FloatArray
    quality: FloatArray
    thresholds: FloatArray
    weak_quality: float
    strong_quality: float


def deferral_curve(
    scores: npt.ArrayLike, weak: npt.ArrayLike, strong: npt.ArrayLike, bins: int = CURVE_BINS
) -> DeferralCurve:
    """The curve of a router that sends prompts scoring at or above a threshold to strong."""
    score = np.asarray(scores, dtype=np.float64)
    weak_ok = np.asarray(weak, dtype=bool)
    strong_ok = np.asarray(strong, dtype=bool)
    if not (score.shape == weak_ok.shape == strong_ok.shape) or score.ndim != 1:
        raise ValueError("scores, weak and strong must be 1-d and of the same length")
    if score.size == 0:
        raise ValueError("a deferral curve needs at least one prompt")
    # pandas.qcut(retbins=True) takes linearly interpolated quantiles, as np.quantile does.
    thresholds = np.quantile(score, np.linspace(0.0, 1.0, bins + 1))
    shares, qualities = [], []
    for index, threshold in enumerate(thresholds):
        last = index == len(thresholds) - 1
        to_strong = score > threshold if last else score >= threshold
        outcome = np.where(to_strong, strong_ok, weak_ok)
        shares.append(float(to_strong.mean()))
        qualities.append(float(outcome.mean()))
    order = np.argsort(np.asarray(shares), kind="stable")
    return DeferralCurve(
        strong_share=np.asarray(shares)[order],
        quality=np.asarray(qualities)[order],
        thresholds=thresholds[order],
        weak_quality=float(weak_ok.mean()),
        strong_quality=float(strong_ok.mean()),
    )


def pgr(quality: float, weak_quality: float, strong_quality: float) -> float:
    """Performance gap recovered: 0 at the weak model's quality, 1 at the strong model's."""
    return (quality - weak_quality) / (strong_quality - weak_quality)


def area(curve: DeferralCurve) -> float:
    """Area under the deferral curve (trapezoids over the strong share)."""
    # Written out rather than np.trapz/np.trapezoid: one was removed, the other is numpy >= 2.
    widths = np.diff(curve.strong_share)
    return float(np.sum(widths * (curve.quality[1:] + curve.quality[:-1]) / 2.0))


def apgr(curve: DeferralCurve) -> float:
    """Average performance gap recovered: the curve's area between all-weak and all-strong."""
    span = float(curve.strong_share[-1] - curve.strong_share[0])
    weak_area = curve.weak_quality * span
    strong_area = curve.strong_quality * span
    return (area(curve) - weak_area) / (strong_area - weak_area)


def cpt(curve: DeferralCurve, recovered: float) -> float:
    """Call-performance threshold: the strong share that recovers ``recovered`` of the gap."""
    target = recovered * (curve.strong_quality - curve.weak_quality) + curve.weak_quality
    return float(np.interp(target, curve.quality, curve.strong_share))


def strong_share_at_quality(curve: DeferralCurve, fraction: float = 0.95) -> float:
    """Strong share needed to reach ``fraction`` of the strong model's own quality.

    This is the "95 % of GPT-4's quality" figure RouteLLM quotes (about 55 % strong calls on
    MMLU); 1.0 when the curve never gets there.
    """
    return float(np.interp(fraction * curve.strong_quality, curve.quality, curve.strong_share))


def curve_metrics(curve: DeferralCurve) -> dict[str, float | None]:
    """The standard numbers of one curve: ``apgr``, ``cpt50``, ``cpt80``, ``strong_share_at_95``.

    All are ``None`` when both models are equally good: there is no gap to recover.
    """
    keys = ("apgr", "cpt50", "cpt80", "strong_share_at_95")
    if curve.strong_quality == curve.weak_quality:
        return dict.fromkeys(keys, None)
    values = (apgr(curve), cpt(curve, 0.5), cpt(curve, 0.8), strong_share_at_quality(curve))
    return {key: round(value, 4) for key, value in zip(keys, values, strict=True)}


def random_scores(count: int, seed: int = 0) -> FloatArray:
    """The random router: uniform scores, seeded so every report is reproducible."""
    scores: FloatArray = np.random.default_rng(seed).random(count)
    return scores


def length_scores(prompts: list[str]) -> FloatArray:
    """The prompt-length heuristic: longer prompts go to the strong model first."""
    return np.asarray([len(prompt) for prompt in prompts], dtype=np.float64)


def subject_oracle_scores(
    weak: npt.ArrayLike, strong: npt.ArrayLike, groups: list[str]
) -> FloatArray:
    """A router that knows each group's (subject's) mean gain of the strong model and nothing
    inside a group: the ceiling of a router whose only signal is which subjects are hard."""
    gain = np.asarray(strong, dtype=np.float64) - np.asarray(weak, dtype=np.float64)
    _, index = np.unique(np.asarray(groups), return_inverse=True)
    means = np.bincount(index, weights=gain) / np.bincount(index)
    scores: FloatArray = means[index]
    return scores


def oracle_scores(weak: npt.ArrayLike, strong: npt.ArrayLike) -> FloatArray:
    """A router that knows the outcomes: strong exactly where only the strong model is right."""
    weak_ok = np.asarray(weak, dtype=bool)
    strong_ok = np.asarray(strong, dtype=bool)
    gain = (strong_ok & ~weak_ok).astype(np.float64)
    loss = (weak_ok & ~strong_ok).astype(np.float64)
    scores: FloatArray = gain - loss
    return scores


def within_group_rank_correlation(
    scores: npt.ArrayLike, weak: npt.ArrayLike, strong: npt.ArrayLike, groups: list[str]
) -> float | None:
    """How well the scores order prompts *inside* each group (an MMLU subject): the Spearman
    correlation between score and the strong model's gain (strong right - weak right, in
    -1, 0, 1) within every group, averaged with the groups' sizes as weights.

    APGR over several held-out subjects rewards telling the subjects apart as much as ranking
    the prompts of one; a file of one domain (another benchmark, a tenant's traffic) has only
    the second. Random scores sit near 0, the oracle far above. A group whose gains or scores
    are all equal has no order to find and is left out; None when every group is.
    """
    values = np.asarray(scores, dtype=np.float64)
    gain = np.asarray(strong, dtype=np.float64) - np.asarray(weak, dtype=np.float64)
    labels = np.asarray(groups)
    total = weight = 0.0
    for name in np.unique(labels):
        rows = labels == name
        score_ranks, gain_ranks = _ranks(values[rows]), _ranks(gain[rows])
        if score_ranks.std() == 0 or gain_ranks.std() == 0:
            continue
        total += float(np.corrcoef(score_ranks, gain_ranks)[0, 1]) * rows.sum()
        weight += rows.sum()
    return round(total / weight, 4) if weight else None


def _ranks(values: FloatArray) -> FloatArray:
    """Ranks from 0, ties sharing their mean rank (as Spearman's correlation needs)."""
    _, inverse, counts = np.unique(values, return_inverse=True, return_counts=True)
    ends = np.cumsum(counts)
    mean_ranks: FloatArray = (ends - counts + ends - 1) / 2
    return mean_ranks[inverse]


@dataclass(frozen=True)
class PairedDifference:
    """APGR of one router less another's on the same prompts, with a bootstrap interval."""

    difference: float
    low: float
    high: float
    resamples: int

    @property
    def verdict(self) -> str:
        """``above`` or ``below`` when the 95 % interval excludes zero, else ``level``."""
        if self.low > 0.0:
            return "above"
        if self.high < 0.0:
            return "below"
        return "level"

    def summary(self) -> dict[str, object]:
        """The difference as reports print it."""
        return {
            "apgr_difference": self.difference,
            "ci95": [self.low, self.high],
            "resamples": self.resamples,
            "verdict": self.verdict,
        }


def paired_apgr_difference(
    first: npt.ArrayLike,
    second: npt.ArrayLike,
    weak: npt.ArrayLike,
    strong: npt.ArrayLike,
    resamples: int = 1000,
    seed: int = 0,
) -> PairedDifference | None:
    """APGR(first) - APGR(second) and its 95 % percentile interval over ``resamples`` draws
    of the prompts with replacement, both routers scored on the same draw: whether one router
    is clearly above the other on this data or within what a different sample of it would
    give. ``None`` when the two models are equally good (no gap to recover)."""
    a, b = np.asarray(first, dtype=np.float64), np.asarray(second, dtype=np.float64)
    weak_ok, strong_ok = np.asarray(weak, dtype=bool), np.asarray(strong, dtype=bool)

    def difference(rows: npt.NDArray[np.intp] | slice) -> float | None:
        if weak_ok[rows].mean() == strong_ok[rows].mean():
            return None
        one = apgr(deferral_curve(a[rows], weak_ok[rows], strong_ok[rows]))
        two = apgr(deferral_curve(b[rows], weak_ok[rows], strong_ok[rows]))
        return one - two

    whole = difference(slice(None))
    if whole is None:
        return None
    rng = np.random.default_rng(seed)
    draws = [difference(rng.integers(0, a.size, a.size)) for _ in range(resamples)]
    found = np.asarray([value for value in draws if value is not None])
    low, high = np.quantile(found, [0.025, 0.975]) if found.size else (whole, whole)
    return PairedDifference(
        round(whole, 4), round(float(low), 4), round(float(high), 4), found.size
    )
