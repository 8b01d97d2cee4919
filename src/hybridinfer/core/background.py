"""Background tasks that live as long as their owner: started once, cancelled cleanly."""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import AsyncIterator, Coroutine
from typing import Any


async def cancel(task: asyncio.Task[Any] | None) -> None:
    """Cancel ``task`` (if any) and wait until it has finished."""
    if task is None:
        return
    task.cancel()
    with contextlib.suppress(asyncio.CancelledError):
        await task


@contextlib.asynccontextmanager
async def running(work: Coroutine[Any, Any, None], name: str) -> AsyncIterator[None]:
    """Run ``work`` as a task for the duration of the block."""
    task = asyncio.create_task(work, name=name)
    try:
        yield
    finally:
        await cancel(task)
