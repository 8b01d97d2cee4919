from __future__ import annotations

import asyncio

import pytest

from hybridinfer.errors import Overloaded
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


async def test_a_waiter_cancelled_as_its_entry_is_skipped_by_a_hand_over_stays_cancelled() -> None:
    """Cancelling a waiter marks its future done at once; a release before the waiter wakes
    pops that entry while handing the slot to the next waiter. The cancelled waiter must then
    end cancelled (not with an error) and the slot must go to the next one."""
    limiter = PriorityLimiter(1)
    await limiter._acquire(0, wait=True)  # the one slot, held here
    cancelled = asyncio.create_task(limiter._acquire(0, wait=True))
    served = asyncio.create_task(limiter._acquire(0, wait=True))
    await asyncio.sleep(0)
    assert limiter.waiting == 2

    cancelled.cancel()  # its future is cancelled now; the task wakes later
    limiter._release()  # skips the cancelled entry, hands the slot to the next waiter

    with pytest.raises(asyncio.CancelledError):
        await cancelled
    await served
    assert (limiter.in_flight, limiter.waiting) == (1, 0)


async def test_past_the_queue_bound_a_call_is_shed_with_retry_after() -> None:
    limiter = PriorityLimiter(1, max_queued=2, retry_after_s=3.0, name="edge-1")
    gate = asyncio.Event()

    async def hold() -> None:
        async with limiter.slot():
            await gate.wait()

    held = [asyncio.create_task(hold()) for _ in range(3)]  # one runs, two wait
    await asyncio.sleep(0)
    assert (limiter.in_flight, limiter.waiting) == (1, 2)
    with pytest.raises(Overloaded) as shed:
        async with limiter.slot():
            pass
    assert shed.value.status_code == 503
    assert shed.value.error_code == "node_saturated"
    assert shed.value.headers() == {"Retry-After": "3"}
    assert limiter.waiting == 2  # the shed call left no trace in the queue
    assert limiter.shed == 1
    gate.set()
    await asyncio.gather(*held)
    assert (limiter.in_flight, limiter.waiting) == (0, 0)


async def test_without_wait_a_busy_node_sheds_at_once() -> None:
    limiter = PriorityLimiter(1)
    async with limiter.slot():
        with pytest.raises(Overloaded):
            async with limiter.slot(wait=False):
                pass
    async with limiter.slot(wait=False):
        assert limiter.in_flight == 1


async def test_a_shrunk_limit_drains_to_the_new_bound_and_grows_back() -> None:
    limiter = PriorityLimiter(3)
    gates = [asyncio.Event() for _ in range(5)]
    running: list[int] = []

    async def call(index: int) -> None:
        async with limiter.slot():
            running.append(index)
            await gates[index].wait()

    tasks = [asyncio.create_task(call(i)) for i in range(5)]
    await asyncio.sleep(0)
    assert running == [0, 1, 2]
    assert limiter.waiting == 2
    limiter.set_limit(1)
    assert limiter.constrained
    for index in (0, 1):  # two finish: still over the limit of 1, nobody new starts
        gates[index].set()
        await asyncio.sleep(0)
        await asyncio.sleep(0)
    assert running == [0, 1, 2]
    assert limiter.in_flight == 1
    gates[2].set()
    await asyncio.sleep(0)
    await asyncio.sleep(0)
    assert running == [0, 1, 2, 3]
    assert limiter.in_flight == 1
    limiter.set_limit(3)  # restored: the last waiter starts at once
    await asyncio.sleep(0)
    assert running == [0, 1, 2, 3, 4]
    assert not limiter.constrained
    for gate in gates:
        gate.set()
    await asyncio.gather(*tasks)
    assert (limiter.in_flight, limiter.waiting) == (0, 0)
