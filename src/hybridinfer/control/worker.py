"""The task worker: takes tasks off the queue and runs them through ``Pipeline.infer``.

At least once, stored exactly once: a task is marked running, run, its result stored with a
conditional write (``JobStore.finish``: the first writer wins) and only then acknowledged.
A replica that dies mid-task never acknowledges, so the queue redelivers the task to another
after ``ack_wait_s``; while a task runs, the worker keeps extending that clock. A task that
is finished already is acknowledged without running (a duplicate delivery). Failures:

- the caller's fault (4xx: unknown task, bad input, privacy): stored as failed, no retry;
- ours or an upstream's (5xx, the store down): retried after ``base * 2^(attempt-1)`` seconds
  (capped, with jitter) until ``max_attempts`` deliveries, then stored as failed and the
  message moved to the dead-letter subject.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import random
import time
from dataclasses import dataclass
from typing import Any

import orjson

from hybridinfer.core.schemas import InferRequest
from hybridinfer.core.trace import Trace
from hybridinfer.errors import HybridInferError, QueueUnavailable, StoreUnavailable
from hybridinfer.observe.logs import request_context
from hybridinfer.pipeline.pipeline import Pipeline
from hybridinfer.queue.base import Delivery, WorkQueue
from hybridinfer.store.jobs import FINISHED, JobStore

log = logging.getLogger(__name__)


@dataclass(frozen=True, slots=True)
class RetryPolicy:
    """How often and how soon a failing task runs again."""

    max_attempts: int = 5
    base_s: float = 0.5
    max_s: float = 30.0

    def delay(self, attempt: int) -> float:
        """Exponential backoff with full jitter on its upper half."""
        ceiling = min(self.max_s, self.base_s * 2 ** max(0, attempt - 1))
        return float(ceiling / 2 + random.uniform(0, ceiling / 2))


@dataclass(slots=True)
class WorkerCounts:
    """What the workers of this replica did (exported as metrics)."""

    completed: int = 0
    failed: int = 0
    retried: int = 0
    dead_lettered: int = 0
    duplicates: int = 0


class JobWorker:
    """``concurrency`` loops, each taking one delivery at a time."""

    def __init__(
        self,
        queue: WorkQueue,
        tasks: JobStore,
        pipeline: Pipeline,
        concurrency: int,
        retry: RetryPolicy,
    ) -> None:
        self._queue = queue
        self._tasks = tasks
        self._pipeline = pipeline
        self._concurrency = concurrency
        self._retry = retry
        self._loops: list[asyncio.Task[None]] = []
        self.counts = WorkerCounts()

    def start(self) -> None:
        self._loops = [
            asyncio.create_task(self._loop(), name=f"task-worker-{index}")
            for index in range(self._concurrency)
        ]

    async def stop(self) -> None:
        for loop in self._loops:
            loop.cancel()
        for loop in self._loops:
            with contextlib.suppress(asyncio.CancelledError):
                await loop
        self._loops = []

    async def _loop(self) -> None:
        pause = 0.5
        while True:
            try:
                deliveries = await self._queue.fetch(1, self._queue.fetch_wait_s)
                pause = 0.5
            except QueueUnavailable as exc:
                log.warning("task queue unavailable, retrying in %.1f s: %s", pause, exc.message)
                await asyncio.sleep(pause)
                pause = min(pause * 2, 16.0)
                continue
            for delivery in deliveries:
                try:
                    await self.handle(delivery)
                except (QueueUnavailable, StoreUnavailable) as exc:
                    # Not acknowledged: the queue redelivers it after ack_wait.
                    log.warning("task left for redelivery: %s", exc.message)

    async def handle(self, delivery: Delivery) -> None:
        """Run one delivery to its settlement (ack, retry or dead letter)."""
        try:
            message = orjson.loads(delivery.body)
            task_id = str(message["task_id"])
            request = InferRequest.model_validate(message["request"])
        except (orjson.JSONDecodeError, KeyError, TypeError, ValueError) as exc:
            await delivery.dead_letter(f"malformed task message: {exc}")
            self.counts.dead_lettered += 1
            return
        try:
            status = await self._tasks.start(task_id)
        except StoreUnavailable:
            await delivery.retry(self._retry.delay(delivery.attempt))
            self.counts.retried += 1
            return
        if status is None or status in FINISHED:
            self.counts.duplicates += 1
            await delivery.ack()
            return
        with request_context(task_id):  # the task's log lines carry its id
            await self._run(delivery, task_id, message.get("key_id"), request)

    async def _run(
        self, delivery: Delivery, task_id: str, key_id: str | None, request: InferRequest
    ) -> None:
        trace = Trace(request_id=task_id, started=time.perf_counter(), key_id=key_id)
        keepalive = asyncio.create_task(self._extend(delivery))
        try:
            result = await self._pipeline.infer(request, trace)
        except HybridInferError as error:
            await self._failed(delivery, task_id, error)
            return
        except Exception as exc:  # a bug: retried like any 5xx, logged with its stack
            log.exception("task %s crashed", task_id)
            await self._failed(delivery, task_id, HybridInferError(f"internal error: {exc}"))
            return
        finally:
            keepalive.cancel()
        try:
            stored = await self._tasks.finish(task_id, result=result)
        except StoreUnavailable:
            await delivery.retry(self._retry.delay(delivery.attempt))
            self.counts.retried += 1
            return
        await delivery.ack()
        if stored:
            self.counts.completed += 1
        else:
            self.counts.duplicates += 1

    async def _failed(self, delivery: Delivery, task_id: str, error: HybridInferError) -> None:
        retryable = error.status_code >= 500
        if retryable and delivery.attempt < self._retry.max_attempts:
            await delivery.retry(self._retry.delay(delivery.attempt))
            self.counts.retried += 1
            return
        body: dict[str, Any] = {"code": error.error_code, "message": error.message}
        await self._tasks.finish(task_id, error=body)
        self.counts.failed += 1
        if retryable:
            await delivery.dead_letter(f"{error.error_code}: {error.message}")
            self.counts.dead_lettered += 1
        else:
            await delivery.ack()

    async def _extend(self, delivery: Delivery) -> None:
        interval = max(0.5, self._queue.ack_wait_s / 3)
        while True:
            await asyncio.sleep(interval)
            with contextlib.suppress(QueueUnavailable):
                await delivery.extend()
