from __future__ import annotations

import asyncio
import contextlib
import time
from dataclasses import replace

from hybridinfer.core.decision import Candidate
from hybridinfer.core.plan import Plan, Privacy, Subtask
from hybridinfer.core.trace import Trace
from hybridinfer.errors import UpstreamUnavailable
from hybridinfer.execute.attempts import Step
from hybridinfer.execute.executor import Executor
from hybridinfer.execute.hedge import HedgePolicy, hedge_order
from hybridinfer.execute.retry import Retries
from hybridinfer.policy.document import BudgetPolicy, compile_policy
from hybridinfer.route.router import RouteOptions, Router
from hybridinfer.signals.breaker import Breakers, BreakerState
from hybridinfer.signals.budget import MemoryLedger
from hybridinfer.signals.ewma import Signals
from hybridinfer.signals.latencies import LatencyWindows
from tests.fakes import Outcome, SequenceBackend, hybrid_registry


def test_latency_sensitive_subtasks_are_hedged_unless_the_request_says_no() -> None:
    default = HedgePolicy()
    assert default.wanted(None, None, latency_sensitive=True)
    assert not default.wanted(None, None, latency_sensitive=False)
    assert not default.wanted(False, None, latency_sensitive=True)
    assert not HedgePolicy(latency_sensitive=False).wanted(None, None, latency_sensitive=True)
    # Asking for quality: no default race against another (possibly weaker) tier.
    assert not default.wanted(None, None, latency_sensitive=True, prefer="quality")
    assert default.wanted(True, None, latency_sensitive=True, prefer="quality")
    assert default.wanted(None, None, latency_sensitive=True, prefer="latency")
    # A chat is not raced by default (a whole second generation); asked, it is.
    assert not default.wanted(None, None, latency_sensitive=True, capability="chat")
    assert default.wanted(True, None, latency_sensitive=True, capability="chat")


def test_the_hedge_goes_to_the_first_candidate_on_another_tier() -> None:
    registry = hybrid_registry()
    by_tier = {n.tier.value: (n, n.deployments[0]) for n in registry.nodes() if n.deployments}
    local_node, local_deployment = by_tier["local"]
    edge_node, edge_deployment = by_tier["edge"]
    cloud_node, cloud_deployment = by_tier["cloud"]
    edge_1 = Step(Candidate(edge_deployment, edge_node), "primary", last=False)
    edge_2 = Step(Candidate(edge_deployment, edge_node), "fallback", last=False)
    cloud = Step(Candidate(cloud_deployment, cloud_node), "fallback", last=False)
    local = Step(Candidate(local_deployment, local_node), "fallback", last=True)
    ordered = hedge_order([edge_1, edge_2, cloud, local])
    assert ordered is not None
    assert [s.candidate.node.tier.value for s in ordered] == ["edge", "cloud", "edge", "local"]
    assert [s.last for s in ordered] == [False, False, False, True]
    assert hedge_order([edge_1, edge_2]) is None  # a retry of the same node would not help
    other = Step(Candidate(edge_deployment, replace(edge_node, id="edge-2")), "fallback", True)
    same_tier = hedge_order([edge_1, edge_2, other])
    assert same_tier is not None  # no other tier: the next node of the same one
    assert [s.candidate.node.id for s in same_tier] == [edge_node.id, "edge-2", edge_node.id]


def test_hedging_is_asked_for_or_follows_the_latency_slo() -> None:
    off = HedgePolicy(below_latency_ms=0.0)
    assert not off.wanted(None, 10.0)
    assert off.wanted(True, None)
    slo = HedgePolicy(below_latency_ms=100.0)
    assert slo.wanted(None, 80.0)
    assert not slo.wanted(None, 150.0)
    assert not slo.wanted(None, None)
    assert not slo.wanted(False, 80.0)


def test_the_head_start_is_the_p95_once_known() -> None:
    windows = LatencyWindows(min_samples=20)
    policy = HedgePolicy(delay_ms=40.0)
    assert policy.delay_s(windows, "d") == 0.04
    for _ in range(20):
        windows.observe("d", 12.0)
    assert policy.delay_s(windows, "d") == 0.012


async def execute(
    script: dict[str, list[Outcome]],
    prefer: str = "quality",
    privacy: Privacy = Privacy.INTERNAL,
    budget: BudgetPolicy | None = None,
    without: tuple[str, ...] = (),
) -> tuple[str, Trace, SequenceBackend, MemoryLedger]:
    backend = SequenceBackend(script)
    signals = Signals()
    policy = compile_policy("version: t")
    registry = hybrid_registry()
    for node_id in without:
        registry.remove(node_id)
    router = Router(registry, signals, lambda: policy)
    subtask = Subtask(
        "classify", "text-classification", "sentiment", {"text": "hi"}, privacy=privacy
    )
    subtask.hedge = True
    the_plan = Plan(task="sentiment", subtasks=[subtask], outputs={})
    decisions = {"classify": router.decide(subtask, router.context(RouteOptions(prefer=prefer)))}  # type: ignore[arg-type]
    ledger = MemoryLedger()
    executor = Executor(
        {"onnx": backend, "v2": backend},
        signals,
        ledger,
        lambda: budget or BudgetPolicy(),
        hedging=HedgePolicy(delay_ms=50.0),
    )
    trace = Trace(request_id="r")
    results = await executor.run(the_plan, decisions, {}, trace, time.monotonic() + 5.0)
    result = results["classify"]
    label = result.outputs.get("label") or result.error.error_code  # type: ignore[union-attr]
    return label, trace, backend, ledger


def roles(trace: Trace) -> list[tuple[str, str, str]]:
    return [(a.node, a.role, a.status) for a in trace.attempts]


async def test_a_slow_primary_is_raced_and_the_loser_s_attempt_cancelled() -> None:
    started = time.monotonic()
    label, trace, backend, _ = await execute({"cloud-1": [(0.3, 0.9)], "edge-1": [(0.01, 0.8)]})
    assert time.monotonic() - started < 0.25
    assert label == "from-edge-1"
    assert roles(trace) == [("cloud-1", "primary", "cancelled"), ("edge-1", "hedge", "ok")]
    assert backend.cancelled == []  # its call runs on to its own bound, for its verdict
    await asyncio.sleep(0.35)
    assert backend.cancelled == []


async def test_a_lost_race_against_a_cut_link_still_counts_against_its_breaker() -> None:
    """The hedge wins every race against a cut link; the abandoned call's timeout must still
    reach the breaker, or the cut would stay hidden until the probes noticed."""
    backend = SequenceBackend({"cloud-1": [(2.0, 0.9)], "edge-1": [(0.01, 0.8)]})
    signals = Signals()
    policy = compile_policy("version: t")
    breakers = Breakers(failure_threshold=1, open_seconds=30.0)
    router = Router(hybrid_registry(), signals, lambda: policy, breakers=breakers)
    subtask = Subtask("classify", "text-classification", "sentiment", {"text": "hi"})
    subtask.hedge = True
    plan = Plan(task="sentiment", subtasks=[subtask], outputs={})
    decision = router.decide(subtask, router.context(RouteOptions(prefer="quality")))
    executor = Executor(
        {"onnx": backend, "v2": backend},
        signals,
        breakers=breakers,
        retry=Retries(attempt_timeout_s=0.1),
        hedging=HedgePolicy(delay_ms=20.0),
    )
    trace = Trace(request_id="r")
    done = await executor.run(plan, {"classify": decision}, {}, trace, time.monotonic() + 5.0)
    assert done["classify"].outputs["label"] == "from-edge-1"
    assert breakers.state("cloud-1/large:1") is BreakerState.CLOSED  # no verdict yet
    # The abandoned call times out at its 100 ms bound; on a loaded machine its timer may
    # fire late, so wait for the verdict (up to 2 s) rather than a fixed 150 ms.
    for _ in range(200):
        if breakers.state("cloud-1/large:1") is BreakerState.OPEN:
            break
        await asyncio.sleep(0.01)
    assert breakers.state("cloud-1/large:1") is BreakerState.OPEN
    assert signals.error_rate("cloud-1/large:1") > 0.0


async def test_a_fast_primary_is_never_hedged() -> None:
    label, trace, backend, _ = await execute({"cloud-1": [(0.001, 0.9)], "edge-1": [0.8]})
    assert label == "from-cloud-1"
    assert backend.calls == ["cloud-1"]
    assert roles(trace) == [("cloud-1", "primary", "ok")]


async def test_when_the_primary_fails_early_the_next_is_a_plain_fallback() -> None:
    label, trace, _, _ = await execute({"edge-1": [(0.01, 0.8)]})  # cloud-1 fails at once
    assert label == "from-edge-1"
    assert roles(trace) == [("cloud-1", "primary", "error"), ("edge-1", "fallback", "ok")]


async def test_both_raced_calls_failing_leaves_the_rest_of_the_chain() -> None:
    label, trace, _, _ = await execute({"local": [0.7]})  # cloud-1 and edge-1 both fail
    assert label == "from-local"
    assert [a.node for a in trace.attempts] == ["cloud-1", "edge-1", "local"]


async def test_a_sensitive_subtask_is_hedged_only_inside_the_private_zone() -> None:
    label, trace, backend, _ = await execute(
        {"edge-1": [(2.0, 0.8)], "local": [(0.01, 0.7)], "cloud-1": [0.99]},
        privacy=Privacy.SENSITIVE,
    )
    assert label == "from-local"
    assert "cloud-1" not in backend.calls
    assert roles(trace) == [("edge-1", "primary", "cancelled"), ("local", "hedge", "ok")]


async def test_a_paid_hedge_is_refused_past_the_budget() -> None:
    label, trace, backend, ledger = await execute(
        {"local": [(0.3, 0.7)], "cloud-1": [0.99]},
        prefer="cost",
        budget=BudgetPolicy(global_limit=0.0001),  # one cloud call costs 0.0002
        without=("edge-1",),
    )
    assert label == "from-local"
    assert roles(trace) == [("local", "primary", "ok"), ("cloud-1", "hedge", "error")]
    assert trace.attempts[1].error_code == "budget_exhausted"
    assert "cloud-1" not in backend.calls
    assert ledger.state(None, BudgetPolicy(global_limit=0.0001)).spent_global == 0.0


async def test_a_paid_hedge_within_the_budget_is_charged_once() -> None:
    label, trace, _, ledger = await execute(
        {"local": [(2.0, 0.7)], "cloud-1": [(0.01, 0.99)]},
        prefer="cost",
        budget=BudgetPolicy(global_limit=1.0),
        without=("edge-1",),
    )
    assert label == "from-cloud-1"
    assert roles(trace) == [("local", "primary", "cancelled"), ("cloud-1", "hedge", "ok")]
    assert ledger.state(None, BudgetPolicy(global_limit=1.0)).spent_global == 0.0002


async def test_a_cancelled_request_cancels_its_unraced_call_and_frees_its_slot_and_trial() -> None:
    """Outside a hedge race the call runs in the request's own task: cancelling the request
    cancels the call, gives its node slot back and frees a half-open breaker's trial."""
    backend = SequenceBackend({"cloud-1": [(5.0, 0.9)]})
    signals = Signals()
    policy = compile_policy("version: t")
    now = [0.0]
    breakers = Breakers(failure_threshold=1, open_seconds=1.0, clock=lambda: now[0])
    router = Router(hybrid_registry(), signals, lambda: policy, breakers=breakers)
    subtask = Subtask("classify", "text-classification", "sentiment", {"text": "hi"})
    plan = Plan(task="sentiment", subtasks=[subtask], outputs={})
    decision = router.decide(subtask, router.context(RouteOptions(prefer="quality")))
    deployment = decision.chosen.deployment.id
    assert decision.chosen.node.id == "cloud-1"
    breakers.on_result(deployment, UpstreamUnavailable("down"), now[0])  # opens it
    now[0] += 60.0  # past any cool-down: half-open, one trial allowed
    assert breakers.state(deployment) is BreakerState.HALF_OPEN
    executor = Executor({"onnx": backend, "v2": backend}, signals, breakers=breakers)
    trace = Trace(request_id="r")
    running = asyncio.create_task(
        executor.run(plan, {"classify": decision}, {}, trace, time.monotonic() + 10.0)
    )
    for _ in range(200):  # until the call is out
        if backend.calls:
            break
        await asyncio.sleep(0.005)
    assert not breakers.allows(deployment)  # the trial is out
    assert executor.limiter("cloud-1").in_flight == 1
    running.cancel()
    with contextlib.suppress(asyncio.CancelledError):
        await running
    assert backend.cancelled == ["cloud-1"]  # the call itself was cancelled, not left running
    assert roles(trace) == [("cloud-1", "primary", "cancelled")]
    assert executor.limiter("cloud-1").in_flight == 0
    assert breakers.allows(deployment)  # the trial freed: the next call may try
