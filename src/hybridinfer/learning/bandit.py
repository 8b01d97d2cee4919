"""A contextual bandit per capability: discounted ridge regression per arm, chosen greedily
(optionally with LinUCB's bonus) with a bounded share of uniform exploration.

Why this shape: each choice's probability is exact (``propensity``), which the offline
estimators need (``learning/offline.py``); exploration is one number a policy bounds; and a
world that changes is followed because old observations fade (a half-life in outcomes, the
discounted LinUCB of Russac et al., 2019). Updates use numpy; a decision reads cached
coefficients in plain Python (four features, three components: cheaper than numpy's calls).

An outcome has three components in 0..1 (1 best): quality, latency and cost. Each arm learns
each component; a decision weighs them by the request's ``prefer`` weights, so one learner
serves every ``prefer``. Estimates start at the neutral 0.5 (the ridge prior).
"""

from __future__ import annotations

import math
import operator
import random
from collections import Counter, deque
from dataclasses import dataclass, field
from typing import Any

import numpy as np

DIMENSIONS = 4
"""The context's length (``learning/features.py``)."""
COMPONENTS = ("quality", "latency", "cost")
_RIDGE = 1.0
_PRIOR = 0.5


@dataclass(frozen=True, slots=True)
class Outcome:
    """What one placement earned, each component in 0..1 (1 best)."""

    quality: float
    latency: float
    cost: float

    def values(self) -> tuple[float, float, float]:
        return (self.quality, self.latency, self.cost)

    def reward(self, weights: tuple[float, float, float]) -> float:
        """The components weighed by ``(quality, latency, cost)`` weights, in 0..1."""
        total = sum(weights) or 1.0
        return sum(w * v for w, v in zip(weights, self.values(), strict=True)) / total


@dataclass(frozen=True, slots=True)
class Estimate:
    """An arm's predicted reward for one context."""

    mean: float
    width: float
    """One standard error of the mean (unscaled by the noise)."""
    samples: float
    """Observations behind it, faded by the half-life."""
    observed: int = 0
    """Observations it ever had (since a reset): what ``min_samples`` counts."""


class ArmModel:
    """Ridge regression of the three components on the context, its past fading."""

    __slots__ = (
        "_coefficients",
        "_combined",
        "_inverse",
        "b",
        "gram",
        "observed",
        "samples",
        "step",
    )

    def __init__(self) -> None:
        self.gram = np.zeros((DIMENSIONS, DIMENSIONS))
        self.b = np.zeros((DIMENSIONS, len(COMPONENTS)))
        self.samples = 0.0
        self.observed = 0
        self.step = 0
        """The capability's outcome count when this arm was last updated."""
        self._inverse: list[list[float]] = (np.eye(DIMENSIONS) / _RIDGE).tolist()
        self._coefficients: list[list[float]] = [[0.0] * DIMENSIONS for _ in COMPONENTS]
        self._combined: dict[tuple[float, float, float], list[float]] = {}
        """The components' coefficients weighed by one ``prefer``'s weights, kept per weights
        until the next update: a decision then costs one dot product per arm."""

    def observe(
        self, context: tuple[float, ...], outcome: Outcome, weight: float, faded: float
    ) -> None:
        """Fade the past by ``faded``, add one weighted observation, re-solve."""
        x = np.asarray(context, dtype=float)
        residual = np.asarray(outcome.values(), dtype=float) - _PRIOR
        self.gram = self.gram * faded + weight * np.outer(x, x)
        self.b = self.b * faded + weight * np.outer(x, residual)
        self.samples = self.samples * faded + weight
        self.observed += 1
        inverse = np.linalg.inv(self.gram + _RIDGE * np.eye(DIMENSIONS))
        self._inverse = inverse.tolist()
        self._coefficients = (inverse @ self.b).T.tolist()
        self._combined = {}

    def estimate(
        self,
        context: tuple[float, ...],
        weights: tuple[float, float, float],
        faded: float,
        width: bool = True,
    ) -> Estimate:
        """The weighted reward predicted for ``context``; ``faded``: the fade since the last
        update (it widens the interval and shrinks the samples, the mean stays). Without
        ``width`` the interval is not computed (0)."""
        combined = self._combined.get(weights)
        if combined is None:
            total = sum(weights) or 1.0
            combined = self._combined[weights] = [
                sum(w / total * row[i] for w, row in zip(weights, self._coefficients, strict=True))
                for i in range(DIMENSIONS)
            ]
        mean = _PRIOR + sum(map(operator.mul, combined, context))
        spread = 0.0
        if width:
            for value, row in zip(context, self._inverse, strict=True):
                spread += value * sum(map(operator.mul, row, context))
            spread = math.sqrt(max(spread, 0.0) / max(faded, 1e-12))
        return Estimate(mean, spread, self.samples * faded, self.observed)

    def describe(self) -> dict[str, Any]:
        return {
            "samples": round(self.samples, 3),
            "observed": self.observed,
            "coefficients": {
                name: [round(c, 5) for c in row]
                for name, row in zip(COMPONENTS, self._coefficients, strict=True)
            },
        }


@dataclass(frozen=True, slots=True)
class Choice:
    """Which arm a decision took, with what probability, and the estimates behind it."""

    index: int
    """Into the arms as given (0: the static policy's choice)."""
    propensity: float
    mode: str
    """``static`` (too few samples: the policy's order), ``learned`` or ``explore``."""
    estimates: list[Estimate]
    constrained: bool = False
    """Public-zone arms were held back: the policy's cloud share target was reached."""


@dataclass(slots=True)
class Bounds:
    """What the policy allows one decision (``policy/learning.py``)."""

    explore: float = 0.0
    min_samples: int = 20
    optimism: float = 0.0
    cloud_share: float | None = None
    """The policy's ``target_cloud_share``: public arms are held back above it."""


@dataclass(slots=True)
class Bandit:
    """One capability's arms (deployment ids), outcome count, cloud share and key shares."""

    half_life: int = 300
    arms: dict[str, ArmModel] = field(default_factory=dict)
    step: int = 0
    _public: float = 0.0
    _weight: float = 0.0
    _keys: deque[str] = field(default_factory=deque)
    _key_counts: Counter[str] = field(default_factory=Counter)
    _gamma: tuple[int, float] = (0, 1.0)

    @property
    def public_share(self) -> float:
        """Share of outcomes placed in the public zone, the older fading (0 before any)."""
        return self._public / self._weight if self._weight > 0.0 else 0.0

    @property
    def gamma(self) -> float:
        """The fade per outcome: 0.5 after ``half_life`` of them."""
        if self._gamma[0] != self.half_life:
            self._gamma = (self.half_life, float(0.5 ** (1.0 / self.half_life)))
        return self._gamma[1]

    def key_weight(self, key: str, max_share: float) -> float:
        """Count one outcome of ``key``; its weight: 1, or less past ``max_share`` of the
        capability's last ``half_life`` outcomes."""
        self._keys.append(key)
        self._key_counts[key] += 1
        while len(self._keys) > self.half_life:
            old = self._keys.popleft()
            self._key_counts[old] -= 1
        # Over a full window even while it fills: the first outcomes are not one key's alone.
        share = self._key_counts[key] / max(len(self._keys), self.half_life)
        return 1.0 if share <= max_share else max_share / share

    def observe(
        self,
        arm: str,
        context: tuple[float, ...],
        outcome: Outcome,
        weight: float = 1.0,
        public: bool = False,
    ) -> None:
        """One outcome: every arm's past fades by one step, this arm learns it."""
        self.step += 1
        gamma = self.gamma
        self._public = gamma * self._public + float(public)
        self._weight = gamma * self._weight + 1.0
        model = self.arms.get(arm)
        if model is None:
            model = self.arms[arm] = ArmModel()
        model.observe(context, outcome, weight, _fade(gamma, self.step - model.step))
        model.step = self.step

    def estimate(
        self,
        arm: str,
        context: tuple[float, ...],
        weights: tuple[float, float, float],
        width: bool = True,
    ) -> Estimate:
        """``arm``'s predicted reward for ``context`` (the prior for an arm never seen)."""
        model = self.arms.get(arm)
        if model is None:
            return Estimate(mean=_PRIOR, width=math.inf, samples=0.0)
        faded = _fade(self.gamma, self.step - model.step)
        return model.estimate(context, weights, faded, width)

    def choose(
        self,
        arms: list[tuple[str, bool]],
        context: tuple[float, ...],
        weights: tuple[float, float, float],
        bounds: Bounds,
        rng: random.Random,
    ) -> Choice:
        """Choose among ``arms`` (id, public), in the static policy's order: the static
        choice (index 0) unless the estimates of arms with ``min_samples`` beat it."""
        width = bounds.optimism > 0.0
        estimates = [self.estimate(arm, context, weights, width) for arm, _ in arms]
        over = bounds.cloud_share is not None and self.public_share >= bounds.cloud_share
        allowed = [i for i, (_, public) in enumerate(arms) if not (over and public)] or list(
            range(len(arms))
        )
        greedy = _greedy(estimates, allowed, bounds)
        chosen, mode = (
            greedy,
            "static" if greedy == 0 and not _ready(estimates[0], bounds) else "learned",
        )
        if bounds.explore > 0.0 and rng.random() < bounds.explore:
            chosen = allowed[rng.randrange(len(allowed))]
            mode = "explore" if chosen != greedy else mode
        propensity = (1.0 - bounds.explore) * (chosen == greedy)
        propensity += bounds.explore * (chosen in allowed) / len(allowed)
        return Choice(chosen, propensity, mode, estimates, constrained=len(allowed) < len(arms))

    def describe(self) -> dict[str, Any]:
        return {
            "outcomes": self.step,
            "half_life": self.half_life,
            "public_share": round(self.public_share, 4),
            "arms": {arm: model.describe() for arm, model in sorted(self.arms.items())},
        }


def _ready(estimate: Estimate, bounds: Bounds) -> bool:
    return estimate.observed >= max(bounds.min_samples, 1)


def _greedy(estimates: list[Estimate], allowed: list[int], bounds: Bounds) -> int:
    """The static choice unless it has too few samples, or a ready allowed arm scores more
    (ties keep the static order)."""
    if not _ready(estimates[0], bounds):
        return 0
    best, best_value = 0, -math.inf
    for index in allowed:
        estimate = estimates[index]
        if index != 0 and not _ready(estimate, bounds):
            continue
        value = estimate.mean + bounds.optimism * estimate.width
        if value > best_value + 1e-12:
            best, best_value = index, value
    return best


def _fade(gamma: float, steps: int) -> float:
    return float(gamma**steps) if steps > 0 else 1.0
