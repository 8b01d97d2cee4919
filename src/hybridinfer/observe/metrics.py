"""Prometheus metrics: what requests did (recorded from each finished trace) and what the
control plane holds right now (read when Prometheus scrapes).

Request metrics are written once per request, from the trace, never inside the hot loops:
``RequestMetrics.record`` is a trace-sink observer. Everything else (node load and health,
breakers, budget, queue and trace-write counters) is read by ``PlaneCollector`` at scrape
time, so it costs nothing per request. The collector reads a ``Readings`` protocol, not the
control plane: it names exactly what a scrape takes (house rule 12), and this lower layer
never imports the composition root (``control.readings`` implements it).

Node-side metric, exported by ``hybridinfer node`` processes (``node/metrics.py``), not by
the gateway: ``hybridinfer_model_cache_disk_used_ratio{node}``.
"""

from __future__ import annotations

import bisect
import itertools
import math
from collections.abc import Callable, Iterable, Iterator, Mapping
from typing import Protocol

from prometheus_client import CollectorRegistry, Counter, generate_latest
from prometheus_client.core import (
    CounterMetricFamily,
    GaugeMetricFamily,
    HistogramMetricFamily,
    Metric,
)
from prometheus_client.registry import Collector
from prometheus_client.utils import floatToGoString

from hybridinfer.core.heap import FROZEN
from hybridinfer.core.topology import Node
from hybridinfer.core.trace import STAGES, Trace
from hybridinfer.signals.budget import BudgetState


class TraceWrites(Protocol):
    """The trace sink's write counters."""

    @property
    def written(self) -> int: ...
    @property
    def dropped(self) -> int: ...
    @property
    def buffered(self) -> int: ...


class SlotCounts(Protocol):
    """The gateway's inference slots: running, waiting, refused."""

    @property
    def in_flight(self) -> int: ...
    @property
    def queued(self) -> int: ...
    @property
    def shed(self) -> int: ...
    @property
    def busy(self) -> float: ...
    @property
    def limit(self) -> int: ...


class LimiterCounts(Protocol):
    """One node's admission: refusals, calls waiting, and the current limit."""

    @property
    def shed(self) -> int: ...
    @property
    def waiting(self) -> int: ...
    @property
    def limit(self) -> int: ...


class Readings(Protocol):
    """Everything the gateway's metrics read from the control plane, and nothing else."""

    def nodes(self) -> Iterable[Node]:
        """The registered nodes (their status, load and deployments)."""

    def breaker_states(self) -> Mapping[str, str]:
        """Deployment id -> breaker state, for the breakers that are not closed."""

    def budget(self) -> BudgetState:
        """Global spend and limit in the current budget period."""

    def trace_writes(self) -> TraceWrites:
        """Traces written, dropped and waiting."""

    def rate_limit_cache_errors(self) -> int:
        """Rate-limit checks that found the cache unreachable."""

    def job_outcomes(self) -> Mapping[str, int]:
        """Task deliveries this replica settled, by outcome."""

    def gateway_load(self) -> SlotCounts:
        """The gateway's own load shedding."""

    def admission_limiters(self) -> Mapping[str, LimiterCounts]:
        """Node id -> its admission limiter."""

    def local_cpu(self) -> float:
        """Smoothed CPU use of the gateway's host, 0..1."""

    def cost_of(self, deployment_id: str) -> float:
        """Cost per call of a deployment (0 when it is gone)."""


CONTENT_TYPE = "text/plain; version=0.0.4; charset=utf-8"
STAGE_BUCKETS_S = (
    0.0001, 0.00025, 0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05,
    0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0, 30.0,
)  # fmt: skip
"""Seconds: sub-millisecond gateway and route stages up to slow cloud calls."""


class Children:
    """A labelled counter's children by their label values, each resolved once: ``labels()``
    validates, locks and looks up on every call (~1.7 µs more than a cached child's ``inc()`` on
    this machine), and ``record`` resolves four children a request. Nothing removes a child from
    these counters, so a child found here is the one ``/metrics`` exports; the label values are
    the counter's own (tasks, tiers, nodes, statuses, policy versions), so this holds no more
    entries than the counter does."""

    __slots__ = ("_counter", "_known")

    def __init__(self, counter: Counter) -> None:
        self._counter = counter
        self._known: dict[tuple[str, ...], Counter] = {}

    def __call__(self, *values: str) -> Counter:
        child = self._known.get(values)
        if child is None:
            child = self._known[values] = self._counter.labels(*values)
        return child


class StageHistogram(Collector):
    """``hybridinfer_stage_seconds{stage}``, exposed as prometheus_client's ``Histogram`` exposes
    it (cumulative buckets, sum and count per stage; no ``_created`` sample), observed with one
    binary search and two additions. ``Histogram.observe`` walks the bucket bounds in Python and
    takes a lock for the sum and another for the bucket; five stages a request made that more
    than a third of the request's metric work. Every observation comes from the event loop's
    thread (trace-sink observers); a scrape reads on that thread too."""

    def __init__(self, name: str, documentation: str, registry: CollectorRegistry) -> None:
        self._name = name
        self._documentation = documentation
        self._bounds = (*STAGE_BUCKETS_S, math.inf)
        self._labels = tuple(floatToGoString(b) for b in self._bounds)  # type: ignore[no-untyped-call]
        self._counts = {stage: [0] * len(self._bounds) for stage in STAGES}
        self._sums = dict.fromkeys(STAGES, 0.0)
        registry.register(self)

    def observe(self, stage: str, seconds: float) -> None:
        """Count ``seconds`` spent in ``stage`` (one of ``STAGES``)."""
        self._counts[stage][bisect.bisect_left(self._bounds, seconds)] += 1
        self._sums[stage] += seconds

    def observe_trace(self, timings_ms: Mapping[str, float]) -> None:
        """Count each stage a trace timed (its ``timings_ms``, in ms)."""
        bounds, counts, sums = self._bounds, self._counts, self._sums
        for stage in STAGES:
            elapsed_ms = timings_ms.get(stage)
            if elapsed_ms is not None:
                seconds = elapsed_ms / 1000.0
                counts[stage][bisect.bisect_left(bounds, seconds)] += 1
                sums[stage] += seconds

    def collect(self) -> Iterator[Metric]:
        family = HistogramMetricFamily(self._name, self._documentation, labels=["stage"])
        for stage, counts in self._counts.items():
            cumulative = zip(self._labels, itertools.accumulate(counts), strict=True)
            family.add_metric([stage], list(cumulative), self._sums[stage])
        yield family


class RequestMetrics:
    """Per-request counters and histograms, fed from finished traces."""

    def __init__(self, registry: CollectorRegistry, cost_of: Callable[[str], float]) -> None:
        """``cost_of`` maps a deployment id to its cost per call (what a success spent)."""
        self._cost_of = cost_of
        self.requests = Counter(
            "hybridinfer_requests",
            "Finished requests by task, tier of the first answering attempt, and status.",
            ("task", "tier", "status"),
            registry=registry,
        )
        self.stage_seconds = StageHistogram(
            "hybridinfer_stage_seconds", "Time spent in each stage of the request path.", registry
        )
        self.attempts = Counter(
            "hybridinfer_attempts",
            "Subtask calls by tier, node and status.",
            ("tier", "node", "status"),
            registry=registry,
        )
        self.subtasks = Counter(
            "hybridinfer_subtasks",
            "Subtasks answered, by the tier that answered (cloud share = cloud / all).",
            ("tier",),
            registry=registry,
        )
        self.spend = Counter(
            "hybridinfer_spend", "Cost of the successful calls, in policy units.", registry=registry
        )
        self.policies = Counter(
            "hybridinfer_policy_requests",
            "Requests by the policy version that decided them (a canary's share is visible).",
            ("version",),
            registry=registry,
        )
        # Children resolved once: labels() on every request would cost a dict lookup and a lock.
        self._requests = Children(self.requests)
        self._attempts = Children(self.attempts)
        self._subtasks = Children(self.subtasks)
        self._policies = Children(self.policies)

    def record(self, trace: Trace) -> None:
        """Count one finished request; cheap, never raises into the request path."""
        tier = "none"
        spent = 0.0
        for attempt in trace.attempts:
            self._attempts(attempt.tier, attempt.node, attempt.status).inc()
            if attempt.status == "ok":
                if tier == "none":
                    tier = attempt.tier
                self._subtasks(attempt.tier).inc()
                spent += self._cost_of(attempt.deployment)
        if spent:
            self.spend.inc(spent)
        self._requests(trace.task or "unknown", tier, trace.status).inc()
        if trace.policy_version is not None:
            self._policies(trace.policy_version).inc()
        self.stage_seconds.observe_trace(trace.timings_ms)


class PlaneCollector(Collector):
    """Control-plane state read at scrape time."""

    def __init__(self, readings: Readings) -> None:
        self._readings = readings
        self.queue_depth = 0
        """Set by the scrape handler (reading the queue is async; collectors are not)."""

    def collect(self) -> Iterator[Metric]:
        readings = self._readings
        yield from self._nodes(readings)
        yield from self._counters(readings)
        yield from self._admission(readings)
        budget = readings.budget()
        yield GaugeMetricFamily(
            "hybridinfer_budget_spent", "Spend in the current budget period.", budget.spent_global
        )
        yield GaugeMetricFamily(
            "hybridinfer_budget_limit",
            "Global budget for the period (0: unlimited).",
            budget.limit_global or 0.0,
        )
        yield GaugeMetricFamily(
            "hybridinfer_gc_frozen_objects",
            "Objects the garbage collector no longer walks: the start-up heap of a server "
            "process (core/heap.py), counted when it was frozen.",
            FROZEN.objects,
        )
        yield GaugeMetricFamily(
            "hybridinfer_task_queue_depth",
            "Tasks waiting in the queue (-1: queue unreachable).",
            self.queue_depth,
        )

    def _nodes(self, readings: Readings) -> Iterator[Metric]:
        up = GaugeMetricFamily("hybridinfer_node_up", "1 if the node is ready.", labels=["node"])
        load = GaugeMetricFamily(
            "hybridinfer_node_load", "Load the node reports, 0..1.", labels=["node", "tier"]
        )
        in_flight = GaugeMetricFamily(
            "hybridinfer_node_in_flight", "Calls in flight on the node.", labels=["node"]
        )
        breaker = GaugeMetricFamily(
            "hybridinfer_breaker_open",
            "1 while the deployment's circuit breaker is open.",
            labels=["deployment"],
        )
        states = readings.breaker_states()  # only the breakers that are not closed
        for node in readings.nodes():
            up.add_metric([node.id], 1.0 if node.status.value == "ready" else 0.0)
            load.add_metric([node.id, node.tier.value], node.load)
            in_flight.add_metric([node.id], node.in_flight)
            for deployment in node.deployments:
                breaker.add_metric(
                    [deployment.id], 1.0 if states.get(deployment.id) == "open" else 0.0
                )
        yield from (up, load, in_flight, breaker)

    def _counters(self, readings: Readings) -> Iterator[Metric]:
        traces = readings.trace_writes()
        yield CounterMetricFamily("hybridinfer_trace_writes", "Traces written.", traces.written)
        yield CounterMetricFamily(
            "hybridinfer_trace_writes_dropped",
            "Traces dropped: the write buffer was full (the store was away too long).",
            traces.dropped,
        )
        yield GaugeMetricFamily(
            "hybridinfer_trace_writes_buffered", "Traces waiting to be written.", traces.buffered
        )
        yield CounterMetricFamily(
            "hybridinfer_ratelimit_cache_errors",
            "Rate-limit checks that found the cache unreachable.",
            readings.rate_limit_cache_errors(),
        )
        tasks = CounterMetricFamily(
            "hybridinfer_tasks",
            "Task deliveries this replica settled, by outcome.",
            labels=["outcome"],
        )
        for outcome, count in readings.job_outcomes().items():
            tasks.add_metric([outcome], count)
        yield tasks

    def _admission(self, readings: Readings) -> Iterator[Metric]:
        """Load shedding and admission: the gateway's and each node's slots, queue, refusals."""
        load = readings.gateway_load()
        yield GaugeMetricFamily(
            "hybridinfer_gateway_in_flight", "Inference requests running.", load.in_flight
        )
        yield GaugeMetricFamily(
            "hybridinfer_gateway_queued", "Inference requests waiting for a slot.", load.queued
        )
        yield GaugeMetricFamily(
            "hybridinfer_gateway_loop_busy",
            "Share of the event loop thread's time on CPU while requests run (smoothed).",
            load.busy,
        )
        yield GaugeMetricFamily(
            "hybridinfer_gateway_limit",
            "Inference requests let run at once (lower while the event loop is over "
            "shed_max_busy).",
            load.limit,
        )
        overloaded = CounterMetricFamily(
            "hybridinfer_overloaded",
            "Refused with 503 overloaded (gateway) or node_saturated (a node's admission).",
            labels=["where"],
        )
        overloaded.add_metric(["gateway"], load.shed)
        waiting = GaugeMetricFamily(
            "hybridinfer_admission_waiting", "Calls waiting for a node slot.", labels=["node"]
        )
        limit = GaugeMetricFamily(
            "hybridinfer_admission_limit",
            "Calls a node may run at once (lower while the host CPU is saturated).",
            labels=["node"],
        )
        for node_id, limiter in readings.admission_limiters().items():
            overloaded.add_metric([node_id], limiter.shed)
            waiting.add_metric([node_id], limiter.waiting)
            limit.add_metric([node_id], limiter.limit)
        yield from (overloaded, waiting, limit)
        yield GaugeMetricFamily(
            "hybridinfer_local_cpu",
            "Smoothed CPU use of the gateway's host, 0..1.",
            readings.local_cpu(),
        )


class Metrics:
    """One registry per gateway (no process-global state): request metrics + plane state."""

    def __init__(self, readings: Readings) -> None:
        self.registry = CollectorRegistry(auto_describe=False)
        self.requests = RequestMetrics(self.registry, readings.cost_of)
        self.plane = PlaneCollector(readings)
        self.registry.register(self.plane)

    def exposition(self, queue_depth: int) -> bytes:
        """The Prometheus text format."""
        self.plane.queue_depth = queue_depth
        return generate_latest(self.registry)
