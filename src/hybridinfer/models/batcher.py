"""Dynamic micro-batching: concurrent requests for one model become one runtime call.

Requests queue up; a worker takes the oldest, waits at most ``max_wait_s`` for company when
company is likely (see ``_company_likely``), takes every queued request with the same input
signature (names, dtypes and trailing dimensions) up to ``max_batch_size`` rows, concatenates
them along the first axis, runs them once on a thread (never on the event loop) and hands each
caller its own rows back. A batch that fails is re-run request by request, so one bad input
fails only its own request.
"""

from __future__ import annotations

import asyncio
import contextlib
from collections import deque
from collections.abc import Callable, Mapping
from concurrent.futures import Executor
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import numpy.typing as npt

Arrays = dict[str, npt.NDArray[Any]]
Runner = Callable[[Mapping[str, npt.NDArray[Any]]], Arrays]
Signature = tuple[tuple[str, str, tuple[int, ...]], ...]


@dataclass(slots=True)
class _Pending:
    feeds: Mapping[str, npt.NDArray[Any]]
    rows: int
    signature: Signature
    future: asyncio.Future[Arrays] = field(repr=False)


def _signature(feeds: Mapping[str, npt.NDArray[Any]]) -> Signature:
    return tuple(
        (name, array.dtype.str, tuple(array.shape[1:])) for name, array in sorted(feeds.items())
    )


def _rows(feeds: Mapping[str, npt.NDArray[Any]]) -> int:
    counts = {array.shape[0] if array.ndim else 1 for array in feeds.values()}
    return counts.pop() if len(counts) == 1 else 0  # 0: cannot be batched with others


def run_batch(run: Runner, batch: list[_Pending]) -> list[Arrays | BaseException]:
    """Run a batch in one call and split it; on failure, run each request on its own."""
    if len(batch) == 1:
        return [_run_one(run, batch[0])]
    names = list(batch[0].feeds)
    merged = {name: np.concatenate([item.feeds[name] for item in batch]) for name in names}
    total = sum(item.rows for item in batch)
    try:
        outputs = run(merged)
    except Exception:
        return [_run_one(run, item) for item in batch]
    if any(array.ndim == 0 or array.shape[0] != total for array in outputs.values()):
        return [_run_one(run, item) for item in batch]  # outputs without a batch axis
    results: list[Arrays | BaseException] = []
    start = 0
    for item in batch:
        end = start + item.rows
        results.append({name: array[start:end] for name, array in outputs.items()})
        start = end
    return results


def _run_one(run: Runner, item: _Pending) -> Arrays | BaseException:
    try:
        return run(item.feeds)
    except Exception as exc:
        return exc


class MicroBatcher:
    """Coalesces concurrent calls of one model; ``workers`` batches may run side by side."""

    def __init__(
        self,
        run: Runner,
        executor: Executor,
        max_batch_size: int = 64,
        max_wait_s: float = 0.0005,
        workers: int = 2,
    ) -> None:
        self._run = run
        self._executor = executor
        self.max_batch_size = max_batch_size
        self.max_wait_s = max_wait_s
        self._workers = workers
        self._queue: deque[_Pending] = deque()
        self._running = 0
        """Batches on the executor now."""
        self._wakeup = asyncio.Event()
        self._tasks: list[asyncio.Task[None]] = []
        self.batches = 0
        self.batched_rows = 0

    @property
    def queue_depth(self) -> int:
        """Requests waiting for a batch (not yet running)."""
        return len(self._queue)

    async def infer(self, feeds: Mapping[str, npt.NDArray[Any]]) -> Arrays:
        """The model's outputs for these inputs (their own rows only)."""
        loop = asyncio.get_running_loop()
        if not self._tasks:
            self._tasks = [
                loop.create_task(self._work(), name="micro-batcher") for _ in range(self._workers)
            ]
        future: asyncio.Future[Arrays] = loop.create_future()
        self._queue.append(_Pending(feeds, _rows(feeds), _signature(feeds), future))
        self._wakeup.set()
        return await future

    def _take(self) -> list[_Pending]:
        first = self._queue.popleft()
        batch = [first]
        if first.rows == 0 or self.max_batch_size <= 1:
            return batch
        rows = first.rows
        kept: deque[_Pending] = deque()
        while self._queue and rows < self.max_batch_size:
            item = self._queue.popleft()
            if item.signature == first.signature and 0 < item.rows <= self.max_batch_size - rows:
                batch.append(item)
                rows += item.rows
            else:
                kept.append(item)
        self._queue.extendleft(reversed(kept))
        return batch

    async def _work(self) -> None:
        loop = asyncio.get_running_loop()
        while True:
            while not self._queue:
                self._wakeup.clear()
                await self._wakeup.wait()
            if self._company_likely():
                await asyncio.sleep(self.max_wait_s)
                if not self._queue:  # another worker took them while we waited
                    continue
            batch = [item for item in self._take() if not item.future.done()]
            if not batch:
                continue
            self.batches += 1
            self.batched_rows += sum(item.rows for item in batch)
            self._running += 1
            try:
                results = await loop.run_in_executor(self._executor, run_batch, self._run, batch)
            except RuntimeError as exc:  # the executor shut down under us
                results = [exc] * len(batch)
            finally:
                self._running -= 1
            for item, result in zip(batch, results, strict=True):
                if item.future.done():
                    continue
                if isinstance(result, BaseException):
                    item.future.set_exception(result)
                else:
                    item.future.set_result(result)

    def _company_likely(self) -> bool:
        """Whether waiting ``max_wait_s`` may fill the batch: callers are concurrent right now
        (another batch is running, or more than one request is queued). A request alone in an
        idle batcher — one caller at a time, or the first after a lull — runs at once: waiting
        would add the whole wait to it (0.5 ms by default) with no one to wait for. Under load
        a batch is nearly always running, so batches wait and fill as before."""
        if self.max_wait_s <= 0 or len(self._queue) >= self.max_batch_size:
            return False
        return self._running > 0 or len(self._queue) > 1

    async def aclose(self) -> None:
        """Stop the workers; queued callers get CancelledError."""
        for task in self._tasks:
            task.cancel()
        for task in self._tasks:
            with contextlib.suppress(asyncio.CancelledError):
                await task
        self._tasks = []
        while self._queue:
            self._queue.popleft().future.cancel()
