"""Hedged requests: when the first deployment has not answered after its usual p95 latency,
the next one in the decision's chain is asked too; the first success wins, the other call is
cancelled.

Hedging only ever uses the decision's own candidates, which the router already filtered
(privacy, degrade switches, budget), so a sensitive subtask is never hedged out of the private
zone; and the hedge reserves its cost like any paid call, so it cannot spend past the budget.
"""

from __future__ import annotations

from dataclasses import dataclass

from hybridinfer.signals.latencies import LatencyWindows


@dataclass(frozen=True, slots=True)
class HedgePolicy:
    """When subtasks are hedged, and how long the first call runs alone."""

    delay_ms: float = 50.0
    """Head start of the first call while its deployment has too few samples for a p95."""
    below_latency_ms: float = 0.0
    """Requests whose ``max_latency_ms`` is at most this are hedged (0: only when asked)."""

    def wanted(self, asked: bool | None, max_latency_ms: float | None) -> bool:
        """Whether one request's subtasks are hedged: its ``options.hedge``, else its SLO."""
        if asked is not None:
            return asked
        return (
            self.below_latency_ms > 0.0
            and max_latency_ms is not None
            and (max_latency_ms <= self.below_latency_ms)
        )

    def delay_s(self, windows: LatencyWindows, deployment_id: str) -> float:
        """The first call's head start: its deployment's p95, or ``delay_ms`` before one exists."""
        p95 = windows.p95_ms(deployment_id)
        return (self.delay_ms if p95 is None else p95) / 1000.0
