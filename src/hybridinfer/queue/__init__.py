"""Work queues: async tasks flow between replicas (in-process default, NATS JetStream)."""

from __future__ import annotations

from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from hybridinfer.queue.base import WorkQueue
    from hybridinfer.settings import Settings


def open_queue(settings: Settings) -> WorkQueue:
    """The queue the settings name (``queue``: memory or nats)."""
    if settings.queue == "nats":
        from hybridinfer.queue.jetstream import JetStreamQueue

        return JetStreamQueue(
            settings.resolved_nats_url, settings.queue_stream, settings.task_ack_wait_s
        )
    from hybridinfer.queue.memory import MemoryQueue

    return MemoryQueue(settings.task_ack_wait_s)
