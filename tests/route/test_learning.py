"""The learner inside the router: exactly the static policy without data, its picks only
among what the hard rules left, rules above it, and the cloud share target as a bound."""

from __future__ import annotations

from collections.abc import Callable

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from hybridinfer.core.decision import Decision
from hybridinfer.core.plan import Privacy
from hybridinfer.core.topology import Tier, Zone
from hybridinfer.errors import HybridInferError, NoCapacity, PrivacyViolation
from hybridinfer.learning.bandit import Outcome
from hybridinfer.route.router import RouteOptions, Router
from hybridinfer.signals.ewma import Signals
from hybridinfer.signals.registry import NodeRegistry
from tests.fakes import deployment, hybrid_registry, node
from tests.learning.conftest import (
    CLOUD,
    LOCAL,
    Harness,
    harness,
    learning_policy,
    subtask,
)

GOOD = Outcome(quality=1.0, latency=0.9, cost=0.98)
BAD = Outcome(quality=0.0, latency=0.9, cost=1.0)
ON = "{enabled: true, explore: 0.0, min_samples: 5}"


def comparable(decision: Decision) -> tuple[object, ...]:
    cascade = decision.cascade
    return (
        decision.chosen.deployment.id,
        [c.deployment.id for c in decision.fallbacks],
        None
        if cascade is None
        else (cascade.threshold, [c.deployment.id for c in cascade.escalate_to]),
        decision.reason,
        [c.describe() for c in decision.candidates],
    )


POLICIES = [
    "",
    "cascade:\n  sentiment: {threshold: 0.7}\n",
    "rules:\n  - {name: light, when: 'subtask.complexity <= 0.5', action: private}\n",
    "degrade: {cloud: false}\n",
]
OPTIONS = [
    RouteOptions(),
    RouteOptions(prefer="quality"),
    RouteOptions(prefer="latency"),
    RouteOptions(route="cloud"),
    RouteOptions(max_latency_ms=5.0),
]


@pytest.mark.parametrize("extra", POLICIES)
@pytest.mark.parametrize("options", OPTIONS)
@pytest.mark.parametrize("difficulty", [None, 0.1, 0.9])
def test_with_learning_on_explore_0_and_no_data_decisions_are_the_static_policys(
    extra: str, options: RouteOptions, difficulty: float | None
) -> None:
    static_policy = learning_policy("{enabled: false}", extra)
    static = Router(hybrid_registry(), Signals(), lambda: static_policy)
    learning = harness(learning_policy(ON, extra), hybrid_registry())

    def static_decide() -> Decision:
        return static.decide(subtask(difficulty), static.context(options, "sentiment", "k1"))

    expected, decided = (
        outcome_of(static_decide),
        outcome_of(lambda: learning.decide(subtask(difficulty), options)),
    )
    assert expected == decided
    if isinstance(decided, Decision):
        assert decided.learning is not None
        assert decided.learning["propensity"] == 1.0
        assert decided.learning["mode"] in {"static", "rule"}


def outcome_of(decide: Callable[[], Decision]) -> object:
    """The comparable decision, or the refusal (its type and message)."""
    try:
        return comparable(decide())
    except HybridInferError as error:
        return (type(error).__name__, error.message)


def teach(the: Harness, local: Outcome, cloud: Outcome, times: int = 10) -> None:
    for _ in range(times):
        the.learn(the.decide(subtask(0.5), RouteOptions(route="local")), local)
        the.learn(the.decide(subtask(0.5), RouteOptions(route="cloud")), cloud)


def test_outcomes_move_the_choice_and_the_reason_says_learned_with_the_estimate() -> None:
    the = harness(learning_policy(ON, "cascade:\n  sentiment: {threshold: 0.7}\n"))
    before = the.decide(subtask(0.5))
    assert before.chosen.deployment.id == LOCAL
    assert before.cascade is not None
    teach(the, local=BAD, cloud=GOOD)
    after = the.decide(subtask(0.5))
    assert after.chosen.deployment.id == CLOUD
    assert after.cascade is None  # the learned pick runs first, not the cheaper one
    assert after.reason.startswith("Learned: large on cloud-1 (cloud) estimated reward 0.")
    assert after.learning is not None
    assert after.learning["mode"] == "learned"
    assert after.learning["propensity"] == 1.0
    estimates = after.learning["estimates"]
    assert estimates[CLOUD]["reward"] > estimates[LOCAL]["reward"]
    assert f"{estimates[CLOUD]['reward']:.3f}" in after.reason


def test_min_samples_keeps_the_static_choice_until_every_arm_has_them() -> None:
    the = harness(learning_policy("{enabled: true, min_samples: 30}"))
    teach(the, local=BAD, cloud=GOOD, times=29)
    assert the.decide(subtask(0.5)).chosen.deployment.id == LOCAL
    teach(the, local=BAD, cloud=GOOD, times=1)
    assert the.decide(subtask(0.5)).chosen.deployment.id == CLOUD


def test_a_policy_rule_outranks_the_learner() -> None:
    rule = "rules:\n  - {name: keep-local, when: 'true', action: local}\n"
    the = harness(learning_policy(ON, rule))
    teach(the, local=BAD, cloud=GOOD)
    decided = the.decide(subtask(0.5))
    assert decided.chosen.deployment.id == LOCAL
    assert decided.learning is not None
    assert decided.learning["mode"] == "rule"


def test_the_cloud_share_target_holds_public_arms_back_once_reached() -> None:
    knob = "router:\n  capabilities:\n    text-classification: {target_cloud_share: 0.3}\n"
    the = harness(learning_policy(ON, knob))
    teach(the, local=BAD, cloud=GOOD)  # half of what it learned ran in the cloud: over 0.3
    decided = the.decide(subtask(0.5))
    assert decided.chosen.deployment.id == LOCAL
    assert decided.learning is not None
    assert decided.learning["constrained"] is True
    for _ in range(300):  # local outcomes bring the share down below the target
        the.learn(the.decide(subtask(0.5), RouteOptions(route="local")), BAD)
    assert the.learners.bandits["text-classification"].public_share < 0.3
    assert the.decide(subtask(0.5)).chosen.deployment.id == CLOUD


def test_explored_choices_log_their_probability() -> None:
    the = harness(learning_policy("{enabled: true, explore: 0.2, min_samples: 5}"), seed=1)
    teach(the, local=GOOD, cloud=BAD)
    seen: dict[str, list[float]] = {LOCAL: [], CLOUD: []}
    for _ in range(2000):
        decided = the.decide(subtask(0.5))
        assert decided.learning is not None
        seen[decided.chosen.deployment.id].append(decided.learning["propensity"])
    assert seen[LOCAL] == pytest.approx([0.9] * len(seen[LOCAL]))
    assert seen[CLOUD] == pytest.approx([0.1] * len(seen[CLOUD]))
    assert len(seen[CLOUD]) / 2000 == pytest.approx(0.1, abs=0.02)


ZONES = st.sampled_from(
    [
        (Tier.LOCAL, Zone.PRIVATE),
        (Tier.EDGE, Zone.PRIVATE),
        (Tier.CLOUD, Zone.PUBLIC),
        (Tier.EDGE, Zone.PUBLIC),
    ]
)


@st.composite
def worlds(draw: st.DrawFn) -> NodeRegistry:
    registry = NodeRegistry(heartbeat_interval_s=10.0)
    for index in range(draw(st.integers(min_value=1, max_value=5))):
        tier, zone = draw(ZONES)
        name = f"n{index}"
        quality = draw(st.floats(min_value=0.1, max_value=1.0))
        latency = draw(st.floats(min_value=0.1, max_value=500.0))
        cost = draw(st.sampled_from([0.0, 0.0001, 0.01]))
        made = deployment(name, f"m{index}", quality=quality, latency_ms=latency, cost=cost)
        registry.add(node(name, tier, zone, made))
    return registry


@settings(max_examples=150, deadline=None)
@given(
    world=worlds(),
    explore=st.sampled_from([0.0, 0.05, 0.2]),
    prefer=st.sampled_from(["balanced", "quality", "latency", "cost"]),
    route=st.sampled_from(["auto", "local", "edge", "cloud"]),
    lessons=st.integers(min_value=0, max_value=40),
    seed=st.integers(min_value=0, max_value=2**16),
)
def test_a_sensitive_subtask_never_leaves_the_private_zone_whatever_was_learned(
    world: NodeRegistry, explore: float, prefer: str, route: str, lessons: int, seed: int
) -> None:
    the = harness(
        learning_policy(f"{{enabled: true, explore: {explore}, min_samples: 1}}"), world, seed
    )
    public = [d.id for n in world.nodes() for d in n.deployments if n.zone is Zone.PUBLIC]
    # Teach it that public deployments are perfect and private ones worthless.
    for _ in range(lessons):
        for node_ in world.nodes():
            for made in node_.deployments:
                good = made.id in public
                row = {
                    "capability": "text-classification",
                    "arm": made.id,
                    "context": [1.0, 0.5, 0.5, 0.26],
                    "public": good,
                    "quality": 1.0 if good else 0.0,
                    "latency": 1.0 if good else 0.0,
                    "cost": 1.0 if good else 0.0,
                    "key_id": "k1",
                }
                the.learners.apply(row)
    options = RouteOptions(route=route, prefer=prefer)  # type: ignore[arg-type]
    for _ in range(5):
        try:
            decided = the.decide(subtask(0.5, Privacy.SENSITIVE), options)
        except (PrivacyViolation, NoCapacity):  # refusing is allowed; going public is not
            return
        placed = [decided.chosen, *decided.fallbacks]
        if decided.cascade is not None:
            placed += decided.cascade.escalate_to
        assert all(c.node.zone is Zone.PRIVATE for c in placed)
