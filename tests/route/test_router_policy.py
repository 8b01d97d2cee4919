"""The router under a policy: one test per shipped CEL rule, deny rules, degrade switches, a
spent budget, and the privacy invariant over random policies."""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from hybridinfer.core.decision import Decision
from hybridinfer.core.plan import Privacy, Subtask
from hybridinfer.core.topology import Tier, Zone
from hybridinfer.errors import BudgetExhausted, PolicyDenied
from hybridinfer.policy.document import (
    CompiledPolicy,
    compile_policy,
    default_policy_path,
    load_policy,
)
from hybridinfer.route.router import RouteOptions, Router
from hybridinfer.signals.budget import MemoryLedger
from hybridinfer.signals.ewma import Signals
from hybridinfer.signals.registry import NodeRegistry
from tests.fakes import deployment, hybrid_registry, node


def subtask(
    privacy: Privacy = Privacy.INTERNAL,
    complexity: float = 0.6,
    latency_sensitive: bool = False,
) -> Subtask:
    return Subtask(
        id="classify",
        capability="text-classification",
        task="sentiment",
        inputs={},
        privacy=privacy,
        complexity=complexity,
        latency_sensitive=latency_sensitive,
    )


def decide(
    policy: CompiledPolicy,
    the_subtask: Subtask,
    registry: NodeRegistry | None = None,
    options: RouteOptions | None = None,
    ledger: MemoryLedger | None = None,
) -> Decision:
    router = Router(registry or hybrid_registry(), Signals(), lambda: policy, ledger)
    return router.decide(the_subtask, router.context(options or RouteOptions(), "sentiment", "k"))


@pytest.fixture(scope="module")
def shipped() -> CompiledPolicy:
    return load_policy(default_policy_path())


def test_seed_rule_sensitive_stays_private(shipped: CompiledPolicy) -> None:
    decision = decide(shipped, subtask(Privacy.SENSITIVE, complexity=0.9))
    assert decision.rules == ["sensitive-stays-private"]
    assert decision.chosen.node.zone is Zone.PRIVATE
    assert all(c.node.zone is Zone.PRIVATE for c in decision.fallbacks)


def test_seed_rule_slow_cloud_keeps_latency_sensitive_work_local(shipped: CompiledPolicy) -> None:
    registry = hybrid_registry()
    registry.get("cloud-1").rtt_ms = 250.0
    decision = decide(shipped, subtask(latency_sensitive=True, complexity=0.3), registry)
    assert decision.rules == ["slow-cloud-keeps-latency-sensitive-work-local"]
    assert decision.chosen.node.tier is Tier.LOCAL
    assert decision.cascade is None  # no escalation over the slow link
    registry.get("cloud-1").rtt_ms = 20.0
    recovered = decide(shipped, subtask(latency_sensitive=True, complexity=0.3), registry)
    assert recovered.rules == ["light-work-stays-private"]


def test_seed_rule_busy_local_sends_to_cloud(shipped: CompiledPolicy) -> None:
    registry = hybrid_registry()
    registry.get("local").load = 0.95
    decision = decide(shipped, subtask(complexity=0.3), registry)
    assert decision.rules == ["busy-local-sends-to-cloud"]
    assert decision.chosen.node.tier is Tier.CLOUD
    assert decision.fallbacks  # local stays as a fallback, never an error


def test_seed_rule_hard_work_goes_to_cloud(shipped: CompiledPolicy) -> None:
    decision = decide(shipped, subtask(complexity=0.9))
    assert decision.rules == ["hard-work-goes-to-cloud"]
    assert decision.chosen.node.tier is Tier.CLOUD


def test_seed_rule_light_work_stays_local(shipped: CompiledPolicy) -> None:
    decision = decide(shipped, subtask(complexity=0.2))
    assert decision.rules == ["light-work-stays-private"]
    assert decision.chosen.node.tier is Tier.LOCAL
    assert "light-work-stays-private" in decision.reason


def test_deny_rule_refuses() -> None:
    policy = compile_policy(
        "version: d\nrules:\n  - {name: no-big, when: 'subtask.size > 5', action: deny}\n"
    )
    big = Subtask(id="s", capability="text-classification", task="sentiment", inputs={}, size=9)
    with pytest.raises(PolicyDenied):
        decide(policy, big)


def test_degrade_switch_turns_a_tier_off() -> None:
    policy = compile_policy("version: d\ndegrade: {cloud: off}\n")
    decision = decide(policy, subtask(), options=RouteOptions(prefer="quality"))
    assert decision.chosen.node.tier is not Tier.CLOUD
    cloud = next(c for c in decision.candidates if c.node.id == "cloud-1")
    assert cloud.rejected_by == "degrade"


def test_spent_budget_routes_free_or_refuses() -> None:
    ledger = MemoryLedger()
    local_mode = compile_policy("version: b\nbudget: {global_limit: 0.0001}\n")
    decision = decide(local_mode, subtask(), options=RouteOptions(prefer="quality"), ledger=ledger)
    assert decision.chosen.node.tier is not Tier.CLOUD
    cloud = next(c for c in decision.candidates if c.node.id == "cloud-1")
    assert cloud.rejected_by == "budget"
    reject_mode = compile_policy(
        "version: b\nbudget: {global_limit: 0.0001, when_exhausted: reject}\n"
    )
    with pytest.raises(BudgetExhausted) as caught:
        decide(reject_mode, subtask(), options=RouteOptions(prefer="quality"), ledger=ledger)
    assert caught.value.status_code == 429
    assert caught.value.error_code == "budget_exhausted"


RULE = st.fixed_dictionaries(
    {
        "when": st.sampled_from(
            [
                "true",
                "subtask.privacy == 'sensitive'",
                "network.cloud.rtt_ms > 100.0",
                "node.local.load > 0.5",
                "subtask.complexity > 0.3",
                "budget.fraction < 0.5",
            ]
        ),
        "action": st.sampled_from(["local", "edge", "cloud", "private"]),
    }
)


@settings(max_examples=200, deadline=None)
@given(
    rules=st.lists(RULE, max_size=5),
    rtt=st.floats(0, 1000),
    load=st.floats(0, 1),
    prefer=st.sampled_from(["balanced", "latency", "cost", "quality"]),
    route=st.sampled_from(["auto", "local", "edge"]),
    cloud_off=st.booleans(),
)
def test_sensitive_never_reaches_the_public_zone(
    rules: list[dict[str, str]], rtt: float, load: float, prefer: str, route: str, cloud_off: bool
) -> None:
    lines = [
        f'  - {{name: r{i}, when: "{r["when"]}", action: {r["action"]}}}'
        for i, r in enumerate(rules)
    ]
    text = "version: h\n" + ("rules:\n" + "\n".join(lines) + "\n" if lines else "")
    text += f"degrade: {{cloud: {'off' if cloud_off else 'on'}}}\n"
    text += "cascade: {sentiment: {threshold: 0.9}}\n"
    registry = hybrid_registry()
    registry.get("cloud-1").rtt_ms = rtt
    registry.get("local").load = load
    decision = decide(
        compile_policy(text),
        subtask(Privacy.SENSITIVE),
        registry,
        RouteOptions(route, prefer),  # type: ignore[arg-type]
    )
    placed = [decision.chosen, *decision.fallbacks]
    if decision.cascade is not None:
        placed += decision.cascade.escalate_to
    assert all(c.node.zone is Zone.PRIVATE for c in placed)


def test_network_signals_describe_the_nodes_that_can_serve_the_subtask(
    shipped: CompiledPolicy,
) -> None:
    registry = hybrid_registry()
    registry.get("cloud-1").rtt_ms = 250.0
    other = node(
        "cloud-llm",
        Tier.CLOUD,
        Zone.PUBLIC,
        deployment("cloud-llm", "llm", quality=0.5, latency_ms=5, task="chat"),
    )
    other.rtt_ms = 1.0  # a fast cloud node for another task must not hide the slow one
    registry.add(other)
    decision = decide(shipped, subtask(latency_sensitive=True, complexity=0.3), registry)
    assert decision.rules == ["slow-cloud-keeps-latency-sensitive-work-local"]
