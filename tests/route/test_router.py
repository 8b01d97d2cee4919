from __future__ import annotations

import pytest

from hybridinfer.core.decision import Decision
from hybridinfer.core.plan import Privacy, Subtask
from hybridinfer.core.topology import NodeStatus
from hybridinfer.errors import NoCapacity, PrivacyViolation
from hybridinfer.policy.document import CompiledPolicy, compile_policy
from hybridinfer.route.router import RouteOptions, Router
from hybridinfer.signals.ewma import Signals
from hybridinfer.signals.registry import NodeRegistry
from tests.fakes import hybrid_registry


def subtask(privacy: Privacy = Privacy.INTERNAL, size: int = 10) -> Subtask:
    return Subtask(
        id="classify",
        capability="text-classification",
        task="sentiment",
        inputs={"text": "$inputs.text"},
        privacy=privacy,
        size=size,
    )


def policy(extra: str = "") -> CompiledPolicy:
    return compile_policy("version: test-1\n" + extra)


CASCADE = "cascade:\n  sentiment: {threshold: 0.7}\n"


def router(
    registry: NodeRegistry | None = None,
    chosen: CompiledPolicy | None = None,
    signals: Signals | None = None,
) -> Router:
    the_policy = chosen or policy()
    return Router(registry or hybrid_registry(), signals or Signals(), lambda: the_policy)


def decide(
    the_router: Router, the_subtask: Subtask, options: RouteOptions | None = None
) -> Decision:
    context = the_router.context(options or RouteOptions(), "sentiment", "k1")
    return the_router.decide(the_subtask, context)


def test_balanced_prefers_the_free_fast_local_model_and_keeps_the_rest_as_fallbacks() -> None:
    decision = decide(router(), subtask(), RouteOptions())
    assert decision.chosen.node.id == "local"
    assert [c.node.id for c in decision.fallbacks] == ["edge-1", "cloud-1"]
    assert decision.policy_version == "test-1"
    assert "local" in decision.reason
    assert all(c.score is not None for c in decision.candidates)


def test_prefer_quality_picks_the_strongest_model() -> None:
    decision = decide(router(), subtask(), RouteOptions(prefer="quality"))
    assert decision.chosen.node.id == "cloud-1"


def test_forced_route_keeps_only_that_tier() -> None:
    decision = decide(router(), subtask(), RouteOptions(route="cloud"))
    assert decision.chosen.node.id == "cloud-1"
    assert decision.fallbacks == []
    rejected = {c.node.id: c.rejected_by for c in decision.candidates}
    assert rejected == {"local": "route", "edge-1": "route", "cloud-1": None}
    assert "Forced to the cloud tier" in decision.reason


def test_sensitive_data_never_goes_to_the_public_zone() -> None:
    decision = decide(router(), subtask(Privacy.SENSITIVE), RouteOptions(prefer="quality"))
    assert decision.chosen.node.zone.value == "private"
    assert all(c.node.zone.value == "private" for c in decision.fallbacks)
    cloud = next(c for c in decision.candidates if c.node.id == "cloud-1")
    assert cloud.rejected_by == "privacy"


def test_sensitive_data_forced_to_cloud_is_refused() -> None:
    with pytest.raises(PrivacyViolation):
        decide(router(), subtask(Privacy.SENSITIVE), RouteOptions(route="cloud"))


def test_a_pseudonymised_subtask_may_reach_the_cloud_and_the_reason_names_the_mode() -> None:
    private = decide(router(), subtask(Privacy.SENSITIVE), RouteOptions(prefer="quality"))
    assert "privacy mode private" in private.reason
    assert private.chosen.node.zone.value == "private"
    pseudonymised = subtask(Privacy.SENSITIVE)
    pseudonymised.privacy_mode = "pseudonymise"
    decision = decide(router(), pseudonymised, RouteOptions(route="cloud"))
    assert decision.chosen.node.id == "cloud-1"
    assert "privacy mode pseudonymise" in decision.reason


def test_down_nodes_are_filtered_out_by_health() -> None:
    registry = hybrid_registry()
    registry.get("local").status = NodeStatus.DOWN
    registry.get("local").last_heartbeat = 0.0
    decision = decide(router(registry), subtask(), RouteOptions())
    assert decision.chosen.node.id != "local"
    local = next(c for c in decision.candidates if c.node.id == "local")
    assert local.rejected_by == "health"


def test_missed_heartbeats_mark_a_node_down() -> None:
    now = [100.0]
    registry = NodeRegistry(heartbeat_interval_s=10.0, clock=lambda: now[0])
    for node_ in hybrid_registry().nodes():
        node_.last_heartbeat = 0.0
        registry.add(node_)
    now[0] += 29.0
    assert registry.get("cloud-1").status is NodeStatus.READY
    now[0] += 2.0
    registry.refresh()
    assert registry.get("cloud-1").status is NodeStatus.DOWN
    assert registry.get("local").status is NodeStatus.READY  # in-process: never misses a beat


def test_input_limit_rejects_small_models() -> None:
    registry = hybrid_registry()
    registry.get("local").deployments[0].max_input = 5
    decision = decide(router(registry), subtask(size=10), RouteOptions())
    assert decision.chosen.node.id != "local"


def test_no_deployment_for_capability_means_no_capacity() -> None:
    odd = Subtask(id="x", capability="speech", task=None, inputs={})
    with pytest.raises(NoCapacity):
        decide(router(), odd, RouteOptions())


def test_cascade_runs_local_first_and_escalates_to_stronger_models() -> None:
    decision = decide(router(chosen=policy(CASCADE)), subtask(), RouteOptions())
    assert decision.chosen.node.id == "local"
    assert decision.cascade is not None
    assert decision.cascade.threshold == 0.7
    assert [c.node.id for c in decision.cascade.escalate_to] == ["cloud-1", "edge-1"]
    assert decision.reason.startswith("Cascade:")


def test_cascade_escalation_respects_privacy() -> None:
    decision = decide(router(chosen=policy(CASCADE)), subtask(Privacy.SENSITIVE), RouteOptions())
    assert decision.cascade is not None
    assert [c.node.id for c in decision.cascade.escalate_to] == ["edge-1"]


def test_observed_latency_moves_traffic() -> None:
    signals = Signals(alpha=1.0)
    signals.observe("local/small:1", 500.0, ok=True)
    decision = decide(router(signals=signals), subtask(), RouteOptions(prefer="latency"))
    assert decision.chosen.node.id == "edge-1"


def test_latency_slo_rejects_slow_candidates() -> None:
    decision = decide(router(), subtask(), RouteOptions(prefer="quality", max_latency_ms=5.0))
    assert decision.chosen.node.id == "edge-1"
    cloud = next(c for c in decision.candidates if c.node.id == "cloud-1")
    assert cloud.rejected_by == "latency_slo"


def test_nothing_placeable_for_now_asks_to_retry_after_and_a_missing_capability_does_not() -> None:
    registry = hybrid_registry()
    for node_ in registry.nodes():
        node_.status = NodeStatus.DOWN
    with pytest.raises(NoCapacity) as down:
        decide(router(registry), subtask(), RouteOptions())
    assert down.value.headers() == {"Retry-After": "1"}
    odd = Subtask(id="x", capability="speech", task=None, inputs={})
    with pytest.raises(NoCapacity) as missing:
        decide(router(), odd, RouteOptions())
    assert missing.value.headers() == {}
