from __future__ import annotations

import time

from hybridinfer.core.plan import Plan, Subtask
from hybridinfer.core.trace import Trace
from hybridinfer.errors import UpstreamUnavailable
from hybridinfer.execute.executor import Executor, SubtaskResult, resolve_inputs
from hybridinfer.policy.document import CompiledPolicy, compile_policy
from hybridinfer.route.router import RouteOptions, Router
from hybridinfer.signals.ewma import Signals
from tests.fakes import ScriptedBackend, hybrid_registry


def plan() -> Plan:
    classify = Subtask(
        id="classify",
        capability="text-classification",
        task="sentiment",
        inputs={"text": "$inputs.text"},
    )
    return Plan(task="sentiment", subtasks=[classify], outputs={"label": "$classify.label"})


async def execute(
    script: dict[str, float | Exception],
    options: RouteOptions,
    policy: CompiledPolicy | None = None,
) -> tuple[dict[str, object], Trace, ScriptedBackend]:
    backend = ScriptedBackend(script)  # type: ignore[arg-type]
    signals = Signals()
    chosen_policy = policy or compile_policy("version: t")
    router = Router(hybrid_registry(), signals, lambda: chosen_policy)
    the_plan = plan()
    context = router.context(options)
    decisions = {s.id: router.decide(s, context) for s in the_plan.subtasks}
    executor = Executor({"onnx": backend, "v2": backend}, signals)
    trace = Trace(request_id="r1")
    results = await executor.run(the_plan, decisions, {"text": "hi"}, trace, time.monotonic() + 5)
    return dict(results), trace, backend


async def test_inputs_are_resolved_from_the_request() -> None:
    results, _, backend = await execute({"local": 0.9}, RouteOptions())
    assert backend.calls == [("local", {"text": "hi"})]
    assert results["classify"].outputs["label"] == "from-local"  # type: ignore[attr-defined]


async def test_failed_primary_falls_back_and_the_trace_shows_both_attempts() -> None:
    results, trace, _ = await execute(
        {"cloud-1": UpstreamUnavailable("down"), "local": 0.9}, RouteOptions(prefer="quality")
    )
    result = results["classify"]
    assert result.status == "ok"  # type: ignore[attr-defined]
    assert [(a.node, a.role, a.status) for a in trace.attempts] == [
        ("cloud-1", "primary", "error"),
        ("edge-1", "fallback", "error"),
        ("local", "fallback", "ok"),
    ]
    assert trace.attempts[0].error_code == "upstream_unavailable"


async def test_every_path_failing_returns_the_last_error() -> None:
    results, trace, _ = await execute({}, RouteOptions())
    result = results["classify"]
    assert result.status == "error"  # type: ignore[attr-defined]
    assert result.error.error_code == "upstream_unavailable"  # type: ignore[attr-defined]
    assert len(trace.attempts) == 3


async def test_cascade_escalates_only_below_the_threshold() -> None:
    policy = compile_policy("version: c\ncascade: {sentiment: {threshold: 0.8}}")
    confident, trace, _ = await execute({"local": 0.95, "cloud-1": 0.99}, RouteOptions(), policy)
    assert confident["classify"].outputs["label"] == "from-local"  # type: ignore[attr-defined]
    assert len(trace.attempts) == 1
    unsure, trace, _ = await execute({"local": 0.5, "cloud-1": 0.99}, RouteOptions(), policy)
    assert unsure["classify"].outputs["label"] == "from-cloud-1"  # type: ignore[attr-defined]
    assert [a.role for a in trace.attempts] == ["primary", "escalation"]


async def test_failed_escalation_keeps_the_local_answer() -> None:
    policy = compile_policy("version: c\ncascade: {sentiment: {threshold: 0.8}}")
    results, trace, _ = await execute(
        {"local": 0.5, "cloud-1": UpstreamUnavailable("x"), "edge-1": UpstreamUnavailable("y")},
        RouteOptions(),
        policy,
    )
    assert results["classify"].outputs["label"] == "from-local"  # type: ignore[attr-defined]
    assert [a.status for a in trace.attempts] == ["ok", "error", "error"]
    degraded = results["classify"].degraded  # type: ignore[attr-defined]
    assert degraded.startswith("escalation failed (")
    assert "upstream_unavailable" in degraded
    assert "the first answer stands" in degraded


async def test_an_answer_that_needed_no_escalation_is_not_degraded() -> None:
    policy = compile_policy("version: c\ncascade: {sentiment: {threshold: 0.8}}")
    confident, _, _ = await execute({"local": 0.95}, RouteOptions(), policy)
    escalated, _, _ = await execute({"local": 0.5, "cloud-1": 0.99}, RouteOptions(), policy)
    assert confident["classify"].degraded == ""  # type: ignore[attr-defined]
    assert escalated["classify"].degraded == ""  # type: ignore[attr-defined]


async def test_passed_deadline_fails_fast() -> None:
    backend = ScriptedBackend({"local": 0.9})
    signals = Signals()
    chosen_policy = compile_policy("version: t")
    router = Router(hybrid_registry(), signals, lambda: chosen_policy)
    the_plan = plan()
    context = router.context(RouteOptions())
    decisions = {s.id: router.decide(s, context) for s in the_plan.subtasks}
    executor = Executor({"onnx": backend, "v2": backend}, signals)
    trace = Trace(request_id="r")
    results = await executor.run(the_plan, decisions, {"text": "x"}, trace, time.monotonic() - 1)
    assert results["classify"].error.error_code == "deadline_exceeded"  # type: ignore[union-attr]
    assert backend.calls == []


def test_inputs_resolve_from_the_request_and_finished_subtasks_in_their_order() -> None:
    classify = Subtask("classify", "classification", None, {"text": "$inputs.text"})
    done = {"classify": SubtaskResult(classify, "ok", {"label": "positive"})}
    inputs = {"label": "$classify.label", "text": "$inputs.text", "tone": "$inputs.tone"}
    for _ in range(2):  # the second time from the split references kept
        resolved = resolve_inputs(inputs, {"text": "great"}, done)
        assert resolved == {"label": "positive", "text": "great", "tone": None}
        assert list(resolved) == ["label", "text", "tone"]


def test_inputs_that_are_not_references_pass_as_they_are() -> None:
    request = {"text": "great"}
    assert resolve_inputs({"text": "$inputs.text", "k": 3}, request, {}) == {
        "text": "great",
        "k": 3,
    }
    listed = {"texts": ["a", "b"], "text": "$inputs.text"}  # a list cannot key the cache
    assert resolve_inputs(listed, request, {}) == {"texts": ["a", "b"], "text": "great"}
    assert resolve_inputs({"plain": "words"}, request, {}) == {"plain": "words"}
