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
    expected_quality: float | None = None
    """Its quality on this prompt, when the prompt's difficulty was read (else its figure)."""

    def describe(self) -> dict[str, Any]:
        return {
            "deployment": self.deployment.id,
            "tier": self.node.tier.value,
            "zone": self.node.zone.value,
            "score": None if self.score is None else round(self.score, 4),
            "expected_latency_ms": round(self.expected_latency_ms, 3),
            "quality": self.deployment.quality,
            "expected_quality": None
            if self.expected_quality is None
            else round(self.expected_quality, 4),
            "cost_per_call": self.deployment.cost_per_call,
            "rejected_by": self.rejected_by,
            "detail": self.detail,
        }


@dataclass(frozen=True, slots=True)
class Verdict:
    """A subtask's difficulty against its policy's threshold, and what that asks for.

    ``knob`` names the policy's setting in its own words ("max quality drop 50 %", "target
    cloud share 30 %"); ``calibration`` what the threshold was read from."""

    difficulty: float
    threshold: float
    knob: str
    calibration: str
    signals: dict[str, float] = field(default_factory=dict)

    @property
    def action(self) -> str:
        return "cloud" if self.difficulty >= self.threshold else "local"

    def sentence(self) -> str:
        sign = "≥" if self.action == "cloud" else "<"
        read = "" if self.calibration == "fixed" else f", calibrated on {self.calibration}"
        return (
            f"difficulty {self.difficulty:.2f} {sign} {self.threshold:.2f} ({self.knob}{read})"
            f" → {self.action}"
        )

    def describe(self) -> dict[str, Any]:
        return {
            "difficulty": round(self.difficulty, 4),
            "threshold": round(self.threshold, 4),
            "knob": self.knob,
            "calibration": self.calibration,
            "signals": dict(self.signals),
            "action": self.action,
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
    verdict: Verdict | None = None
    """The prompt's difficulty and what it asked for, when it was scored."""
    router_note: str = ""
    """Why no difficulty was used when one was asked for (a timeout, no model)."""
    learning: dict[str, Any] | None = None
    """The online learner's record: its choice's propensity, mode, context and estimates."""
    signals_ref: str | None = None
    """The per-second snapshot of the signals it was decided on (``store/snapshots.py``)."""
    options: dict[str, Any] | None = None
    """The caller's routing wishes (route, prefer, max_latency_ms), so a replay can re-decide."""

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
            "difficulty": None if self.verdict is None else self.verdict.describe(),
            "router_note": self.router_note or None,
            **({} if self.learning is None else {"learning": self.learning}),
            "signals_ref": self.signals_ref,
            "options": self.options,
        }
