"""Health and RTT probes of every remote node, in parallel, every ``interval_s``.

A probe that answers counts as a heartbeat (the node is ready) and measures the round trip;
one that fails marks the node down at once, so the router stops sending it traffic until it
answers again. The RTT estimate attacks fast and decays slowly: one slow probe is enough to
see a degraded link, while recovery is trusted only as the probes keep answering fast.
"""

from __future__ import annotations

import asyncio
import logging
import time
from collections.abc import Mapping

from hybridinfer.backends.base import Backend
from hybridinfer.core import background
from hybridinfer.core.topology import Node, NodeStatus
from hybridinfer.signals.registry import NodeRegistry

log = logging.getLogger(__name__)

RTT_DECAY = 0.5
"""Weight of the previous estimate when a probe comes back faster than it."""


def update_rtt(previous_ms: float, sample_ms: float) -> float:
    """Fast attack (take a worse sample at once), slow decay (EWMA towards a better one)."""
    if sample_ms >= previous_ms or previous_ms == 0.0:
        return sample_ms
    return RTT_DECAY * previous_ms + (1 - RTT_DECAY) * sample_ms


class NodeProber:
    """Probes each node through the backend of its protocol (in-process nodes excluded)."""

    def __init__(
        self, registry: NodeRegistry, backends: Mapping[str, Backend], interval_s: float
    ) -> None:
        self._registry = registry
        self._backends = backends
        self._interval_s = interval_s
        self._task: asyncio.Task[None] | None = None

    async def probe_all(self) -> None:
        """One round of probes, in parallel."""
        nodes = [n for n in self._registry.nodes() if n.protocol in self._backends]
        await asyncio.gather(*(self._probe(node) for node in nodes if node.protocol != "onnx"))

    async def _probe(self, node: Node) -> None:
        backend = self._backends[node.protocol]
        started = time.perf_counter()
        alive = await backend.probe(node, min(2.0, max(self._interval_s, 0.5)))
        if alive:
            node.rtt_ms = update_rtt(node.rtt_ms, (time.perf_counter() - started) * 1000.0)
            self._registry.mark_alive(node.id)
        elif node.status is not NodeStatus.DOWN:
            log.warning("node %s stopped answering its health probe; marked down", node.id)
            node.status = NodeStatus.DOWN

    def start(self) -> None:
        """Probe in the background until ``stop``."""
        self._task = asyncio.create_task(self._run(), name="node-prober")

    async def _run(self) -> None:
        while True:
            try:
                await self.probe_all()
            except Exception:  # a probe round must never kill the loop
                log.exception("probe round failed")
            await asyncio.sleep(self._interval_s)

    async def stop(self) -> None:
        await background.cancel(self._task)
        self._task = None
