"""The shared work-queue suite: every test runs on the in-process queue and on JetStream
(ack wait 1 s, see tests/services.py)."""

from __future__ import annotations

import asyncio
import time

from hybridinfer.queue.base import WorkQueue


async def test_a_message_is_delivered_once_when_acknowledged(queue: WorkQueue) -> None:
    await queue.publish(b"one")
    [delivery] = await queue.fetch(5, 2.0)
    assert (delivery.body, delivery.attempt) == (b"one", 1)
    await delivery.ack()
    await asyncio.sleep(1.3)  # past the ack wait
    assert await queue.fetch(5, 0.5) == []


async def test_an_unsettled_delivery_comes_back_after_the_ack_wait(queue: WorkQueue) -> None:
    """A consumer that dies holding a message: the message goes to the next fetch."""
    await queue.publish(b"orphan")
    [_first] = await queue.fetch(1, 2.0)
    assert await queue.fetch(1, 0.3) == []  # leased: nobody else gets it meanwhile
    [again] = await queue.fetch(1, 3.0)
    assert (again.body, again.attempt) == (b"orphan", 2)
    await again.ack()


async def test_extending_keeps_a_slow_delivery_owned(queue: WorkQueue) -> None:
    await queue.publish(b"slow")
    [delivery] = await queue.fetch(1, 2.0)
    for _ in range(3):
        await asyncio.sleep(0.5)
        await delivery.extend()
    assert await queue.fetch(1, 0.4) == []
    await delivery.ack()


async def test_a_retry_waits_its_delay(queue: WorkQueue) -> None:
    await queue.publish(b"flaky")
    [delivery] = await queue.fetch(1, 2.0)
    retried = time.monotonic()
    await delivery.retry(0.6)
    [again] = await queue.fetch(1, 3.0)
    assert time.monotonic() - retried >= 0.5
    assert again.attempt == 2
    await again.ack()


async def test_dead_letters_are_kept_and_never_redelivered(queue: WorkQueue) -> None:
    await queue.publish(b"poison")
    [delivery] = await queue.fetch(1, 2.0)
    await delivery.dead_letter("failed 5 times")
    assert await queue.dead_letters(10, 2.0) == [b"poison"]
    await asyncio.sleep(1.3)
    assert await queue.fetch(1, 0.5) == []


async def test_a_republished_message_with_the_same_id_is_dropped(queue: WorkQueue) -> None:
    for _ in range(3):
        await queue.publish(b"task-1", dedupe_id="task-1")
    await queue.publish(b"task-2", dedupe_id="task-2")
    assert await queue.depth() == 2
    deliveries = await queue.fetch(10, 2.0)
    assert sorted(d.body for d in deliveries) == [b"task-1", b"task-2"]
    for delivery in deliveries:
        await delivery.ack()


async def test_consumers_share_the_work_without_overlap(queue: WorkQueue) -> None:
    for index in range(30):
        await queue.publish(str(index).encode())
    seen: list[bytes] = []

    async def consume() -> None:
        while True:
            deliveries = await queue.fetch(3, 0.5)
            if not deliveries:
                return
            for delivery in deliveries:
                seen.append(delivery.body)
                await delivery.ack()

    await asyncio.gather(*(consume() for _ in range(3)))
    assert sorted(seen, key=int) == [str(index).encode() for index in range(30)]
