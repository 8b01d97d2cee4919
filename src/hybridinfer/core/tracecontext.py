"""W3C trace context: the ids that tie one request's spans together, and the caller's part.

A request gets a trace id (the caller's, when it sent a ``traceparent``) and the id of its own
root span when it arrives. Ids are fixed up front, not when the spans are built, so that calls
to remote nodes can carry a ``traceparent`` naming the request's span while the spans
themselves are only built after the request has finished (``telemetry.py``, off the request
path).
"""

from __future__ import annotations

import random
import re
import time
from contextvars import ContextVar
from dataclasses import dataclass

_TRACEPARENT = re.compile(r"^([0-9a-f]{2})-([0-9a-f]{32})-([0-9a-f]{16})-([0-9a-f]{2})$")


@dataclass(slots=True, frozen=True)
class TraceContext:
    """Where one request sits in a distributed trace."""

    trace_id: int
    span_id: int
    """The request's own root span (``gateway``)."""
    parent_span_id: int | None
    """The caller's span, when the request came with a ``traceparent``."""
    sampled: bool
    """The caller's sampled flag (True when there was no caller context)."""
    started_ns: int
    """Wall-clock time the request arrived, in ns since the epoch (spans need wall time)."""

    @property
    def trace_id_hex(self) -> str:
        return f"{self.trace_id:032x}"

    def traceparent(self, span_id: int) -> str:
        """The header a call made from ``span_id`` carries."""
        return f"00-{self.trace_id:032x}-{span_id:016x}-{'01' if self.sampled else '00'}"


def new_span_id() -> int:
    """A random non-zero 64-bit span id (the OpenTelemetry SDK draws its ids the same way)."""
    return random.getrandbits(64) or 1


def parse_traceparent(value: str | None) -> tuple[int, int, bool] | None:
    """``(trace_id, parent_span_id, sampled)`` of a valid ``traceparent``, else None.

    Per W3C Trace Context: version ``ff`` and all-zero ids are invalid; an unknown later
    version is read by its first four fields.
    """
    if value is None:
        return None
    value = value.strip().lower()
    match = _TRACEPARENT.match(value[:55])
    if match is None or match.group(1) == "ff":
        return None
    if len(value) > 55 and (match.group(1) == "00" or value[55] != "-"):
        return None
    trace_id, span_id = int(match.group(2), 16), int(match.group(3), 16)
    if trace_id == 0 or span_id == 0:
        return None
    return trace_id, span_id, bool(int(match.group(4), 16) & 1)


def new_context(traceparent: str | None = None) -> TraceContext:
    """A request's context: it joins the caller's trace when ``traceparent`` is valid."""
    caller = parse_traceparent(traceparent)
    started_ns = time.time_ns()
    if caller is None:
        trace_id = random.getrandbits(128) or 1
        return TraceContext(trace_id, new_span_id(), None, True, started_ns)
    trace_id, parent, sampled = caller
    return TraceContext(trace_id, new_span_id(), parent, sampled, started_ns)


CURRENT: ContextVar[TraceContext | None] = ContextVar("hybridinfer_trace_context", default=None)
"""Set by the gateway's front door for the request being served."""


def current_or_new() -> TraceContext:
    """The served request's context, or a fresh one (async tasks, benchmarks)."""
    return CURRENT.get() or new_context()


def outgoing_headers(base: dict[str, str]) -> dict[str, str]:
    """``base`` plus a ``traceparent`` naming the served request's span, when there is one:
    HTTP backends send it to their nodes, so the nodes' spans join the request's trace."""
    context = CURRENT.get()
    if context is None:
        return base
    return {**base, "traceparent": context.traceparent(context.span_id)}
