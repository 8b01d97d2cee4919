"""OpenTelemetry export of finished traces, off the request path.

A trace-sink observer only queues the finished trace (bounded; past the bound traces are
dropped and counted). One background task turns queued traces into spans (``spans.py``) in
small batches, and the SDK's batch processor sends them from its own thread. So a request pays
a list append, whatever the exporter; building spans live in the hot path would cost far
more than the stage timings the trace already keeps.

Sampling is decided on the finished request (tail sampling, free here because spans are built
afterwards): a caller's ``traceparent`` flag decides when there is one; otherwise every
request that did not end ``ok`` is exported, and ``otel_sample_ratio`` of the others (by trace
id, so replicas agree). Building and encoding one request's eight spans costs some hundreds
of µs of CPU in the Python SDK (``bench/metrics_cost.py``), a large share of the gateway's own
overhead, hence a default ratio below 1.

Exporters (``Settings.otel_exporter``): ``otlp`` (OTLP/HTTP protobuf to ``otel_endpoint``),
``console`` (JSON on stderr), ``memory`` (kept in process, for tests), ``off``.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from collections import deque

from opentelemetry.sdk.resources import Resource
from opentelemetry.sdk.trace import SpanProcessor, TracerProvider
from opentelemetry.sdk.trace.export import (
    BatchSpanProcessor,
    ConsoleSpanExporter,
    SimpleSpanProcessor,
    SpanExporter,
)
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter
from opentelemetry.sdk.trace.sampling import ALWAYS_ON

from hybridinfer.core import background
from hybridinfer.core.trace import Trace
from hybridinfer.observe.spans import PlannedIds, SpanWriter
from hybridinfer.settings import Settings

log = logging.getLogger(__name__)

BATCH = 64
"""Traces turned into spans before the task yields to the event loop."""
WRITE_AFTER_S = 0.5
"""A trace is turned into spans at most this long after it came (sooner in a full batch);
with nothing queued the task sleeps until one comes."""


def open_exporter(settings: Settings) -> tuple[SpanExporter, SpanProcessor]:
    """The configured exporter and the processor that feeds it."""
    exporter: SpanExporter
    if settings.otel_exporter == "otlp":
        from opentelemetry.exporter.otlp.proto.http.trace_exporter import OTLPSpanExporter

        exporter = OTLPSpanExporter(endpoint=settings.otel_endpoint, timeout=10)
        return exporter, BatchSpanProcessor(exporter)
    if settings.otel_exporter == "console":
        exporter = ConsoleSpanExporter()
        return exporter, BatchSpanProcessor(exporter)
    exporter = InMemorySpanExporter()
    return exporter, SimpleSpanProcessor(exporter)


class Telemetry:
    """Queues finished traces and exports them as spans in the background."""

    def __init__(self, settings: Settings, capacity: int = 10_000) -> None:
        self.exporter, processor = open_exporter(settings)
        ids = PlannedIds()
        self._provider = TracerProvider(
            sampler=ALWAYS_ON,  # the choice is made on the finished trace (``wanted``)
            resource=Resource.create({"service.name": settings.otel_service_name}),
            id_generator=ids,
        )
        self._provider.add_span_processor(processor)
        self.writer = SpanWriter(self._provider.get_tracer("hybridinfer"), ids)
        self._pending: deque[Trace] = deque()
        self._capacity = capacity
        self._ratio_bound = round(settings.otel_sample_ratio * (1 << 64))
        self._wake = asyncio.Event()
        self._task: asyncio.Task[None] | None = None
        self.dropped = 0
        self.exported = 0

    def wanted(self, trace: Trace) -> bool:
        """Whether the finished request is exported: the caller's sampled flag if it sent
        one, else always when it did not end ``ok``, else ``otel_sample_ratio`` of them."""
        context = trace.context
        if context.parent_span_id is not None:
            return context.sampled
        return (
            trace.status != "ok" or (context.trace_id & 0xFFFF_FFFF_FFFF_FFFF) < self._ratio_bound
        )

    def observe(self, trace: Trace) -> None:
        """Trace-sink observer: queue the finished trace; never blocks, never raises."""
        if not self.wanted(trace):
            return
        if len(self._pending) >= self._capacity:
            self.dropped += 1
            return
        self._pending.append(trace)
        if len(self._pending) in (1, BATCH):  # the first after a quiet spell, or a full batch
            self._wake.set()

    def write_pending(self) -> None:
        """Turn every queued trace into spans now (tests and shutdown)."""
        while self._pending:
            self._write_batch()

    def flush(self) -> None:
        """Write what is queued and push it through the exporter."""
        self.write_pending()
        self._provider.force_flush()

    def start(self) -> None:
        self._task = asyncio.create_task(self._run(), name="telemetry")

    async def stop(self) -> None:
        await background.cancel(self._task)
        self._task = None
        self.write_pending()
        await asyncio.to_thread(self._provider.shutdown)

    def _write_batch(self) -> None:
        for _ in range(min(BATCH, len(self._pending))):
            trace = self._pending.popleft()
            try:
                self.writer.write(trace)
            except Exception:  # a malformed trace must not stop the export of the others
                log.exception("could not build spans for request %s", trace.request_id)
                continue
            self.exported += 1

    async def _run(self) -> None:
        while True:
            if not self._pending:  # quiet: sleep until a trace comes, not on a tick
                await self._wake.wait()
            self._wake.clear()
            if 0 < len(self._pending) < BATCH:  # gather for up to WRITE_AFTER_S
                with contextlib.suppress(TimeoutError):
                    async with asyncio.timeout(WRITE_AFTER_S):
                        await self._wake.wait()
                self._wake.clear()
            while self._pending:
                self._write_batch()
                await asyncio.sleep(0)
