"""Finished traces become log rows; log rows teach the capability's bandit."""

from __future__ import annotations

from hybridinfer.core.trace import Attempt, Trace
from hybridinfer.learning.engine import MAX_PENDING, Learners
from hybridinfer.policy.learning import LearningPolicy
from tests.learning.conftest import CLOUD, LOCAL, harness, learning_policy, subtask

POLICY = LearningPolicy(enabled=True)


def finished_trace(key: str = "k1") -> Trace:
    the = harness(learning_policy("{enabled: true}"))
    decision = the.decide(subtask(0.3))
    trace = Trace(request_id="r1", key_id=key)
    trace.decisions = [decision.describe()]
    trace.attempts = [
        Attempt(
            "classify", LOCAL, "local", "local", "small", "primary", latency_ms=5.0, confidence=0.6
        )
    ]
    return trace


def test_a_finished_trace_leaves_one_row_per_learned_decision() -> None:
    learners = Learners(lambda: POLICY)
    learners.observe_trace(finished_trace())
    (row,) = learners.pending
    assert row["arm"] == LOCAL
    assert row["candidates"] == [LOCAL, CLOUD]
    assert row["propensity"] == 1.0
    assert row["mode"] == "static"
    assert row["quality"] == 0.6
    assert row["latency"] == 0.995
    assert (row["key_id"], row["request_id"], row["source"]) == ("k1", "r1", "implicit")
    learners.apply(row)
    assert learners.bandits["text-classification"].arms[LOCAL].observed == 1


def test_a_trace_without_learned_decisions_leaves_nothing_and_the_buffer_is_bounded() -> None:
    learners = Learners(lambda: POLICY)
    learners.observe_trace(Trace(request_id="plain"))
    assert learners.pending == []
    learners.pending = [{}] * MAX_PENDING
    learners.observe_trace(finished_trace())
    assert len(learners.pending) == MAX_PENDING
    assert learners.dropped == 1


def test_one_keys_outcomes_weigh_less_past_its_share() -> None:
    def samples_after(keys: list[str]) -> float:
        learners = Learners(lambda: LearningPolicy(enabled=True, max_key_share=0.5, half_life=10))
        for key in keys:
            learners.apply(
                {
                    "capability": "c",
                    "arm": LOCAL,
                    "context": [1.0, 0.5, 0.5, 0.2],
                    "public": False,
                    "quality": 1.0,
                    "latency": 1.0,
                    "cost": 1.0,
                    "key_id": key,
                }
            )
        return learners.bandits["c"].arms[LOCAL].samples

    balanced = samples_after(["a", "b"] * 5)  # no key above half: every outcome weighs 1
    loud = samples_after(["loud"] * 10)  # past 5 of the 10: each next one weighs 0.5 / share
    assert balanced == samples_after([f"k{i}" for i in range(10)])
    assert loud < balanced - 1.0
