"""Walk a decision's chain: each deployment with its retries, then the next; optionally the
first two raced against each other (a hedge). Shared by plain and streamed calls."""

from __future__ import annotations

import asyncio
import contextlib
import time
from collections.abc import Awaitable, Callable, Sequence
from dataclasses import replace
from typing import Generic, TypeVar

from hybridinfer.errors import DeadlineExceeded, HybridInferError
from hybridinfer.execute.attempts import Step
from hybridinfer.execute.retry import Retries, retryable

T = TypeVar("T")
Try = Callable[[Step], Awaitable[T]]


class ChainRunner(Generic[T]):
    """Runs ``attempt`` along ``steps`` until one succeeds; raises the last error otherwise."""

    def __init__(self, attempt: Try[T], retry: Retries, deadline: float) -> None:
        self._attempt = attempt
        self._retry = retry
        self._deadline = deadline

    async def run(self, steps: Sequence[Step], hedge_delay_s: float | None = None) -> T:
        """Every step in order; with ``hedge_delay_s``, the second races the first."""
        last_error: HybridInferError | None = None  # built only if needed: a raise is rare
        rest = list(steps)
        if hedge_delay_s is not None and len(rest) >= 2:
            try:
                return await self._hedged(rest[0], rest[1], hedge_delay_s)
            except HybridInferError as error:
                last_error = error
            rest = rest[2:]
        for step in rest:
            try:
                return await self.with_retries(step)
            except HybridInferError as error:
                last_error = error
        raise last_error or DeadlineExceeded("no time left to run the subtask")

    async def with_retries(self, step: Step) -> T:
        """One deployment, tried again on retryable failures while the deadline allows."""
        while True:
            try:
                return await self._attempt(step)
            except HybridInferError as error:
                if step.number >= self._retry.attempts or not retryable(error):
                    raise
                wait = self._retry.wait_s(step.number)
                if time.monotonic() + wait >= self._deadline:
                    raise  # the retry could not finish in time: fall back instead
            await asyncio.sleep(wait)
            step = replace(step, number=step.number + 1, wait_ms=wait * 1000.0)

    async def _hedged(self, first: Step, second: Step, delay_s: float) -> T:
        """``first`` alone for ``delay_s``, then ``second`` beside it (as ``hedge``; as a plain
        ``fallback`` if ``first`` already failed); the first success wins, the other is
        cancelled. Raises the last error when both fail."""
        primary = asyncio.create_task(self.with_retries(first))
        tasks = [primary]
        try:
            done, _ = await asyncio.wait(tasks, timeout=delay_s)
            if primary in done and primary.exception() is None:
                return primary.result()
            role = "fallback" if primary in done else "hedge"
            tasks.append(asyncio.create_task(self.with_retries(replace(second, role=role))))
            return await _first_success(tasks)
        finally:
            for task in tasks:
                task.cancel()
            for task in tasks:
                with contextlib.suppress(asyncio.CancelledError, HybridInferError):
                    await task


async def _first_success(tasks: list[asyncio.Task[T]]) -> T:
    """The result of whichever task succeeds first; the last error if none does."""
    error: BaseException | None = None
    pending = set(tasks)
    for task in tasks:
        if task.done():
            pending.discard(task)
            error = task.exception()
    while pending:
        done, pending = await asyncio.wait(pending, return_when=asyncio.FIRST_COMPLETED)
        for task in done:
            if task.exception() is None:
                return task.result()
            error = task.exception()
    assert error is not None
    raise error
