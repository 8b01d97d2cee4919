"""What-if replay: a decision logged by the live router, re-decided under the same policy,
lands where it did; under another policy it follows that policy's rules, reading the
per-second signal snapshot of its time (not the signals of now); a cascade escalates by the
confidence the logged run measured; sensitive work never replays out of the private zone."""

from __future__ import annotations

from typing import Any

from hybridinfer.core.plan import Privacy, Subtask
from hybridinfer.core.topology import Tier
from hybridinfer.policy.document import CompiledPolicy, compile_policy
from hybridinfer.route.replay import Replayer, answering_attempt, logged_outcome
from hybridinfer.route.router import RouteOptions, Router
from hybridinfer.signals.ewma import Signals
from hybridinfer.signals.registry import NodeRegistry
from hybridinfer.store.snapshots import SignalSnapshots
from tests.fakes import hybrid_registry

PLAIN = compile_policy("version: plain\n")
SLOW_CLOUD_LOCAL = compile_policy(
    "version: slow-cloud\n"
    "rules:\n"
    "  - {name: slow, when: 'network.cloud.rtt_ms > 200.0', action: local}\n"
    "  - {name: rest, when: 'true', action: cloud}\n"
)
ALL_CLOUD = compile_policy(
    "version: all-cloud\nrules:\n  - {name: all, when: 'true', action: cloud}\n"
)


def cascade(threshold: float) -> CompiledPolicy:
    return compile_policy(
        f"version: cascade-{threshold}\ncascade:\n  sentiment: {{threshold: {threshold}}}\n"
    )


def subtask(privacy: Privacy = Privacy.INTERNAL, complexity: float = 0.5) -> Subtask:
    return Subtask(
        id="classify",
        capability="text-classification",
        task="sentiment",
        inputs={"text": "never logged"},
        privacy=privacy,
        complexity=complexity,
    )


def logged(
    policy: CompiledPolicy,
    registry: NodeRegistry,
    work: Subtask,
    confidence: float | None = None,
) -> tuple[dict[str, Any], dict[str, Any]]:
    """One request decided by the live router, as the trace store keeps it, and the
    snapshots its decision points at."""
    router = Router(registry, Signals(), lambda: policy)
    router.snapshots = snapshots = SignalSnapshots()
    decision = router.decide(work, router.context(RouteOptions(), "sentiment"))
    chosen = decision.chosen
    attempts = [
        {
            "subtask": work.id,
            "deployment": chosen.deployment.id,
            "tier": chosen.node.tier.value,
            "status": "ok",
            "latency_ms": 1.0,
            "confidence": confidence,
        }
    ]
    trace = {
        "request_id": "r-1",
        "task": "sentiment",
        "plan": {"subtasks": [work.labels()]},
        "decisions": [decision.describe()],
        "attempts": attempts,
    }
    stored = {ref: body for ref, _second, body in snapshots.drain(everything=True)}
    return trace, stored


def replay(policy: CompiledPolicy, trace: dict[str, Any], snapshots: dict[str, Any]) -> str:
    (decision,) = trace["decisions"]
    return Replayer(policy).replay(trace, decision, snapshots.get(decision["signals_ref"])).tier


def test_the_trace_keeps_labels_and_a_snapshot_reference_never_the_inputs() -> None:
    trace, snapshots = logged(PLAIN, hybrid_registry(), subtask())
    (decision,) = trace["decisions"]
    assert decision["signals_ref"] in snapshots
    assert decision["options"] == {"route": "auto", "prefer": "balanced", "max_latency_ms": None}
    assert "never logged" not in str(trace) + str(snapshots)
    assert snapshots[decision["signals_ref"]]["text-classification/sentiment"]["network"]


def test_the_same_policy_replays_to_the_logged_deployment() -> None:
    for policy in (PLAIN, SLOW_CLOUD_LOCAL, ALL_CLOUD):
        for complexity in (0.1, 0.6, 0.9):
            trace, snapshots = logged(policy, hybrid_registry(), subtask(complexity=complexity))
            (decision,) = trace["decisions"]
            outcome = Replayer(policy).replay(trace, decision, snapshots[decision["signals_ref"]])
            assert outcome.deployment == decision["chosen"], (policy.version, complexity)
            assert outcome.deployment == logged_outcome(trace, decision).deployment


def test_a_rule_on_live_signals_reads_the_snapshot_of_its_second() -> None:
    slow = hybrid_registry()
    slow.get("cloud-1").rtt_ms = 300.0
    trace_slow, snapshots_slow = logged(PLAIN, slow, subtask())
    trace_fast, snapshots_fast = logged(PLAIN, hybrid_registry(), subtask())
    assert replay(SLOW_CLOUD_LOCAL, trace_slow, snapshots_slow) == Tier.LOCAL
    assert replay(SLOW_CLOUD_LOCAL, trace_fast, snapshots_fast) == Tier.CLOUD


def test_a_cascade_escalates_by_the_confidence_the_logged_run_measured() -> None:
    unsure, _ = logged(cascade(0.6), hybrid_registry(), subtask(), confidence=0.5)
    sure, _ = logged(cascade(0.6), hybrid_registry(), subtask(), confidence=0.9)
    assert replay(cascade(0.6), unsure, {}) == Tier.CLOUD
    assert replay(cascade(0.6), sure, {}) == Tier.LOCAL
    assert replay(cascade(0.95), sure, {}) == Tier.CLOUD
    assert replay(PLAIN, unsure, {}) == Tier.LOCAL  # no cascade in the policy: no escalation


def test_an_unknown_confidence_is_said_not_guessed() -> None:
    trace, _ = logged(ALL_CLOUD, hybrid_registry(), subtask(), confidence=0.99)
    (decision,) = trace["decisions"]
    outcome = Replayer(cascade(0.6)).replay(trace, decision, None)
    assert outcome.tier == Tier.LOCAL
    assert not outcome.confidence_known


def test_sensitive_work_never_replays_out_of_the_private_zone() -> None:
    trace, snapshots = logged(PLAIN, hybrid_registry(), subtask(Privacy.SENSITIVE), 0.1)
    (decision,) = trace["decisions"]
    for policy in (ALL_CLOUD, cascade(0.99)):
        outcome = Replayer(policy).replay(trace, decision, snapshots[decision["signals_ref"]])
        assert outcome.tier != Tier.CLOUD
        assert not outcome.privacy_violation


def attempt(
    deployment: str, tier: str, role: str, started: float, latency: float
) -> dict[str, Any]:
    return {
        "subtask": "classify",
        "deployment": deployment,
        "tier": tier,
        "role": role,
        "status": "ok",
        "started_ms": started,
        "latency_ms": latency,
    }


def test_the_answer_is_the_escalation_else_the_first_call_to_finish() -> None:
    primary = attempt("local/small:1", "local", "primary", 1.0, 20.0)
    still_open = attempt("cloud-1/large:1", "cloud", "hedge", 15.0, 0.0)
    faster = attempt("cloud-1/large:1", "cloud", "hedge", 5.0, 3.0)
    escalation = attempt("cloud-1/large:1", "cloud", "escalation", 22.0, 8.0)
    assert answering_attempt([primary, still_open], "classify") is primary
    assert answering_attempt([primary, faster], "classify") is faster
    assert answering_attempt([primary, escalation], "classify") is escalation
    assert answering_attempt([], "classify") is None
