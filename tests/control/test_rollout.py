from __future__ import annotations

from hybridinfer.control.audit import SYSTEM, AuditLog
from hybridinfer.control.rollout import RolloutMonitor, VersionFigures, verdict
from hybridinfer.core.trace import Attempt, Trace
from hybridinfer.policy.document import PromoteWhen, compile_policy
from hybridinfer.store.sql import SqlStore

POLICY = compile_policy(
    """\
version: rollout-1
rollouts:
  - task: sentiment
    model: small
    candidate: "2"
    percent: 10
    promote_when: {min_requests: 5, max_latency_ratio: 1.5, min_quality_delta: 0.0}
"""
)
RULE = POLICY.policy.rollouts[0].promote_when
assert RULE is not None


def figures(count: int, latency_ms: float, confidence: float) -> VersionFigures:
    result = VersionFigures()
    for _ in range(count):
        result.add("ok", latency_ms, confidence)
    return result


def test_figures_count_answers_errors_latency_and_confidence() -> None:
    seen = VersionFigures()
    for latency, confidence in ((1.0, 0.6), (3.0, 0.8), (2.0, None)):
        seen.add("ok", latency, confidence)
    seen.add("error", 50.0, None)
    seen.add("cancelled", 9.0, None)  # a hedge it lost: not the version's fault
    assert seen.describe() == {
        "answers": 3,
        "errors": 1,
        "latency_p50_ms": 2.0,
        "latency_p95_ms": 2.0,
        "mean_confidence": 0.7,
    }


def test_the_verdict_waits_for_enough_answers_on_both_sides() -> None:
    assert verdict(RULE, figures(4, 1.0, 0.7), figures(50, 1.0, 0.9)) is None
    assert verdict(RULE, figures(50, 1.0, 0.7), figures(4, 1.0, 0.9)) is None


def test_the_candidate_wins_when_fast_enough_and_at_least_as_confident() -> None:
    assert verdict(RULE, figures(5, 2.0, 0.70), figures(5, 2.9, 0.71)) == "promoted"
    assert verdict(RULE, figures(5, 2.0, 0.70), figures(5, 3.1, 0.90)) == "rolled_back"
    assert verdict(RULE, figures(5, 2.0, 0.70), figures(5, 1.0, 0.69)) == "rolled_back"
    lenient = PromoteWhen(min_requests=5, max_latency_ratio=1.5, min_quality_delta=-0.05)
    assert verdict(lenient, figures(5, 2.0, 0.70), figures(5, 1.0, 0.69)) == "promoted"


def answered(version: str, latency_ms: float, confidence: float, task: str = "sentiment") -> Trace:
    trace = Trace(request_id=f"r-{version}-{latency_ms}")
    trace.task = task
    node = "local" if version == "1" else "edge-2"
    attempt = Attempt("s", f"{node}/small:{version}", "local", node, "small", "primary")
    attempt.latency_ms, attempt.confidence = latency_ms, confidence
    trace.attempts.append(attempt)
    return trace


async def test_the_monitor_decides_once_stores_and_audits(store: SqlStore) -> None:
    audit = AuditLog(store)
    monitor = RolloutMonitor(store, lambda: POLICY, audit)
    rollout = POLICY.policy.rollouts[0]
    for n in range(5):
        monitor.record(answered("1", 2.0 + n, 0.70))
        monitor.record(answered("2", 2.0 + n, 0.80))
        monitor.record(answered("2", 1.0, 0.10, task="other"))  # another task: not counted
    await monitor.check()
    assert monitor.percent(rollout) == 100.0
    described = monitor.describe()[0]
    assert described["status"] == "promoted"
    assert described["baseline"]["answers"] == 5
    assert described["candidate_figures"]["mean_confidence"] == 0.8
    entries = await audit.list(action="model.rollout")
    assert len(entries) == 1
    assert entries[0]["actor"] == SYSTEM
    assert entries[0]["target"] == "sentiment/small:2"
    assert entries[0]["before"] == {"status": "running", "percent": 10.0}
    assert entries[0]["after"]["status"] == "promoted"

    # Another replica reads the stored decision on its next check.
    other = RolloutMonitor(store, lambda: POLICY, audit)
    assert other.percent(rollout) == 10.0
    await other.check()
    assert other.percent(rollout) == 100.0
    await monitor.check()
    assert len(await audit.list(action="model.rollout")) == 1


async def test_with_no_rollout_in_the_policy_a_check_reads_nothing(store: SqlStore) -> None:
    plain = compile_policy("version: plain-1\n")
    policy = [plain]
    monitor = RolloutMonitor(store, lambda: policy[0], AuditLog(store))
    reads = 0
    refresh = monitor.refresh

    async def counted() -> None:
        nonlocal reads
        reads += 1
        await refresh()

    monitor.refresh = counted  # type: ignore[method-assign]
    for _ in range(5):
        await monitor.check()
    assert reads == 0
    policy[0] = POLICY  # a policy with a rollout: followed again from the next check
    await monitor.check()
    assert reads == 1
