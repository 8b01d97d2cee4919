"""The interface every work queue implements (in-process, NATS JetStream).

Delivery is at least once: a message stays owed until its delivery is acknowledged, and one
that is neither acknowledged nor settled within ``ack_wait_s`` (its consumer died, say) is
delivered again, to any consumer. Handlers must therefore be idempotent. A delivery is
settled exactly one way: ``ack`` (done), ``retry`` (deliver again after a delay) or
``dead_letter`` (give up: the body goes to the dead-letter subject and is never redelivered).
Publishing with a ``dedupe_id`` already seen recently is a no-op, so a publisher may retry.
"""

from __future__ import annotations

from abc import ABC, abstractmethod


class Delivery(ABC):
    """One delivery of one message."""

    body: bytes
    attempt: int
    """1 on the first delivery, 2 on the first redelivery, …"""

    @abstractmethod
    async def ack(self) -> None:
        """The work is done (and its result stored): never deliver this message again."""

    @abstractmethod
    async def retry(self, delay_s: float) -> None:
        """Deliver the message again, not before ``delay_s`` seconds."""

    @abstractmethod
    async def extend(self) -> None:
        """Still working: restart the ``ack_wait_s`` clock of this delivery."""

    @abstractmethod
    async def dead_letter(self, reason: str) -> None:
        """Give up: publish the body to the dead-letter subject and never redeliver it."""


class WorkQueue(ABC):
    """One work subject with one shared (durable) consumer group and a dead-letter subject."""

    ack_wait_s: float
    fetch_wait_s: float = 1.0
    """How long a worker's fetch waits for a message before it asks again: a server's long
    poll, kept short so a lost connection is noticed."""

    @abstractmethod
    async def connect(self) -> None:
        """Connect and create the stream and consumer if they do not exist (idempotent)."""

    @abstractmethod
    async def publish(self, body: bytes, dedupe_id: str | None = None) -> None:
        """Enqueue ``body``; once this returns the message is stored by the queue."""

    @abstractmethod
    async def fetch(self, max_messages: int, timeout_s: float) -> list[Delivery]:
        """Up to ``max_messages`` deliveries, waiting at most ``timeout_s`` for the first."""

    @abstractmethod
    async def dead_letters(self, max_messages: int, timeout_s: float) -> list[bytes]:
        """Bodies given up on, oldest first (read and removed)."""

    @abstractmethod
    async def depth(self) -> int:
        """Messages waiting for a first or a repeated delivery (not counting in-flight ones)."""

    async def close(self) -> None:  # noqa: B027 - optional hook
        """Release connections; deliveries not settled are redelivered to someone else."""
