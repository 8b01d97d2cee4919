"""Dynamic micro-batching: concurrent requests for one model become one runtime call.

Requests queue up; a worker takes the oldest, waits at most ``max_wait_s`` for company when
company is likely (see ``_company_likely``), takes every queued request with the same input
signature (names, dtypes and trailing dimensions) up to ``max_batch_size`` rows, concatenates
them along the first axis, runs them once on a thread and hands each caller its own rows back.
A batch that fails is re-run request by request, so one bad input fails only its own request.

With an ``InlineRuns`` gate (``models/inline.py``), a call that finds nothing queued and whose
input is of a size seen to run in well under a millisecond runs on the event loop instead: the
thread hand-off would cost more than the run. ``ready`` says whether the model can run at once
(its session is loaded): a load is never done on the loop.
"""

from __future__ import annotations

import asyncio
import contextlib
import functools
import time
from collections import deque
from collections.abc import Callable, Mapping
from concurrent.futures import Executor
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np
import numpy.typing as npt

from hybridinfer.models.inline import InlineRuns, inline_runs, input_size
from hybridinfer.models.sessioncache import SessionCache

Arrays = dict[str, npt.NDArray[Any]]
Runner = Callable[[Mapping[str, npt.NDArray[Any]]], Arrays]
Signature = tuple[tuple[str, str, tuple[int, ...]], ...]


@dataclass(slots=True)
class _Pending:
    feeds: Mapping[str, npt.NDArray[Any]]
    rows: int
    signature: Signature
    future: asyncio.Future[Arrays] = field(repr=False)
    size: int = 0
    """``input_size`` of the feeds (0 when no ``InlineRuns`` gate wants it)."""


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


def run_timed(run: Runner, batch: list[_Pending]) -> tuple[list[Arrays | BaseException], float]:
    """``run_batch`` and the seconds it took, timed on the thread that ran it."""
    started = time.perf_counter()
    results = run_batch(run, batch)
    return results, time.perf_counter() - started


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
        *,
        inline: InlineRuns | None = None,
        ready: Callable[[], bool] | None = None,
    ) -> None:
        self._run = run
        self.inline = inline
        """Which lone calls run on the event loop (None: every call runs on a thread)."""
        self._ready = ready
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
        outputs, size = self.run_inline(feeds)
        return outputs if outputs is not None else await self.queued(feeds, size)

    def run_inline(self, feeds: Mapping[str, npt.NDArray[Any]]) -> tuple[Arrays | None, int]:
        """The outputs if the ``InlineRuns`` gate runs these inputs on the event loop now, else
        None (then ``queued``); and the inputs' ``input_size`` for ``queued`` (0 when no gate
        wants it). A caller that bounds a wait in time needs no timer for an inline run: it
        cannot be interrupted, nor does it wait."""
        inline, size = self.inline, 0
        if inline is not None:
            size = input_size(feeds)
            if not self._queue and inline.admits(size) and (self._ready is None or self._ready()):
                self.batches += 1  # a batch of its own rows, run in place
                self.batched_rows += _rows(feeds)
                started = time.perf_counter()
                try:
                    return self._run(feeds), size
                finally:
                    inline.observe(size, time.perf_counter() - started, inline=True)
        return None, size

    async def queued(self, feeds: Mapping[str, npt.NDArray[Any]], size: int = 0) -> Arrays:
        """The outputs of a run on a thread, batched with whatever is queued beside it."""
        loop = asyncio.get_running_loop()
        if not self._tasks:
            self._tasks = [
                loop.create_task(self._work(), name="micro-batcher") for _ in range(self._workers)
            ]
        future: asyncio.Future[Arrays] = loop.create_future()
        self._queue.append(_Pending(feeds, _rows(feeds), _signature(feeds), future, size))
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
        while True:
            while not self._queue:
                self._wakeup.clear()
                await self._wakeup.wait()
            if self._company_likely():
                await asyncio.sleep(self.max_wait_s)
                if not self._queue:  # another worker took them while we waited
                    continue
            batch = [item for item in self._take() if not item.future.done()]
            if batch:
                await self._run_on_thread(batch)

    async def _run_on_thread(self, batch: list[_Pending]) -> None:
        """Run one batch on the executor and answer each of its callers."""
        self.batches += 1
        self.batched_rows += sum(item.rows for item in batch)
        self._running += 1
        try:
            results, seconds = await asyncio.get_running_loop().run_in_executor(
                self._executor, run_timed, self._run, batch
            )
        except RuntimeError as exc:  # the executor shut down under us
            results, seconds = [exc] * len(batch), 0.0
        finally:
            self._running -= 1
        if self.inline is not None and len(batch) == 1 and isinstance(results[0], dict):
            self.inline.observe(batch[0].size, seconds, inline=False)
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


def session_batcher(
    cache: SessionCache,
    path: Path,
    executor: Executor,
    max_batch_size: int,
    max_wait_s: float,
    workers: int,
    inline_below_us: int,
) -> MicroBatcher:
    """The batcher of one model file's session in ``cache`` (loaded on its first run, on a
    thread), with the ``inline_below_us`` gate: what the local tier and a node both serve."""

    def run(feeds: Mapping[str, npt.NDArray[Any]]) -> Arrays:
        return cache.get(path).run(feeds)

    return MicroBatcher(
        run,
        executor,
        max_batch_size,
        max_wait_s,
        workers=workers,
        inline=inline_runs(inline_below_us),
        ready=functools.partial(cache.holds, path),
    )
