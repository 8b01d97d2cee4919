"""Implicit outcomes from what a trace saw; explicit feedback bodies."""

from __future__ import annotations

import pytest

from hybridinfer.core.trace import Attempt
from hybridinfer.errors import SchemaViolation
from hybridinfer.learning.bandit import Outcome
from hybridinfer.learning.outcomes import FAILED, feedback_quality, implicit_outcome
from hybridinfer.policy.learning import LearningPolicy

POLICY = LearningPolicy(latency_scale_ms=1000.0, cost_scale=0.01)
LOCAL, CLOUD = "local/small:1", "cloud-1/large:1"
RECORD = {
    "arm": LOCAL,
    "quality": 0.75,
    "max_latency_ms": None,
    "costs": {LOCAL: 0.0, CLOUD: 0.002},
}


def attempt(deployment: str, role: str = "primary", status: str = "ok", **extra: object) -> Attempt:
    return Attempt("classify", deployment, "local", "local", "m", role, status=status, **extra)  # type: ignore[arg-type]


def test_an_answer_earns_its_confidence_its_latency_and_its_cost() -> None:
    seen = implicit_outcome(RECORD, [attempt(LOCAL, latency_ms=100.0, confidence=0.9)], POLICY)
    assert seen == Outcome(quality=0.9, latency=pytest.approx(0.9), cost=1.0)


def test_without_a_confidence_the_deployments_expected_quality_counts() -> None:
    seen = implicit_outcome(RECORD, [attempt(LOCAL, latency_ms=0.0)], POLICY)
    assert seen.quality == 0.75


def test_an_error_or_a_fallback_earns_nothing() -> None:
    failed = [attempt(LOCAL, status="error"), attempt(CLOUD, role="fallback", confidence=0.99)]
    assert implicit_outcome(RECORD, failed, POLICY) == FAILED
    assert implicit_outcome(RECORD, [], POLICY) == FAILED


def test_an_escalation_pays_the_second_call_and_keeps_the_low_confidence() -> None:
    escalated = [
        attempt(LOCAL, latency_ms=10.0, confidence=0.4),
        attempt(CLOUD, role="escalation", latency_ms=190.0, confidence=0.95),
    ]
    seen = implicit_outcome(RECORD, escalated, POLICY)
    assert seen == Outcome(quality=0.4, latency=pytest.approx(0.8), cost=pytest.approx(0.8))


def test_a_latency_past_the_requests_slo_earns_no_latency() -> None:
    record = {**RECORD, "max_latency_ms": 50.0}
    seen = implicit_outcome(record, [attempt(LOCAL, latency_ms=60.0, confidence=0.9)], POLICY)
    assert seen.latency == 0.0
    assert seen.quality == 0.9


@pytest.mark.parametrize(
    ("body", "quality"),
    [
        ({"score": 0.25}, 0.25),
        ({"score": 1}, 1.0),
        ({"correct": True}, 1.0),
        ({"label": "bad"}, 0.0),
    ],
)
def test_feedback_bodies_become_a_quality(body: dict[str, object], quality: float) -> None:
    assert feedback_quality(body) == quality


@pytest.mark.parametrize(
    "body",
    [
        {},
        {"score": 1.5},
        {"score": True},
        {"correct": "yes"},
        {"label": "great"},
        {"score": 1, "correct": True},
    ],
)
def test_bad_feedback_bodies_are_refused(body: dict[str, object]) -> None:
    with pytest.raises(SchemaViolation):
        feedback_quality(body)


def test_losing_a_hedge_race_earns_no_latency_and_the_expected_quality() -> None:
    raced = [
        attempt(LOCAL, status="cancelled", latency_ms=300.0),
        attempt(CLOUD, role="hedge", latency_ms=40.0, confidence=0.9),
    ]
    assert implicit_outcome(RECORD, raced, POLICY) == Outcome(quality=0.75, latency=0.0, cost=1.0)
