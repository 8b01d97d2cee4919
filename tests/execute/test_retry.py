from __future__ import annotations

import random
import time

import pytest

from hybridinfer.core.decision import Decision
from hybridinfer.core.plan import Plan, Subtask
from hybridinfer.core.trace import Trace
from hybridinfer.errors import (
    DeadlineExceeded,
    HybridInferError,
    Overloaded,
    UpstreamError,
    UpstreamRejected,
    UpstreamUnavailable,
)
from hybridinfer.execute.executor import Executor
from hybridinfer.execute.retry import Retries, retryable
from hybridinfer.policy.document import compile_policy
from hybridinfer.route.router import RouteOptions, Router
from hybridinfer.signals.ewma import Signals
from tests.fakes import Outcome, SequenceBackend, hybrid_registry


def unavailable_503() -> UpstreamError:
    return UpstreamError("HTTP 503", upstream_status=503)


@pytest.mark.parametrize(
    ("error", "expected"),
    [
        (UpstreamUnavailable("connection refused"), True),
        (UpstreamUnavailable("circuit open", code="breaker_open"), False),
        (UpstreamError("HTTP 502", upstream_status=502), True),
        (unavailable_503(), True),
        (UpstreamError("HTTP 504", upstream_status=504), True),
        (UpstreamError("HTTP 500", upstream_status=500), False),
        (UpstreamError("malformed answer"), False),
        (UpstreamRejected("HTTP 400", upstream_status=400), False),
        (UpstreamRejected("HTTP 429", upstream_status=429), False),
        (DeadlineExceeded("no answer in time"), True),
        (Overloaded("queue full", retry_after_s=1), False),
    ],
)
def test_only_failures_of_the_path_are_retried(error: HybridInferError, expected: bool) -> None:
    assert retryable(error) is expected


def test_waits_grow_exponentially_with_full_jitter_under_the_cap() -> None:
    retries = Retries(attempts=10, base_s=0.1, max_s=0.5, rng=random.Random(7))
    for retry, ceiling in [(1, 0.1), (2, 0.2), (3, 0.4), (4, 0.5), (9, 0.5)]:
        waits = [retries.wait_s(retry) for _ in range(200)]
        assert all(0.0 <= wait <= ceiling for wait in waits)
        assert max(waits) > 0.8 * ceiling  # full jitter spans the whole range
        assert min(waits) < 0.2 * ceiling


def plan() -> Plan:
    classify = Subtask("classify", "text-classification", "sentiment", {"text": "$inputs.text"})
    return Plan(task="sentiment", subtasks=[classify], outputs={"label": "$classify.label"})


def prepared(
    script: dict[str, list[Outcome]], retries: Retries
) -> tuple[Executor, Plan, dict[str, Decision], SequenceBackend]:
    """One sentiment subtask decided with prefer=quality: cloud-1, then edge-1, then local."""
    backend = SequenceBackend(script)
    signals = Signals()
    policy = compile_policy("version: t")
    router = Router(hybrid_registry(), signals, lambda: policy)
    the_plan = plan()
    context = router.context(RouteOptions(prefer="quality"))
    decisions = {s.id: router.decide(s, context) for s in the_plan.subtasks}
    executor = Executor({"onnx": backend, "v2": backend}, signals, retry=retries)
    return executor, the_plan, decisions, backend


async def execute(
    script: dict[str, list[Outcome]], retries: Retries, timeout_s: float = 5.0
) -> tuple[str, Trace, SequenceBackend]:
    """Run one sentiment subtask with prefer=quality: cloud-1, then edge-1, then local."""
    executor, the_plan, decisions, backend = prepared(script, retries)
    trace = Trace(request_id="r")
    deadline = time.monotonic() + timeout_s
    results = await executor.run(the_plan, decisions, {"text": "hi"}, trace, deadline)
    result = results["classify"]
    return (result.outputs.get("label") or result.error.error_code), trace, backend  # type: ignore[union-attr]


def tries(trace: Trace) -> list[tuple[str, str, int, str]]:
    return [(a.node, a.role, a.number, a.status) for a in trace.attempts]


async def test_a_503_is_retried_on_the_same_deployment_and_the_trace_shows_the_wait() -> None:
    label, trace, _ = await execute(
        {"cloud-1": [unavailable_503(), 0.9]}, Retries(attempts=3, base_s=0.02, max_s=0.05)
    )
    assert label == "from-cloud-1"
    assert tries(trace) == [("cloud-1", "primary", 1, "error"), ("cloud-1", "primary", 2, "ok")]
    assert trace.attempts[0].wait_ms == 0.0
    assert 0.0 <= trace.attempts[1].wait_ms <= 20.0
    assert trace.describe()["attempts"][1]["number"] == 2


async def test_attempts_are_bounded_then_the_chain_falls_back() -> None:
    label, trace, _ = await execute(
        {"cloud-1": [unavailable_503()], "edge-1": [0.8]},
        Retries(attempts=3, base_s=0.001, max_s=0.002),
    )
    assert label == "from-edge-1"
    assert tries(trace) == [
        ("cloud-1", "primary", 1, "error"),
        ("cloud-1", "primary", 2, "error"),
        ("cloud-1", "primary", 3, "error"),
        ("edge-1", "fallback", 1, "ok"),
    ]


async def test_a_4xx_is_never_retried() -> None:
    label, trace, _ = await execute(
        {
            "cloud-1": [UpstreamRejected("HTTP 400: bad input", upstream_status=400)],
            "edge-1": [0.8],
        },
        Retries(attempts=3, base_s=0.001),
    )
    assert label == "from-edge-1"
    assert tries(trace) == [("cloud-1", "primary", 1, "error"), ("edge-1", "fallback", 1, "ok")]


async def test_a_retry_that_would_end_past_the_deadline_falls_back_instead() -> None:
    started = time.monotonic()
    label, trace, _ = await execute(
        {"cloud-1": [unavailable_503()], "edge-1": [0.8]},
        Retries(attempts=5, base_s=30.0, max_s=30.0, rng=random.Random(1)),
        timeout_s=1.0,
    )
    assert time.monotonic() - started < 1.0
    assert label == "from-edge-1"  # the drawn wait (~4 s) would not fit in the 1 s deadline
    assert tries(trace) == [("cloud-1", "primary", 1, "error"), ("edge-1", "fallback", 1, "ok")]


async def test_a_hung_call_is_cut_at_the_attempt_timeout_and_retried() -> None:
    started = time.monotonic()
    label, trace, _ = await execute(
        {"cloud-1": [(5.0, 0.9), (0.0, 0.95)]},
        Retries(attempts=2, base_s=0.001, attempt_timeout_s=0.1),
    )
    assert label == "from-cloud-1"
    assert time.monotonic() - started < 1.0
    assert tries(trace) == [("cloud-1", "primary", 1, "error"), ("cloud-1", "primary", 2, "ok")]
    assert trace.attempts[0].error_code == "deadline_exceeded"


async def test_without_retries_a_failure_goes_straight_to_the_fallback() -> None:
    label, _trace, backend = await execute(
        {"cloud-1": [unavailable_503()], "edge-1": [0.8]}, Retries(attempts=1)
    )
    assert label == "from-edge-1"
    assert backend.calls == ["cloud-1", "edge-1"]


def test_the_adaptive_bound_is_a_multiple_of_the_p99_above_a_floor_within_the_deadline() -> None:
    adaptive = Retries(adaptive_factor=4.0, adaptive_floor_s=0.25)
    assert adaptive.timeout_s(10.0) == 10.0  # p99 unknown yet: the rest of the deadline
    assert adaptive.timeout_s(10.0, p99_s=0.5) == 2.0
    assert adaptive.timeout_s(10.0, p99_s=0.01) == 0.25  # the floor
    assert adaptive.timeout_s(1.5, p99_s=0.5) == 1.5  # never past the deadline
    fixed = Retries(attempt_timeout_s=0.3, adaptive_factor=4.0)
    assert fixed.timeout_s(10.0, p99_s=2.0) == 0.3  # a fixed bound wins
    assert Retries().timeout_s(10.0, p99_s=0.01) == 10.0  # factor 0: off


async def test_a_hung_call_of_a_fast_deployment_is_cut_at_its_adaptive_bound() -> None:
    """cloud-1 answered in ~5 ms five times; then it hangs (a cut link): the try is cut at
    the floor (0.1 s) and the fallback answers, long before the 5 s deadline."""
    retries = Retries(attempts=1, adaptive_factor=4.0, adaptive_floor_s=0.1)
    script: dict[str, list[Outcome]] = {"cloud-1": [(5.0, 0.9)], "edge-1": [0.8]}
    executor, the_plan, decisions, _ = prepared(script, retries)
    for _ in range(5):
        executor.latencies.observe(decisions["classify"].chosen.deployment.id, 5.0)  # type: ignore[union-attr]
    trace = Trace(request_id="r")
    started = time.monotonic()
    results = await executor.run(the_plan, decisions, {"text": "hi"}, trace, started + 5.0)
    assert results["classify"].outputs["label"] == "from-edge-1"
    assert time.monotonic() - started < 1.0
    assert tries(trace) == [("cloud-1", "primary", 1, "error"), ("edge-1", "fallback", 1, "ok")]
    assert "within 100 ms" in (trace.attempts[0].error or "")
