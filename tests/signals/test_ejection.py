"""Outlier ejection: against the deployment's own record, jittered and capped, at most a share
of a tier, never the last candidate."""

from __future__ import annotations

import random

from hybridinfer.core.plan import Subtask
from hybridinfer.policy.document import compile_policy
from hybridinfer.route.router import RouteOptions, Router
from hybridinfer.signals.ejection import Ejections
from hybridinfer.signals.ewma import Signals
from tests.fakes import hybrid_registry


class Clock:
    def __init__(self) -> None:
        self.now = 10.0

    def __call__(self) -> float:
        return self.now


def test_half_the_recent_calls_failing_ejects_for_a_jittered_capped_period() -> None:
    clock = Clock()
    ejections = Ejections(base_s=0.5, max_s=2.0, clock=clock, rng=random.Random(3))
    periods = []
    for _ in range(6):
        for index in range(10):  # every other call fails: no breaker would ever open
            ejections.observe("d", "cloud", 5.0, ok=index % 2 == 0)
        assert ejections.ejected("d")
        start = clock.now
        while ejections.ejected("d"):
            clock.now += 0.01
        periods.append(clock.now - start)
    assert 0.25 <= periods[0] <= 0.51
    assert all(period <= 2.01 for period in periods)  # capped: back within 2 s of a steady path
    assert max(periods[3:]) > 1.0
    assert ejections.describe("d") == {"ejected": False, "ejections": 6}


def test_answers_five_times_slower_than_the_deployment_s_record_eject_it() -> None:
    clock = Clock()
    ejections = Ejections(clock=clock)
    for _ in range(30):
        ejections.observe("d", "cloud", 4.0, ok=True)
    assert not ejections.ejected("d")
    for _ in range(10):
        ejections.observe("d", "cloud", 250.0, ok=True)
    assert ejections.ejected("d")


def test_at_most_the_tier_s_share_is_ejected_at_once() -> None:
    ejections = Ejections(max_share=0.5, clock=Clock())
    for deployment in ("a", "b", "c", "d"):
        ejections.observe(deployment, "edge", 5.0, ok=True)
    for deployment in ("a", "b", "c"):
        for _ in range(10):
            ejections.observe(deployment, "edge", 5.0, ok=False)
    assert [ejections.ejected(d) for d in ("a", "b", "c", "d")] == [True, True, False, False]


def test_a_share_of_zero_turns_ejection_off() -> None:
    ejections = Ejections(max_share=0.0, clock=Clock())
    for _ in range(10):
        ejections.observe("a", "edge", 5.0, ok=False)
    assert not ejections.ejected("a")


def test_the_router_skips_an_ejected_deployment_but_never_the_last_candidate() -> None:
    ejections = Ejections(max_share=1.0, clock=Clock())
    policy = compile_policy("version: e")
    router = Router(hybrid_registry(), Signals(ejections=ejections), lambda: policy)
    classify = Subtask("c", "text-classification", "sentiment", {})
    chosen = router.decide(classify, router.context(RouteOptions(prefer="quality"))).chosen
    for _ in range(10):
        ejections.observe(chosen.deployment.id, chosen.node.tier.value, 5.0, ok=False)
    decision = router.decide(classify, router.context(RouteOptions(prefer="quality")))
    assert decision.chosen.deployment.id != chosen.deployment.id
    ejected = next(c for c in decision.candidates if c.deployment.id == chosen.deployment.id)
    assert ejected.rejected_by == "ejected"
    pinned = router.decide(classify, router.context(RouteOptions(route=chosen.node.tier.value)))
    assert pinned.chosen.deployment.id == chosen.deployment.id  # the only one left: kept


def test_the_kept_counts_match_the_window_through_evictions_and_ejections() -> None:
    clock = Clock()
    ejections = Ejections(clock=clock, rng=random.Random(5))
    rng = random.Random(11)
    for step in range(3000):
        clock.now += 0.05
        slow = 400 <= step % 1000 < 500  # a slow spell ejects on latency
        latency = rng.uniform(200.0, 300.0) if slow else rng.uniform(1.0, 20.0)
        ejections.observe("d", "cloud", latency, ok=rng.random() > 0.15)
        record = ejections._records["d"]
        assert record.failed == sum(not ok for _, ok in record.recent)
        assert abs(record.latency_sum_ms - sum(ms for ms, _ in record.recent)) < 1e-6
    assert ejections.describe("d")["ejections"] > 0
