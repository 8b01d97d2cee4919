"""Circuit breakers: closed → open after repeated upstream failures → half-open trial → closed."""

from __future__ import annotations

import random
import time

from hybridinfer.core.plan import Plan, Subtask
from hybridinfer.core.trace import Trace
from hybridinfer.errors import (
    DeadlineExceeded,
    InvalidInput,
    NoCapacity,
    UpstreamRejected,
    UpstreamUnavailable,
)
from hybridinfer.execute.executor import Executor
from hybridinfer.policy.document import compile_policy
from hybridinfer.route.router import RouteOptions, Router
from hybridinfer.signals.breaker import Breakers, BreakerState
from hybridinfer.signals.ewma import Signals
from tests.fakes import ScriptedBackend, hybrid_registry


class FakeClock:
    def __init__(self) -> None:
        self.now = 100.0

    def __call__(self) -> float:
        return self.now


class Ceiling(random.Random):
    """Draws the top of every jitter range: open periods of exactly their ceiling."""

    def uniform(self, a: float, b: float) -> float:
        return b


def test_breaker_opens_after_the_threshold_and_recovers_through_one_trial() -> None:
    clock = FakeClock()
    breakers = Breakers(failure_threshold=3, open_seconds=1.0, clock=clock, rng=Ceiling())
    down = UpstreamUnavailable("refused")
    for _ in range(2):
        breakers.on_result("d", down)
    assert breakers.state("d") is BreakerState.CLOSED
    breakers.on_result("d", down)
    assert breakers.state("d") is BreakerState.OPEN
    assert not breakers.allows("d")
    clock.now += 1.0
    assert breakers.state("d") is BreakerState.HALF_OPEN
    assert breakers.allows("d")
    breakers.on_start("d")
    assert not breakers.allows("d")  # one trial at a time
    breakers.on_result("d", down)  # the trial fails: open again, ceiling twice as long
    assert breakers.state("d") is BreakerState.OPEN
    clock.now += 1.5
    assert breakers.state("d") is BreakerState.OPEN
    clock.now += 0.5
    breakers.on_start("d")
    breakers.on_result("d", None)
    assert breakers.state("d") is BreakerState.CLOSED
    assert breakers.states() == {}
    # Both trials are counted, and the one that closed it: /v1/nodes shows a half-open spell
    # shorter than any poll.
    assert breakers.describe("d") == {
        "breaker": "closed",
        "breaker_opens": 2,
        "breaker_trials": 2,
        "breaker_recoveries": 1,
    }
    assert breakers.describe("never-called")["breaker_trials"] == 0


def test_a_timeout_counts_only_if_the_deployment_answered_nothing_since_the_call_started() -> None:
    clock = FakeClock()
    breakers = Breakers(failure_threshold=2, clock=clock)
    timeout = DeadlineExceeded("no answer within 300 ms")
    busy_since = breakers.now()
    clock.now += 0.1
    breakers.on_result("d", None)  # another call's answer: the deployment is alive, only busy
    clock.now += 0.2
    for _ in range(5):
        breakers.on_result("d", timeout, busy_since)
    assert breakers.state("d") is BreakerState.CLOSED
    cut_since = breakers.now()  # from here on nothing answers (a cut link, a dead node)
    clock.now += 0.3
    breakers.on_result("d", timeout, cut_since)
    breakers.on_result("d", timeout, cut_since)
    assert breakers.state("d") is BreakerState.OPEN


def test_rejected_inputs_do_not_count_against_a_deployment() -> None:
    breakers = Breakers(failure_threshold=1)
    breakers.on_result("d", InvalidInput("bad shape"))
    breakers.on_result("d", UpstreamRejected("400 from upstream"))
    assert breakers.state("d") is BreakerState.CLOSED


async def test_the_router_skips_an_open_breaker_and_the_trace_says_so() -> None:
    breakers = Breakers(failure_threshold=2, open_seconds=60.0, rng=Ceiling())
    signals = Signals()
    policy = compile_policy("version: b")
    router = Router(hybrid_registry(), signals, lambda: policy, breakers=breakers)
    backend = ScriptedBackend({"local": 0.9, "edge-1": 0.9})  # cloud-1 is unreachable
    executor = Executor({"onnx": backend, "v2": backend}, signals, breakers=breakers)
    classify = Subtask(id="c", capability="text-classification", task="sentiment", inputs={})
    plan = Plan(task="sentiment", subtasks=[classify], outputs={})
    for _ in range(2):
        context = router.context(RouteOptions(prefer="quality"))
        decisions = {"c": router.decide(classify, context)}
        assert decisions["c"].chosen.node.id == "cloud-1"
        trace = Trace(request_id="r")
        await executor.run(plan, decisions, {}, trace, time.monotonic() + 5)
        assert trace.attempts[-1].status == "ok"  # fell back
    assert breakers.states() == {"cloud-1/large:1": "open"}
    decision = router.decide(classify, router.context(RouteOptions(prefer="quality")))
    assert decision.chosen.node.id != "cloud-1"
    cloud = next(c for c in decision.candidates if c.node.id == "cloud-1")
    assert cloud.rejected_by == "breaker"


def test_a_late_timer_does_not_count_against_a_deployment() -> None:
    breakers = Breakers(failure_threshold=1)
    breakers.on_result("d", DeadlineExceeded("no answer within 300 ms", loop_lagged=True))
    assert breakers.state("d") is BreakerState.CLOSED


async def test_a_breaker_opened_after_the_decision_is_a_503_with_retry_after() -> None:
    breakers = Breakers(failure_threshold=1, open_seconds=60.0, rng=Ceiling())
    signals = Signals()
    policy = compile_policy("version: b")
    router = Router(hybrid_registry(), signals, lambda: policy, breakers=breakers)
    backend = ScriptedBackend({"local": 0.9, "edge-1": 0.9, "cloud-1": 0.9})
    executor = Executor({"onnx": backend, "v2": backend}, signals, breakers=breakers)
    classify = Subtask(id="c", capability="text-classification", task="sentiment", inputs={})
    plan = Plan(task="sentiment", subtasks=[classify], outputs={})
    decision = router.decide(classify, router.context(RouteOptions(route="cloud")))
    for candidate in [decision.chosen, *decision.fallbacks]:
        breakers.on_result(candidate.deployment.id, UpstreamUnavailable("refused"))
    trace = Trace(request_id="r")
    done = await executor.run(plan, {"c": decision}, {}, trace, time.monotonic() + 5)
    error = done["c"].error
    assert isinstance(error, NoCapacity)
    assert error.status_code == 503
    assert "Retry-After" in error.headers()


def test_open_periods_are_drawn_from_zero_to_the_doubling_ceiling() -> None:
    """Full jitter: a breaker facing a periodic outage does not trial in lock step with it."""
    clock = FakeClock()
    periods: list[float] = []
    breakers = Breakers(failure_threshold=1, open_seconds=1.0, clock=clock, rng=random.Random(7))
    down = UpstreamUnavailable("refused")
    breakers.on_result("d", down)
    for _ in range(40):
        breaker = breakers._by_deployment["d"]
        periods.append(breaker.cooldown)
        clock.now += breaker.cooldown + 1e-6
        breakers.on_start("d")
        breakers.on_result("d", down)  # every trial fails: the ceiling doubles up to the cap
    assert 0.0 <= periods[0] <= 1.0
    assert 0.0 <= periods[1] <= 2.0
    assert all(0.0 <= period <= 30.0 for period in periods)
    assert len({round(period, 6) for period in periods}) == len(periods)  # no fixed periods
    assert max(periods[10:]) > 16.0  # the cap is reached, not exceeded


def test_a_health_probe_that_answers_makes_an_open_breaker_half_open_at_once() -> None:
    clock = FakeClock()
    breakers = Breakers(failure_threshold=1, open_seconds=30.0, clock=clock, rng=Ceiling())
    breakers.on_result("d", UpstreamUnavailable("refused"))
    clock.now += 0.5
    assert breakers.state("d") is BreakerState.OPEN
    breakers.on_probe(["d", "never-called"])
    assert breakers.state("d") is BreakerState.HALF_OPEN
    breakers.on_start("d")
    breakers.on_result("d", None)
    assert breakers.state("d") is BreakerState.CLOSED
    assert breakers.describe("d")["breaker_recoveries"] == 1
    breakers.on_probe(["d"])  # a closed breaker stays closed
    assert breakers.state("d") is BreakerState.CLOSED


def test_the_back_off_is_kept_after_a_recovery_until_a_run_of_successes() -> None:
    clock = FakeClock()
    breakers = Breakers(
        failure_threshold=1, open_seconds=1.0, clock=clock, reset_after=3, rng=Ceiling()
    )
    down = UpstreamUnavailable("refused")
    breakers.on_result("d", down)
    for _ in range(2):  # two failed trials: the ceiling is 4 s
        clock.now += 10.0
        breakers.on_start("d")
        breakers.on_result("d", down)
    breaker = breakers._by_deployment["d"]
    assert breaker.cooldown == 4.0
    clock.now += 10.0
    breakers.on_start("d")
    breakers.on_result("d", None)  # recovered, one success
    breakers.on_result("d", down)  # fails again at once: rests as long as before
    assert breaker.cooldown == 4.0
    clock.now += 10.0
    breakers.on_start("d")
    for _ in range(3):  # a run of successes resets the back-off
        breakers.on_result("d", None)
    breakers.on_result("d", down)
    assert breaker.cooldown == 1.0
