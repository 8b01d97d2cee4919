"""The scrape use case behind ``GET /metrics``: the queue's depth, then the exposition.

The depth is read here because reading a queue is async and Prometheus collectors are not;
an unreachable queue is reported as -1 rather than failing the whole scrape.
"""

from __future__ import annotations

from hybridinfer.errors import QueueUnavailable
from hybridinfer.observe.metrics import Metrics
from hybridinfer.observe.workers import WorkerExpositions, exposition_directory
from hybridinfer.queue.base import WorkQueue
from hybridinfer.settings import Settings


class MetricsService:
    """Renders the gateway's metrics registry with the task queue's current depth."""

    def __init__(
        self, metrics: Metrics, queue: WorkQueue, workers: WorkerExpositions | None = None
    ) -> None:
        """``workers``: with ``--workers N``, every worker's exposition is merged in."""
        self._metrics = metrics
        self._queue = queue
        self.workers = workers

    async def exposition(self) -> bytes:
        """The Prometheus text format (of every worker, labelled, when there are several)."""
        own = await self.own_exposition()
        return own if self.workers is None else await self.workers.merged(own)

    async def own_exposition(self) -> bytes:
        """This process's metrics alone."""
        try:
            depth = await self._queue.depth()
        except QueueUnavailable:
            depth = -1
        return self._metrics.exposition(depth)


def worker_expositions(settings: Settings) -> WorkerExpositions | None:
    """The metrics sharing of a worker of ``--workers N`` (None for a single process)."""
    if settings.worker_index is None or settings.workers <= 1:
        return None
    directory = exposition_directory(settings.data_dir)
    return WorkerExpositions(directory, settings.worker_index, settings.workers)
