"""The decision snapshot shared across requests: shared while nothing changed, dropped at once
when the registry, a breaker, an ejection, the policy or a rollout did.

Every router here keeps its snapshots for an hour on a clock that never moves, so only the
invalidation under test can make a decision see the change."""

from __future__ import annotations

import asyncio
import dataclasses

import pytest

from hybridinfer.core.decision import Decision
from hybridinfer.core.plan import Privacy, Subtask
from hybridinfer.core.topology import NodeStatus, Tier, Zone
from hybridinfer.errors import BudgetExhausted, UpstreamUnavailable
from hybridinfer.policy.document import CompiledPolicy, ModelRollout, compile_policy
from hybridinfer.route.pin import pin
from hybridinfer.route.router import RouteOptions, Router
from hybridinfer.route.snapshot import ALL_FIELDS, DecisionSnapshots, condition_reads
from hybridinfer.signals.breaker import Breakers
from hybridinfer.signals.ejection import Ejections
from hybridinfer.signals.ewma import Signals
from hybridinfer.signals.registry import NodeRegistry
from tests.fakes import deployment, hybrid_registry, node

HOUR = 3600.0


class Clock:
    def __init__(self) -> None:
        self.now = 100.0

    def __call__(self) -> float:
        return self.now


def subtask(privacy: Privacy = Privacy.INTERNAL, size: int = 10) -> Subtask:
    return Subtask(
        id="classify",
        capability="text-classification",
        task="sentiment",
        inputs={},
        privacy=privacy,
        size=size,
    )


@dataclasses.dataclass
class Rig:
    router: Router
    registry: NodeRegistry
    signals: Signals
    breakers: Breakers
    clock: Clock
    policies: list[CompiledPolicy]

    def decide(self, the_subtask: Subtask | None = None, key: str = "k") -> Decision:
        options = RouteOptions(prefer="quality")
        context = self.router.context(options, "sentiment", "k1", routing_key=key)
        return self.router.decide(the_subtask or subtask(), context)


def rig(
    registry: NodeRegistry | None = None,
    policy: str = "version: test-1\n",
    percent: dict[str, float] | None = None,
) -> Rig:
    clock = Clock()
    the_registry = registry or NodeRegistry(clock=clock)
    if registry is None:
        for item in hybrid_registry().nodes():
            item.last_heartbeat = 0.0  # beats on this clock from now
            the_registry.add(item)
    signals = Signals(ejections=Ejections(clock=clock, min_calls=2, window=2))
    breakers = Breakers(failure_threshold=1, clock=clock)
    policies = [compile_policy(policy)]
    shares = percent if percent is not None else {}

    def share(rollout: ModelRollout) -> float:
        return shares.get(rollout.id, rollout.percent)

    router = Router(
        the_registry,
        signals,
        lambda: policies[-1],
        breakers=breakers,
        rollout_percent=share,
    )
    router.decisions = DecisionSnapshots(the_registry, signals, breakers, HOUR, clock)
    return Rig(router, the_registry, signals, breakers, clock, policies)


def test_requests_alike_share_one_snapshot_and_one_ranking() -> None:
    r = rig()
    first, second = r.decide(), r.decide()
    assert r.router.decisions.builds == 1
    assert second.candidates is first.candidates  # ranked once, shared
    assert second.chosen.node.id == first.chosen.node.id == "cloud-1"
    other = r.decide(subtask(Privacy.SENSITIVE))
    assert other.candidates is not first.candidates
    assert other.chosen.node.zone is Zone.PRIVATE


def test_a_node_marked_down_by_its_probe_is_not_chosen_next() -> None:
    r = rig()
    assert r.decide().chosen.node.id == "cloud-1"
    r.registry.mark_down(r.registry.get("cloud-1"))
    decision = r.decide()
    assert decision.chosen.node.id != "cloud-1"
    cloud = next(c for c in decision.candidates if c.node.id == "cloud-1")
    assert cloud.rejected_by == "health"


def test_a_node_whose_status_was_set_directly_is_not_chosen_next() -> None:
    r = rig()
    assert r.decide().chosen.node.id == "cloud-1"
    r.registry.get("cloud-1").status = NodeStatus.DOWN  # not through the registry
    assert r.decide().chosen.node.id != "cloud-1"


def test_a_node_whose_heartbeats_stopped_is_not_chosen_once_it_ages_out() -> None:
    r = rig()
    assert r.decide().chosen.node.id == "cloud-1"
    r.clock.now += 29.0  # within three 10 s heartbeats: still ready, still shared
    assert r.decide().chosen.node.id == "cloud-1"
    assert r.router.decisions.builds == 1
    r.clock.now += 2.0
    assert r.decide().chosen.node.id != "cloud-1"


def test_a_node_removed_or_registered_is_seen_by_the_next_decision() -> None:
    r = rig()
    assert r.decide().chosen.node.id == "cloud-1"
    r.registry.remove("cloud-1")
    assert {c.node.id for c in r.decide().candidates} == {"local", "edge-1"}
    stronger = deployment("cloud-2", "huge", quality=0.95, latency_ms=9.0)
    r.registry.add(node("cloud-2", Tier.CLOUD, Zone.PUBLIC, stronger))
    assert r.decide().chosen.node.id == "cloud-2"


def test_a_breaker_that_opens_takes_its_deployment_out_at_once_and_back_when_it_settles() -> None:
    r = rig()
    assert r.decide().chosen.node.id == "cloud-1"
    r.breakers.on_result("cloud-1/large:1", UpstreamUnavailable("down"))
    decision = r.decide()
    assert decision.chosen.node.id != "cloud-1"
    cloud = next(c for c in decision.candidates if c.node.id == "cloud-1")
    assert cloud.rejected_by == "breaker"
    r.clock.now += 1.01  # past the longest first open period: half-open, a trial may go
    assert r.decide().chosen.node.id == "cloud-1"
    r.breakers.on_start("cloud-1/large:1")  # the trial is out: nobody else goes there
    assert r.decide().chosen.node.id != "cloud-1"


def test_an_ejected_outlier_is_left_out_at_once() -> None:
    r = rig()
    assert r.decide().chosen.node.id == "cloud-1"
    for _ in range(2):
        r.signals.ejections.observe("cloud-1/large:1", "cloud", 5.0, ok=False)
    decision = r.decide()
    assert decision.chosen.node.id != "cloud-1"
    assert {c.rejected_by for c in decision.candidates if c.node.id == "cloud-1"} == {"ejected"}


def test_a_policy_applied_is_used_by_the_next_decision() -> None:
    r = rig()
    assert r.decide().chosen.node.id == "cloud-1"
    r.policies.append(compile_policy("version: test-2\ndegrade: {cloud: off}\n"))
    decision = r.decide()
    assert decision.policy_version == "test-2"
    assert decision.chosen.node.id != "cloud-1"
    r.policies.append(compile_policy("version: test-3\n"))
    assert r.decide().chosen.node.id == "cloud-1"


def test_a_rule_change_with_the_same_subtask_is_not_answered_from_the_old_rules() -> None:
    r = rig()
    assert r.decide().rules == []
    stay = "rules:\n  - {name: keep-it, when: 'subtask.size < 100', action: local}\n"
    r.policies.append(compile_policy("version: test-2\n" + stay))
    decision = r.decide()
    assert decision.rules == ["keep-it"]
    assert decision.chosen.node.id == "local"


def test_a_rollout_decided_moves_the_next_decision() -> None:
    registry = NodeRegistry()
    older = deployment("local", "small", quality=0.75, latency_ms=0.3)
    registry.add(node("local", Tier.LOCAL, Zone.PRIVATE, older))
    newer = dataclasses.replace(older, node_id="edge-2", version="2")
    registry.add(node("edge-2", Tier.EDGE, Zone.PRIVATE, newer))
    shares: dict[str, float] = {}
    policy = (
        "version: r-1\nrollouts:\n  - {task: sentiment, model: small, candidate: '2', percent: 5}\n"
    )
    r = rig(registry, policy, shares)
    rollout = r.policies[0].policy.rollouts[0]
    shares[rollout.id] = 0.0  # rolled back
    assert r.decide().chosen.deployment.id == "local/small:1"
    shares[rollout.id] = 100.0  # promoted
    assert r.decide().chosen.deployment.id == "edge-2/small:2"


def test_the_rejections_name_each_request_own_size_and_budget() -> None:
    r = rig()
    small = deployment("edge-9", "tiny", quality=0.99, latency_ms=1.0, max_input=50)
    r.registry.add(node("edge-9", Tier.EDGE, Zone.PRIVATE, small))
    for size in (60, 70):
        decision = r.decide(subtask(size=size))
        tiny = next(c for c in decision.candidates if c.node.id == "edge-9")
        assert tiny.rejected_by == "input_limit"
        assert tiny.detail == f"input size {size} > limit 50"
    assert r.decide(subtask(size=10)).chosen.node.id == "edge-9"


def test_a_spent_budget_is_seen_by_the_next_decision() -> None:
    r = rig(policy="version: b-1\nbudget: {global_limit: 0.0003, when_exhausted: reject}\n")
    assert r.decide().chosen.node.id == "cloud-1"
    budget = r.policies[0].policy.budget
    assert asyncio.run(r.router.ledger.reserve("k1", 0.0002, budget))
    with pytest.raises(BudgetExhausted):
        r.decide()


def test_the_fields_conditions_read_are_the_ones_they_name_or_all_of_them() -> None:
    assert condition_reads(['subtask.privacy == "sensitive"', "node.local.load > 0.8"]) == (
        ("subtask", "privacy"),
    )
    assert condition_reads(["budget . fraction > 0.5 && request.prefer == 'cost'"]) == (
        ("budget", "fraction"),
        ("request", "prefer"),
    )
    assert condition_reads(['subtask["size"] > 10']) is ALL_FIELDS
    assert condition_reads(["subtask.exists(k, k == 'x')"]) is ALL_FIELDS
    assert condition_reads(["subtask == {}"]) is ALL_FIELDS


def test_pinning_one_decision_leaves_the_shared_candidates_as_they_were() -> None:
    r = rig()
    pinned = pin(r.decide(), "small")
    assert pinned.chosen.node.id == "local"
    assert {c.rejected_by for c in pinned.candidates if c.node.id != "local"} == {"model"}
    again = r.decide()
    assert again.chosen.node.id == "cloud-1"
    assert all(c.rejected_by is None for c in again.candidates)
