"""Admission per node: at most ``limit`` calls in flight, at most ``max_queued`` waiting; waiting
calls go by priority.

When a node is saturated, the next free slot goes to the waiting call with the highest
priority (first come, first served among equals), so interactive traffic overtakes batch work.
Past the queue bound a call is shed (``Overloaded``, 503 with ``Retry-After``) rather than
queued without bound. The limit can shrink while the node is busy for reasons of its own (the
local host's CPU saturated by another process, ``execute/cpuload.py``): the limiter is then
``constrained``, and callers that have somewhere else to go spill over instead of waiting.
"""

from __future__ import annotations

import asyncio
import heapq
import itertools
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager

from hybridinfer.errors import Overloaded


class PriorityLimiter:
    """An asyncio semaphore with a bounded queue whose waiters go highest priority first."""

    def __init__(
        self,
        limit: int,
        max_queued: int | None = None,
        retry_after_s: float = 1.0,
        name: str = "node",
    ) -> None:
        self.base_limit = limit
        self._limit = limit
        self._max_queued = max_queued
        self._retry_after_s = retry_after_s
        self._name = name
        self._in_flight = 0
        self._waiting: list[tuple[int, int, asyncio.Future[None]]] = []
        self._order = itertools.count()
        self.shed = 0
        """Calls refused (queue full, or busy and told not to wait)."""

    @property
    def in_flight(self) -> int:
        return self._in_flight

    @property
    def waiting(self) -> int:
        return len(self._waiting)

    @property
    def limit(self) -> int:
        return self._limit

    @property
    def constrained(self) -> bool:
        """The limit is below its configured value (the node is busy for other reasons)."""
        return self._limit < self.base_limit

    def set_limit(self, limit: int) -> None:
        """Change the number of slots (at least 1); waiters fill slots that opened."""
        self._limit = max(1, limit)
        while self._in_flight < self._limit and self._hand_over():
            self._in_flight += 1

    @asynccontextmanager
    async def slot(self, priority: int = 0, wait: bool = True) -> AsyncIterator[None]:
        """Hold one slot for the duration of the block. Without ``wait``, a busy node sheds
        the call at once; with it, the call queues unless the queue is full."""
        await self._acquire(priority, wait)
        try:
            yield
        finally:
            self._release()

    def take_free(self) -> bool:
        """Take a slot if one is free and nobody waits for it (then ``release`` it); False
        else. The request path's way in: a free slot costs no coroutine, no context manager
        and no timer, and only a busy node makes the caller ``acquire`` one."""
        if self._in_flight < self._limit and not self._waiting:
            self._in_flight += 1
            return True
        return False

    async def acquire(self, priority: int = 0, wait: bool = True) -> None:
        """Take one slot (then ``release`` it), as ``slot`` does."""
        await self._acquire(priority, wait)

    def release(self) -> None:
        """Give back a slot ``take_free`` or ``acquire`` took."""
        self._release()

    def _shed(self, why: str) -> Overloaded:
        self.shed += 1
        return Overloaded(
            f"{self._name} is saturated: {why}",
            retry_after_s=self._retry_after_s,
            code="node_saturated",
        )

    async def _acquire(self, priority: int, wait: bool) -> None:
        if self.take_free():
            return
        if not wait:
            raise self._shed(f"all {self._limit} slots are busy")
        if self._max_queued is not None and len(self._waiting) >= self._max_queued:
            raise self._shed(f"{len(self._waiting)} calls are already waiting")
        future: asyncio.Future[None] = asyncio.get_running_loop().create_future()
        entry = (-priority, next(self._order), future)
        heapq.heappush(self._waiting, entry)
        try:
            await future
        except asyncio.CancelledError:
            if future.done() and not future.cancelled():
                self._release()  # the slot was handed over as we were cancelled: pass it on
            elif entry in self._waiting:  # a slot handed over may have popped it already
                self._waiting.remove(entry)
                heapq.heapify(self._waiting)
            raise

    def _hand_over(self) -> bool:
        """Give a slot to the best waiter still waiting; False if there is none."""
        while self._waiting:
            _, _, future = heapq.heappop(self._waiting)
            if not future.done():
                future.set_result(None)
                return True
        return False

    def _release(self) -> None:
        if self._in_flight > self._limit or not self._hand_over():
            self._in_flight -= 1  # over a shrunken limit, or nobody waits: the slot closes
