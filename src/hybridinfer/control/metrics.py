"""The scrape use case behind ``GET /metrics``: the queue's depth, then the exposition.

The depth is read here because reading a queue is async and Prometheus collectors are not;
an unreachable queue is reported as -1 rather than failing the whole scrape.
"""

from __future__ import annotations

from hybridinfer.errors import QueueUnavailable
from hybridinfer.observe.metrics import Metrics
from hybridinfer.queue.base import WorkQueue


class MetricsService:
    """Renders the gateway's metrics registry with the task queue's current depth."""

    def __init__(self, metrics: Metrics, queue: WorkQueue) -> None:
        self._metrics = metrics
        self._queue = queue

    async def exposition(self) -> bytes:
        """The Prometheus text format."""
        try:
            depth = await self._queue.depth()
        except QueueUnavailable:
            depth = -1
        return self._metrics.exposition(depth)
