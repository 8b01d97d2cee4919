"""Health probes of nodes that send no heartbeats (OpenAI-compatible upstreams).

A probe that answers counts as a heartbeat (the node is ready, its RTT measured); one that
fails marks the node down at once, so the router stops sending it traffic until it answers.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging

from hybridinfer.backends.openai import OpenAIBackend
from hybridinfer.registry import NodeRegistry
from hybridinfer.topology import NodeStatus

log = logging.getLogger(__name__)


class NodeProber:
    """Probes every ``openai``-protocol node of the registry every ``interval_s``."""

    def __init__(self, registry: NodeRegistry, backend: OpenAIBackend, interval_s: float) -> None:
        self._registry = registry
        self._backend = backend
        self._interval_s = interval_s
        self._task: asyncio.Task[None] | None = None

    async def probe_all(self) -> None:
        """One round of probes, in parallel."""
        nodes = [n for n in self._registry.nodes() if n.protocol == OpenAIBackend.protocol]
        timeout_s = max(1.0, min(2.0, self._interval_s))

        async def probe(node_id: str) -> None:
            node = self._registry.get(node_id)
            # No RTT from this probe: llama.cpp's server answers it only between generations,
            # so its time measures the server's queue, not the network.
            if await self._backend.probe(node, timeout_s):
                self._registry.heartbeat(node.id, node.load, node.in_flight)
            elif node.status is not NodeStatus.DOWN:
                log.warning("node %s stopped answering its health probe; marked down", node.id)
                node.status = NodeStatus.DOWN

        await asyncio.gather(*(probe(node.id) for node in nodes))

    def start(self) -> None:
        """Probe in the background until ``stop``."""
        self._task = asyncio.create_task(self._run())

    async def _run(self) -> None:
        while True:
            await self.probe_all()
            await asyncio.sleep(self._interval_s)

    async def stop(self) -> None:
        if self._task is not None:
            self._task.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await self._task
            self._task = None
