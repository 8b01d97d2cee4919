from __future__ import annotations

import asyncio

import pytest

from hybridinfer.execute.admission import PriorityLimiter


async def test_a_saturated_limiter_serves_high_priority_first() -> None:
    limiter = PriorityLimiter(1)
    order: list[str] = []
    release = asyncio.Event()

    async def call(name: str, priority: int) -> None:
        async with limiter.slot(priority):
            order.append(name)
            if name == "first":
                await release.wait()

    first = asyncio.create_task(call("first", 0))
    await asyncio.sleep(0)
    waiting = [
        asyncio.create_task(call(name, priority))
        for name, priority in [("low-a", 0), ("low-b", 0), ("high", 9), ("mid", 5)]
    ]
    await asyncio.sleep(0)
    assert limiter.waiting == 4
    release.set()
    await asyncio.gather(first, *waiting)
    assert order == ["first", "high", "mid", "low-a", "low-b"]
    assert limiter.in_flight == 0


async def test_cancelled_waiters_do_not_leak_slots() -> None:
    limiter = PriorityLimiter(1)
    gate = asyncio.Event()

    async def hold() -> None:
        async with limiter.slot():
            await gate.wait()

    holder = asyncio.create_task(hold())
    await asyncio.sleep(0)
    waiter = asyncio.create_task(hold())
    await asyncio.sleep(0)
    waiter.cancel()
    with pytest.raises(asyncio.CancelledError):
        await waiter
    gate.set()
    await holder
    assert limiter.in_flight == 0
    assert limiter.waiting == 0
    async with limiter.slot():
        assert limiter.in_flight == 1
