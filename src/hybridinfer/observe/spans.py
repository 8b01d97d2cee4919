"""A finished trace as OpenTelemetry spans, with the times the trace recorded.

The tree, named by the stages (``trace.STAGES``)::

    gateway                       the whole request (joins the caller's trace, if any)
    ├─ decompose
    ├─ route
    ├─ execute
    │  └─ subtask <id>            tier, node, model, decision reason and policy, status
    │     └─ attempt <role>       one per call: primary, fallback, escalation
    └─ aggregate

Spans are built after the request, from the trace, with explicit start and end times; the
trace and root span ids were fixed when the request arrived (``tracecontext.py``), so spans a
node records from the ``traceparent`` it was sent join the same trace under ``gateway``.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any

from opentelemetry import trace as otel
from opentelemetry.context import Context
from opentelemetry.sdk.trace.id_generator import IdGenerator, RandomIdGenerator
from opentelemetry.trace import SpanKind, Status, StatusCode
from opentelemetry.util.types import AttributeValue

from hybridinfer.core.trace import STAGES, Attempt, Trace

Attributes = dict[str, AttributeValue]


class PlannedIds(IdGenerator):
    """Hands out the ids planned for the next span, else random ones.

    Used only on the event loop, one span at a time, by ``SpanWriter``.
    """

    def __init__(self) -> None:
        self._random = RandomIdGenerator()
        self._trace_id: int | None = None
        self._span_id: int | None = None

    def plan(self, span_id: int, trace_id: int) -> None:
        self._span_id, self._trace_id = span_id, trace_id

    def generate_span_id(self) -> int:
        planned, self._span_id = self._span_id, None
        return planned or self._random.generate_span_id()

    def generate_trace_id(self) -> int:
        planned, self._trace_id = self._trace_id, None
        return planned or self._random.generate_trace_id()


class SpanWriter:
    """Writes one trace's spans through ``tracer`` (whose provider uses ``ids``)."""

    def __init__(self, tracer: otel.Tracer, ids: PlannedIds) -> None:
        self._tracer = tracer
        self._ids = ids

    def write(self, trace: Trace) -> None:
        context = trace.context
        start = context.started_ns

        def at(offset_ms: float) -> int:
            return start + int(offset_ms * 1_000_000)

        parent = None
        if context.parent_span_id is not None:
            caller = otel.SpanContext(
                context.trace_id,
                context.parent_span_id,
                is_remote=True,
                trace_flags=otel.TraceFlags(1 if context.sampled else 0),
            )
            parent = otel.set_span_in_context(otel.NonRecordingSpan(caller))
        self._ids.plan(context.span_id, context.trace_id)
        root = self._tracer.start_span(
            "gateway",
            context=parent,
            kind=SpanKind.SERVER,
            start_time=start,
            attributes=_request_attributes(trace),
        )
        inside = otel.set_span_in_context(root)
        timings, offsets = trace.timings_ms, trace.offsets_ms
        for stage in STAGES[1:]:
            if stage not in offsets:
                continue
            offset = offsets[stage]
            span = self._tracer.start_span(stage, context=inside, start_time=at(offset))
            if stage == "execute":
                self._write_subtasks(trace, otel.set_span_in_context(span), at)
            span.end(at(offset + timings.get(stage, 0.0)))
        if trace.status == "error":
            root.set_status(Status(StatusCode.ERROR, _error_text(trace.error)))
        root.end(at(timings.get("total", 0.0)))

    def _write_subtasks(self, trace: Trace, inside: Context, at: Callable[[float], int]) -> None:
        plan = trace.plan or {}
        results = {result["id"]: result for result in plan.get("results", [])}
        decisions = {decision["subtask"]: decision for decision in trace.decisions}
        execute_start = trace.offsets_ms.get("execute", 0.0)
        for subtask in plan.get("subtasks", []):
            attempts = [a for a in trace.attempts if a.subtask_id == subtask["id"]]
            origin = trace.started
            first = min((a.started_ms(origin) for a in attempts), default=execute_start)
            last = max(
                (a.started_ms(origin) + a.latency_ms for a in attempts), default=execute_start
            )
            result = results.get(subtask["id"], {})
            attributes = _subtask_attributes(trace, subtask, result, decisions.get(subtask["id"]))
            span = self._tracer.start_span(
                f"subtask {subtask['id']}", context=inside, start_time=at(first)
            )
            span.set_attributes(attributes)
            if result.get("status", "ok") != "ok":
                span.set_status(Status(StatusCode.ERROR, _error_text(result.get("error"))))
            subtask_context = otel.set_span_in_context(span)
            for attempt in attempts:
                self._write_attempt(trace, attempt, subtask_context, at)
            span.end(at(last))

    def _write_attempt(
        self, trace: Trace, attempt: Attempt, inside: Context, at: Callable[[float], int]
    ) -> None:
        # The subtask span above carries the request id, subtask and decision: each attribute
        # costs encoding time on every exported request (bench/metrics_cost.py).
        attributes: Attributes = {
            "hybridinfer.deployment": attempt.deployment,
            "hybridinfer.tier": attempt.tier,
            "hybridinfer.node": attempt.node,
            "hybridinfer.model": attempt.model,
            "hybridinfer.role": attempt.role,
            "hybridinfer.status": attempt.status,
        }
        if attempt.number > 1:  # a retry on the same deployment, after a backoff
            attributes["hybridinfer.try"] = attempt.number
            attributes["hybridinfer.wait_ms"] = round(attempt.wait_ms, 3)
        if attempt.confidence is not None:
            attributes["hybridinfer.confidence"] = attempt.confidence
        if attempt.error_code is not None:
            attributes["hybridinfer.error_code"] = attempt.error_code
        started_ms = attempt.started_ms(trace.started)
        span = self._tracer.start_span(
            f"attempt {attempt.role}",
            context=inside,
            start_time=at(started_ms),
            attributes=attributes,
        )
        if attempt.status == "error":  # not "cancelled": a hedge race it lost is no failure
            span.set_status(Status(StatusCode.ERROR, attempt.error or attempt.error_code or ""))
        span.end(at(started_ms + attempt.latency_ms))


def _request_attributes(trace: Trace) -> Attributes:
    attributes: Attributes = {
        "hybridinfer.request_id": trace.request_id,
        "hybridinfer.task": trace.task or "unknown",
        "hybridinfer.status": trace.status,
    }
    if trace.error:
        attributes["hybridinfer.error_code"] = str(trace.error.get("code"))
    if trace.policy_version is not None:  # a canary's share is countable from the spans
        attributes["hybridinfer.policy_version"] = trace.policy_version
    return attributes


def _subtask_attributes(
    trace: Trace,
    subtask: Mapping[str, Any],
    result: Mapping[str, Any],
    decision: Mapping[str, Any] | None,
) -> Attributes:
    attributes: Attributes = {
        "hybridinfer.request_id": trace.request_id,
        "hybridinfer.subtask": subtask["id"],
        "hybridinfer.capability": subtask["capability"],
        "hybridinfer.privacy": subtask["privacy"],
        "hybridinfer.status": str(result.get("status", "unknown")),
    }
    for field in ("tier", "node", "model", "reason"):
        if result.get(field):
            attributes[f"hybridinfer.{field}"] = str(result[field])
    if decision is not None:
        attributes.setdefault("hybridinfer.reason", decision["reason"])
        attributes["hybridinfer.policy_version"] = decision["policy_version"]
    if result.get("error"):
        attributes["hybridinfer.error_code"] = str(result["error"]["code"])
    return attributes


def _error_text(error: Mapping[str, Any] | None) -> str:
    return "" if not error else f"{error.get('code')}: {error.get('message')}"
