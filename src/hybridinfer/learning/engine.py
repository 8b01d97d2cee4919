"""Every capability's bandit in this process: chosen from on the request path, fed from the
shared log (``learning/sync.py``), and turned into log rows from finished traces."""

from __future__ import annotations

import random
import time
from collections.abc import Callable
from typing import Any

from hybridinfer.core.trace import Trace
from hybridinfer.learning.bandit import Bandit, Bounds, Choice, Outcome
from hybridinfer.learning.outcomes import implicit_outcome
from hybridinfer.policy.learning import LearningPolicy

MAX_PENDING = 10_000
"""Outcomes held for the store while it is away; past it they are dropped and counted."""


class Learners:
    """The learner of each capability; its state is what the log taught it."""

    def __init__(self, policy: Callable[[], LearningPolicy], seed: int | None = None) -> None:
        """``policy``: the serving policy's ``learning`` block (half-life, key share)."""
        self._policy = policy
        self.bandits: dict[str, Bandit] = {}
        self.rng = random.Random(seed)
        self.pending: list[dict[str, Any]] = []
        """Outcomes of finished requests not yet written to the log."""
        self.dropped = 0

    def choose(
        self,
        capability: str,
        arms: list[tuple[str, bool]],
        context: tuple[float, ...],
        weights: tuple[float, float, float],
        bounds: Bounds,
    ) -> Choice:
        """One decision among ``arms`` (id, public) in the static order."""
        bandit = self.bandits.get(capability)
        if bandit is None:
            bandit = Bandit(half_life=self._policy().half_life)
        return bandit.choose(arms, context, weights, bounds, self.rng)

    def observe_trace(self, trace: Trace) -> None:
        """A finished trace's learner decisions become log rows (a trace sink observer)."""
        policy = self._policy()
        for decision in trace.decisions:
            learning = decision.get("learning")
            if not learning:
                continue
            attempts = [a for a in trace.attempts if a.subtask_id == decision["subtask"]]
            outcome = implicit_outcome(learning, attempts, policy)
            if len(self.pending) >= MAX_PENDING:
                self.dropped += 1
                continue
            self.pending.append(
                {
                    "capability": learning["capability"],
                    "arm": learning["arm"],
                    "context": learning["context"],
                    "propensity": learning["propensity"],
                    "candidates": learning["candidates"],
                    "public": int(learning["public"]),
                    "quality": outcome.quality,
                    "latency": outcome.latency,
                    "cost": outcome.cost,
                    "source": "implicit",
                    "mode": learning["mode"],
                    "prefer": learning["prefer"],
                    "key_id": trace.key_id,
                    "request_id": trace.request_id,
                    "subtask_id": decision["subtask"],
                    "created_at": time.time(),
                }
            )

    def apply(self, row: dict[str, Any]) -> None:
        """Learn one outcome from the log, weighed down if its key dominates."""
        policy = self._policy()
        capability = row["capability"]
        bandit = self.bandits.get(capability)
        if bandit is None:
            bandit = self.bandits[capability] = Bandit(half_life=policy.half_life)
        bandit.half_life = policy.half_life
        weight = bandit.key_weight(row.get("key_id") or "", policy.max_key_share)
        outcome = Outcome(quality=row["quality"], latency=row["latency"], cost=row["cost"])
        bandit.observe(
            row["arm"], tuple(row["context"]), outcome, weight, public=bool(row["public"])
        )

    def forget(self, capability: str) -> None:
        """Drop what a capability's learner knew (a reset)."""
        self.bandits.pop(capability, None)

    def describe(self, capability: str | None = None) -> dict[str, Any]:
        """What each learner knows: outcomes, cloud share, each arm's samples and model."""
        chosen = (
            self.bandits
            if capability is None
            else {name: bandit for name, bandit in self.bandits.items() if name == capability}
        )
        return {
            "learners": {name: bandit.describe() for name, bandit in sorted(chosen.items())},
            "pending": len(self.pending),
            "dropped": self.dropped,
        }
