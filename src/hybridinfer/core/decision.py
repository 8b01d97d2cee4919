"""A routing decision for one subtask, with every candidate and the reason in one sentence."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from hybridinfer.core.topology import Deployment, Node


@dataclass(slots=True)
class Candidate:
    """A deployment the router considered: its score, or the rule that rejected it."""

    deployment: Deployment
    node: Node
    score: float | None = None
    rejected_by: str | None = None
    detail: str = ""
    expected_latency_ms: float = 0.0

    def describe(self) -> dict[str, Any]:
        return {
            "deployment": self.deployment.id,
            "tier": self.node.tier.value,
            "zone": self.node.zone.value,
            "score": None if self.score is None else round(self.score, 4),
            "expected_latency_ms": round(self.expected_latency_ms, 3),
            "quality": self.deployment.quality,
            "cost_per_call": self.deployment.cost_per_call,
            "rejected_by": self.rejected_by,
            "detail": self.detail,
        }


@dataclass(slots=True)
class Cascade:
    """Run the chosen deployment first; escalate when its confidence is below the threshold."""

    threshold: float
    escalate_to: list[Candidate]


@dataclass(slots=True)
class Decision:
    """Where one subtask runs, what to try if that fails, and why."""

    subtask_id: str
    chosen: Candidate
    fallbacks: list[Candidate]
    candidates: list[Candidate]
    reason: str
    policy_version: str
    cascade: Cascade | None = None
    rules: list[str] = field(default_factory=list)

    def describe(self) -> dict[str, Any]:
        return {
            "subtask": self.subtask_id,
            "chosen": self.chosen.deployment.id,
            "tier": self.chosen.node.tier.value,
            "fallbacks": [candidate.deployment.id for candidate in self.fallbacks],
            "cascade": None
            if self.cascade is None
            else {
                "threshold": self.cascade.threshold,
                "escalate_to": [c.deployment.id for c in self.cascade.escalate_to],
            },
            "candidates": [candidate.describe() for candidate in self.candidates],
            "reason": self.reason,
            "policy_version": self.policy_version,
            "rules": list(self.rules),
        }
