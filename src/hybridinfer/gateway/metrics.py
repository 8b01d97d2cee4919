"""``GET /metrics``: Prometheus text exposition of the state layer's counters.

Trace writes (written, dropped when the buffer is full, buffered while the store is away),
rate-limit checks that found the cache unreachable, and what this replica's task workers did.
"""

from __future__ import annotations

from starlette.requests import Request
from starlette.responses import PlainTextResponse, Response
from starlette.routing import Route

from hybridinfer.controlplane import ControlPlane
from hybridinfer.gateway.routes import plane_of, requires
from hybridinfer.queue.base import QueueUnavailable


def _sample(lines: list[str], name: str, kind: str, help_text: str, value: float) -> None:
    lines += [f"# HELP {name} {help_text}", f"# TYPE {name} {kind}", f"{name} {value:g}"]


async def exposition(plane: ControlPlane) -> str:
    """The metrics as Prometheus text format 0.0.4."""
    lines: list[str] = []
    traces = plane.traces
    _sample(lines, "hybridinfer_trace_writes_total", "counter", "Traces written.", traces.written)
    _sample(
        lines,
        "hybridinfer_trace_writes_dropped_total",
        "counter",
        "Traces dropped: the write buffer was full (the store was away too long).",
        traces.dropped,
    )
    _sample(
        lines,
        "hybridinfer_trace_writes_buffered",
        "gauge",
        "Traces waiting to be written.",
        traces.buffered,
    )
    _sample(
        lines,
        "hybridinfer_ratelimit_cache_errors_total",
        "counter",
        "Rate-limit checks that found the cache unreachable.",
        plane.rate_limiter.cache_errors,
    )
    lines += [
        "# HELP hybridinfer_tasks_total Task deliveries this replica settled, by outcome.",
        "# TYPE hybridinfer_tasks_total counter",
    ]
    counts = plane.worker.counts
    for outcome in ("completed", "failed", "retried", "dead_lettered", "duplicates"):
        lines.append(f'hybridinfer_tasks_total{{outcome="{outcome}"}} {getattr(counts, outcome)}')
    try:
        depth = await plane.queue.depth()
    except QueueUnavailable:
        depth = -1
    _sample(
        lines,
        "hybridinfer_task_queue_depth",
        "gauge",
        "Tasks waiting in the queue (-1: queue unreachable).",
        depth,
    )
    return "\n".join(lines) + "\n"


@requires("admin")
async def metrics(request: Request) -> Response:
    return PlainTextResponse(
        await exposition(plane_of(request)), media_type="text/plain; version=0.0.4"
    )


METRICS_ROUTES = [Route("/metrics", metrics, methods=["GET"])]
