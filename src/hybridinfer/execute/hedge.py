"""Hedged requests: when the first deployment has not answered after its usual p95 latency,
the next candidate in the decision's chain *on another tier* is asked too; the first success
wins. The loser's attempt is cancelled, but its call runs on to its own bound so its verdict
still reaches the breaker and the latency signals (``executor.py``). Another tier, because a
slow answer is most often the path's or the tier's (a brownout on the cloud link, a saturated
host): a second call down the same path would wait behind the same fault. A decision with no
candidate on another tier is not hedged. Latency-sensitive subtasks are hedged by default;
others when the request asks (``options.hedge``) or its ``max_latency_ms`` is tight enough.
The hedge starts only if the deadline leaves it time.

Hedging only ever uses the decision's own candidates, which the router already filtered
(privacy, degrade switches, budget), so a sensitive subtask is never hedged out of the private
zone; and the hedge reserves its cost like any paid call, so it cannot spend past the budget.
"""

from __future__ import annotations

from dataclasses import dataclass, replace

from hybridinfer.execute.attempts import Step
from hybridinfer.signals.latencies import LatencyWindows

GENERATIONS = frozenset({"chat"})
"""Capabilities never hedged by default."""


@dataclass(frozen=True, slots=True)
class HedgePolicy:
    """When subtasks are hedged, and how long the first call runs alone."""

    delay_ms: float = 50.0
    """Head start of the first call while its deployment has too few samples for a p95."""
    below_latency_ms: float = 0.0
    """Requests whose ``max_latency_ms`` is at most this are hedged (0: only when asked)."""
    latency_sensitive: bool = True
    """Latency-sensitive subtasks are hedged unless the request says otherwise (or asks for
    quality: the race goes to another tier, whose answer may be weaker)."""

    def wanted(
        self,
        asked: bool | None,
        max_latency_ms: float | None,
        latency_sensitive: bool = False,
        prefer: str = "balanced",
        capability: str = "",
    ) -> bool:
        """Whether a subtask is hedged: its request's ``options.hedge``, else its SLO, else
        whether it is latency-sensitive, the request does not ask for quality and it is not a
        generation (a chat's second try is a whole generation on another model, and its
        length varies so much that a p95 says little about a stuck call)."""
        if asked is not None:
            return asked
        tight = (
            self.below_latency_ms > 0.0
            and max_latency_ms is not None
            and (max_latency_ms <= self.below_latency_ms)
        )
        by_default = (
            self.latency_sensitive
            and latency_sensitive
            and prefer != "quality"
            and capability not in GENERATIONS
        )
        return tight or by_default

    def delay_s(self, windows: LatencyWindows, deployment_id: str) -> float:
        """The first call's head start: its deployment's p95, or ``delay_ms`` before one exists."""
        p95 = windows.p95_ms(deployment_id)
        return (self.delay_ms if p95 is None else p95) / 1000.0


def hedge_order(steps: list[Step]) -> list[Step] | None:
    """The chain with the step raced against the primary moved second, the rest in their
    order: the first step on another tier (a slow link slows a whole tier), else the first on
    another node; None when every step is a retry of the primary's node."""
    first = steps[0].candidate.node
    for by_tier in (True, False):
        for index, step in enumerate(steps[1:], start=1):
            node = step.candidate.node
            if (node.tier != first.tier) if by_tier else (node.id != first.id):
                ordered = [steps[0], step, *steps[1:index], *steps[index + 1 :]]
                end = len(ordered) - 1
                return [replace(s, last=position == end) for position, s in enumerate(ordered)]
    return None
