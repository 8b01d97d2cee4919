"""The in-process work queue (the embedded default): one replica, nothing survives a restart.

It keeps the contract of the shared queue (redelivery after ``ack_wait_s``, delayed
retries, dedupe, dead letters) so the task worker behaves the same on both.
"""

from __future__ import annotations

import asyncio
import itertools
import time
from collections import OrderedDict, deque
from collections.abc import Callable
from dataclasses import dataclass

from hybridinfer.queue.base import Delivery, WorkQueue


@dataclass(slots=True)
class _Message:
    id: int
    body: bytes
    attempts: int = 0
    not_before: float = 0.0


class MemoryDelivery(Delivery):
    """A delivery from ``MemoryQueue``."""

    def __init__(self, queue: MemoryQueue, message: _Message) -> None:
        self._queue = queue
        self._message = message
        self.body = message.body
        self.attempt = message.attempts

    async def ack(self) -> None:
        self._queue._settle(self._message)

    async def retry(self, delay_s: float) -> None:
        self._queue._settle(self._message)
        self._queue._requeue(self._message, delay_s)

    async def extend(self) -> None:
        self._queue._lease(self._message)

    async def dead_letter(self, reason: str) -> None:
        self._queue._settle(self._message)
        self._queue._dead.append(self._message.body)


class MemoryQueue(WorkQueue):
    """Ready messages in a deque; in-flight ones leased until ``ack_wait_s`` runs out."""

    fetch_wait_s = 30.0
    """A fetch wakes on a publish, or when a retry or a lease falls due: waiting longer costs
    an idle worker no wake-ups and delays nothing."""

    def __init__(
        self,
        ack_wait_s: float = 30.0,
        dedupe_window: int = 100_000,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self.ack_wait_s = ack_wait_s
        self._clock = clock
        self._ids = itertools.count(1)
        self._ready: deque[_Message] = deque()
        self._leases: dict[int, tuple[_Message, float]] = {}
        self._seen: OrderedDict[str, None] = OrderedDict()
        self._dedupe_window = dedupe_window
        self._dead: deque[bytes] = deque()
        self._arrived = asyncio.Event()

    async def connect(self) -> None:
        return None

    async def publish(self, body: bytes, dedupe_id: str | None = None) -> None:
        if dedupe_id is not None:
            if dedupe_id in self._seen:
                return
            self._seen[dedupe_id] = None
            if len(self._seen) > self._dedupe_window:
                self._seen.popitem(last=False)
        self._ready.append(_Message(next(self._ids), body))
        self._arrived.set()

    def _settle(self, message: _Message) -> None:
        self._leases.pop(message.id, None)

    def _lease(self, message: _Message) -> None:
        if message.id in self._leases:
            self._leases[message.id] = (message, self._clock() + self.ack_wait_s)

    def _requeue(self, message: _Message, delay_s: float) -> None:
        message.not_before = self._clock() + delay_s
        self._ready.append(message)
        self._arrived.set()

    def _reclaim_expired(self) -> None:
        now = self._clock()
        for message_id, (message, expires) in list(self._leases.items()):
            if expires <= now:
                del self._leases[message_id]
                self._requeue(message, 0.0)

    def _take(self, max_messages: int) -> list[Delivery]:
        self._reclaim_expired()
        now = self._clock()
        taken: list[Delivery] = []
        waiting: deque[_Message] = deque()
        while self._ready and len(taken) < max_messages:
            message = self._ready.popleft()
            if message.not_before > now:
                waiting.append(message)
                continue
            message.attempts += 1
            self._leases[message.id] = (message, now + self.ack_wait_s)
            taken.append(MemoryDelivery(self, message))
        self._ready.extendleft(reversed(waiting))
        return taken

    async def fetch(self, max_messages: int, timeout_s: float) -> list[Delivery]:
        deadline = self._clock() + timeout_s
        while True:
            taken = self._take(max_messages)
            if taken:
                return taken
            remaining = deadline - self._clock()
            if remaining <= 0:
                return []
            self._arrived.clear()
            try:  # wake on a publish, or when a delayed message or a lease falls due
                async with asyncio.timeout(min(remaining, self._next_due() - self._clock())):
                    await self._arrived.wait()
            except TimeoutError:
                pass

    def _next_due(self) -> float:
        """The soonest moment a waiting message could be taken: a delayed retry's
        ``not_before`` or an unsettled lease's expiry (infinity when there is none). Waiting
        until then, not polling, is what keeps idle workers asleep."""
        delayed = (message.not_before for message in self._ready)
        expiring = (expires for _message, expires in self._leases.values())
        return min(itertools.chain(delayed, expiring), default=float("inf"))

    async def dead_letters(self, max_messages: int, timeout_s: float) -> list[bytes]:
        taken: list[bytes] = []
        while self._dead and len(taken) < max_messages:
            taken.append(self._dead.popleft())
        return taken

    async def depth(self) -> int:
        return len(self._ready)
