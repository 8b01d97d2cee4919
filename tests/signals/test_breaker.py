"""Circuit breakers: closed → open after repeated upstream failures → half-open trial → closed."""

from __future__ import annotations

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


def test_breaker_opens_after_the_threshold_and_recovers_through_one_trial() -> None:
    clock = FakeClock()
    breakers = Breakers(failure_threshold=3, open_seconds=1.0, clock=clock)
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
    breakers.on_result("d", down)  # the trial fails: open again, for twice as long
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
    breakers = Breakers(failure_threshold=2, open_seconds=60.0)
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
    breakers = Breakers(failure_threshold=1, open_seconds=60.0)
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
