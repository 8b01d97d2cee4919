"""Health and RTT probes of every remote node, in parallel, every ``interval_s``; and the
latency priors of generating deployments, measured once when they are first seen.

A probe that answers counts as a heartbeat (the node is ready), moves the node's open
breakers to half-open (the next call is their trial) and measures the round trip; one that
fails marks the node down at once, so the router stops sending it traffic until it answers
again. The RTT estimate attacks fast and decays slowly: one slow probe is enough to see a
degraded link, while recovery is trusted only as the probes keep answering fast. A probe may
take twice the interval (at most 2 s), so an answer that is slow but comes is timed, and every
probe joins the node's exchange window (``signals/exchanges.py``), slow answers and timeouts
included. A probe that started while the node was down, or was out while the path was found
dead (a call into a cut link, a breaker open or opening), times the outage (TCP's
retransmissions after a cut), not the path: it brings the node back but is not timed. A
half-open breaker does not stop the timing: a probe has answered since it opened, and a rule
that keeps work off a slow node may never send the trial call that would close it.
Each node is probed on its own: a probe waiting out its timeout does not hold the others'. A
suspect node (down, or with a breaker not closed) is probed four times as often, with a
timeout of half the interval, so a link that came back is seen within a fraction of a second.
Between rounds the prober sleeps until the next probe falls due, not on a fixed tick (an idle
gateway's wake-ups are most of its CPU): a breaker that opens, and a probe that leaves its
node suspect, wake it at once, so a node turning suspect is probed again without waiting out
its healthy interval.

A chat or embedding deployment whose backend can ``measure`` it (OpenAI-compatible servers)
starts with whatever latency its registration typed in. Once its node answers a probe, a
short probe in the background (never in the probe round, never on a request's path) times a
tiny generation: time to first token and tokens/s. From them, the time of a short answer
becomes the latency prior: the quantity the EWMA of real calls (``signals/ewma.py``) tracks
from there, and the one the router compares with other deployments' (a TTFT would make a
model that has never answered look faster than one that has).

Measurements run one at a time, all the deployments then waiting in one pass: on one host, as
in the demo, two at once would time each other's load. A pass publishes its measurements
together, so the router never weighs one model's measured prior against another's typed
placeholder when both were there to measure. A failed measurement is tried again after 1, 2,
4 … 64 probe intervals; a node too busy to measure (its queue would be timed), in a later
pass. A re-registered node brings new deployments, which are measured again.
"""

from __future__ import annotations

import asyncio
import contextlib
import functools
import logging
import time
from collections.abc import Mapping
from typing import Protocol, runtime_checkable

from hybridinfer.backends.base import Backend
from hybridinfer.core import background
from hybridinfer.core.backoff import exponential_s
from hybridinfer.core.topology import Deployment, Node, NodeStatus, PriorMeasurement
from hybridinfer.errors import HybridInferError
from hybridinfer.signals.breaker import Breakers, BreakerState
from hybridinfer.signals.exchanges import ExchangeWindows
from hybridinfer.signals.registry import NodeRegistry

log = logging.getLogger(__name__)

RTT_DECAY = 0.5
"""Weight of the previous estimate when a probe comes back faster than it."""
MEASURED_CAPABILITIES = frozenset({"chat", "embedding"})
"""Deployments measured at registration; a chat's measurement also stands for the text steps
the same model serves on the same node (one server, one model: the same timing)."""
MEASURE_TIMEOUT_S = 60.0
"""A measurement may wait behind a long generation on a one-request-at-a-time server."""

Measured = tuple[Node, Deployment, PriorMeasurement]


@runtime_checkable
class PriorMeter(Protocol):
    """A backend that can time one tiny call of a deployment."""

    async def measure(
        self, node: Node, deployment: Deployment, timeout_s: float
    ) -> PriorMeasurement | None:
        """The deployment timed, or None when the node stays busy (measure it later)."""


def update_rtt(previous_ms: float, sample_ms: float) -> float:
    """Fast attack (take a worse sample at once), slow decay (EWMA towards a better one)."""
    if sample_ms >= previous_ms or previous_ms == 0.0:
        return sample_ms
    return RTT_DECAY * previous_ms + (1 - RTT_DECAY) * sample_ms


def unmeasured(node: Node) -> list[Deployment]:
    """The node's deployments whose latency prior nobody has measured yet."""
    return [
        d
        for d in node.deployments
        if d.capability in MEASURED_CAPABILITIES and d.measurement is None
    ]


class NodeProber:
    """Probes each node through the backend of its protocol (in-process nodes excluded)."""

    def __init__(
        self,
        registry: NodeRegistry,
        backends: Mapping[str, Backend],
        interval_s: float,
        breakers: Breakers | None = None,
        exchanges: ExchangeWindows | None = None,
    ) -> None:
        self._registry = registry
        self._backends = backends
        self._interval_s = interval_s
        self._timeout_s = min(2.0, max(2 * interval_s, 0.5))
        self._suspect_timeout_s = min(self._timeout_s, max(interval_s / 2, 0.1))
        self._breakers = breakers
        self._exchanges = exchanges
        self._task: asyncio.Task[None] | None = None
        self._pass: asyncio.Task[None] | None = None
        self._probing: dict[str, asyncio.Task[None]] = {}
        self._probed_at: dict[str, float] = {}
        self._failures: dict[str, int] = {}
        self._retry_at: dict[str, float] = {}
        self._nudged = asyncio.Event()
        if breakers is not None:
            breakers.opened.append(self.nudge)

    def nudge(self) -> None:
        """Look at the nodes again now (a breaker opened: its node is suspect from now)."""
        self._nudged.set()

    async def probe_all(self) -> None:
        """One round: a probe of every remote node not being probed already, in parallel,
        awaited; then, in the background, a pass measuring the ready nodes' new deployments
        (unless one is still under way)."""
        await asyncio.gather(*self._start_round(every=True), return_exceptions=True)

    def _start_round(self, every: bool = False) -> list[asyncio.Task[None]]:
        """Start the due probes (each in its own task; ``every``: all not under way) and, if
        due, a measuring pass. A node is due each interval; a suspect one (down, or with a
        breaker not closed) each quarter interval, with a shorter timeout, so a link that
        came back is seen within a fraction of a second."""
        nodes = [n for n in self._registry.nodes() if n.protocol in self._backends]
        started: list[asyncio.Task[None]] = []
        now = time.monotonic()
        for node in nodes:
            if node.protocol == "onnx" or node.id in self._probing:
                continue
            if not every and node.id not in self._probed_at:
                self._probed_at[node.id] = now  # it just registered: first probe in an interval
                continue
            suspect = self._suspect(node)
            period = self._interval_s / 4 if suspect else self._interval_s
            if not every and now - self._probed_at.get(node.id, now) < period * 0.99:
                continue
            self._probed_at[node.id] = now
            timeout_s = self._suspect_timeout_s if suspect else self._timeout_s
            task = self._probing[node.id] = asyncio.create_task(self._probe(node, timeout_s))
            task.add_done_callback(functools.partial(self._probed, node))
            started.append(task)
        if self._pass is None or self._pass.done():
            due = [(node, meter) for node in nodes if (meter := self._meter(node)) is not None]
            if due:
                self._pass = asyncio.create_task(self._measure(due), name="measure-priors")
        return started

    def _probed(self, node: Node, _: asyncio.Task[None]) -> None:
        self._probing.pop(node.id, None)
        if self._suspect(node):  # it is due again in a quarter interval, not a whole one
            self._nudged.set()

    def _next_round_in(self) -> float:
        """Seconds until a node not being probed falls due (at most one interval: a node
        that registers meanwhile, or a measurement to retry, is seen within it)."""
        now = time.monotonic()
        due = [
            self._probed_at[node.id]
            + 0.99 * (self._interval_s / 4 if self._suspect(node) else self._interval_s)
            for node in self._registry.nodes()
            if node.id in self._probed_at and node.id not in self._probing
        ]
        return min(max(min(due, default=now + self._interval_s) - now, 0.0), self._interval_s)

    async def measure_pending(self) -> None:
        """Wait for the pass under way, if any (tests)."""
        if self._pass is not None:
            await asyncio.gather(self._pass, return_exceptions=True)

    async def _probe(self, node: Node, timeout_s: float) -> None:
        try:
            await self._probe_once(node, timeout_s)
        except Exception:  # a probe must never fail silently in its task
            log.exception("probe of %s failed", node.id)

    def _suspect(self, node: Node) -> bool:
        breakers = self._breakers
        return node.status is NodeStatus.DOWN or (
            breakers is not None
            and any(breakers.state(d.id) is not BreakerState.CLOSED for d in node.deployments)
        )

    async def _probe_once(self, node: Node, timeout_s: float) -> None:
        backend = self._backends[node.protocol]
        doubted = node.status is NodeStatus.DOWN or self._open_breaker(node)
        exchanged_at = self._exchanges.now() if self._exchanges is not None else 0.0
        breakers_at = self._breakers.now() if self._breakers is not None else 0.0
        started = time.perf_counter()
        alive = await backend.probe(node, timeout_s)
        elapsed_ms = (time.perf_counter() - started) * 1000.0
        timed = not (doubted or self._crossed_outage(node, exchanged_at, breakers_at))
        if self._exchanges is not None and timed:
            self._exchanges.record(node.id, elapsed_ms, alive, exchanged_at)
        if alive:
            if timed:
                node.rtt_ms = update_rtt(node.rtt_ms, elapsed_ms)
            self._registry.mark_alive(node.id)
            if self._breakers is not None:
                self._breakers.on_probe(d.id for d in node.deployments)
        elif node.status is not NodeStatus.DOWN:
            log.warning("node %s stopped answering its health probe; marked down", node.id)
            self._registry.mark_down(node)

    def _crossed_outage(self, node: Node, since: float, breakers_since: float) -> bool:
        """Whether the node's path was found dead while a probe was out (a call into a cut
        link, a breaker that opened): a probe that answers then timed the outage."""
        if self._exchanges is not None and self._exchanges.outage_since(node.id, since):
            return True
        breakers = self._breakers
        return self._open_breaker(node) or (
            breakers is not None
            and breakers.opened_since((d.id for d in node.deployments), breakers_since)
        )

    def _open_breaker(self, node: Node) -> bool:
        """Whether one of the node's breakers is open: calls found its path bad and no probe
        has answered since. A half-open one is not: a probe (or its cool-down) let it try
        again, and a rule that keeps work off the node may never send the trial that closes
        it, so its probes must keep timing the path."""
        breakers = self._breakers
        return breakers is not None and any(
            breakers.state(d.id) is BreakerState.OPEN for d in node.deployments
        )

    def _meter(self, node: Node) -> PriorMeter | None:
        """The node's backend, if it can measure and the node has something to measure now."""
        backend = self._backends[node.protocol]
        due = (
            node.status is NodeStatus.READY
            and self._retry_at.get(node.id, 0.0) <= time.monotonic()
            and bool(unmeasured(node))
        )
        return backend if due and isinstance(backend, PriorMeter) else None

    async def _measure(self, nodes: list[tuple[Node, PriorMeter]]) -> None:
        """Each node's unmeasured deployments in turn; then every measurement at once."""
        taken: list[Measured] = []
        for node, meter in nodes:
            taken += await self._measure_node(node, meter)
        for node, deployment, measurement in taken:
            for served in _same_model(node, deployment):
                served.record_measurement(measurement, node.rtt_ms)
            log.info(
                "measured %s: latency prior %.0f ms (first token %.1f ms, %s tokens/s)",
                deployment.id,
                measurement.answer_ms,
                measurement.ttft_ms,
                "-" if measurement.tokens_per_s is None else f"{measurement.tokens_per_s:.1f}",
            )

    async def _measure_node(self, node: Node, meter: PriorMeter) -> list[Measured]:
        taken: list[Measured] = []
        for deployment in unmeasured(node):
            try:
                measurement = await meter.measure(node, deployment, MEASURE_TIMEOUT_S)
            except Exception as error:  # a failed measurement must never stop the prober
                failures = self._failures[node.id] = self._failures.get(node.id, 0) + 1
                wait_s = exponential_s(self._interval_s, 64 * self._interval_s, failures - 1)
                self._retry_at[node.id] = time.monotonic() + wait_s
                log.warning(
                    "could not measure %s (%s); its latency stays assumed, next try in %.0f s",
                    deployment.id,
                    error.message if isinstance(error, HybridInferError) else repr(error),
                    wait_s,
                )
                return taken
            if measurement is None:
                return taken  # busy serving: a later pass measures the rest
            self._failures.pop(node.id, None)
            taken.append((node, deployment, measurement))
        return taken

    def start(self) -> None:
        """Probe in the background until ``stop``."""
        self._task = asyncio.create_task(self._run(), name="node-prober")

    async def _run(self) -> None:
        while True:
            try:
                self._start_round()
            except Exception:  # a probe round must never kill the loop
                log.exception("probe round failed")
            self._nudged.clear()
            with contextlib.suppress(TimeoutError):
                async with asyncio.timeout(self._next_round_in()):
                    await self._nudged.wait()

    async def stop(self) -> None:
        await background.cancel(self._task)
        self._task = None
        for probe in list(self._probing.values()):
            await background.cancel(probe)
        await background.cancel(self._pass)
        self._pass = None


def _same_model(node: Node, measured: Deployment) -> list[Deployment]:
    """The deployment itself and, for a chat, the node's text steps on the same model."""
    if measured.capability != "chat":
        return [measured]
    return [
        d
        for d in node.deployments
        if d.model == measured.model
        and d.version == measured.version
        and d.capability != "embedding"
        and d.measurement is None
    ]
