"""Background tasks live as long as their owner: cancelled and awaited when it ends."""

from __future__ import annotations

import asyncio

from hybridinfer.core.background import cancel, running


async def test_cancel_stops_the_task_and_waits_for_its_cleanup() -> None:
    cleaned: list[str] = []

    async def forever() -> None:
        try:
            await asyncio.sleep(3600)
        finally:
            cleaned.append("done")

    task = asyncio.create_task(forever())
    await asyncio.sleep(0)
    await cancel(task)
    assert task.cancelled()
    assert cleaned == ["done"]
    await cancel(None)  # nothing started: nothing to do


async def test_running_work_ends_with_the_block() -> None:
    ticks: list[int] = []

    async def tick() -> None:
        while True:
            ticks.append(len(ticks))
            await asyncio.sleep(0.001)

    async with running(tick(), "ticker"):
        await asyncio.sleep(0.02)
        assert any(task.get_name() == "ticker" for task in asyncio.all_tasks())
    seen = len(ticks)
    await asyncio.sleep(0.01)
    assert seen > 0
    assert len(ticks) == seen
    assert not any(task.get_name() == "ticker" for task in asyncio.all_tasks())
