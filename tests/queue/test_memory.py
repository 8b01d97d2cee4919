"""The in-process queue sleeps while nothing can be taken: an idle worker's fetch wakes on a
publish or when a delayed message or a lease falls due, never on a polling tick."""

from __future__ import annotations

import asyncio
import time

from hybridinfer.queue.memory import MemoryQueue


class CountingClock:
    """``time.monotonic``, counting its reads: each wake of a waiting fetch reads it."""

    def __init__(self) -> None:
        self.reads = 0

    def __call__(self) -> float:
        self.reads += 1
        return time.monotonic()


async def test_an_idle_fetch_does_not_wake_until_its_timeout() -> None:
    clock = CountingClock()
    queue = MemoryQueue(clock=clock)
    assert await queue.fetch(1, 0.5) == []
    assert clock.reads <= 8  # one wait, not a wake every few milliseconds


async def test_a_waiting_fetch_wakes_when_a_delayed_retry_falls_due() -> None:
    clock = CountingClock()
    queue = MemoryQueue(clock=clock)
    await queue.publish(b"flaky")
    [delivery] = await queue.fetch(1, 1.0)
    await delivery.retry(0.3)
    clock.reads = 0
    started = time.monotonic()
    [again] = await queue.fetch(1, 2.0)
    assert 0.25 <= time.monotonic() - started < 1.0
    assert again.attempt == 2
    assert clock.reads <= 12


async def test_a_waiting_fetch_wakes_on_a_publish() -> None:
    queue = MemoryQueue()
    waiting = asyncio.create_task(queue.fetch(1, 5.0))
    await asyncio.sleep(0.05)
    await queue.publish(b"now")
    [delivery] = await asyncio.wait_for(waiting, 1.0)
    assert delivery.body == b"now"
