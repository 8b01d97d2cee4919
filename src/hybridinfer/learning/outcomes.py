"""Outcomes: what a placement earned, from explicit feedback or from what the system saw.

Implicit outcomes come from the finished trace: an error or a fallback (the chosen
deployment did not answer) earns 0 on every component; losing a hedge race earns 0 on
latency and the deployment's expected quality; a cascade escalation (its answer was
not confident) earns its own confidence as quality and pays the escalation's latency and
cost too; a latency past the request's ``max_latency_ms`` earns 0 on latency. Explicit
feedback (``POST /v1/feedback``) replaces the quality within the policy's feedback window.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from hybridinfer.core.trace import Attempt
from hybridinfer.errors import SchemaViolation
from hybridinfer.learning.bandit import Outcome
from hybridinfer.policy.learning import LearningPolicy

LABELS = {"good": 1.0, "neutral": 0.5, "bad": 0.0}
"""``label`` feedback as a quality."""
FAILED = Outcome(quality=0.0, latency=0.0, cost=0.0)


def feedback_quality(body: dict[str, Any]) -> float:
    """The quality one feedback body gives: ``score`` (0..1), ``correct`` (bool) or
    ``label`` (good | neutral | bad), exactly one of them."""
    given = [name for name in ("score", "label", "correct") if body.get(name) is not None]
    if len(given) != 1:
        raise SchemaViolation("give exactly one of score, label or correct")
    value = body[given[0]]
    if given[0] == "correct":
        if not isinstance(value, bool):
            raise SchemaViolation("correct must be true or false")
        return 1.0 if value else 0.0
    if given[0] == "label":
        if value not in LABELS:
            raise SchemaViolation(f"label must be one of {', '.join(LABELS)}")
        return LABELS[value]
    if isinstance(value, bool) or not isinstance(value, int | float) or not 0.0 <= value <= 1.0:
        raise SchemaViolation("score must be a number from 0 to 1")
    return float(value)


def implicit_outcome(
    learning: dict[str, Any], attempts: Sequence[Attempt], policy: LearningPolicy
) -> Outcome:
    """What the chosen deployment earned, read from the subtask's attempts."""
    arm = learning["arm"]
    answered = [a for a in attempts if a.deployment == arm and a.status == "ok"]
    costs: dict[str, float] = learning.get("costs", {})
    if not answered and any(a.deployment == arm and a.status == "cancelled" for a in attempts):
        # It lost a hedge race: slower than its own p95, its answer never read.
        cost = max(0.0, 1.0 - costs.get(arm, 0.0) / policy.cost_scale)
        return Outcome(quality=float(learning.get("quality", 0.5)), latency=0.0, cost=cost)
    if not answered:
        return FAILED
    escalations = [a for a in attempts if a.role == "escalation" and a.status == "ok"]
    own = answered[0]
    latency_ms = own.latency_ms + sum(a.latency_ms for a in escalations)
    cost = costs.get(arm, 0.0) + sum(costs.get(a.deployment, 0.0) for a in escalations)
    if escalations:
        quality = own.confidence if own.confidence is not None else 0.0
    elif own.confidence is not None:
        quality = own.confidence
    else:
        quality = float(learning.get("quality", 0.5))
    slo = learning.get("max_latency_ms")
    past_slo = slo is not None and latency_ms > slo
    return Outcome(
        quality=min(1.0, max(0.0, quality)),
        latency=0.0 if past_slo else max(0.0, 1.0 - latency_ms / policy.latency_scale_ms),
        cost=max(0.0, 1.0 - cost / policy.cost_scale),
    )


FEEDBACK_MARGIN_S = 1.0
"""Feedback counts only if it came this long before its outcome fell due: by then it is
committed, so every replica applying the outcome sees it (clocks within this margin)."""


def with_feedback(
    row: dict[str, Any], feedback: dict[str, Any] | None, window_s: float
) -> dict[str, Any]:
    """The outcome row with its explicit quality, if feedback came within the window."""
    if feedback is None:
        return row
    if feedback["created_at"] > row["created_at"] + window_s - FEEDBACK_MARGIN_S:
        return row
    return {**row, "quality": feedback["quality"], "source": "explicit"}
