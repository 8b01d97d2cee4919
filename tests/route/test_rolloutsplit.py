from __future__ import annotations

import dataclasses

from hybridinfer.core.decision import Decision
from hybridinfer.core.plan import Subtask
from hybridinfer.core.topology import NodeStatus, Tier, Zone
from hybridinfer.policy.canary import on_canary_side
from hybridinfer.policy.document import ModelRollout, compile_policy
from hybridinfer.route.router import RouteOptions, Router
from hybridinfer.signals.ewma import Signals
from hybridinfer.signals.registry import NodeRegistry
from tests.fakes import deployment, node

ROLLOUT = """\
version: rollout-1
rollouts:
  - {task: sentiment, model: small, candidate: "2", percent: 30}
"""


def two_versions() -> NodeRegistry:
    """Version 1 of ``small`` on the local node, version 2 on an edge node, and a cloud model."""
    registry = NodeRegistry()
    registry.add(
        node(
            "local",
            Tier.LOCAL,
            Zone.PRIVATE,
            deployment("local", "small", quality=0.75, latency_ms=0.3),
        )
    )
    newer = dataclasses.replace(
        deployment("edge-2", "small", quality=0.75, latency_ms=3.0), version="2"
    )
    registry.add(node("edge-2", Tier.EDGE, Zone.PRIVATE, newer))
    registry.add(
        node(
            "cloud-1",
            Tier.CLOUD,
            Zone.PUBLIC,
            deployment("cloud-1", "large", quality=0.78, latency_ms=8.0, cost=0.0002),
        )
    )
    return registry


def decide(router: Router, key: str) -> Decision:
    subtask = Subtask(id="s", capability="text-classification", task="sentiment", inputs={})
    return router.decide(subtask, router.context(RouteOptions(), "sentiment", None, key))


def test_the_rollout_share_of_routing_keys_gets_the_candidate_version() -> None:
    policy = compile_policy(ROLLOUT)
    router = Router(two_versions(), Signals(), lambda: policy)
    keys = [f"req-{n}" for n in range(1000)]
    chosen = {key: decide(router, key).chosen.deployment.id for key in keys}
    on_candidate = [key for key in keys if chosen[key] == "edge-2/small:2"]
    assert 0.26 < len(on_candidate) / len(keys) < 0.34
    rollout = policy.policy.rollouts[0]
    assert all(on_canary_side(key, rollout.id, 30.0) for key in on_candidate)
    baseline = decide(router, next(k for k in keys if k not in on_candidate))
    assert baseline.chosen.deployment.id == "local/small:1"
    rejected = {c.deployment.id: c.rejected_by for c in baseline.candidates}
    assert rejected == {"local/small:1": None, "edge-2/small:2": "rollout", "cloud-1/large:1": None}
    assert "1 rejected by rollout" in baseline.reason


def test_a_decided_rollout_moves_all_or_no_traffic() -> None:
    policy = compile_policy(ROLLOUT)
    shares = {"promoted": 100.0, "rolled_back": 0.0}
    for status, share in shares.items():

        def percent(rollout: ModelRollout, share: float = share) -> float:
            return share

        router = Router(two_versions(), Signals(), lambda: policy, rollout_percent=percent)
        chosen = {decide(router, f"k{n}").chosen.deployment.id for n in range(200)}
        expected = "edge-2/small:2" if status == "promoted" else "local/small:1"
        assert chosen == {expected}, status


def test_a_side_with_nothing_healthy_does_not_turn_into_an_error() -> None:
    registry = two_versions()
    registry.get("edge-2").status = NodeStatus.DOWN
    policy = compile_policy(ROLLOUT.replace("percent: 30", "percent: 100"))
    router = Router(registry, Signals(), lambda: policy)
    decision = decide(router, "anyone")
    assert decision.chosen.deployment.id == "local/small:1"
    assert all(c.rejected_by != "rollout" for c in decision.candidates)
