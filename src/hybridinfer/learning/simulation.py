"""Worlds where every arm's outcome is known, to test and measure a learner offline.

A ``DriftingWorld`` gives each arm a quality (the chance its answer is right, lower on
harder prompts), a latency and a cost, and changes them at ``switch_at`` (the cloud model
gets better, or the local node degrades). ``run`` plays a chooser against it with bandit
feedback (only the chosen arm's outcome is seen) and keeps every step's expected reward for
every arm, so regret against any fixed policy can be read afterwards.
"""

from __future__ import annotations

import random
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Protocol

from hybridinfer.learning.bandit import Outcome


@dataclass(frozen=True, slots=True)
class ArmWorld:
    """One arm's truth before and after the switch."""

    quality: float
    latency_ms: float
    cost: float = 0.0
    quality_after: float | None = None
    latency_after_ms: float | None = None
    hard_penalty: float = 0.0
    """How much less likely a right answer is on the hardest prompt (difficulty 1)."""


@dataclass(slots=True)
class DriftingWorld:
    """Arms whose truth changes once, halfway or wherever ``switch_at`` says."""

    arms: dict[str, ArmWorld]
    switch_at: int
    latency_scale_ms: float = 1000.0
    cost_scale: float = 0.01

    def truth(self, arm: str, step: int, difficulty: float) -> Outcome:
        """The expected outcome of ``arm`` at ``step`` on a prompt of ``difficulty``."""
        world = self.arms[arm]
        after = step >= self.switch_at
        quality = world.quality_after if after and world.quality_after is not None else None
        latency = world.latency_after_ms if after and world.latency_after_ms is not None else None
        q = (world.quality if quality is None else quality) - world.hard_penalty * difficulty
        ms = world.latency_ms if latency is None else latency
        return Outcome(
            quality=min(1.0, max(0.0, q)),
            latency=max(0.0, 1.0 - ms / self.latency_scale_ms),
            cost=max(0.0, 1.0 - world.cost / self.cost_scale),
        )

    def sample(self, arm: str, step: int, difficulty: float, rng: random.Random) -> Outcome:
        """One observed outcome: the answer right or wrong, the latency jittered ±20 %."""
        truth = self.truth(arm, step, difficulty)
        jitter = 1.0 + rng.uniform(-0.2, 0.2)
        latency = max(0.0, 1.0 - (1.0 - truth.latency) * jitter)
        right = 1.0 if rng.random() < truth.quality else 0.0
        return Outcome(quality=right, latency=latency, cost=truth.cost)


class World(Protocol):
    """What ``run`` plays against: each arm's expected and observed outcome per step."""

    @property
    def arms(self) -> Sequence[str]: ...

    def truth(self, arm: str, step: int, difficulty: float) -> Outcome: ...

    def sample(self, arm: str, step: int, difficulty: float, rng: random.Random) -> Outcome: ...


@dataclass(slots=True)
class Trajectory:
    """What a run chose and what every arm would have earned in expectation, per step."""

    arms: list[str]
    chosen: list[str] = field(default_factory=list)
    expected: list[dict[str, float]] = field(default_factory=list)

    def cumulative(self, policy: Callable[[int], str] | None = None) -> list[float]:
        """Running sum of expected reward of the run (or of a fixed ``policy`` of steps)."""
        total, out = 0.0, []
        for step, rewards in enumerate(self.expected):
            total += rewards[self.chosen[step] if policy is None else policy(step)]
            out.append(total)
        return out

    def regret_against(self, arm: str) -> list[float]:
        """Cumulative expected reward of always ``arm`` minus the run's."""
        fixed = self.cumulative(lambda _step: arm)
        return [a - b for a, b in zip(fixed, self.cumulative(), strict=True)]

    def best_fixed(self) -> str:
        """The arm that earned most over the whole run (the best fixed policy in hindsight)."""
        totals = {arm: sum(r[arm] for r in self.expected) for arm in self.arms}
        return max(totals, key=lambda arm: totals[arm])

    def share(self, arm: str, start: int, end: int) -> float:
        """Share of steps ``start``..``end`` that chose ``arm``."""
        window = self.chosen[start:end]
        return sum(1 for chosen in window if chosen == arm) / max(1, len(window))


Chooser = Callable[[int, float], str]
"""(step, difficulty) → the arm chosen."""
Learner = Callable[[str, float, Outcome], None]
"""(arm, difficulty, observed outcome) → learn it."""


def run(
    world: World,
    steps: int,
    choose: Chooser,
    learn: Learner,
    weights: tuple[float, float, float],
    seed: int = 0,
    difficulties: Sequence[float] | None = None,
) -> Trajectory:
    """Play ``steps`` decisions; ``difficulties`` (else uniform draws) per step."""
    rng = random.Random(seed)
    trajectory = Trajectory(arms=list(world.arms))
    for step in range(steps):
        difficulty = rng.random() if difficulties is None else difficulties[step]
        arm = choose(step, difficulty)
        trajectory.chosen.append(arm)
        trajectory.expected.append(
            {name: world.truth(name, step, difficulty).reward(weights) for name in world.arms}
        )
        learn(arm, difficulty, world.sample(arm, step, difficulty, rng))
    return trajectory
