"""The trace of one request: plan, decisions, attempts and the time spent in each stage."""

from __future__ import annotations

import itertools
import time
from collections.abc import Iterable, Iterator
from dataclasses import dataclass, field
from types import TracebackType
from typing import Any

from hybridinfer.core.tracecontext import TraceContext, current_or_new

STAGES = ("gateway", "decompose", "route", "execute", "aggregate")
"""Stage names, used alike in traces, timings, spans, metrics and logs."""
_INNER_STAGES = STAGES[1:]
_TIMING_ORDER = (*STAGES, "total")
_TIMINGS = frozenset(_TIMING_ORDER)


def _rounded(values: Iterable[float]) -> Iterator[float]:
    """Each value to the µs (3 decimals of a ms), without a Python loop: a trace rounds a dozen
    timings twice (its answer, its record)."""
    return map(round, values, itertools.repeat(3))


@dataclass(slots=True)
class Attempt:
    """One call of one subtask on one deployment."""

    subtask_id: str
    deployment: str
    tier: str
    node: str
    model: str
    role: str
    """``primary``, ``fallback``, ``hedge`` (raced against the primary) or ``escalation``."""
    status: str = "ok"
    """``ok``, ``error``, or ``cancelled`` (a hedge race it lost)."""
    number: int = 1
    """Try number on this deployment: 1, then 2 for the first retry, …"""
    wait_ms: float = 0.0
    """Backoff waited before this try."""
    latency_ms: float = 0.0
    error_code: str | None = None
    error: str | None = None
    confidence: float | None = None
    started_at: float = field(default_factory=time.perf_counter)
    """``perf_counter`` when the attempt was opened (right before its call)."""

    def started_ms(self, origin: float) -> float:
        """When it started, in ms after ``origin`` (the request's ``perf_counter`` arrival)."""
        return (self.started_at - origin) * 1000.0

    def describe(self, origin: float) -> dict[str, Any]:
        return {
            "subtask": self.subtask_id,
            "deployment": self.deployment,
            "tier": self.tier,
            "node": self.node,
            "model": self.model,
            "role": self.role,
            "status": self.status,
            "number": self.number,
            "wait_ms": round(self.wait_ms, 3),
            "latency_ms": round(self.latency_ms, 3),
            "started_ms": round(self.started_ms(origin), 3),
            "error_code": self.error_code,
            "error": self.error,
            "confidence": self.confidence,
        }


class _StageTimer:
    __slots__ = ("_name", "_start", "_trace")

    def __init__(self, trace: Trace, name: str) -> None:
        self._trace = trace
        self._name = name
        self._start = 0.0

    def __enter__(self) -> None:
        self._start = start = time.perf_counter()
        offsets = self._trace.offsets_ms
        if self._name not in offsets:
            offsets[self._name] = (start - self._trace.started) * 1000.0

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        elapsed_ms = (time.perf_counter() - self._start) * 1000.0
        timings = self._trace.timings_ms
        timings[self._name] = timings.get(self._name, 0.0) + elapsed_ms


@dataclass(slots=True)
class Trace:
    """Everything that happened to one request, in the shape ``GET /v1/traces/{id}`` returns."""

    request_id: str
    started: float = field(default_factory=time.perf_counter)
    """``perf_counter`` when the gateway received the request."""
    created_at: float = field(default_factory=time.time)
    task: str | None = None
    key_id: str | None = None
    plan: dict[str, Any] | None = None
    decisions: list[dict[str, Any]] = field(default_factory=list)
    attempts: list[Attempt] = field(default_factory=list)
    timings_ms: dict[str, float] = field(default_factory=dict)
    offsets_ms: dict[str, float] = field(default_factory=dict)
    """When each stage first started, in ms after the request arrived (for waterfalls)."""
    status: str = "running"
    error: dict[str, Any] | None = None
    routing_key: str | None = None
    """The caller's ``X-Routing-Key``: canary splits hash it (else the request id)."""
    policy_version: str | None = None
    """The policy version that decided the request (a canary's, for its share)."""
    context: TraceContext = field(default_factory=current_or_new)
    """Trace and span ids (the caller's trace, when it sent ``traceparent``)."""

    def stage(self, name: str) -> _StageTimer:
        """Time a stage: ``with trace.stage("route"): ...`` adds to ``timings_ms[name]``."""
        return _StageTimer(self, name)

    def finish(self, status: str) -> None:
        """Close the trace: the total, and the gateway's own share of it."""
        total = (time.perf_counter() - self.started) * 1000.0
        timings = self.timings_ms
        for name in _INNER_STAGES:
            timings.setdefault(name, 0.0)
        timings["gateway"] = max(0.0, total - sum(map(timings.__getitem__, _INNER_STAGES)))
        timings["total"] = total
        self.status = status

    def rounded_timings(self) -> dict[str, float]:
        """Stage timings in request-path order, then ``total``."""
        timings = self.timings_ms
        if timings.keys() >= _TIMINGS:  # finished: all there (map and zip: no Python loop)
            values = _rounded(map(timings.__getitem__, _TIMING_ORDER))
            return dict(zip(_TIMING_ORDER, values, strict=True))
        return {name: round(timings[name], 3) for name in _TIMING_ORDER if name in timings}

    def describe(self) -> dict[str, Any]:
        return {
            "request_id": self.request_id,
            "task": self.task,
            "status": self.status,
            "created_at": self.created_at,
            "plan": self.plan,
            "decisions": self.decisions,
            "attempts": [attempt.describe(self.started) for attempt in self.attempts],
            "timings_ms": self.rounded_timings(),
            "offsets_ms": dict(
                zip(self.offsets_ms, _rounded(self.offsets_ms.values()), strict=True)
            ),
            "error": self.error,
            "policy_version": self.policy_version,
            "trace_id": self.context.trace_id_hex,
        }
