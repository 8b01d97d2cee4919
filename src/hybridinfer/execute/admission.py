"""Admission per node: at most ``limit`` calls in flight; waiting calls go by priority.

When a node is saturated, the next free slot goes to the waiting call with the highest
priority (first come, first served among equals), so interactive traffic overtakes batch work.
"""

from __future__ import annotations

import asyncio
import heapq
import itertools
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager


class PriorityLimiter:
    """An asyncio semaphore whose waiters are served highest priority first."""

    def __init__(self, limit: int) -> None:
        self._limit = limit
        self._in_flight = 0
        self._waiting: list[tuple[int, int, asyncio.Future[None]]] = []
        self._order = itertools.count()

    @property
    def in_flight(self) -> int:
        return self._in_flight

    @property
    def waiting(self) -> int:
        return len(self._waiting)

    @asynccontextmanager
    async def slot(self, priority: int = 0) -> AsyncIterator[None]:
        """Hold one slot for the duration of the block."""
        await self._acquire(priority)
        try:
            yield
        finally:
            self._release()

    async def _acquire(self, priority: int) -> None:
        if self._in_flight < self._limit and not self._waiting:
            self._in_flight += 1
            return
        future: asyncio.Future[None] = asyncio.get_running_loop().create_future()
        entry = (-priority, next(self._order), future)
        heapq.heappush(self._waiting, entry)
        try:
            await future
        except asyncio.CancelledError:
            if future.done() and not future.cancelled():
                self._release()  # the slot was handed over as we were cancelled: pass it on
            else:
                self._waiting.remove(entry)
                heapq.heapify(self._waiting)
            raise

    def _release(self) -> None:
        while self._waiting:
            _, _, future = heapq.heappop(self._waiting)
            if not future.done():
                future.set_result(None)  # the slot passes straight to the waiter
                return
        self._in_flight -= 1
